"""Byte-range reads of one segment (logscan.scan.replica.walk_range / valid_ranges), no Spark.

Every split of a segment, at many split sizes, must yield exactly the entries and findings
one walk of the whole file yields, in the same order: none lost, none doubled, also where
a range starts in damage, before a batch with a bad CRC, or inside a batch whose payload
holds another valid batch (the resync finds it; the hand-off must not trust it).
"""

import pytest

from logscan.format.batch import RecordBatch
from logscan.format.errors import DecodeError
from logscan.format.logfile import BufferWindows, walk_batches
from logscan.scan.replica import ByteRange, range_count, read_segment, valid_ranges, walk_range
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch

SPLITS = [1, 2, 3, 5, 12, 17, 49, 61, 64, 100, 128, 250, 333, 512, 1000, 4096]


def _batches(first_offset=0, count=12):
    out, offset = [], first_offset
    for i in range(count):
        records = [Rec(bytes([i]) * (7 * i + 3), timestamp=1000 + i) for _ in range(1 + i % 3)]
        out.append(encode_batch(records, base_offset=offset, producer_id=7, producer_epoch=0,
                                base_sequence=offset, transactional=True))
        offset += len(records)
    out.append(end_txn_marker_batch(commit=True, coordinator_epoch=1, base_offset=offset, producer_id=7,
                                    producer_epoch=0, timestamp=2000))
    return out


def _key(item):
    if isinstance(item, DecodeError):
        return (type(item).__name__, item.position, item.message)
    return (type(item).__name__, item.position, item.base_offset if isinstance(item, RecordBatch) else None,
            item.crc_valid)


#: Windows the ranges are read through: the whole buffer, and windows small enough that
#: their edges fall inside entries, headers and damage (granularity 7: bases not aligned).
WINDOWS = [1 << 30, 130, 333]


def split_walk(buf, split_bytes, window=1 << 30):
    """The items the kept ranges yield, in range order, and every hand-off seen."""
    n = range_count(len(buf), split_bytes)
    per_range, handoffs = {}, {}
    for i in range(n):
        handoffs[i] = []
        per_range[i] = [_key(x) for x, _ in walk_range(BufferWindows(buf, 7), ByteRange(i, n, split_bytes),
                                                       handoffs[i], window=window)]
    kept = sorted(valid_ranges(n, handoffs))
    return [k for i in kept for k in per_range[i]], [h for hs in handoffs.values() for h in hs]


def _assert_splits_equal_whole(buf):
    whole = [_key(x) for x in walk_batches(buf)]
    unclean = 0
    for split in SPLITS:
        for window in WINDOWS:
            got, handoffs = split_walk(buf, split, window)
            assert got == whole, (split, window)
            unclean += sum(not clean for _, clean in handoffs)
    return whole, unclean


def test_a_clean_segment_splits_into_the_same_batches():
    buf = b"".join(_batches())
    whole, unclean = _assert_splits_equal_whole(buf)
    assert len(whole) == 13 and all(k[0] == "RecordBatch" for k in whole)
    assert unclean == 0


def test_a_range_starting_before_a_bad_crc_batch_is_covered_by_its_predecessor():
    parts = _batches()
    bad = bytearray(parts[5])
    bad[-4] ^= 0xFF  # payload byte: the CRC no longer matches, the framing is intact
    buf = b"".join(parts[:5]) + bytes(bad) + b"".join(parts[6:])
    whole, unclean = _assert_splits_equal_whole(buf)
    assert [k[3] for k in whole].count(False) == 1
    assert unclean > 0, "no split exercised an unclean hand-off"


def test_damaged_framing_zero_fill_and_a_truncated_tail():
    parts = _batches()
    garbage = bytearray(parts[3])
    garbage[8:12] = b"\x7f\xff\xff\x00"  # a size far past the end
    buf = (b"".join(parts[:3]) + bytes(garbage) + b"".join(parts[4:8]) + b"\x00" * 300
           + b"".join(parts[8:]) + parts[0][:40])
    whole, _ = _assert_splits_equal_whole(buf)
    kinds = {k[0] for k in whole}
    assert {"RecordBatch", "TruncatedTail"} <= kinds and len(kinds) >= 3, kinds


def test_a_batch_inside_another_batch_payload_is_not_taken_for_the_log():
    inner = encode_batch([Rec(b"inner" * 4, timestamp=5)], base_offset=900, producer_id=9, producer_epoch=0,
                         base_sequence=0)
    outer = encode_batch([Rec(b"p" * 40 + inner + b"q" * 40, timestamp=6)], base_offset=20)
    parts = _batches()
    buf = b"".join(parts[:4]) + outer + b"".join(parts[4:])
    whole, unclean = _assert_splits_equal_whole(buf)
    assert 900 not in [k[2] for k in whole]
    assert unclean > 0, "no range started inside the outer batch"


def test_kept_ranges_follow_clean_handoffs_only():
    assert valid_ranges(1, {}) == {0}
    assert valid_ranges(4, {0: [(1, True)], 1: [(2, True)], 2: [(3, True)]}) == {0, 1, 2, 3}
    # Range 0 walked past boundaries 1 and 2 (unclean) and handed off cleanly at 3; range 1's
    # own (wrong) hand-offs do not count.
    assert valid_ranges(4, {0: [(1, False), (2, False), (3, True)], 1: [(2, True)], 2: [(3, True)]}) == {0, 3}
    assert valid_ranges(3, {0: [(1, False), (2, False)], 1: [(2, True)]}) == {0}


def test_range_count():
    assert range_count(0, 128) == 1 and range_count(128, 128) == 1 and range_count(129, 128) == 2
    assert range_count(10**9, None) == 1


@pytest.mark.parametrize("split", [37, 200])
def test_read_segment_by_ranges_equals_one_read(tmp_path, split):
    parts = _batches()
    bad = bytearray(parts[2])
    bad[-3] ^= 1
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(parts[:2]) + bytes(bad) + b"\x00" * 50 + b"".join(parts[3:]))
    whole = read_segment(str(path), 0, is_txn_log=False, headers=True)
    n = range_count(path.stat().st_size, split)
    reads = [read_segment(str(path), 0, is_txn_log=False, headers=True, byte_range=ByteRange(i, n, split))
             for i in range(n)]
    kept = sorted(valid_ranges(n, {i: r.handoffs for i, r in enumerate(reads)}))
    assert [f for i in kept for f in reads[i].facts] == whole.facts
    assert [h.position for i in kept for h in reads[i].headers] == [h.position for h in whole.headers]
    assert [f for i in kept for f in reads[i].findings] == whole.findings
    assert len(whole.findings) >= 2  # the CRC mismatch and the zero fill
