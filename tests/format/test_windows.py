"""Reading a log a window at a time (walk_windows, find_entry) gives exactly what one walk of
the whole log gives: the same entries and findings, at the same log positions, with the
same messages, wherever the window edges fall (inside a header, an entry, damage, a zero
run) and however the windows are aligned; on the real broker segments of the fixtures and
on seeded damage of them. The address space a clean walk maps stays at a window or the
largest entry."""

import errno
import os
import random
import struct
from pathlib import Path

import pytest

from logscan.format.batch import RecordBatch
from logscan.format import logfile
from logscan.format.errors import DecodeError
from logscan.format.logfile import (BufferWindows, LogShrank, WindowEnd, WindowUnmappable, find_entry, find_next_entry,
                                    walk_batches, walk_windows)
from logscan.logdir import segment
from logscan.logdir.segment import LogWindows
from logscan.scan.replica import ReplicaRead, iter_segment, read_segment
from logscan.testing.encoder import Rec, encode_batch, legacy_message, legacy_wrapper

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL_LOGS = sorted(p for p in FIXTURES.rglob("*.log") if p.stat().st_size > 0)
REAL_LOGS_BY_SIZE = sorted(REAL_LOGS, key=lambda p: (p.stat().st_size, p))
#: Windows from barely larger than a batch header to larger than every fixture segment,
#: with window bases aligned to 1 byte (anywhere), 7 bytes and 64 bytes.
WINDOWS = [(130, 1), (200, 7), (333, 64), (1000, 7), (4096, 1), (1 << 20, 64)]


def key(item):
    if isinstance(item, DecodeError):
        return type(item).__name__, item.position, item.message, getattr(item, "length", None)
    return (type(item).__name__, item.position, getattr(item, "base_offset", None), item.crc_valid,
            item.size_in_bytes)


def windowed(data: bytes, window: int, granularity: int) -> list:
    return [key(item) for item, _ in walk_windows(BufferWindows(data, granularity), window=window)]


def test_the_fixtures_have_real_segments_larger_than_the_windows():
    assert len(REAL_LOGS) > 100
    assert max(p.stat().st_size for p in REAL_LOGS) > 10 * WINDOWS[0][0]


@pytest.mark.parametrize("window,granularity", WINDOWS)
def test_real_segments_read_through_windows_equal_one_walk(window, granularity):
    for path in REAL_LOGS:
        data = path.read_bytes()
        assert windowed(data, window, granularity) == [key(x) for x in walk_batches(data)], path


def _damaged(rng: random.Random, seeds: list[bytes]) -> bytes:
    data = bytearray(rng.choice(seeds))
    if rng.random() < 0.5:
        data += rng.choice(seeds)
    for _ in range(rng.randint(1, 3)):
        if not data:
            break
        at, kind = rng.randrange(len(data)), rng.randrange(6)
        if kind == 0:
            del data[at:]  # truncation
        elif kind == 1:
            data[at] ^= 1 << rng.randrange(8)  # a flipped bit (CRC, length, magic ...)
        elif kind == 2:
            width = rng.randint(1, 500)
            data[at:at + width] = bytes(min(width, len(data) - at))  # a zeroed region
        elif kind == 3 and at + 4 <= len(data):
            value = rng.choice([0, 13, 14, 60, 2 ** 31 - 1, -5, rng.randrange(1, 5000)])
            data[at:at + 4] = struct.pack(">i", value)  # an absurd, short or negative length
        elif kind == 4:
            data += bytes(rng.randint(1, 3000))  # a zero-filled (preallocated) tail
        elif kind == 5:
            data[at:at] = rng.randbytes(rng.randint(1, 100))  # inserted garbage
    return bytes(data)


@pytest.mark.parametrize("first_window", [None, 70])
@pytest.mark.parametrize("seed", range(4))
def test_damaged_segments_read_through_windows_equal_one_walk(seed, first_window, monkeypatch):
    """``first_window``: the resync search's first window, then doubling up to the walk's."""
    if first_window is not None:
        monkeypatch.setattr(logfile, "RESYNC_FIRST_WINDOW", first_window)
    rng = random.Random(seed)
    seeds = [p.read_bytes() for p in REAL_LOGS if p.stat().st_size > 200]
    kinds = set()
    for _ in range(150):
        data = _damaged(rng, seeds)
        if not data:
            continue
        whole = [key(x) for x in walk_batches(data)]
        kinds.update(k[0] for k in whole)
        for window, granularity in rng.sample(WINDOWS[:-1], 2):
            assert windowed(data, window, granularity) == whole, (seed, window, granularity)
            for at in rng.sample(range(len(data)), min(3, len(data))):
                assert (find_entry(BufferWindows(data, granularity), at, window=window)
                        == find_next_entry(data, at, len(data))), (seed, window, at)
    # the damage exercised the walk's findings, not just its entries
    assert {"TruncatedTail", "ZeroFilledRegion", "SkippedRegion", "RecordBatch"} <= kinds, kinds


def test_legacy_and_mixed_entries_across_window_edges():
    data = b"".join([legacy_message(i, b"v%d" % i, b"k", magic=i % 2) for i in range(20)]
                    + [legacy_wrapper([(b"a", b"1", 5), (b"b", b"2", 6)], offset=21, magic=1, codec=1, timestamp=6)]
                    + [encode_batch([Rec(b"x" * 50)], base_offset=22 + i) for i in range(5)])
    whole = [key(x) for x in walk_batches(data)]
    assert {k[0] for k in whole} == {"LegacyBatch", "RecordBatch"}
    for window in range(64, 400, 9):
        assert windowed(data, window, 1) == whole, window


def test_a_window_walk_stops_where_it_cannot_see_on():
    """more=True: whole entries, then a WindowEnd naming the bytes the next entry needs."""
    a, b = encode_batch([Rec(b"a" * 100)], base_offset=0), encode_batch([Rec(b"b" * 100)], base_offset=1)
    items = list(walk_batches(a + b[:70], base=1000, more=True))
    assert [type(x) for x in items] == [RecordBatch, WindowEnd]
    assert items[0].position == 1000 and (items[1].position, items[1].needed) == (1000 + len(a), len(b))
    damaged = bytearray(a + b)
    damaged[len(a) + 30] ^= 1  # b's CRC fails: where to resume may lie anywhere after it
    end = list(walk_batches(bytes(damaged), more=True))[-1]
    assert (end.position, end.needed) == (len(a), None)


def test_entries_larger_than_the_window_grow_it_only_for_them():
    big = encode_batch([Rec(bytes(range(256)) * 40)], base_offset=1)  # ~10 KiB
    small = [encode_batch([Rec(b"s")], base_offset=o) for o in (0, 2, 3)]
    data = small[0] + big + small[1] + small[2]

    class Recording(BufferWindows):
        lengths: list[int] = []

        def map(self, start, stop):
            win = super().map(start, stop)
            self.lengths.append(len(win.buf))
            return win

    source = Recording(data, 64)
    assert [key(x) for x, _ in walk_windows(source, window=256)] == [key(x) for x in walk_batches(data)]
    assert max(source.lengths) <= len(big) + 64
    assert sorted(source.lengths)[-2] <= 256 + 64  # only the big batch's window is large


def test_a_window_that_cannot_be_mapped_is_a_located_finding_and_the_walk_ends():
    batches = [encode_batch([Rec(b"v" * 200)], base_offset=i) for i in range(10)]
    data = b"".join(batches)

    class Limited(BufferWindows):
        def map(self, start, stop):
            if start > 3 * len(batches[0]):
                raise OSError(errno.ENOMEM, "Cannot allocate memory")
            return super().map(start, stop)

    items = [x for x, _ in walk_windows(Limited(data), window=len(batches[0]) + 100)]
    assert all(isinstance(x, RecordBatch) for x in items[:-1]) and len(items) >= 4
    last = items[-1]
    assert isinstance(last, WindowUnmappable) and last.reason == "io"
    assert last.position == items[-2].position + len(batches[0]) and last.length == len(data) - last.position
    assert "Cannot allocate memory" in last.message and "not read" in last.message


def _mapped_or_read(monkeypatch, how: str) -> None:
    """LogWindows maps every window ("mapped": as it maps one past COPY_WINDOW_BYTES) or
    reads it (its default)."""
    if how == "mapped":
        monkeypatch.setattr(segment, "READ_WINDOW_BYTES", 0)
        monkeypatch.setattr(segment, "COPY_WINDOW_BYTES", 0)


def test_damage_is_stepped_over_a_window_at_a_time():
    """After damage the walk used to read the whole rest of the log at once (where it resumes
    may lie anywhere after it), which a file shrinking under that mapping turned into a
    SIGBUS: now no window is larger than the window or the largest entry, whatever the
    damage (garbage, a failed CRC, a grown size field, a zero run, a cut tail): a window, an
    entry, or a resync candidate's claimed size (whose CRC decides it) long, never the rest
    of the log; and the items are still one walk's."""
    real = REAL_LOGS_BY_SIZE[-1].read_bytes()
    spans = [(e.position, e.size_in_bytes) for e in walk_batches(real)]
    largest = max(size for _, size in spans)
    data = bytearray(real * 3)
    third = len(real)
    data[third + spans[3][0] + 30] ^= 1  # a failed CRC
    struct.pack_into(">i", data, 2 * third + spans[5][0] + 8, spans[5][1] + spans[6][1] - 12 + 40)  # a grown size
    data[2 * third + spans[9][0]:2 * third + spans[9][0]] = b"\xff" * 300  # garbage
    data[third + spans[12][0]:third + spans[12][0]] = bytes(5000)  # a zero run
    data = bytes(data[:-7])  # a cut tail

    class Recording(BufferWindows):
        lengths: list[int] = []

        def map(self, start, stop):
            win = super().map(start, stop)
            self.lengths.append(len(win.buf))
            return win

    whole = [key(x) for x in walk_batches(data)]
    kinds = {k[0] for k in whole}
    assert {"OverlongEntry", "SkippedRegion", "ZeroFilledRegion", "TruncatedTail"} <= kinds, kinds
    for window in (1024, 4096):
        source = Recording(data, 64)
        assert [key(x) for x, _ in walk_windows(source, window=window)] == whole
        # the first damage is at a third of the log: the rest is two thirds of it
        assert max(source.lengths) < len(data) // 4, (window, largest, max(source.lengths))


@pytest.mark.parametrize("how", ["mapped", "read"])
@pytest.mark.parametrize("topic", ["__cluster_metadata", "__transaction_state", "__consumer_offsets"])
def test_a_mapped_file_reads_through_page_aligned_windows(topic, tmp_path, monkeypatch, how):
    """LogWindows maps at page-aligned offsets (or reads a window): the largest real
    segment of a topic, repeated to span several 4 KiB windows, read by the scan through them,
    equals its scan through one window (facts, headers, findings, the coordinator's records)."""
    _mapped_or_read(monkeypatch, how)
    real = max((p for p in REAL_LOGS if p.parent.name.startswith(topic + "-")), key=lambda p: p.stat().st_size)
    data = real.read_bytes() * (1 + 5 * 4096 // real.stat().st_size)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    txn_log = topic == "__transaction_state"
    whole = read_segment(str(path), 0, is_txn_log=txn_log, headers=True)
    out = ReplicaRead()
    rows = list(iter_segment(str(path), 0, is_txn_log=txn_log, out=out, headers=True, window=4096))
    assert [f for f, _ in rows] == whole.facts and [h for _, h in rows] == whole.headers
    assert out.findings == whole.findings and out.txn_log == whole.txn_log
    assert out.txn_log_positions == whole.txn_log_positions and (whole.txn_log or not txn_log)
    with LogWindows(str(path)) as log:
        assert log.size == len(data)
        assert [key(x) for x, _ in walk_windows(log, window=4096)] == [key(x) for x in walk_batches(data)]


@pytest.mark.parametrize("how", ["mapped", "read"])
def test_a_file_that_shrinks_under_the_walk_is_a_located_finding(tmp_path, monkeypatch, how):
    """Cut after LogWindows learnt its size, a segment's missing bytes cannot be mapped nor
    read: the walk ends with a LogShrank (reason shrank) at the first window past the cut
    (never a SIGBUS, never a short window taken for a truncated log)."""
    _mapped_or_read(monkeypatch, how)
    real = max(REAL_LOGS, key=lambda p: p.stat().st_size)
    data = real.read_bytes() * (1 + 5 * 4096 // real.stat().st_size)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with LogWindows(str(path)) as log:
        os.truncate(path, 8192)
        items = list(walk_windows(log, window=4096))
    last, _ = items[-1]
    assert isinstance(last, LogShrank) and last.reason == "shrank", last
    assert last.position + last.length == len(data) and last.position <= 8192
    assert f"({len(data)} bytes when opened, 8192 now" in last.message and "not read" in last.message, last.message


def test_a_window_still_held_is_never_read_over(tmp_path):
    """LogWindows read each window into the one buffer a thread's readers share, page cache to
    a cache line of it, while no view of that buffer is alive; a window of which a view (or a
    slice of one) is still held after its close keeps its bytes, and the next is read
    elsewhere; so do two readers' windows open at once."""
    import ctypes

    data = bytes(range(256)) * 64
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with LogWindows(str(path)) as log, LogWindows(str(path)) as other_log:
        first = log.map(0, 4096)
        assert ctypes.addressof(ctypes.c_char.from_buffer(first.buf)) % segment.CACHE_LINE == 0
        kept = first.buf[10:20]
        first.close()
        second = log.map(4096, 8192)
        assert bytes(kept) == data[10:20] and bytes(second.buf) == data[4096:8192]
        second.close()
        buffer = segment._WINDOWS.buf
        for at in range(8192, len(data), 4096):
            win = (log, other_log)[at // 4096 % 2].map(at, at + 4096)
            assert bytes(win.buf) == data[at:at + 4096]
            win.close()
        assert segment._WINDOWS.buf is buffer  # nothing held: read into the same buffer
        assert bytes(kept) == data[10:20]
        held = log.map(0, 100)
        other = other_log.map(100, 300)  # the first still open: its bytes stay
        again = log.map(300, 400)
        assert (bytes(held.buf), bytes(other.buf), bytes(again.buf)) == (data[:100], data[100:300], data[300:400])
        for win in (held, other, again):
            win.close()
