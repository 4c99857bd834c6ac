"""A Spark scan that cannot finish says so in one line (issue 33 item 5): its own exit status
(5: no answer; 1 would say damage found, 4 hanging), the innermost Java exception as the cause,
and the whole trace in a log file it names, never thousands of lines of JVM trace on the
terminal. The failure here is a real one of a write task: a table's folder in the output is a
regular file, so the Python worker writing that table's Parquet fails."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from logscan.scan.summary import EXIT_FAILED
from spark_jobs.session import DELTA_LIBS

from .harness import REPO, run_cli

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]


def test_a_failed_spark_scan_is_one_line_and_its_own_exit_status(tmp_path):
    copy, out = tmp_path / "copy", tmp_path / "out"
    shutil.copytree(REPO / "fixtures" / "hanging" / "brokers", copy)
    out.mkdir()
    (out / "partition_state").write_text("not a folder\n")
    proc = run_cli("scan", str(copy), "--output", str(out), "--no-progress", timeout=600)
    assert proc.returncode == EXIT_FAILED == 5, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("WARNING: Using incubator modules")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr[-3000:]
    found = re.fullmatch(r"logscan scan: the Spark job failed: (.+); the whole trace is in (\S+)", lines[0])
    assert found, lines[0]
    cause, log = found.group(1), Path(shlex.split(found.group(2))[0])
    assert re.match(r"(NotADirectoryError|FileExistsError): ", cause) and str(out / "partition_state") in cause
    trace = log.read_text()
    assert "Traceback" in trace and cause.split(":")[0] in trace and len(trace.splitlines()) > 20
    log.unlink()
    assert digest_free(copy)


def digest_free(copy: Path) -> bool:
    """The input is left as it was copied: nothing written into it."""
    return sorted(p.relative_to(copy) for p in copy.rglob("*")) == sorted(
        p.relative_to(REPO / "fixtures" / "hanging" / "brokers") for p in (REPO / "fixtures" / "hanging" / "brokers").rglob("*"))
