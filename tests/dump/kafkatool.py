"""Running the real kafka-dump-log (Kafka 4.1.1 jars) and `logscan dump` side by side.

kafka-dump-log 4.1.1 is the Scala object ``kafka.tools.DumpLogSegments`` in kafka_2.13 (the
Java port under org.apache.kafka.tools is not in the 4.1 release). The jars come from the
project's `.kafka/4.1.1/libs` (see the Makefile); tests needing them are marked ``kafka`` and skip
when they are absent. One JVM call dumps many files, since JVM start-up dominates.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.kafkajava import (DUMP_CLASS, KAFKA_LIBS, REPO, kafka_available, requires_kafka,  # noqa: F401
                             run_java, stderr_lines)


def run_kafka_dump_log(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    return run_java(DUMP_CLASS, *args, cwd=cwd)


def run_logscan_dump(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    """`logscan dump --kafka-version 4.1 ARGS`: the text of the tool run_kafka_dump_log runs."""
    return subprocess.run([sys.executable, "-m", "logscan.cli", "dump", "--kafka-version", "4.1", *args], cwd=cwd,
                          capture_output=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


#: kafka-dump-log's own stderr lines, without the SLF4J no-binder banner.
kafka_stderr_lines = stderr_lines


def logscan_kafka_stderr_lines(stderr: bytes) -> list[str]:
    """logscan's stderr minus its own findings: the lines kafka-dump-log would print."""
    return [line for line in stderr.decode("utf-8", "replace").splitlines()
            if not line.startswith("logscan: ")]
