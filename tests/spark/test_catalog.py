"""Catalog tables (issue 31 item 4): `spark_jobs/scan.py --database NAME` writes the scan's tables
with saveAsTable into the session's catalog, with the promises of the path-based tables.

The job runs as an operator runs it (``python -m spark_jobs.scan``, its own process group, an
empty working folder) into a local catalog, ``--warehouse WH`` (a Hive metastore in
WH/metastore_db, the managed tables under WH/ls.db/), on a copy of the `hanging` fixture cluster.
Each run is its own JVM: Derby lets one process at a time open the metastore, so this module
starts no Spark session of its own and reads the managed tables' Delta logs with delta-rs (the
catalog itself is read by `logscan sql --engine spark --database`, last). In order:

1. scan ``a``: every table equals the local executor's (rows, columns, comments);
2. scan ``b`` killed (SIGKILL, spark_jobs.faults) before partition_state's commit: the tables
   committed before it hold ``b`` whole, partition_state and the later ones are at their
   previous version, the scans table does not name ``b``;
3. scan ``b`` run again: every table holds ``b``'s rows once, as ``a``'s, and the killed run's
   staging folder, left by the kill, is gone (spark_jobs.staging: its process is gone).
No run leaves a file in its working folder, nor a staging folder once a later run has run.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from logscan.scan import delta as local_delta  # noqa: E402
from logscan.scan import rows as R  # noqa: E402
from logscan.scan.tables import DEFAULT_TABLES, commit_order  # noqa: E402
from spark_jobs import faults  # noqa: E402
from spark_jobs.catalog import STAGING_FOLDER  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.heavy,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"
TABLES = [*DEFAULT_TABLES, R.SCANS_TABLE]
KILLED_AT = "partition_state"
#: Generous bound for a loaded two-core machine: hitting it is a failure, not a timing.
RUN_TIMEOUT_S = 1200


def as_of() -> int:
    return json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"]


def _env(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, **extra}
    if faults.PAUSE_AT not in extra:
        env.pop(faults.PAUSE_AT, None)
    return env


class Job:
    """One run of the job into the catalog, in its own process group and empty folder."""

    def __init__(self, work: Path, name: str, copy: Path, warehouse: Path, scan_id: str,
                 pause: str | None = None):
        self.cwd = work / f"cwd-{name}"
        self.cwd.mkdir()
        self.marker = work / f"paused-{name}"
        self.log = work / f"{name}.log"
        extra = {faults.PAUSE_AT: pause, faults.PAUSE_FILE: str(self.marker)} if pause else {}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "spark_jobs.scan", str(copy), "--database", "ls", "--warehouse",
                 str(warehouse), "--scan-id", scan_id, "--as-of", str(as_of()), "--master", "local[2]"],
                cwd=self.cwd, env=_env(**extra), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> int:
        try:
            return self.proc.wait(RUN_TIMEOUT_S)
        finally:
            self._kill()

    def kill_when_paused(self) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        try:
            while not self.marker.exists():
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


def _table(folder: Path):
    from deltalake import DeltaTable

    return DeltaTable(str(folder))


def rows(folder: Path, name: str, scan_id: str) -> list[str]:
    """A table's rows of one scan as sorted JSON lines without the scan id (the scans row
    without its finishing time)."""
    if not (folder / name / "_delta_log").is_dir():
        return []
    t = _table(folder / name).to_pyarrow_table(filters=[("scan_id", "=", scan_id)])
    drop = ["scan_id", "finished_ms", "finished_time"] if name == R.SCANS_TABLE else ["scan_id"]
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.drop_columns(drop).to_pylist())


def columns(folder: Path, name: str) -> list[tuple]:
    """(name, Delta type, comment) of each column: what DESCRIBE shows."""
    fields = json.loads(_table(folder / name).schema().to_json())["fields"]
    return [(f["name"], json.dumps(f["type"], sort_keys=True), (f.get("metadata") or {}).get("comment"))
            for f in fields]


def version(folder: Path, name: str) -> int:
    return _table(folder / name).version() if (folder / name / "_delta_log").is_dir() else -1


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("catalog")
    copy = work / "copy"
    shutil.copytree(HANGING / "brokers", copy, symlinks=True)
    warehouse = work / "warehouse"
    tables = warehouse / "ls.db"   # the managed tables' folders (read here with delta-rs only)
    local = work / "local"
    local_delta.write_tables([copy], str(local), scan_id="a", tables=DEFAULT_TABLES, as_of_ms=as_of())

    def state() -> dict:
        return {"versions": {t: version(tables, t) for t in TABLES},
                "rows": {t: {s: rows(tables, t, s) for s in ("a", "b")} for t in TABLES}}

    out = {"work": work, "tables": tables, "local": local, "warehouse": warehouse}
    job = Job(work, "a", copy, warehouse, "a")
    out["a_exit"] = job.wait()
    out["a_log"] = job.log.read_text()
    out["a"] = state()
    job = Job(work, "b-killed", copy, warehouse, "b", pause=f"write:{KILLED_AT}")
    job.kill_when_paused()
    out["killed"] = state()
    out["staged_after_kill"] = staged(warehouse)
    job = Job(work, "b", copy, warehouse, "b")
    out["b_exit"] = job.wait()
    out["b_log"] = job.log.read_text()
    out["rerun"] = state()
    sql = subprocess.run([sys.executable, "-m", "logscan.cli", "sql", "--engine", "spark", "--master", "local[1]",
                          "--database", "ls", "--warehouse", str(warehouse), "--format", "json",
                          "SELECT scan_id, count(*) AS n FROM partition_state GROUP BY scan_id ORDER BY scan_id; "
                          "DESCRIBE hanging_candidates"],
                         cwd=work / "cwd-a", env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    out["sql"] = sql
    return out


def test_the_catalog_tables_are_the_local_executors(runs):
    assert runs["a_exit"] == 0, runs["a_log"][-3000:]   # spark_jobs/scan.py: 0 when done, hanging or not
    assert "the catalog tables ls.<table>" in runs["a_log"]
    for name in TABLES:
        assert runs["a"]["rows"][name]["a"] == rows(runs["local"], name, "a"), name
        assert columns(runs["tables"], name) == columns(runs["local"], name), name
        assert all(comment for _, _, comment in columns(runs["tables"], name)), name
    for name in ("files", "txn_log", "txn_spans", "partition_state", "hanging_candidates", "abort_plans", "scans"):
        assert runs["a"]["rows"][name]["a"], name


def test_a_scan_killed_before_a_commit_leaves_that_table_and_the_later_ones_as_they_were(runs):
    before, killed = runs["a"], runs["killed"]
    order = commit_order(DEFAULT_TABLES)
    done = order[:order.index(KILLED_AT)]
    for t in TABLES:
        if t in done:
            assert killed["rows"][t]["b"] == before["rows"][t]["a"], t          # b whole
            if before["rows"][t]["a"]:
                assert killed["versions"][t] == before["versions"][t] + 1, t   # in one commit
        elif t != R.SCANS_TABLE:
            assert killed["versions"][t] == before["versions"][t], t            # not touched
            assert killed["rows"][t]["b"] == [], t
        assert killed["rows"][t]["a"] == before["rows"][t]["a"], t               # a's untouched
    # the scans table does not name b: readers know it is not whole
    assert killed["rows"][R.SCANS_TABLE]["b"] == []


def test_rerunning_the_killed_scan_gives_the_rows_of_one_clean_scan(runs):
    assert runs["b_exit"] == 0, runs["b_log"][-3000:]
    rerun = runs["rerun"]
    for t in TABLES:
        assert rerun["rows"][t]["b"] == rerun["rows"][t]["a"] == runs["a"]["rows"][t]["a"], t


def test_the_catalog_answers_logscan_sql_by_the_tables_short_names(runs):
    sql = runs["sql"]
    assert sql.returncode == 0, sql.stderr[-3000:]
    assert "did not finish" not in sql.stderr   # b was made whole by the re-run
    lines = [json.loads(line) for line in sql.stdout.splitlines()]
    counts = {r["scan_id"]: r["n"] for r in lines if "scan_id" in r}
    assert counts == {"a": len(runs["a"]["rows"]["partition_state"]["a"])} | {"b": counts["a"]} and counts["a"]
    comments = {r["col_name"]: r["comment"] for r in lines if "col_name" in r}
    assert comments["hanging"] and comments["scan_id"]


def staged(warehouse: Path) -> list[str]:
    """The staging folders of runs under the warehouse's staging folder."""
    base = warehouse / STAGING_FOLDER
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def test_the_runs_leave_nothing_in_their_folders_and_no_staging_even_when_killed(runs):
    for cwd in runs["work"].glob("cwd-*"):
        assert list(cwd.iterdir()) == [], cwd
    # the killed run could not clean up: its folder stayed, with the marker naming it ...
    assert len(runs["staged_after_kill"]) == 1, runs["staged_after_kill"]
    # ... until the next run, seeing that run gone, removed it (its own removed as it ended)
    assert staged(runs["warehouse"]) == []


def test_logscan_scan_writes_catalog_tables_and_prints_what_the_local_scan_prints(runs):
    # after the runs above (one JVM at a time on the Derby metastore): a database of its own
    from click.testing import CliRunner

    from logscan.cli import main

    cwd = runs["work"] / "cwd-logscan-scan"
    cwd.mkdir()
    args = [str(HANGING / "brokers"), "--as-of", str(as_of()), "--format", "json", "--no-progress"]
    res = subprocess.run([sys.executable, "-m", "logscan.cli", "scan", *args, "--database", "by_cli",
                          "--warehouse", str(runs["warehouse"]), "--master", "local[2]"],
                         cwd=cwd, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert res.returncode == 4, res.stderr[-3000:]   # hanging transactions found, as the local scan
    local = CliRunner().invoke(main, ["scan", *args])
    assert local.exit_code == 4, local.output
    assert res.stdout.splitlines() == local.stdout.splitlines() and res.stdout   # the candidates, as JSON
    assert "into the catalog tables by_cli.<table>" in res.stderr
    assert f"logscan sql --engine spark --database by_cli --warehouse {runs['warehouse']}" in res.stderr
    assert _table(runs["warehouse"] / "by_cli.db" / "partition_state").to_pyarrow_table().num_rows \
        == len(runs["a"]["rows"]["partition_state"]["a"])
    assert list(cwd.iterdir()) == []


def _logscan(runs, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logscan.cli", *args], cwd=runs["work"] / "cwd-a", env=_env(),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def _report_data(data: dict) -> dict:
    """A report's data but where it read the tables from (the page's header line, the commands)."""
    return {k: v for k, v in data.items() if k not in ("tables", "queries")}


def test_report_and_diff_read_the_catalog_tables_of_a_warehouse_without_a_jvm(runs):
    from logscan.report import data, diff
    from logscan.sql.delta import warehouse_tables

    warehouse = str(runs["warehouse"])
    at = ["--database", "ls", "--warehouse", warehouse]
    # the page of scan a from the catalog is the one of the local executor's folder
    assert _report_data(data.load(warehouse_tables("ls", warehouse), "a")) == _report_data(data.load(runs["local"], "a"))
    res = _logscan(runs, "report", *at, "--scan-id", "a", "--format", "md", "--out", "-")
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"the catalog tables ls.<table> of {warehouse}" in res.stdout
    # where a page shows part of a list, its command lists all: as the CLI makes it, run as printed
    page = data.load(warehouse_tables("ls", warehouse), "a", sql_args=["--database", "ls", "--warehouse", warehouse])
    command = shlex.split(page["queries"]["plans"])
    assert command[:6] == ["logscan", "sql", "--database", "ls", "--warehouse", warehouse]
    res = _logscan(runs, *command[1:], "--format", "json")
    assert res.returncode == 0 and len(res.stdout.splitlines()) == len(page["plans"]) > 0, res.stderr[-3000:]
    # the diff of a and b (the same copy) from the catalog is the local folder's, given both scans
    local_delta.write_tables([runs["work"] / "copy"], str(runs["local"]), scan_id="b", tables=DEFAULT_TABLES,
                             as_of_ms=as_of())
    res = _logscan(runs, "diff", "a", "b", *at, "--format", "json")
    assert res.returncode == 4, res.stderr[-3000:]   # b hangs
    assert json.loads(res.stdout) == json.loads(diff.as_json(diff.load(runs["local"], "a", "b")))
    # logscan sql's embedded engine reads them there too
    res = _logscan(runs, "sql", *at, "--format", "json",
                   "SELECT scan_id, count(*) AS n FROM partition_state GROUP BY scan_id ORDER BY scan_id")
    assert res.returncode == 0, res.stderr[-3000:]
    n = len(runs["a"]["rows"]["partition_state"]["a"])
    assert [json.loads(line) for line in res.stdout.splitlines()] == [{"scan_id": "a", "n": n}, {"scan_id": "b", "n": n}]


def test_without_a_warehouse_the_embedded_readers_say_to_use_the_spark_engine(runs):
    for args in (["report", "--database", "ls"], ["diff", "a", "b", "--database", "ls"],
                 ["sql", "--table-prefix", "spark_catalog.ls.", "SELECT 1"]):
        res = _logscan(runs, *args)
        assert res.returncode == 2, res
        assert "give --engine spark" in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert len([line for line in res.stderr.splitlines() if line.startswith("Error:")]) == 1


def test_report_with_the_spark_engine_asks_the_catalog_where_the_tables_are(runs):
    from logscan.report import data

    warehouse = str(runs["warehouse"])
    res = _logscan(runs, "report", "--database", "ls", "--warehouse", warehouse, "--engine", "spark",
                   "--scan-id", "a", "--format", "md", "--out", "-")
    assert res.returncode == 0, res.stderr[-3000:]
    embedded = _logscan(runs, "report", "--database", "ls", "--warehouse", warehouse, "--scan-id", "a",
                        "--format", "md", "--out", "-")
    assert embedded.returncode == 0 and res.stdout == embedded.stdout   # the same page
