"""Timestamps no calendar holds, under a valid CRC (issue 33): a producer that wrote its
CreateTime in microseconds, or int64 max. Kafka stores such a batch; logscan reads it, says
where it is, and keeps it out of the scan's "now" (which would make every open transaction
look old and leave the Delta tables' as_of unreadable).

Made from the real hanging cluster: the last batch of every replica of hang-0 (producer 2's
COMMIT marker; producer 0's open transaction there is left as it was) rewritten with the CRC
recomputed, as a broker would have stored it.
"""

import shutil
from datetime import datetime, timedelta, timezone
import struct
from pathlib import Path

import crc32c
import pyarrow as pa
import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RecordBatch
from logscan.format.logfile import walk_batches
from logscan.scan.local import scan

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging" / "brokers"
#: maxTimestamp's place in a v2 batch header: after BaseOffset .. BaseTimestamp.
MAX_TIMESTAMP_AT = struct.calcsize(">qiibIhiq")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _future_copy(tmp_path: Path, timestamp) -> list[tuple[Path, int]]:
    copy = tmp_path / "brokers"
    shutil.copytree(HANGING, copy)
    changed = []
    for log in sorted(copy.glob("*/hang-0/*.log")):
        data = bytearray(log.read_bytes())
        last = [b for b in walk_batches(bytes(data)) if isinstance(b, RecordBatch)][-1]
        at = last.position
        struct.pack_into(">q", data, at + MAX_TIMESTAMP_AT, timestamp(last.max_timestamp))
        end = at + 12 + last.batch_length
        struct.pack_into(">I", data, at + CRC_OFFSET, crc32c.crc32c(bytes(data[at + ATTRIBUTES_OFFSET:end])))
        log.write_bytes(bytes(data))
        changed.append((log, at))
    assert len(changed) == 3
    return changed


@pytest.mark.parametrize("timestamp", [lambda ms: ms * 1000, lambda ms: 2**63 - 1], ids=["microseconds", "int64-max"])
def test_a_timestamp_past_any_calendar_is_a_finding_and_not_the_scans_now(tmp_path, timestamp):
    clean = scan([HANGING])
    changed = _future_copy(tmp_path, timestamp)
    result = scan([tmp_path / "brokers"])
    found = [(Path(f.path), f.position) for f in result.findings if f.reason == "timestamp"]
    assert found == changed
    assert all("past the scan's clock" in f.message for f in result.findings if f.reason == "timestamp")
    # the batch still counts as read (Kafka stored it), its time does not make the scan's now
    assert result.as_of_ms == clean.as_of_ms
    assert [c["reason"] for c in result.tables["hanging_candidates"]] == [
        c["reason"] for c in clean.tables["hanging_candidates"]]
    states = {(s["broker"], s["topic"], s["partition"]): s for s in result.tables["partition_state"]}
    assert all(s["max_timestamp"] <= clean.as_of_ms for s in states.values())
    # the summary prints (it died on `year 58863 is out of range`), the finding located
    out = CliRunner().invoke(main, ["scan", str(tmp_path / "brokers")])
    assert out.exit_code == 4 and isinstance(out.exception, SystemExit), out.output
    assert f"logscan: {changed[0][0]}: byte {changed[0][1]}: maxTimestamp" in out.output


@pytest.mark.parametrize("text", ["99999999999999999", "-1"])
def test_an_as_of_past_the_calendar_is_a_usage_error(text):
    out = CliRunner().invoke(main, ["scan", str(HANGING), "--as-of", text])
    assert out.exit_code == 2 and "out of range" in out.output


def test_a_time_column_is_the_instant_of_its_ms_value_or_null_where_there_is_none():
    from logscan.scan import rows as R

    values = [None, -1, -2, 0, 1, 1_795_392_826_515, R.MAX_TIME_MS, R.MAX_TIME_MS + 1, 1_795_392_826_515_000,
              2**63 - 1]
    expected = [None, None, None, 0, 1000, 1_795_392_826_515_000, R.MAX_TIME_MS * 1000, None, None, None]
    assert [R.ms_time(v) for v in values] == expected
    assert R.time_array(pa.array(values, pa.int64())).cast(pa.int64()).to_pylist() == expected
    # the last instant a time column holds is the calendar's last millisecond, as Spark and Delta have it
    assert (EPOCH + timedelta(milliseconds=R.MAX_TIME_MS)).isoformat() == "9999-12-31T23:59:59.999000+00:00"


@pytest.mark.parametrize("timestamp", [lambda ms: ms * 1000, lambda ms: 2**63 - 1], ids=["microseconds", "int64-max"])
def test_delta_time_columns_are_null_where_a_timestamp_is_past_the_calendar_and_the_ms_stays(tmp_path, timestamp):
    """The Delta tables of such a copy: the batch's max_timestamp as written, its max_time null;
    every other time column the instant of its ms column. The batch rows as the Spark job
    builds them (rows.batch_struct, a column at a time) equal the local executor's."""
    from deltalake import DeltaTable

    from logscan.scan import delta, rows as R
    from logscan.scan.replica import ReplicaRead, iter_segment

    changed = _future_copy(tmp_path, timestamp)
    out = tmp_path / "tables"
    delta.write_tables([tmp_path / "brokers"], str(out), scan_id="s", tables=tuple(R.TABLES))
    batches = DeltaTable(str(out / "batches")).to_pyarrow_table().to_pylist()
    at = {(r["file"], r["position"]): r for r in batches}
    for log, position in changed:
        row = at[(str(log), position)]
        assert row["max_timestamp"] > R.MAX_TIME_MS and row["max_time"] is None
        assert row["base_time"] is not None
    checked = 0
    for name, schema in R.TABLES.items():
        rows = DeltaTable(str(out / name)).to_pyarrow_table().to_pylist()
        for time, ms in R.time_columns(schema).items():
            for r in rows:
                instant = R.ms_time(r[ms])
                assert (r[time] is None if instant is None
                        else r[time] == EPOCH + timedelta(microseconds=instant)), (name, time, r)
                checked += r[time] is not None
    assert checked > 1000
    for log, _ in changed:
        read = ReplicaRead()
        items = list(iter_segment(str(log), 0, is_txn_log=False, out=read, headers=True))
        key = R.replica_key(0, "hang", 0)
        keys = {"broker": [0] * len(items), "topic": ["hang"] * len(items), "partition": [0] * len(items),
                "file": [str(log)] * len(items), "segment_base_offset": [0] * len(items)}
        by_struct = R.batch_struct([f for f, _ in items], [h for _, h in items], keys).to_pylist()
        assert by_struct == pa.array([R.batch_row(f, h, key, str(log), 0) for f, h in items],
                                     pa.struct(list(R.BATCHES))).to_pylist()
        assert sum(r["max_time"] is None for r in by_struct) == 1
