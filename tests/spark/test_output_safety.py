"""A killed scan loses nothing: the Spark job's Delta output under SIGKILL, re-runs and company.

The job runs as an operator runs it (``python -m spark_jobs.scan --tables all``, its own process
group, an empty working folder) on a copy of the `hanging` fixture cluster. It is stopped at named
points with spark_jobs.faults (LOGSCAN_PAUSE_AT: the job says it got there, then waits) and
killed there with SIGKILL on its whole process group (driver, JVM, Python workers): no
sleeps decide where a kill lands. Rows are compared as sorted JSON lines read through Delta,
so a duplicate or a missing row shows. One sequence of runs on one output, stages in order:

1. scan ``a``: the reference rows;
2. scan ``b`` killed in its decode tasks: every table as after 1;
3. scan ``b`` killed inside the Delta write of ``batches`` (one of its data files already in
   the table's folder) once every other table has committed: ``batches`` as after 1, every
   other table with ``b``'s complete rows in one more version;
4. scan ``b`` re-run to the end (ten tables written by ``b`` a second time), at the same time
   as scan ``a`` into a second output: both succeed, ``b``'s rows are ``a``'s once (nothing
   of the killed runs left), the second output equals the first.
Through it all the input copy keeps every byte, mode and mtime, and no run leaves a file in
its working folder (spark-warehouse, metastore_db, derby.log).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402

from logscan.scan import rows as R  # noqa: E402
from spark_jobs import faults  # noqa: E402
from spark_jobs import scan as spark_scan  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402
from tests.spark import local_session  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"
TABLES = list(R.TABLES)
#: Tables the hanging cluster has rows in (an empty one would prove nothing about its rows).
NEVER_EMPTY = {"files", "batches", "txn_log", "coordinator_state", "producer_snapshots", "producer_state",
               "txn_spans", "partition_state", "hanging_candidates", "abort_plans"}
#: Generous bounds for a loaded two-core machine: hitting one is a failure, not a timing.
RUN_TIMEOUT_S = 1200

pytestmark = pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                reason="Delta jars missing: run `make delta-jars`")


def as_of() -> str:
    return str(json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"])


def digest(root: Path) -> dict[str, tuple]:
    """Every file and folder under root: mode, mtime, and the bytes' hash or the listing."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        st = d.stat()
        out[str(d.relative_to(root))] = (st.st_mode, st.st_mtime_ns, tuple(sorted(dirnames + filenames)))
        for name in filenames:
            p = d / name
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_mode, st.st_mtime_ns, st.st_size,
                                             hashlib.sha256(p.read_bytes()).hexdigest())
    return out


class Job:
    """One run of the job in its own process group and its own empty working folder."""

    def __init__(self, work: Path, name: str, inputs: Path, output: Path, scan_id: str, pause: str | None = None):
        self.cwd = work / f"cwd-{name}"
        self.cwd.mkdir()
        self.marker = work / f"paused-{name}"
        self.log = work / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
               "PYSPARK_DRIVER_PYTHON": sys.executable}
        env.pop(faults.PAUSE_AT, None)
        if pause:
            env.update({faults.PAUSE_AT: pause, faults.PAUSE_FILE: str(self.marker)})
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "spark_jobs.scan", str(inputs), "--output", str(output),
                 "--scan-id", scan_id, "--as-of", as_of(), "--master", "local[2]", "--tables", "all"],
                cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> int:
        try:
            return self.proc.wait(RUN_TIMEOUT_S)
        finally:
            self._kill()

    def kill_when(self, condition) -> None:
        """SIGKILL the whole job once condition() holds (checked while the job waits there)."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        try:
            while not condition():
                assert self.proc.poll() is None, f"the job ended ({self.proc.returncode}) before its stop:\n" \
                                                 + self.log.read_text()[-3000:]
                assert time.monotonic() < deadline, "the job never reached its stop"
                time.sleep(0.2)
        finally:
            self._kill()
        assert self.proc.returncode == -signal.SIGKILL

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def version(table_dir: Path) -> int:
    """The table's newest committed version (-1: no table)."""
    commits = [int(p.stem) for p in (table_dir / "_delta_log").glob("*.json") if p.stem.isdigit()]
    return max(commits, default=-1)


def rows(spark, output: Path, scan_id: str) -> dict[str, list[str]]:
    """Each table's rows of one scan, read through Delta, as sorted JSON without the scan id."""
    out = {}
    for table in TABLES:
        df = spark.read.format("delta").load(str(output / table))
        lines = df.where(df.scan_id == scan_id).drop("scan_id").select(F.to_json(F.struct("*")))
        out[table] = sorted(r[0] for r in lines.collect())
    return out


def state(spark, output: Path) -> dict:
    from logscan.sql.delta import delta_tables, unfinished_scans

    return {"versions": {t: version(output / t) for t in TABLES},
            "a": rows(spark, output, "a"), "b": rows(spark, output, "b"),
            "unfinished": unfinished_scans(delta_tables(output))}


@pytest.fixture(scope="module")
def spark():
    with local_session("logscan-output-safety", 1) as session:
        yield session


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("safety")


@pytest.fixture(scope="module")
def copy(work) -> tuple[Path, dict]:
    """A read-only copy of the cluster and its digest before any run."""
    root = work / "copy"
    shutil.copytree(HANGING / "brokers", root)
    for dirpath, _, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o444)
        os.chmod(dirpath, 0o555)
    return root, digest(root)


@pytest.fixture(scope="module")
def reference(spark, work, copy) -> dict:
    job = Job(work, "a", copy[0], work / "out", "a")
    assert job.wait() == 0, job.log.read_text()[-3000:]
    return state(spark, work / "out")


@pytest.fixture(scope="module")
def killed_in_decode(spark, work, copy, reference) -> dict:
    job = Job(work, "b-decode", copy[0], work / "out", "b", pause="decode")
    job.kill_when(job.marker.exists)
    return state(spark, work / "out")


def next_version(before: dict, table: str) -> int:
    """The version after writing the reference rows again as scan b: Delta records no commit
    for a write that adds and removes nothing (corruptions of a healthy copy)."""
    return before["versions"][table] + (1 if before["a"][table] else 0)


def unreferenced_files(table_dir: Path, scan_id: str) -> list[Path]:
    return sorted((table_dir / f"scan_id={scan_id}").glob("*.parquet"))


@pytest.fixture(scope="module")
def killed_in_write(spark, work, copy, reference, killed_in_decode) -> tuple[dict, list[Path]]:
    job = Job(work, "b-write", copy[0], work / "out", "b", pause="write:batches")
    others = [t for t in TABLES if t != "batches"]

    def stop() -> bool:   # batches' write begun and stuck, every other table committed
        return (job.marker.exists() and bool(unreferenced_files(work / "out" / "batches", "b"))
                and all(version(work / "out" / t) == next_version(reference, t) for t in others))

    job.kill_when(stop)
    return state(spark, work / "out"), unreferenced_files(work / "out" / "batches", "b")


@pytest.fixture(scope="module")
def rerun_and_second_output(spark, work, copy, killed_in_write) -> dict:
    rerun = Job(work, "b-rerun", copy[0], work / "out", "b")
    other = Job(work, "a-other", copy[0], work / "out2", "a")
    codes = {"rerun": rerun.wait(), "other": other.wait()}
    assert codes == {"rerun": 0, "other": 0}, (rerun.log.read_text()[-3000:], other.log.read_text()[-3000:])
    return {"out": state(spark, work / "out"), "out2": state(spark, work / "out2")}


def test_a_clean_scan_commits_each_table_once(reference):
    assert reference["versions"] == {t: 0 for t in TABLES}
    assert {t for t in TABLES if reference["a"][t]} >= NEVER_EMPTY
    assert reference["b"] == {t: [] for t in TABLES}


def test_a_scan_killed_while_decoding_changes_no_table(work, reference, killed_in_decode):
    assert killed_in_decode == reference
    assert not list((work / "out").glob("*/scan_id=b"))


def test_a_scan_killed_inside_a_table_write_leaves_that_table_at_its_previous_version(
        reference, killed_in_write):
    after, orphans = killed_in_write
    # The write had begun: its data files are in the table's folder, yet no reader sees them.
    assert orphans
    # The readers can tell: scan b has no row in the scans table, and the tables holding it are named.
    # (a table the scan gave no row, e.g. committed_offsets of a copy without consumer groups,
    # holds no scan_id=b partition to name)
    holding = sorted(t for t in TABLES if t != "batches" and reference["a"][t])
    assert reference["unfinished"] == {} and after["unfinished"] == {"b": holding}
    assert after["versions"]["batches"] == reference["versions"]["batches"]
    assert after["b"]["batches"] == []
    assert after["a"] == reference["a"]
    for table in TABLES:
        if table != "batches":   # committed before the kill: one more version with the whole of b
            assert after["versions"][table] == next_version(reference, table), table
            assert after["b"][table] == reference["a"][table], table


def test_rerunning_a_killed_scan_gives_the_rows_of_one_clean_scan(reference, rerun_and_second_output):
    out = rerun_and_second_output["out"]
    assert out["unfinished"] == {}
    assert out["a"] == reference["a"]
    assert out["b"] == reference["a"]    # the same copy and as-of: the same rows, once


def test_two_scans_into_different_outputs_run_at_once(reference, rerun_and_second_output):
    out2 = rerun_and_second_output["out2"]
    assert out2["versions"] == {t: 0 for t in TABLES}
    assert out2["a"] == reference["a"]
    assert out2["b"] == {t: [] for t in TABLES}


def test_rerunning_a_scan_twice_replaces_its_rows(reference, killed_in_write, rerun_and_second_output):
    before, _ = killed_in_write
    out = rerun_and_second_output["out"]
    # Every table with rows got exactly one more commit from the completed re-run.
    assert out["versions"] == {t: next_version(before, t) for t in TABLES}


def test_the_input_copy_is_untouched(copy, rerun_and_second_output):
    root, before = copy
    assert digest(root) == before


def test_no_run_leaves_files_in_its_working_folder_or_beside_the_tables(work, rerun_and_second_output):
    cwds = sorted(work.glob("cwd-*"))
    assert len(cwds) == 5
    assert {c.name: sorted(p.name for p in c.iterdir()) for c in cwds} == {c.name: [] for c in cwds}
    for output in (work / "out", work / "out2"):
        assert sorted(p.name for p in output.iterdir()) == sorted([*TABLES, R.SCANS_TABLE])


def test_the_job_refuses_an_output_inside_an_input_before_spark_starts(copy, capsys):
    # A request that cannot run is a usage error (exit 2, one sentence), as logscan scan
    # --output says it (scan_cli.check_request): exit 1 would say "damage found".
    root, before = copy
    for output in (root, root / "broker-0" / "tables"):
        assert spark_scan.main([str(root), "--output", str(output), "--master", "local[1]"]) == 2
        assert "the scan never writes into the copied log dirs" in capsys.readouterr().err
    for scan_id in ("a b", "x'; DROP", "ok\n", "a" * 101):
        assert spark_scan.main([str(root), "--output", str(root.parent / "t"), "--scan-id", scan_id]) == 2
        assert f"scan id {scan_id!r}: use 1 to 100 letters" in capsys.readouterr().err
    assert digest(root) == before
