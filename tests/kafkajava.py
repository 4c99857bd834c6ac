"""One way for tests to reach Kafka's own tools: where the jars are, when to skip, how to run
kafka-dump-log (the Scala `kafka.tools.DumpLogSegments` in 4.1.1)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KAFKA_LIBS = Path(os.environ.get("LOGSCAN_KAFKA_LIBS", REPO / ".kafka" / "libs"))
DUMP_CLASS = "kafka.tools.DumpLogSegments"


def kafka_available() -> bool:
    return shutil.which("java") is not None and any(KAFKA_LIBS.glob("kafka_2.13-*.jar"))


requires_kafka = pytest.mark.skipif(not kafka_available(), reason=f"Kafka jars or java not found ({KAFKA_LIBS})")


def dump_log(*args: str) -> tuple[str, str, int]:
    """kafka-dump-log's (stdout, stderr without the SLF4J banner, exit code)."""
    proc = subprocess.run(["java", "-cp", f"{KAFKA_LIBS}/*", DUMP_CLASS, *args],
                          capture_output=True, text=True, timeout=300)
    err = "".join(line for line in proc.stderr.splitlines(True) if not line.startswith("SLF4J:"))
    return proc.stdout, err, proc.returncode
