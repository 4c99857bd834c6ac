"""One way for tests to reach Kafka's own code: where the jars are, when to skip, and how to run
one of its tools (kafka-dump-log is the Scala ``kafka.tools.DumpLogSegments`` in 4.1.1) or a
small Java program against them.

Where the jars are and which JVM options tools get is the harness's answer
(tools/kafka/cluster.py), so tests and fixtures run the very same classes the same way.
Output comes back as bytes; ``text`` decodes it as UTF-8 without newline translation, so a
payload holding a CR compares exactly (Python's text mode would turn it into a LF).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools.kafka.cluster import LIBS as KAFKA_LIBS
from tools.kafka.cluster import REPO, TOOL_ALIASES, TOOL_JVM_OPTS, jars_present

DUMP_CLASS = TOOL_ALIASES["kafka-dump-log"]

#: The JVM prints non-ASCII text (and U+FFFD) as UTF-8 whatever the machine's locale.
UTF8_JVM_OPTS = ["-Dfile.encoding=UTF-8", "-Dstdout.encoding=UTF-8", "-Dstderr.encoding=UTF-8"]


def kafka_available() -> bool:
    return shutil.which("java") is not None and jars_present(KAFKA_LIBS)


def jdk_available() -> bool:
    """A JDK, not only a JRE: ``run_java_source`` compiles with the JDK's compiler."""
    return kafka_available() and shutil.which("javac") is not None


requires_kafka = pytest.mark.skipif(not kafka_available(),
                                    reason=f"Kafka jars or java not found ({KAFKA_LIBS})")
requires_jdk = pytest.mark.skipif(not jdk_available(),
                                  reason=f"Kafka jars or a JDK not found ({KAFKA_LIBS})")


def run_java(main: str, *args, cwd=None, classpath=(), jvm_opts=(), timeout: float = 300,
             check: bool = False) -> subprocess.CompletedProcess:
    """``java -cp [classpath:]<jars>/* main args...``; stdout and stderr as bytes.

    ``main`` is a class name, a tool alias (``kafka-dump-log``) or a ``.java`` file (run by
    the JDK's source launcher)."""
    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8")
    cp = os.pathsep.join([*map(str, classpath), f"{KAFKA_LIBS}/*"])
    cmd = ["java", *TOOL_JVM_OPTS, *UTF8_JVM_OPTS, *jvm_opts, "-cp", cp,
           TOOL_ALIASES.get(main, main), *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=timeout, check=check)


def run_java_source(workdir, source: str, *args, **kw) -> subprocess.CompletedProcess:
    """Run a one-file Java program against Kafka's jars: written to ``workdir`` under its
    public class's name and run by the source launcher (compiled in memory, one JVM)."""
    name = re.search(r"public\s+class\s+(\w+)", source).group(1)
    path = Path(workdir) / f"{name}.java"
    path.write_text(source)
    return run_java(str(path), *args, **kw)


def text(data: bytes) -> str:
    """A tool's output as text: UTF-8, every byte of line ends kept (no CR -> LF)."""
    return data.decode("utf-8", "replace")


def stderr_lines(stderr: bytes) -> list[str]:
    """A tool's stderr lines, without SLF4J's no-binder banner."""
    return [line for line in text(stderr).splitlines() if not line.startswith("SLF4J:")]


def dump_log(*args: str, cwd=None) -> tuple[str, str, int]:
    """kafka-dump-log's (stdout, stderr without the SLF4J banner, exit code)."""
    proc = run_java(DUMP_CLASS, *args, cwd=cwd)
    err = "".join(line for line in text(proc.stderr).splitlines(True) if not line.startswith("SLF4J:"))
    return text(proc.stdout), err, proc.returncode


__all__ = ["DUMP_CLASS", "KAFKA_LIBS", "REPO", "dump_log", "jdk_available", "kafka_available",
           "requires_jdk", "requires_kafka", "run_java", "run_java_source", "stderr_lines", "text"]
