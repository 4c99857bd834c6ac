"""Ctrl-C stops a Spark scan (issue 34): exit 130 with one line, its jobs ended, no process of
the run left, and nothing of the scan that says it is whole when it is not.

Each run is a real process group sent a real SIGINT, as a terminal sends it to every process
in the foreground (the JVM pyspark starts ignores it; its Python workers run in a group of
their own). Where it lands is set by spark_jobs.faults (LOGSCAN_PAUSE_AT: the run says it got
there, then waits forever), so no sleep decides it, and a run that exits at all was stopped by
the interrupt: a decode task paused that way never ends on its own. Every process of a run
(driver, JVM, Python daemon and workers) carries the run's own marker in its environment,
which is how the test finds any left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from logscan.scan import rows as R  # noqa: E402
from logscan.scan.tables import commit_order  # noqa: E402
from spark_jobs import faults  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"
MARKER = "LOGSCAN_TEST_RUN"
#: Generous bounds for a loaded two-core machine: hitting one is a failure, not a timing.
RUN_TIMEOUT_S = 900

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]


def _as_of() -> str:
    return str(json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"])


def _processes(run: str) -> list[int]:
    """The processes whose environment carries this run's marker."""
    needle = f"{MARKER}={run}".encode() + b"\0"
    out = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if needle in environ.read_bytes():
                out.append(int(environ.parent.name))
        except OSError:
            continue   # ended meanwhile, or not ours to read
    return out


class Run:
    """One command in its own process group and working folder, marked, paused where asked."""

    def __init__(self, tmp_path: Path, args: list[str], pause: str | None = None):
        self.id = uuid.uuid4().hex
        self.marker = tmp_path / "paused"
        self.log = tmp_path / "run.log"
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
               "PYSPARK_DRIVER_PYTHON": sys.executable, MARKER: self.id}
        env.pop(faults.PAUSE_AT, None)
        if pause:
            env.update({faults.PAUSE_AT: pause, faults.PAUSE_FILE: str(self.marker)})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def interrupt_when(self, reached) -> int:
        """SIGINT to the whole group once reached() holds; the exit status."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        try:
            while not reached():
                assert self.proc.poll() is None, f"ended ({self.proc.returncode}) before its stop:\n{self.text()}"
                assert time.monotonic() < deadline, "never reached its stop"
                time.sleep(0.1)
            os.killpg(self.proc.pid, signal.SIGINT)
            return self.proc.wait(RUN_TIMEOUT_S)
        finally:
            self.kill()

    def left(self) -> list[int]:
        """The run's processes still there once they had the time to go (the JVM's shutdown
        hooks, its daemon's workers): none, or what is stuck."""
        deadline = time.monotonic() + 60
        while (pids := _processes(self.id)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return pids

    def kill(self) -> None:
        for pid in _processes(self.id):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def _scans(output: Path) -> list[dict]:
    from deltalake import DeltaTable

    if not (output / R.SCANS_TABLE / "_delta_log").is_dir():
        return []
    return DeltaTable(str(output / R.SCANS_TABLE)).to_pyarrow_table().to_pylist()


def _has_scan(output: Path, table: str, scan_id: str) -> bool:
    from deltalake import DeltaTable

    if not (output / table / "_delta_log").is_dir():
        return False
    return DeltaTable(str(output / table)).to_pyarrow_table(filters=[("scan_id", "=", scan_id)]).num_rows > 0


def _stopped_cleanly(run: Run, status: int, program: str) -> None:
    text = run.text()
    assert status == 130, text
    assert f"{program}: interrupted (Ctrl-C)" in text and "Traceback" not in text, text
    assert "py4j" not in text and "EOFError" not in text, text   # no trace of the connections cut
    assert run.left() == [], "processes of the run left behind"


def test_ctrl_c_in_a_running_job_of_logscan_scan_exits_130_with_nothing_left(tmp_path):
    """The driver waits in a Spark job (a collect over the decode) whose tasks never end."""
    output = tmp_path / "tables"
    run = Run(tmp_path, ["-m", "logscan.cli", "scan", str(HANGING / "brokers"), "--output", str(output),
                         "--as-of", _as_of(), "--master", "local[2]", "--no-progress"], pause="decode")
    status = run.interrupt_when(run.marker.exists)
    _stopped_cleanly(run, status, "logscan")
    assert _scans(output) == []
    assert not any((output / t / "_delta_log").is_dir() for t in R.TABLES)   # nothing was committed


@pytest.mark.heavy
def test_ctrl_c_in_a_running_job_under_spark_connect_exits_130_with_nothing_left(tmp_path):
    """The same under Spark Connect (--remote 'local[2]': a Connect server started in the
    client's JVM): the session's operations are interrupted and that server ends with it."""
    pytest.importorskip("grpc")   # pyspark[connect]
    output = tmp_path / "tables"
    run = Run(tmp_path, ["-m", "logscan.cli", "scan", str(HANGING / "brokers"), "--output", str(output),
                         "--as-of", _as_of(), "--remote", "local[2]", "--no-progress"], pause="decode")
    status = run.interrupt_when(run.marker.exists)
    _stopped_cleanly(run, status, "logscan")
    assert _scans(output) == []
    assert not any((output / t / "_delta_log").is_dir() for t in R.TABLES)


def test_ctrl_c_between_two_commits_of_the_spark_job_leaves_the_scan_marked_unfinished(tmp_path):
    """spark_jobs/scan.py stopped on its driver between writing txn_spans' files and committing
    them: the tables committed before hold the scan whole, the others not at all, and the scans
    table (committed last) does not name it, so sql and report take it as unfinished."""
    output = tmp_path / "tables"
    run = Run(tmp_path, ["-m", "spark_jobs.scan", str(HANGING / "brokers"), "--output", str(output),
                         "--scan-id", "s", "--as-of", _as_of(), "--master", "local[2]"], pause="write:txn_spans")
    status = run.interrupt_when(run.marker.exists)
    _stopped_cleanly(run, status, "spark_jobs/scan.py")
    order = commit_order(R.TABLES.keys() - {"batches"})
    before = order[:order.index("txn_spans")]
    assert before and all(_has_scan(output, t, "s") for t in before)
    assert not any(_has_scan(output, t, "s") for t in order[order.index("txn_spans"):])
    assert _scans(output) == []
    from click.testing import CliRunner

    from logscan.cli import main

    res = CliRunner().invoke(main, ["sql", "--tables", str(output), "SELECT count(*) FROM files"])
    assert res.exit_code == 0 and "warning: scan 's' did not finish" in res.stderr, res.output


def test_ctrl_c_while_spark_starts_ends_the_jvm_it_was_starting(tmp_path):
    """SIGINT as soon as the JVM is there: pyspark forgets the JVM it launched when interrupted
    while waiting for it, and that JVM, its driver gone, waited forever."""
    run = Run(tmp_path, ["-m", "spark_jobs.scan", str(HANGING / "brokers"), "--output", str(tmp_path / "tables"),
                         "--as-of", _as_of(), "--master", "local[2]"])

    def jvm_started() -> bool:
        return any(b"java" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                   for pid in _processes(run.id) if Path(f"/proc/{pid}/cmdline").exists())

    status = run.interrupt_when(jvm_started)
    _stopped_cleanly(run, status, "spark_jobs/scan.py")


@pytest.mark.heavy
def test_ctrl_c_in_a_catalog_run_removes_its_staging_folder(tmp_path):
    """spark_jobs/scan.py --database stopped between staging txn_spans' files and committing
    them: its staging folder (marker and staged Parquet) goes with it, as a failure's does, and
    so does the folder a killed run had left there before it (a real process, SIGKILLed)."""
    from tests.spark.test_staging import Holder

    staging = tmp_path / "staging"
    Holder(str(staging), "killed-before").kill()
    run = Run(tmp_path, ["-m", "spark_jobs.scan", str(HANGING / "brokers"), "--database", "ls",
                         "--warehouse", str(tmp_path / "warehouse"), "--staging", str(staging),
                         "--scan-id", "s", "--as-of", _as_of(), "--master", "local[2]"], pause="write:txn_spans")
    staged_then = []

    def paused() -> bool:
        if run.marker.exists():
            staged_then.extend(str(p.relative_to(staging)) for p in staging.rglob("*.parquet"))
            return True
        return False

    status = run.interrupt_when(paused)
    _stopped_cleanly(run, status, "spark_jobs/scan.py")
    assert any("/txn_spans/" in p for p in staged_then), staged_then   # it had staged files
    assert not any(p.startswith("run-killed-before") for p in staged_then)   # swept as the run began
    assert list(staging.iterdir()) == []
