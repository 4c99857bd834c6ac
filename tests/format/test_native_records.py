"""logscan._native.records_v2: the compiled common step of the record loop (iter_records).

It must give the Python loop's records exactly and stop before any record that loop reports
(or computes past 64 bits), so the loop reads it and raises what it raises. The fuzz target
``native`` (tools/fuzz/targets.py) compares both over arbitrary and mutated real bytes
(tests/robust); here: every batch the real brokers wrote for the fixtures, the edges of each
field, every byte of a batch's records changed, and the call's contract (that the module
is built and used: tests/format/test_native.py).
"""

from __future__ import annotations

import contextlib
import random
import struct
import tracemalloc
from pathlib import Path

import pytest

from logscan.format import batch as B
from logscan.format import compiled
from logscan.format.batch import INT32_MAX, Record, RecordBatch, decode_batch_header
from logscan.format.logfile import walk_batches
from logscan.format.primitives import encode_varint
from logscan.testing.encoder import Rec, encode_batch
from tools.fuzz.targets import records_key

REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000
I64_MAX = 2**63 - 1


@pytest.fixture
def records_v2():
    if compiled.records_v2 is None:
        pytest.skip("logscan._native is not in use (LOGSCAN_PURE_PYTHON)")
    return compiled.records_v2


def _both(buf, batch, **kw) -> tuple[list, list]:
    native = records_key(buf, batch, **kw)
    with compiled.pure_python():
        python = records_key(buf, batch, **kw)
    return native, python


def _same(raw: bytes, **kw) -> list:
    batch, _ = decode_batch_header(raw, 0, verify_crc=False)
    native, python = _both(raw, batch, **kw)
    assert native == python
    return native


def _fixture_logs() -> list[Path]:
    return sorted(p for p in (REPO / "fixtures").glob("*/brokers/*/*/*.log") if p.stat().st_size)


def test_every_real_batch_reads_the_same(records_v2):
    """Every v2 batch Kafka wrote for the fixtures (every codec the scenarios use, headers,
    control records, __transaction_state, __consumer_offsets, __cluster_metadata)."""
    batches = records = 0
    for path in _fixture_logs():
        data = path.read_bytes()
        for batch in walk_batches(data):
            if type(batch) is not RecordBatch:
                continue
            native, python = _both(data, batch)
            assert native == python, (path, batch.position)
            assert len(native) == batch.records_count and "error" not in (r[0] for r in native), path
            batches += 1
            records += len(native)
    assert batches > 1000 and records > batches


def _records_with(*recs: Rec, **kw) -> bytes:
    return encode_batch(list(recs), **kw)


def test_fields_at_their_edges(records_v2):
    cases = [
        _records_with(Rec(None, None, (), T0), Rec(b"", b"", (), T0 + 1)),  # null and empty
        _records_with(Rec(b"v", b"k", (("h", None), ("", b""), ("\u00e9t\u00e9", b"x" * 300)), T0)),
        _records_with(Rec(b"v" * 70_000, b"k", (), T0)),  # three-byte lengths
        _records_with(Rec(b"v", None, (), T0), Rec(b"w", None, (), T0 - 5_000_000), base_timestamp=T0),
        _records_with(Rec(b"v", None, (), I64_MAX), Rec(b"v", None, (), -(2**63)), base_timestamp=0),
        _records_with(*[Rec(b"v", None, (), T0, offset_delta=d) for d in (0, -1, INT32_MAX, -(2**31))]),
        _records_with(Rec(b"v"), base_offset=I64_MAX - 1, records_count=1),
        _records_with(Rec(b"a"), Rec(b"b"), Rec(b"c"), log_append_time=T0 + 9),
    ]
    for base_sequence in (-1, 0, INT32_MAX - 1, INT32_MAX, -7):
        cases.append(_records_with(Rec(b"a"), Rec(b"b"), Rec(b"c"), producer_id=1, producer_epoch=0,
                                   base_sequence=base_sequence))
    for raw in cases:
        _same(raw)
    # A base offset whose last record passes 64 bits: a Python int (the compiled step leaves
    # that record to the Python loop; the scan reports the batch as offset-overflow). A
    # timestamp past 64 bits wraps as DefaultRecord.readFrom's long sum does, in both.
    got = _same(_records_with(Rec(b"a"), Rec(b"b"), base_offset=I64_MAX))
    assert got[1][0] == 2**63
    got = _same(_records_with(Rec(b"a", None, (), I64_MAX), Rec(b"b", None, (), I64_MAX + 10), base_timestamp=I64_MAX,
                               max_timestamp=I64_MAX))
    assert got[1][2] == -(2**63) + 9


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def _batch_of(records: bytes, count: int, **kw) -> bytes:
    raw = bytearray(encode_batch([Rec(b"x")], **kw))
    raw[57:61] = struct.pack(">i", count)
    raw[61:] = records
    raw[8:12] = struct.pack(">i", len(raw) - 12)
    return bytes(raw)


def test_varints_the_python_reader_reads_its_own_way(records_v2):
    """Over-long encodings and bits past the width: Java (and the Python loop) drop them; the
    compiled step leaves such a record to the loop. Both give the same records or errors."""
    long_zero = b"\x80\x80\x80\x80\x00"  # 0 in five bytes
    past_width = b"\xff\xff\xff\xff\x7f"  # 32-bit varint with bits past 32
    ts_ten = b"\x80" * 9 + b"\x01"  # a ten-byte timestamp delta
    ts_past = b"\xff" * 9 + b"\x7f"
    for ts in (b"\x00", long_zero, ts_ten, ts_past, b"\x80" * 10 + b"\x00"):
        for offset_delta in (b"\x00", long_zero, past_width, b"\x80" * 5 + b"\x00"):
            for key in (b"\x01", b"\x02k", long_zero[:-1] + b"\x01", past_width):
                body = b"\x00" + ts + offset_delta + key + b"\x02v" + b"\x00"
                _same(_batch_of(_record(body), 1))
                _same(_batch_of(_record(body) + _record(b"\x00\x00\x02\x01\x02v\x00"), 2))
    # Record lengths: over-long, negative, zero, past the end.
    for length in (b"\x80\x80\x80\x80\x00", b"\x01", b"\x00", b"\x7e", b"\xff\xff\xff\xff\x0f"):
        _same(_batch_of(length + b"\x00\x00\x00\x01\x02v\x00", 1))


def test_headers_the_python_loop_reports_or_replaces(records_v2):
    cases = [
        b"\x00\x00\x00\x01\x02v\x02\x01\x02v",  # a null header key: the loop's error
        b"\x00\x00\x00\x01\x02v\x02\x04\xff\xfe\x02v",  # a header key not UTF-8: replaced
        b"\x00\x00\x00\x01\x02v\x02\x06\xed\xa0\x80\x01",  # a surrogate's bytes, a null value
        b"\x00\x00\x00\x01\x02v\x01",  # a negative header count
        b"\x00\x00\x00\x01\x02v\x14",  # more headers than bytes
    ]
    for body in cases:
        got = _same(_batch_of(_record(body), 1))
        assert len(got) == 1
    assert _same(_batch_of(_record(cases[1]), 1))[0][8] == (("\ufffd\ufffd", b"v"),)


def test_every_byte_of_the_records_changed_reads_the_same(records_v2):
    raw = encode_batch([Rec(b"value-%d" % i, b"k%d" % i, (("h", b"%d" % i),), T0 + 7 * i) for i in range(4)],
                       producer_id=3, producer_epoch=0, base_sequence=INT32_MAX - 2)
    for at in range(B.RECORD_BATCH_OVERHEAD, len(raw)):
        for value in (0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, raw[at] ^ 0x40, raw[at] + 1 & 0xFF, raw[at] - 1 & 0xFF):
            changed = bytearray(raw)
            changed[at] = value
            _same(bytes(changed))
    rnd = random.Random(7)
    for _ in range(3000):
        changed = bytearray(raw)
        for _ in range(rnd.randint(1, 4)):
            changed[rnd.randrange(B.RECORD_BATCH_OVERHEAD, len(raw))] = rnd.randrange(256)
        _same(bytes(changed))
        cut = changed[:rnd.randrange(B.RECORD_BATCH_OVERHEAD, len(raw))] + bytes(rnd.randrange(4))
        cut[8:12] = struct.pack(">i", len(cut) - 12)  # records cut short, or followed by zeros
        _same(bytes(cut))


def test_the_first_record_and_compressed_batches(records_v2):
    for codec in (0, 1, 2, 3, 4):
        raw = encode_batch([Rec(b"value-%d" % i, b"k", (("h", b"v"),), T0 + i) for i in range(50)], codec=codec)
        batch, _ = decode_batch_header(raw, 0)
        assert _same(raw)[-1][0] != "error"
        assert B.first_record(raw, batch) == next(B.iter_records(raw, batch))
        with compiled.pure_python():
            assert B.first_record(raw, batch) == next(B.iter_records(raw, batch))


def test_the_call_takes_what_it_is_asked(records_v2):
    raw = encode_batch([Rec(b"v%d" % i, None, (), T0 + i) for i in range(10)], base_offset=40)
    data = raw[B.RECORD_BATCH_OVERHEAD:]
    records, pos = records_v2(data, 0, 4, 40, T0, -1, None, Record)
    assert [r.offset for r in records] == [40, 41, 42, 43] and all(type(r) is Record for r in records)
    rest, end = records_v2(memoryview(data), pos, 100, 40, T0, -1, None, Record)
    assert [r.offset for r in rest] == list(range(44, 50)) and end == len(data)
    assert records_v2(data, len(data) + 5, 3, 0, 0, -1, None, Record) == ([], len(data) + 5)
    with pytest.raises(TypeError):
        records_v2(data, 0, 1, 0, 0, -1, None, dict)


def test_no_reference_is_leaked(records_v2):
    raw = encode_batch([Rec(b"value-%d" % i, b"k", (("h", b"v"), ("g", None)), T0 + i) for i in range(40)])
    data = raw[B.RECORD_BATCH_OVERHEAD:]
    records_v2(data, 0, 100, 0, T0, -1, None, Record)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            records_v2(data, 0, 100, 0, T0, -1, None, Record)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 300 reads of 40 records: a leaked object per record alone would be ~400 KB
    assert grown < 20_000, grown


@pytest.fixture
def records_iter():
    if compiled.records_iter is None:
        pytest.skip("logscan._native is not in use (LOGSCAN_PURE_PYTHON)")
    return compiled.records_iter


def test_iter_records_is_the_compiled_iterator(records_iter):
    from logscan import _native

    assert records_iter is _native.RecordsIter
    with compiled.pure_python():
        assert compiled.records_iter is None
    raw = encode_batch([Rec(b"v%d" % i, None, (), T0 + i) for i in range(5)])
    batch, _ = decode_batch_header(raw, 0)
    it = B.iter_records(raw, batch)
    assert type(it) is records_iter and iter(it) is it
    assert all(type(r) is Record for r in it) and next(it, None) is None


def test_a_reader_that_stops_reads_no_further():
    """Records come one a next(): the bad fourth record is not reached by a reader of three
    (compiled or not), and first_record stops at the first."""
    good = _record(b"\x00\x00\x00\x01\x02v\x00")
    raw = _batch_of(good * 3 + _record(b"\x00\x00\x00\x01\x02v\x01"), 5)
    batch, _ = decode_batch_header(raw, 0, verify_crc=False)
    for pure in (False, True):
        with compiled.pure_python() if pure else contextlib.nullcontext():
            it = B.iter_records(raw, batch)
            assert [next(it).offset for _ in range(3)] == [0, 0, 0]
            with pytest.raises(B.CorruptRecordError, match="invalid number of record headers"):
                next(it)
            assert B.first_record(raw, batch).value == b"v"


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_a_batch_inside_a_window_reads_the_same(kind):
    """A batch at a position of a larger buffer (a window of a log from byte ``base``): its
    records read where they are (bytes) or copied (others); the same records, and an error
    at the same byte of the log, as in pure Python."""
    raw = encode_batch([Rec(b"value-%d" % i, b"k", (("h", b"v"),), T0 + i) for i in range(20)])
    damaged = bytearray(raw)
    damaged[-5] = 0x7F  # the last record's header count: negative
    for batch_bytes in (raw, bytes(damaged)):
        window = b"\x00" * 37 + batch_bytes + b"\xff" * 11
        batch, _ = decode_batch_header(window, 37, verify_crc=False)
        batch = batch._replace(position=1000 + 37)
        native, python = _both(kind(window), batch, base=1000)
        assert native == python
        assert (native[-1][0] == "error") == (batch_bytes is not raw)
        if batch_bytes is not raw:
            assert native[-1][2] > 1000 + 37 + B.RECORD_BATCH_OVERHEAD


def test_the_iterator_takes_what_it_is_given(records_iter):
    """Items of the source other than a stretch pass through; a stretch's records are read
    from its position to its end, then (position, records left) goes back to the source."""
    raw = encode_batch([Rec(b"v%d" % i, None, (), T0 + i) for i in range(6)], base_offset=40)
    sent = []

    def source(stretch):
        yield "first"
        sent.append((yield stretch))
        yield "last"

    data = b"\x00" * 5 + raw[B.RECORD_BATCH_OVERHEAD:]
    records = list(records_iter(source((data, 5, len(data), 4, 40, T0, -1, None)), tuple, Record))
    assert records[0] == "first" and records[-1] == "last"
    assert [r.offset for r in records[1:-1]] == [40, 41, 42, 43] and sent[0][1] == 0
    rest = list(records_iter(source((data, sent[0][0], len(data), 9, 40, T0, -1, None)), tuple, Record))
    assert [r.offset for r in rest[1:-1]] == [44, 45] and rest[-1] == "last"
    with pytest.raises(TypeError):
        records_iter([1], tuple, Record)
    with pytest.raises(TypeError):
        records_iter(iter([1]), tuple, dict)
    with pytest.raises(ValueError):
        list(records_iter(source((data, 0, len(data) + 1, 1, 0, 0, -1, None)), tuple, Record))

    def failing():
        yield (data, 5, len(data), 1, 0, 0, -1, None)
        raise KeyError("the source's own error")

    it = records_iter(failing(), tuple, Record)
    assert next(it).offset == 0
    with pytest.raises(KeyError):
        next(it)
    assert next(it, None) is None


def test_bases_past_64_bits_are_read_by_the_loop(records_iter):
    """A RecordBatch whose bases are not 64-bit ints (a caller's _replace makes one; the header
    decoders never do): the iterator hands the stretch back and the loop reads each record
    with Python's ints, as in pure Python."""
    raw = encode_batch([Rec(b"a", None, (), T0), Rec(b"b", None, (), T0 + 1)], producer_id=1, producer_epoch=0,
                       base_sequence=5)
    batch, _ = decode_batch_header(raw, 0)
    for changes in ({"base_offset": 2**63 + 5}, {"base_offset": -(2**63) - 1}, {"base_timestamp": 2**64},
                    {"base_sequence": 2**63}, {"max_timestamp": 2**70, "attributes": batch.attributes | 0x08}):
        changed = batch._replace(**changes)
        native, python = _both(raw, changed)
        assert native == python and len(native) == 2 and native[0][0] != "error", changes


def test_no_reference_is_leaked_by_the_iterator(records_iter):
    raw = encode_batch([Rec(b"value-%d" % i, b"k", (("h", b"v"), ("g", None)), T0 + i) for i in range(40)])
    batch, _ = decode_batch_header(raw, 0)

    def read():
        list(B.iter_records(raw, batch))
        next(B.iter_records(raw, batch))  # abandoned after one

    read()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            read()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, grown
