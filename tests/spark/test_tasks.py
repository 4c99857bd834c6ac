"""The Python bodies of the Spark scan (spark_jobs.tasks), run without Spark on the Arrow
batches Spark would hand them: the per-replica stream cut anywhere, and the decode's
streamed walk."""

from pathlib import Path

import pyarrow as pa
import pytest

from logscan.scan import rows as R
from logscan.scan.listing import list_copy
from logscan.scan.replica import ReplicaRead, iter_segment, read_replica
from logscan.state.facts import BatchFact
from spark_jobs import tasks

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "fixtures" / "hanging" / "brokers"

_STREAM = pa.schema([pa.field("broker", pa.int32()), pa.field("topic", pa.string()),
                     pa.field("partition", pa.int32()), pa.field("kind", pa.int32()),
                     pa.field("info", pa.struct(list(tasks.REPLICA_INFO))),
                     pa.field("segment_base_offset", pa.int64()), pa.field("position", pa.int64()),
                     *[pa.field(n, t) for n, t in zip(BatchFact._fields, (
                         pa.int64(), pa.int64(), pa.int64(), pa.int32(), pa.int32(), pa.int32(), pa.int64(),
                         pa.bool_(), pa.bool_(), pa.int32(), pa.int32(), pa.string(), pa.int32(), pa.int64()))]])


def _listed():
    listing = list_copy([CLUSTER])
    out = []
    for listed in listing.replicas:
        r = listed.replica
        info = {**listed.key, "path": str(r.path),
                "segments": [{"base_offset": b, "file": str(p)} for b, p in r.segments],
                "snapshots": [{"base_offset": b, "file": str(p)} for b, p in r.snapshots],
                "hw_checkpoint": listed.hw_checkpoint, "log_start_checkpoint": listed.log_start_checkpoint}
        out.append((info, read_replica(r).facts))
    return sorted(out, key=lambda x: (x[0]["broker"], x[0]["topic"], x[0]["partition"]))


def _stream_rows(listed):
    """What scan.replica_stream hands the Python side: per replica its listing row, then its
    batch facts in log order."""
    rows = []
    for info, facts in listed:
        key = {k: info[k] for k in ("broker", "topic", "partition")}
        rows.append({**key, "kind": tasks.STREAM_INFO, "info": info})
        rows.extend({**key, "kind": tasks.STREAM_BATCH, "segment_base_offset": 0, "position": i, **f._asdict()}
                    for i, f in enumerate(facts))
    return rows


def _as_set(batches):
    table = pa.Table.from_batches(list(batches), schema=tasks.REPLICA_OUT)
    return sorted(repr(sorted(r.items())) for r in table.to_pylist())


@pytest.mark.parametrize("chunk", [1, 2, 7, 10_000])
def test_replica_stream_equals_one_call_per_replica(chunk):
    listed = _listed()
    assert any(not facts for _, facts in listed)  # replicas with no batches are in the stream too
    if chunk < 10:  # and replicas whose batches are cut across Arrow batches
        assert any(len(facts) > chunk for _, facts in listed)
    stream = pa.Table.from_pylist(_stream_rows(listed), schema=_STREAM).to_batches(max_chunksize=chunk)
    expected = [R.to_tagged_batch(tasks.replica_rows(info, facts), tasks.REPLICA_OUT) for info, facts in listed]
    got = _as_set(tasks.replica_stream(iter(stream)))
    assert got == _as_set(expected)
    states = [r for r in got if "'record_type', 'state'" in r]
    assert len(states) == len(listed)  # one state row per replica, also the empty ones


def test_replica_stream_refuses_batches_of_an_unlisted_replica():
    info, facts = next((i, f) for i, f in _listed() if f)
    rows = [r for r in _stream_rows([(info, facts)]) if r["kind"] == tasks.STREAM_BATCH]
    with pytest.raises(ValueError, match="unlisted replica"):
        list(tasks.replica_stream(iter(pa.Table.from_pylist(rows, schema=_STREAM).to_batches())))


def test_the_decode_walk_is_lazy():
    segment = max(CLUSTER.glob("*/*/*.log"), key=lambda p: p.stat().st_size)
    read = ReplicaRead()
    walk = iter_segment(str(segment), 0, is_txn_log=False, out=read, headers=True)
    next(walk)
    assert read.batches == 1  # one batch read, not the segment
    rest = sum(1 for _ in walk)
    assert read.batches == rest + 1 > 1


@pytest.mark.parametrize("flush", [3, 20_000])
def test_decode_files_gives_the_rows_of_each_unit(monkeypatch, flush):
    # Batch rows are built column-wise, the rest row by row, many units to an Arrow batch:
    # the union must be each unit's rows as to_tagged_batch makes them, keys included.
    from spark_jobs.scan import list_inputs, plan_tasks

    monkeypatch.setattr(tasks, "_FLUSH_ROWS", flush)
    units = [u for group in plan_tasks(list_inputs([CLUSTER], split_bytes=4096).units, 2) for u in group]
    assert any(u["ranges"] > 1 for u in units)
    expected = [R.to_tagged_batch(list(tasks.decode_segment(u)), tasks.DECODED,
                                  {"segment": u["file"], "range_index": u["range_index"], "ranges": u["ranges"]})
                for u in units]
    work = pa.Table.from_pylist(units, schema=tasks.WORK_UNIT).to_batches(max_chunksize=5)
    got = list(tasks.decode_files(iter(work)))
    assert max(b.num_rows for b in got) <= flush or flush > 1000
    table = pa.Table.from_batches(got, schema=tasks.DECODED)
    assert table.column("record_type").to_pylist().count("batch") > 100
    assert sorted(map(repr, table.to_pylist())) == sorted(map(repr, pa.Table.from_batches(expected).to_pylist()))
