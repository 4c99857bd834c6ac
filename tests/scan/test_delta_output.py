"""`logscan scan --output DIR --executor local`: the local executor's Delta tables
(logscan.scan.delta) are the Spark job's, row for row and schema for schema, with the same
crash-safety promises (README, "The Delta output").

Both executors' tables are read the same way, through delta-rs (each table at its newest
version, one scan id), never by listing folders. The kills run the command as an operator
runs it, in its own process, stopped at a named point by wrapping logscan.scan.output.commit
(the process says it got there, then waits to be killed: no sleep decides where a kill lands).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan import delta
from logscan.scan import rows as R
from logscan.scan.output import table_schema
from logscan.scan.tables import DEFAULT_TABLES, commit_order

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CLUSTERS = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))
HANGING = FIXTURES / "hanging"
ALL = tuple(R.TABLES)
#: Generous bound for a loaded two-core machine: hitting it is a failure, not a timing.
RUN_TIMEOUT_S = 600


def _as_of(root: Path) -> int:
    return json.loads((root / "truth" / "truth.json").read_text())["recorded_at_ms"]


def _table(output: Path, name: str):
    from deltalake import DeltaTable

    return DeltaTable(str(output / name))


def rows(output: Path, name: str, scan_id: str) -> list[str]:
    """The scan's rows of a table as sorted JSON lines without the scan id (a duplicate or a
    missing row shows)."""
    if not (output / name / "_delta_log").is_dir():
        return []
    t = _table(output, name).to_pyarrow_table(filters=[("scan_id", "=", scan_id)])
    drop = ["scan_id", "finished_ms", "finished_time"] if name == R.SCANS_TABLE else ["scan_id"]
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.drop_columns(drop).to_pylist())


def versions(output: Path) -> dict[str, int]:
    return {p.name: _table(output, p.name).version() for p in output.iterdir() if (p / "_delta_log").is_dir()}


def write_local(root: Path, output: Path, scan_id: str, tables=ALL) -> int:
    return delta.write_tables([root / "brokers"], str(output), scan_id=scan_id, tables=tables,
                              as_of_ms=_as_of(root))


# --- the same tables as the Spark job's -------------------------------------------------------

@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(Spark's output, the local executor's output): every fixture cluster scanned into each,
    one scan id per cluster, every table."""
    pytest.importorskip("pyspark")
    from spark_jobs import scan as spark_scan
    from spark_jobs.session import DELTA_LIBS
    from tests.spark import local_session

    if not list(DELTA_LIBS.glob("delta-spark_*.jar")):
        pytest.skip("Delta jars missing: run `make delta-jars`")
    spark_out, local_out = tmp_path_factory.mktemp("spark"), tmp_path_factory.mktemp("local")
    with local_session("logscan-delta-output", 2) as spark:
        for root in CLUSTERS:
            spark_scan.run(spark, [root / "brokers"], str(spark_out), scan_id=root.name, as_of_ms=_as_of(root),
                           tables=spark_scan.TABLES)
    for root in CLUSTERS:
        assert write_local(root, local_out, root.name) == _as_of(root)
    return spark_out, local_out


@pytest.mark.spark
@pytest.mark.parametrize("name", [*ALL, R.SCANS_TABLE])
def test_each_table_has_the_spark_jobs_schema(both, name):
    spark_out, local_out = both
    assert _table(local_out, name).schema().to_json() == _table(spark_out, name).schema().to_json()
    assert _table(local_out, name).metadata().partition_columns == ["scan_id"]
    assert _table(local_out, name).schema().to_arrow().names == table_schema(name).names


@pytest.mark.spark
@pytest.mark.parametrize("cluster", CLUSTERS, ids=[c.name for c in CLUSTERS])
def test_each_table_has_the_spark_jobs_rows(both, cluster):
    spark_out, local_out = both
    for name in [*ALL, R.SCANS_TABLE]:
        got, want = rows(local_out, name, cluster.name), rows(spark_out, name, cluster.name)
        assert got == want, (name, len(got), len(want))
        if name in ("files", "batches", "txn_log", "txn_spans", "partition_state", "scans"):
            assert want, name


def test_commit_order_puts_the_largest_table_last():
    # Both executors commit through logscan.scan.tables.commit_scan, in this order.
    assert commit_order(ALL) == [*(t for t in R.TABLES if t != "batches"), "batches"]
    assert commit_order(reversed(DEFAULT_TABLES)) == list(DEFAULT_TABLES)


# --- crash safety ------------------------------------------------------------------------------

#: Run in a subprocess: `logscan scan --output --executor local`, stopped where LOGSCAN_TEST_STOP
#: names (before the commit of that table), where it touches LOGSCAN_TEST_HERE and waits.
_STOPPED = """
import os, sys, threading
from pathlib import Path
from logscan.scan import output
real = output.commit
def commit(out, table, scan_id, parts):
    if table == os.environ["LOGSCAN_TEST_STOP"]:
        # its files written (the Parquet of every table is), its commit not made
        assert parts and all((Path(out) / table / p["path"]).is_file() for p in parts)
        Path(os.environ["LOGSCAN_TEST_HERE"]).touch()
        threading.Event().wait()
    return real(out, table, scan_id, parts)
output.commit = commit
from logscan.cli import main
main(sys.argv[1:])
"""


def _cli_args(copy: Path, output: Path, scan_id: str) -> list[str]:
    return ["scan", str(copy), "--output", str(output), "--executor", "local", "--tables", "all",
            "--scan-id", scan_id, "--as-of", str(_as_of(HANGING)), "--no-progress"]


def _killed_at(table: str, copy: Path, output: Path, scan_id: str, work: Path) -> None:
    here = work / f"here-{table}"
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED, *_cli_args(copy, output, scan_id)], cwd=work,
                            env=dict(os.environ, PYTHONPATH=str(REPO), LOGSCAN_TEST_STOP=table,
                                     LOGSCAN_TEST_HERE=str(here)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not here.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the scan never reached its stopping point"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One output through a sequence of runs on a copy of the hanging cluster: scan ``a``
    whole; scan ``b`` killed before its txn_spans commit; ``b`` run again to the end, twice.
    The state after each, by name."""
    work = tmp_path_factory.mktemp("killed")
    copy = work / "copy"
    shutil.copytree(HANGING / "brokers", copy, symlinks=True)
    output = work / "tables"
    out = {}

    def state() -> dict:
        return {"versions": versions(output),
                "rows": {t: {s: rows(output, t, s) for s in ("a", "b")} for t in [*ALL, R.SCANS_TABLE]}}

    res = CliRunner().invoke(main, _cli_args(copy, output, "a"))
    assert res.exit_code == 4, res.output
    out["a"] = state()
    _killed_at("txn_spans", copy, output, "b", work)
    out["killed"] = state()
    for run in ("rerun", "rerun2"):
        res = CliRunner().invoke(main, _cli_args(copy, output, "b"))
        assert res.exit_code == 4, res.output
        out[run] = state()
    out["work"], out["copy"], out["output"] = work, copy, output
    return out


#: The tables the hanging cluster's scan has no row of (it has no consumer group).
NO_ROWS_HERE = {"committed_offsets", "affected_groups"}


def test_a_clean_scan_commits_each_table_once(runs):
    a = runs["a"]
    # the scans table: made empty before the first table's commit, then the scan's row last; a
    # table the scan has no row of (NO_ROWS_HERE) is created empty, once
    assert a["versions"] == {**{t: 0 for t in ALL}, R.SCANS_TABLE: 1}
    assert {t for t in ALL if not a["rows"][t]["a"]} == NO_ROWS_HERE
    for t in ("files", "batches", "txn_log", "txn_spans", "partition_state", "hanging_candidates", "abort_plans"):
        assert a["rows"][t]["a"], t


def test_a_scan_killed_before_a_commit_leaves_that_table_and_the_later_ones_as_they_were(runs):
    before, killed = runs["a"], runs["killed"]
    order = commit_order(ALL)
    done = order[:order.index("txn_spans")]
    for t in [*ALL, R.SCANS_TABLE]:
        if t in done and before["rows"][t]["a"]:
            assert killed["versions"][t] == before["versions"][t] + 1, t
            assert killed["rows"][t]["b"] == before["rows"][t]["a"], t       # b's rows whole
        else:
            assert killed["versions"].get(t) == before["versions"].get(t), t
            assert killed["rows"][t]["b"] == [], t                           # nothing of b
        assert killed["rows"][t]["a"] == before["rows"][t]["a"], t            # a's untouched
    # the killed run's txn_spans file is in the folder, named by no version
    folder = runs["output"] / "txn_spans" / "scan_id=b"
    named = {Path(f).name for f in _table(runs["output"], "txn_spans").file_uris()}
    assert [p for p in folder.iterdir() if p.name not in named]


@pytest.mark.parametrize("first", [True, False], ids=["first-scan", "rerun"])
def test_a_scan_cut_short_is_unfinished_for_readers_on_its_first_run_and_on_a_rerun(tmp_path, monkeypatch, first):
    """The scans table names a scan only once every table holds it whole: a first scan into a
    new folder, or a re-run of a finished scan id, stopped between two commits (a Ctrl-C) is
    one `logscan sql` warns of."""
    from logscan.scan import tables
    from logscan.sql.delta import delta_tables, unfinished_scans

    out = tmp_path / "tables"
    if not first:
        write_local(HANGING, out, "s")
        assert unfinished_scans(delta_tables(out)) == {}
    real = tables.output.commit

    def commit(output, table, scan_id, parts):
        if table == "txn_spans":
            raise KeyboardInterrupt
        return real(output, table, scan_id, parts)

    monkeypatch.setattr(tables.output, "commit", commit)
    with pytest.raises(KeyboardInterrupt):
        write_local(HANGING, out, "s")
    # the tables holding the scan's rows (the hanging cluster has no consumer group: no row of
    # committed_offsets and affected_groups, so no partition of the scan there)
    order = [t for t in commit_order(ALL) if t not in NO_ROWS_HERE]
    assert unfinished_scans(delta_tables(out)) == {"s": sorted(order if not first else order[:order.index("txn_spans")])}
    monkeypatch.undo()
    res = CliRunner().invoke(main, ["sql", "--tables", str(out), "SELECT count(*) AS n FROM files"])
    assert res.exit_code == 0 and "warning: scan 's' did not finish" in res.stderr, res.output


def test_rerunning_a_killed_scan_gives_the_rows_of_one_clean_scan(runs):
    for run in ("rerun", "rerun2"):
        for t in [*ALL, R.SCANS_TABLE]:
            assert runs[run]["rows"][t]["b"] == runs["a"]["rows"][t]["a"], (run, t)
            assert runs[run]["rows"][t]["a"] == runs["a"]["rows"][t]["a"], (run, t)
    # each re-run is one more version of every table holding rows; of the scans table two: the
    # scan's row is taken out before its tables are replaced, and put back after them
    for t, v in runs["rerun2"]["versions"].items():
        assert v == runs["rerun"]["versions"][t] + (2 if t == R.SCANS_TABLE else 0 if t in NO_ROWS_HERE else 1), t


def test_the_runs_leave_the_copy_as_it_was_and_nothing_in_their_folder(runs):
    for src in (HANGING / "brokers").rglob("*"):
        if src.is_file():
            assert (runs["copy"] / src.relative_to(HANGING / "brokers")).read_bytes() == src.read_bytes()
    assert sorted(p.name for p in runs["work"].iterdir()) == ["copy", "here-txn_spans", "tables"]


def test_the_local_executor_refuses_what_the_spark_job_refuses(tmp_path):
    inside = CliRunner().invoke(main, ["scan", str(HANGING / "brokers"), "--output",
                                       str(HANGING / "brokers" / "tables"), "--executor", "local"])
    assert inside.exit_code == 2 and "inside the input" in inside.output, inside.output
    bad_id = CliRunner().invoke(main, ["scan", str(HANGING / "brokers"), "--output", str(tmp_path / "t"),
                                       "--executor", "local", "--scan-id", "a/b"])
    assert bad_id.exit_code == 2 and "scan id" in bad_id.output, bad_id.output
    unknown = CliRunner().invoke(main, ["scan", str(HANGING / "brokers"), "--output", str(tmp_path / "t"),
                                        "--executor", "local", "--tables", "nope"])
    assert unknown.exit_code == 2 and "unknown table nope" in unknown.output, unknown.output
    alone = CliRunner().invoke(main, ["scan", str(HANGING / "brokers"), "--executor", "local"])
    assert alone.exit_code == 2 and "--executor" in alone.output, alone.output
    assert not (tmp_path / "t").exists() and not (HANGING / "brokers" / "tables").exists()


def test_the_command_prints_the_single_process_scans_summary_and_candidates(tmp_path):
    out = tmp_path / "tables with space"
    args = ["scan", str(HANGING / "brokers"), "--as-of", str(_as_of(HANGING)), "--no-progress"]
    res = CliRunner().invoke(main, [*args, "--output", str(out), "--executor", "local"])
    assert res.exit_code == 4, res.output
    text = res.stdout
    assert text.startswith("scan scan-") and f"\nTables: {out}\n" in text
    local = CliRunner().invoke(main, args)
    assert local.exit_code == 4, local.output
    assert text.split("\n", 1)[1].split("\nTables: ")[0].rstrip("\n") == local.stdout.rstrip("\n")
    listed = text.split(f"\nTables: {out}\n")[1].splitlines()[0].split(" (Delta tables")[0].strip().split(", ")
    assert listed == sorted([*(t for t in ALL if t != "batches"), R.SCANS_TABLE])   # --tables' default
    assert f"logscan sql --tables '{out}' " in text
    printed = CliRunner().invoke(main, [*args, "--output", str(out), "--executor", "local", "--format", "json"])
    assert printed.exit_code == 4 and "scan scan-" in printed.stderr, printed.output
    want = [json.loads(line) for line in CliRunner().invoke(main, [*args, "--format", "json"]).stdout.splitlines()]
    got = [json.loads(line) for line in printed.stdout.splitlines()]
    assert want and [{k: g[k] for k in want[0]} for g in got] == want
