"""logscan.report.data on small Delta tables written with delta-rs (no Spark): which scan,
what counts as lagging (the summary's rule), the newest version only."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from logscan.report.data import NoScan, load
from logscan.scan.summary import is_lagging
from logscan.sql.delta import TablesError

pytest.importorskip("deltalake")
from deltalake import write_deltalake  # noqa: E402

AS_OF = datetime(2026, 11, 22, 3, 0, tzinfo=timezone.utc)


def _state(scan_id: str, rows: list[tuple[int, str, int, int, int]], as_of: datetime = AS_OF) -> pa.Table:
    """partition_state rows (broker, topic, partition, lso_lag, open_transactions)."""
    cols = {"broker": [], "topic": [], "partition": [], "log_start_offset": [], "log_end_offset": [],
            "high_watermark": [], "last_stable_offset": [], "lso_lag": [], "open_transactions": []}
    for broker, topic, partition, lag, open_ in rows:
        for k, v in zip(cols, (broker, topic, partition, 0, 10, 10, 10 - lag, lag, open_)):
            cols[k].append(v)
    n = len(rows)
    return pa.table({**{k: pa.array(v, pa.int32() if k in ("broker", "partition", "open_transactions")
                                     else pa.string() if k == "topic" else pa.int64()) for k, v in cols.items()},
                     "leader": pa.array([None] * n, pa.int32()), "is_leader": pa.array([None] * n, pa.bool_()),
                     "replicas_agree": pa.array([True] * n),
                     "has_late_transaction": pa.array([False] * n),
                     "copy_gap": pa.array([None] * n, pa.string()), "log_fault": pa.array([None] * n, pa.string()),
                     "scan_id": pa.array([scan_id] * n), "as_of": pa.array([as_of] * n, pa.timestamp("us", "UTC"))})


ROWS = [(0, "a", 0, 2, 1),    # LSO held back by an open transaction
        (1, "a", 0, 0, 1),    # a transaction open, the LSO not (yet) behind: lagging by the summary's rule
        (0, "b", 0, 0, 0)]


def _tables(tmp_path: Path) -> Path:
    write_deltalake(str(tmp_path / "partition_state"), _state("s1", ROWS), partition_by=["scan_id"])
    return tmp_path


def test_lagging_replicas_follow_the_summarys_rule(tmp_path):
    data = load(_tables(tmp_path))
    expected = sum(is_lagging({"lso_lag": r[3], "open_transactions": r[4]}) for r in ROWS)
    assert expected == 2 and data["head"]["lagging_replicas"] == expected
    assert data["head"] == {"as_of": int(AS_OF.timestamp() * 1000), "replicas": 3, "partitions": 2,
                            "open_transactions": 2, "lagging_replicas": 2, "brokers": 2}
    # one row per partition, the replica furthest ahead (ties: lowest broker), worst lag first
    assert [(p["topic"], p["broker"], p["lso_lag"]) for p in data["partitions"]] == [("a", 0, 2), ("b", 0, 0)]
    assert data["spans"] == [] and data["candidates"] == [] and data["plans"] is None and data["input"] is None


def test_newest_scan_by_default_and_only_the_newest_table_version(tmp_path):
    tables = _tables(tmp_path)
    later = datetime(2026, 11, 23, tzinfo=timezone.utc)
    write_deltalake(str(tables / "partition_state"), _state("s2", ROWS[:1], later), mode="append",
                    partition_by=["scan_id"])
    assert load(tables)["scan_id"] == "s2" and load(tables, "s1")["head"]["replicas"] == 3
    # Overwrite s1's rows: its old files stay in the folder, but Delta's log has removed them.
    write_deltalake(str(tables / "partition_state"), _state("s1", ROWS[2:]), mode="overwrite",
                    predicate="scan_id = 's1'", partition_by=["scan_id"])
    assert load(tables, "s1")["head"]["replicas"] == 1


def test_no_scan_and_no_tables_are_one_sentence(tmp_path):
    tables = _tables(tmp_path)
    with pytest.raises(NoScan, match="no rows for scan id 'nope'"):
        load(tables, "nope")
    (tmp_path / "other").mkdir()
    with pytest.raises(TablesError, match="no Delta tables"):
        load(tmp_path / "other")


def _scans(scan_ids: list[str]) -> pa.Table:
    """The scans table's rows (R.SCANS plus the tags) for these finished scans."""
    n = len(scan_ids)
    return pa.table({"tables": pa.array([["partition_state"]] * n, pa.list_(pa.string())),
                     "inputs": pa.array([["/copy"]] * n, pa.list_(pa.string())),
                     "finished_ms": pa.array([1] * n, pa.int64()), "scan_id": pa.array(scan_ids),
                     "as_of": pa.array([AS_OF] * n, pa.timestamp("us", "UTC"))})


def test_a_scan_that_did_not_finish_is_refused_with_the_tables_holding_it(tmp_path):
    # A Spark scan commits its scans row after every table: a scan id some table holds and the
    # scans table does not name was killed mid-write; its page would look whole.
    from logscan.sql.delta import delta_tables, unfinished_scans

    tables = _tables(tmp_path)
    write_deltalake(str(tables / "scans"), _scans(["s0"]), partition_by=["scan_id"])
    assert unfinished_scans(delta_tables(tables)) == {"s1": ["partition_state"]}
    with pytest.raises(NoScan, match=r"scan 's1' did not finish .*partition_state hold it"):
        load(tables)
    write_deltalake(str(tables / "scans"), _scans(["s1"]), mode="append", partition_by=["scan_id"])
    assert unfinished_scans(delta_tables(tables)) == {} and load(tables)["scan_id"] == "s1"
    # Tables written before the scans table existed: nothing to tell, as before.
    assert unfinished_scans(delta_tables(_tables(tmp_path / "old"))) == {}


def test_logscan_sql_warns_of_a_scan_that_did_not_finish_and_still_answers(tmp_path):
    from click.testing import CliRunner

    from logscan.cli import main

    tables = _tables(tmp_path)
    write_deltalake(str(tables / "scans"), _scans(["s0"]), partition_by=["scan_id"])
    result = CliRunner().invoke(main, ["sql", "--tables", str(tables), "SELECT count(*) AS n FROM partition_state"])
    assert result.exit_code == 0, result.output
    assert "warning: scan 's1' did not finish" in result.stderr and "partition_state hold it" in result.stderr
    assert "3" in result.stdout
    write_deltalake(str(tables / "scans"), _scans(["s1"]), mode="append", partition_by=["scan_id"])
    result = CliRunner().invoke(main, ["sql", "--tables", str(tables), "SELECT 1 AS one"])
    assert result.exit_code == 0 and "warning" not in result.stderr
