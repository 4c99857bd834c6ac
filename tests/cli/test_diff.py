"""`logscan diff` on two scans of the hanging cluster written into one tables folder by the
local executor (delta-rs, no JVM), and `logscan report --format md` on the same tables.

The later copy is fixtures/hanging as recorded. The earlier one is the same cluster's files as
they stood before two appends (copy_shapes: no byte written, a log cut at a batch boundary and
its checkpoints lowered to match, as the brokers had them then): on every replica of
``replica``/0 the log ends before the COMMIT marker of its transaction (so the transaction is
open there, and one hour on, with the coordinator at CompleteCommit, a missed marker), and
``hang``/0 is empty (its hanging batch not yet written). The diff must then name hang-0's hang
as new, replica-0's as resolved by its COMMIT marker with the LSO moving to the high
watermark, and the other hangs as still hanging, with their ages from both scans.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.format.batch import RecordBatch
from logscan.format.logfile import walk_batches
from tests.scan.copy_shapes import copy_cluster, read_checkpoint, write_checkpoint

from .conftest import HANGING, truth

pytest.importorskip("deltalake")

HOUR = 3_600_000
CONTROL = 0x20   # the batch attributes' isControl bit


def _control_position(log: Path) -> tuple[int, int]:
    """(byte position, offset) of the log's first control batch."""
    for entry in walk_batches(log.read_bytes()):
        assert isinstance(entry, RecordBatch), entry
        if entry.attributes & CONTROL:
            return entry.position, entry.base_offset
    raise AssertionError(f"{log}: no control batch")


def _cut(folder: Path, position: int, offset: int) -> None:
    """The partition as its broker had it when its log ended at ``offset`` (byte ``position``):
    the log cut there, its trimmed indexes emptied, snapshots past it gone, and the log dir's
    high watermark and recovery point lowered to it."""
    (log,) = folder.glob("*.log")
    log.write_bytes(log.read_bytes()[:position])
    for index in [*folder.glob("*.index"), *folder.glob("*.timeindex")]:
        index.write_bytes(b"")
    for snapshot in folder.glob("*.snapshot"):
        if int(snapshot.stem) > offset:
            snapshot.unlink()
    topic, partition = folder.name.rsplit("-", 1)
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        checkpoint = folder.parent / name
        write_checkpoint(checkpoint, [(t, p, min(o, offset) if (t, p) == (topic, int(partition)) else o)
                                      for t, p, o in read_checkpoint(checkpoint)])


def earlier_copy(tmp: Path) -> Path:
    copy = copy_cluster(HANGING, tmp, "earlier")
    for broker in sorted(copy.glob("broker-*")):
        leader_log = HANGING / "brokers" / "broker-0" / "replica-0" / "00000000000000000000.log"
        position, offset = _control_position(leader_log)   # the follower cut at 206 holds no marker
        assert (position, offset) == (truth()["post_copy"]["replica_truncation"]["cut_position"],
                                      truth()["post_copy"]["replica_truncation"]["cut_offset"])
        _cut(broker / "replica-0", position, offset)
        _cut(broker / "hang-0", 0, 0)
    return copy


def _scan(copy: Path, out: Path, scan_id: str, as_of: int) -> None:
    res = CliRunner().invoke(main, ["scan", str(copy), "--output", str(out), "--executor", "local",
                                    "--scan-id", scan_id, "--as-of", str(as_of), "--no-progress"])
    assert res.exit_code in (1, 4), res.output   # hanging either way; the cut follower is a finding


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("diff")
    out = tmp / "diff tables"   # a space: what is printed must be quoted
    later = truth()["recorded_at_ms"] + HOUR   # replica-0's transaction is an hour old then
    _scan(earlier_copy(tmp), out, "before", later)
    _scan(HANGING / "brokers", out, "after", later + 10 * 60_000)
    return out


def _diff(tables: Path, *args: str):
    return CliRunner().invoke(main, ["diff", "--tables", str(tables), *args])


def test_new_resolved_and_still_hanging_transactions(tables):
    res = _diff(tables, "before", "after", "--format", "json")
    assert res.exit_code == 4, res.output   # transactions hang in the later scan
    diff = json.loads(res.stdout)
    kinds = {(t["topic"], t["partition"], t["producer_id"]): t for t in diff["transactions"]}
    (replica,) = [k for k in kinds if k[:2] == ("replica", 0)]
    assert {k: t["kind"] for k, t in kinds.items()} == {
        ("hang", 0, 0): "new", ("hang", 1, 1): "still_hanging", ("hang", 2, 2): "still_hanging",
        ("hang-ongoing", 1, 1000): "still_hanging", replica: "resolved"}
    resolved = kinds[replica]
    assert resolved["a"]["state"] == "hanging" and resolved["a"]["reason"] == "coordinator_moved_on"
    assert resolved["b"] == {"state": "COMMIT", "reason": None, "age_ms": None,
                             "end_marker_offset": truth()["post_copy"]["replica_truncation"]["cut_offset"],
                             "brokers": [0, 1]}   # broker 2's copy is the one cut before its marker
    new = kinds[("hang", 0, 0)]
    assert new["a"]["state"] == "absent" and new["b"]["reason"] == "no_coordinator_record"
    still = kinds[("hang", 1, 1)]
    assert still["b"]["age_ms"] - still["a"]["age_ms"] == 10 * 60_000   # the later scan is 10 min on


def test_lso_movement_per_partition(tables):
    diff = json.loads(_diff(tables, "before", "after", "--format", "json").stdout)
    parts = {(p["topic"], p["partition"]): p for p in diff["partitions"]}
    recorded = {(p["topic"], p["partition"]): p for p in truth()["partitions"]}
    # replica-0: the COMMIT marker moved the LSO from the transaction's start to the high
    # watermark Kafka reported; hang-0: the hanging batch and the batches after it raised the
    # high watermark while the LSO stayed at 0 (stuck).
    replica, hang0 = parts[("replica", 0)], parts[("hang", 0)]
    assert replica["a"]["last_stable_offset"] == 0 and replica["a"]["high_watermark"] == 4
    assert replica["b"]["last_stable_offset"] == recorded[("replica", 0)]["last_stable_offset"] == 5
    assert replica["lso_moved"] == 5 and not replica["stuck"]
    assert hang0["a"]["high_watermark"] == 0 and hang0["b"]["high_watermark"] == recorded[("hang", 0)]["high_watermark"]
    assert hang0["lso_moved"] == 0 and hang0["high_watermark_moved"] == 4 and hang0["stuck"]
    unchanged = [p for k, p in parts.items() if k not in {("replica", 0), ("hang", 0)}]
    assert unchanged and all(p["lso_moved"] == 0 and p["high_watermark_moved"] == 0 and not p["stuck"]
                             for p in unchanged)
    assert set(recorded) <= set(parts)
    for key in recorded:   # every B figure is what Kafka reported live
        p = parts[key]
        assert (p["b"]["high_watermark"], p["b"]["last_stable_offset"]) == \
            (recorded[key]["high_watermark"], recorded[key]["last_stable_offset"]), key


def test_text_and_markdown_say_the_same(tables):
    text = _diff(tables, "before", "after")
    assert text.exit_code == 4
    assert "Transactions: 1 new, 3 still hanging, 1 resolved, 0 undetermined" in text.stdout
    assert re.search(r"^hang-0 +0 +0 +0 +4 +0 +4 +\+0 +\+4 +LSO stuck while the high watermark moved$",
                     text.stdout, re.M), text.stdout
    assert "Partitions: 10, 2 changed, 1 with the LSO stuck" in text.stdout
    md = _diff(tables, "before", "after", "--format", "md").stdout
    assert "| Resolved | 1 |" in md and "| replica-0 |" in md and "COMMIT marker at offset 4" in md
    # the other way round nothing is new: B (the earlier copy) still has three of A's hangs
    back = json.loads(_diff(tables, "after", "before", "--format", "json").stdout)
    assert sorted(t["kind"] for t in back["transactions"]) == ["new", "still_hanging", "still_hanging",
                                                               "still_hanging", "undetermined"]


def test_unknown_and_same_scans(tables):
    res = _diff(tables, "before", "nope")
    assert res.exit_code == 2 and "no scan 'nope'; the tables hold 'after', 'before'" in res.output
    same = json.loads(_diff(tables, "after", "after", "--format", "json").stdout)
    assert {t["kind"] for t in same["transactions"]} == {"still_hanging"}
    assert not any(p["lso_moved"] or p["high_watermark_moved"] for p in same["partitions"])


def test_report_as_markdown(tables, tmp_path):
    res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--scan-id", "after", "--format", "md",
                                    "--out", "-"])
    assert res.exit_code == 0, res.output
    md = res.stdout
    assert md.startswith("# logscan report\n") and "- scan id: `after`" in md
    assert "**4 hanging transactions** hold back the last stable offset of 4 partitions" in md
    # every plan's command in a fenced block of its own, as `logscan plan` prints it
    plans = CliRunner().invoke(main, ["plan", str(HANGING / "brokers"), "--format", "json",
                                      "--as-of", str(truth()["recorded_at_ms"] + HOUR + 10 * 60_000)])
    commands = [json.loads(line)["command"] for line in plans.stdout.splitlines()]
    assert len(commands) == 4
    for command in commands:
        assert f"```sh\n{command}\n```\n" in md
    # the lag table carries Kafka's numbers
    for p in truth()["partitions"]:
        lag = p["high_watermark"] - p["last_stable_offset"]
        if lag:
            name = p["topic"].replace("-", "\\-", 1) if p["topic"].startswith("-") else p["topic"]
            assert re.search(rf"^\| {re.escape(name)}-{p['partition']} \| \d \| {p['high_watermark']} \| "
                             rf"{p['last_stable_offset']} \| {lag} \|", md, re.M), p
    out = tmp_path / "r.md"
    res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--scan-id", "after", "--format", "md",
                                    "--out", str(out)])
    assert res.exit_code == 0 and out.read_text() == md


def _delta_jars() -> bool:
    try:
        from spark_jobs.session import DELTA_LIBS
    except ImportError:   # no pyspark
        return False
    return bool(list(DELTA_LIBS.glob("delta-spark_*.jar")))


@pytest.mark.spark
@pytest.mark.skipif(not _delta_jars(), reason="pyspark or Delta jars missing: run `make delta-jars`")
def test_a_spark_scan_and_a_local_scan_of_one_copy_differ_in_nothing(scan_run, tmp_path):
    """The Spark job's tables (tests/cli/conftest.py: the hanging cluster at its recording) and
    a local-executor scan of the same copy and as-of time added beside them: the same hangs
    still hanging, at the same age, and no partition's numbers moved."""
    import shutil

    spark_tables, run = scan_run
    assert run.exit_code == 4, run.output
    both = tmp_path / "both"
    shutil.copytree(spark_tables, both)   # the session's tables stay as the other tests expect them
    spark_id = json.loads(_sql_scan_ids(both))[0]
    _scan(HANGING / "brokers", both, "local", truth()["recorded_at_ms"])
    res = _diff(both, spark_id, "local", "--format", "json")
    assert res.exit_code == 4, res.output
    diff = json.loads(res.stdout)
    hanging = {(n["topic"], n["partition"]) for n in truth()["scenario_notes"]["hanging_txns"]["hanging"]}
    kinds = {(t["topic"], t["partition"]): t for t in diff["transactions"]}
    assert hanging <= set(kinds) and {t["kind"] for t in kinds.values()} == {"still_hanging"}
    assert all(t["a"]["age_ms"] == t["b"]["age_ms"] for t in kinds.values())
    assert diff["partitions"] and not any(p["lso_moved"] or p["high_watermark_moved"] or p["a"] != p["b"]
                                          for p in diff["partitions"])


def _sql_scan_ids(tables: Path) -> str:
    res = CliRunner().invoke(main, ["sql", "--tables", str(tables), "--format", "json",
                                    "SELECT DISTINCT scan_id FROM partition_state"])
    assert res.exit_code == 0, res.output
    return json.dumps([json.loads(line)["scan_id"] for line in res.stdout.splitlines()])


def test_an_unfinished_scan_is_refused(tables, tmp_path):
    """A scan id some table holds but the scans table does not (a Spark job killed mid-write)
    is not compared: its other tables may lack it."""
    import shutil

    from deltalake import DeltaTable, write_deltalake

    half = tmp_path / "half"
    shutil.copytree(tables, half)
    rows = DeltaTable(str(half / "partition_state")).to_pyarrow_table(filters=[("scan_id", "=", "after")])
    write_deltalake(str(half / "partition_state"), rows.set_column(rows.schema.get_field_index("scan_id"), "scan_id",
                                                                   pa_strings(["killed"] * rows.num_rows)),
                    mode="append", partition_by=["scan_id"])
    res = _diff(half, "after", "killed")
    assert res.exit_code == 2 and "scan 'killed' did not finish" in res.output


def pa_strings(values):
    import pyarrow as pa

    return pa.array(values, pa.string())
