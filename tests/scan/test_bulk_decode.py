"""pipeline.decode's bulk path (issue 37): a segment whose batches only its replica's replay
takes (read whole, no batches table, no record decoded) is read as fact tables
(replica.segment_fact_columns) and replayed a table at a time (Replay.feed_columns). What the
decode gives without the batches table must be what it gives with it, where every batch is
walked one at a time (iter_segment, Replay.feed): every row of every other table, in order."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from logscan.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RecordBatch
from logscan.format.logfile import walk_batches
from logscan.scan import pipeline
from logscan.scan.listing import list_copy

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: maxTimestamp's place in a v2 batch header: after BaseOffset .. BaseTimestamp.
MAX_TIMESTAMP_AT = struct.calcsize(">qiibIhiq")


def _decoded(root: Path, *, batches: bool) -> list[tuple[str, object]]:
    """Every replica of the copy at ``root`` decoded and replayed as both executors do (a
    Replay per replica, its units in order), without the batch items."""
    items = []
    for listed in list_copy([root]).replicas:
        replay = pipeline.Replay(pipeline.replica_info(listed))
        for unit in pipeline.work_units(listed):
            items += [(kind, item) for kind, item in pipeline.decode(unit, replay, headers=batches)
                      if kind not in pipeline.BATCH_KINDS]
        items += list(replay.finish())
    return items


def _bulk_used(monkeypatch) -> list[str]:
    """The segments decode reads in bulk (segment_fact_columns' calls)."""
    used = []
    reader = pipeline.segment_fact_columns

    def counted(path, *args, **kw):
        used.append(path)
        return reader(path, *args, **kw)

    monkeypatch.setattr(pipeline, "segment_fact_columns", counted)
    return used


@pytest.fixture(params=["in bulk", "few rows a row at a time"])
def bulk_always(monkeypatch, request):
    """decode's bulk path for a segment of any size (the fixtures' are below BULK_MIN_BYTES),
    its tables replayed in bulk whatever their rows, or those of fewer than
    replica.BULK_ROWS (all of the fixtures' nearly) a row at a time, as the scan does."""
    from logscan.scan import replica

    monkeypatch.setattr(pipeline, "BULK_MIN_BYTES", 0)
    if request.param == "in bulk":
        monkeypatch.setattr(replica, "BULK_ROWS", 1)


@pytest.mark.parametrize("fixture", sorted(str(p.parent.relative_to(FIXTURES))
                                            for p in (*FIXTURES.glob("*/brokers"), *FIXTURES.glob("trimmed/*/brokers"))))
def test_every_fixture_decodes_the_same_in_bulk(fixture, monkeypatch, bulk_always):
    root = FIXTURES / fixture / "brokers"
    reference = _decoded(root, batches=True)
    used = _bulk_used(monkeypatch)
    bulk = _decoded(root, batches=False)
    assert used, "no segment was read in bulk"
    assert not any("__transaction_state-" in p or "__consumer_offsets-" in p for p in used)
    assert bulk == reference


def test_a_segment_below_the_bulk_size_is_read_a_batch_at_a_time(monkeypatch):
    used = _bulk_used(monkeypatch)
    root = FIXTURES / "tv2" / "brokers"
    sizes = {str(f): f.stat().st_size for f in root.glob("*/*/*.log")
             if not f.parent.name.startswith(("__transaction_state-", "__consumer_offsets-"))}
    monkeypatch.setattr(pipeline, "BULK_MIN_BYTES", max(sizes.values()))
    assert _decoded(root, batches=False) == _decoded(root, batches=True)
    assert sorted(used) == sorted(f for f, size in sizes.items() if size == pipeline.BULK_MIN_BYTES)
    assert 0 < len(used) < len(sizes)


def _rewrite(data: bytearray, batch: RecordBatch, max_timestamp: int) -> None:
    """``batch``'s maxTimestamp set, its CRC recomputed (a broker stored it so)."""
    at = batch.position
    struct.pack_into(">q", data, at + MAX_TIMESTAMP_AT, max_timestamp)
    end = at + 12 + batch.batch_length
    struct.pack_into(">I", data, at + CRC_OFFSET, crc32c.crc32c(bytes(data[at + ATTRIBUTES_OFFSET:end])))


def test_future_timestamps_keep_their_place_among_damage(tmp_path, bulk_always):
    """Batches past the scan's clock between CRC failures and garbage (their findings and
    the walk's interleave), at the start, the middle and the end of a segment: the findings
    come in the order the walk a batch at a time gives them, and the copy's newest time
    leaves them out."""
    root = tmp_path / "brokers"
    shutil.copytree(FIXTURES / "tv2" / "brokers", root)
    future = pipeline.timestamp_ceiling() + 10**9
    for log in sorted(root.glob("*/java-txn-1/*.log")):
        data = bytearray(log.read_bytes())
        batches = [b for b in walk_batches(bytes(data)) if isinstance(b, RecordBatch)]
        assert len(batches) == 7
        for i in (0, 2, 3, 5, 6):
            _rewrite(data, batches[i], future + i)
        data[batches[1].position + batches[1].size_in_bytes - 1] ^= 1   # its CRC fails
        middle = batches[3].position + batches[3].size_in_bytes
        log.write_bytes(bytes(data[:middle] + b"\xee" * 40 + data[middle:]))
    reference = _decoded(root, batches=True)
    bulk = _decoded(root, batches=False)
    log = str(sorted(root.glob("*/java-txn-1/*.log"))[0])
    reasons = [item["reason"] for kind, item in reference if kind == "finding" and item["file"] == log]
    assert reasons == ["timestamp", "crc", "timestamp", "timestamp", "corrupt", "skipped", "timestamp", "timestamp"]
    assert bulk == reference


@pytest.mark.parametrize("fixture", ["tv2", "kafka-4.4", "hanging", "retention"])
def test_small_windows_and_tables_decode_the_same(fixture, monkeypatch, bulk_always):
    """The bulk path's bounds (replica.FACT_WINDOW_BYTES, FACT_TABLE_ROWS) anywhere in a
    segment: windows of a few batches (runs cut at every window's end, a batch crossing it read
    again from its start) and tables of 7 rows (a window's table cut, the next one's joined)
    give the rows of the walk a batch at a time, and every table but a segment's last has 7."""
    from logscan.scan import replica

    monkeypatch.setattr(replica, "FACT_WINDOW_BYTES", 3000)
    monkeypatch.setattr(replica, "FACT_TABLE_ROWS", 7)
    sizes = []
    reader = pipeline.segment_fact_columns

    def sized(path, *args, **kw):
        sizes.append([])
        for columns in reader(path, *args, **kw):
            sizes[-1].append(len(columns))
            yield columns

    root = FIXTURES / fixture / "brokers"
    reference = _decoded(root, batches=True)
    monkeypatch.setattr(pipeline, "segment_fact_columns", sized)
    assert _decoded(root, batches=False) == reference
    assert any(len(tables) > 2 for tables in sizes)
    assert all(rows == 7 for tables in sizes for rows in tables[:-1])
    assert all(0 < tables[-1] <= 7 for tables in sizes if tables)


def test_a_marker_timestamp_past_64_bits_decodes_the_same_in_bulk(tmp_path, bulk_always):
    """A marker record's timestamp is its batch's baseTimestamp plus its delta, a sum that can
    pass 2^63 - 1: it wraps, as Java's long sum in DefaultRecord.readFrom does, so it fits the
    int64 columns of the bulk path and of the tables, and both paths give the same rows."""
    from logscan.format.control import COMMIT, encode_control_key, encode_end_txn_marker
    from logscan.testing.encoder import Rec, encode_batch

    top = (1 << 63) - 1
    folder = tmp_path / "broker-1" / "t-0"
    folder.mkdir(parents=True)
    (tmp_path / "broker-1" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=x\n")
    owner = dict(transactional=True, producer_id=5, producer_epoch=0)
    data = encode_batch([Rec(b"v", b"k", (), 1000)], base_offset=0, base_sequence=0, **owner)
    marker = encode_batch([Rec(encode_end_txn_marker(3), encode_control_key(COMMIT), (), top + 5)], base_offset=1,
                          control=True, base_timestamp=top - 1, max_timestamp=top, **owner)
    (folder / f"{0:020d}.log").write_bytes(data + marker)
    reference = _decoded(tmp_path, batches=True)
    spans = [item for kind, item in reference if kind == "span"]
    assert [s["end_timestamp"] for s in spans] == [top + 5 - (1 << 64)]
    assert _decoded(tmp_path, batches=False) == reference
