import mmap
import struct
import zlib

import pytest

from logscan.format.batch import RecordBatch, iter_records
from logscan.format.control import decode_control_key, decode_end_txn_marker
from logscan.format.errors import CorruptRecordError, DecodeError, UnknownMagic
from logscan.format.legacy import LegacyBatch, iter_legacy_records
from logscan.format.logfile import (OverlongEntry, SkippedRegion, TruncatedTail, ZeroFilledRegion,
                                    kafka_entries, walk_batches)
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch, legacy_message, legacy_wrapper
from tests.kafkajava import dump_log, requires_jdk, run_java_source, text

T0 = 1700000000000


def _v2(base_offset, n=3, **kw):
    return encode_batch([Rec(b"value-%d" % i, b"k%d" % i, (), T0 + i) for i in range(n)],
                        base_offset=base_offset, **kw)


def _mixed_segment() -> list[bytes]:
    return [
        legacy_message(1, b"v0", b"k", magic=0),
        legacy_wrapper([(b"a", b"1", T0), (b"b", b"2", T0 + 1)], offset=3, magic=1, codec=1, timestamp=T0 + 1),
        _v2(4, codec=3, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True),
        end_txn_marker_batch(commit=True, coordinator_epoch=2, base_offset=7, producer_id=7, producer_epoch=0,
                             timestamp=T0 + 10),
        _v2(8, codec=4),
    ]


def _kinds(items):
    return [type(x).__name__ for x in items]


def test_mixed_magics_walk_with_positions():
    parts = _mixed_segment()
    buf = b"".join(parts)
    items = list(walk_batches(buf))
    assert _kinds(items) == ["LegacyBatch", "LegacyBatch", "RecordBatch", "RecordBatch", "RecordBatch"]
    positions = [sum(map(len, parts[:i])) for i in range(len(parts))]
    assert [x.position for x in items] == positions
    assert [x.size_in_bytes for x in items] == [len(p) for p in parts]
    assert [x.last_offset for x in items] == [1, 3, 6, 7, 10]


def test_start_and_end_bound_the_walk():
    parts = _mixed_segment()
    buf = b"junk" + b"".join(parts) + b"tail"
    start = 4 + len(parts[0])
    end = start + len(parts[1]) + len(parts[2])
    items = list(walk_batches(buf, start, end))
    assert _kinds(items) == ["LegacyBatch", "RecordBatch"] and items[0].position == start


def test_bad_crc_is_a_batch_not_a_finding():
    parts = _mixed_segment()
    damaged = bytearray(parts[2])
    damaged[-1] ^= 0xFF
    legacy = bytearray(parts[0])
    legacy[-1] ^= 0xFF
    items = list(walk_batches(bytes(legacy) + bytes(damaged) + parts[4]))
    assert _kinds(items) == ["LegacyBatch", "RecordBatch", "RecordBatch"]
    assert [x.crc_valid for x in items] == [False, False, True]


@pytest.mark.parametrize("grown_by", [1, 60, 200])
def test_grown_size_does_not_swallow_the_batches_it_covers(grown_by):
    """A size field damaged to more than the batch has (its CRC then fails): kafka-dump-log
    would jump past the claimed size; the walk yields the batch (crc_valid false), says where
    the next genuine batch starts inside the claimed bytes, and resumes there."""
    parts = [_v2(0), _v2(3), _v2(6), _v2(9)]
    buf = bytearray(b"".join(parts))
    at = len(parts[0])
    struct.pack_into(">i", buf, at + 8, len(parts[1]) - 12 + grown_by)
    items = list(walk_batches(bytes(buf)))
    assert _kinds(items) == ["RecordBatch", "RecordBatch", "OverlongEntry", "RecordBatch", "RecordBatch"]
    bad, finding = items[1], items[2]
    assert not bad.crc_valid and bad.size_in_bytes == len(parts[1]) + grown_by
    assert finding.position == at + 8 and finding.resume_at == at + len(parts[1])
    assert [x.base_offset for x in items if isinstance(x, RecordBatch)] == [0, 3, 6, 9]
    assert all(x.crc_valid for x in items[3:])


def test_crc_failed_batch_keeps_its_size_without_a_later_batch_inside():
    """Only a whole, CRC-valid batch with a higher offset is a reason to resume inside a
    failed batch: one stored in a record's value with a lower offset is not (nor is anything
    when resync is off, as in Kafka's own walk)."""
    inner = _v2(0, n=1)
    outer = bytearray(encode_batch([Rec(inner, b"k", (), T0)], base_offset=5))
    outer[-1] ^= 0xFF  # fail the outer CRC (the inner batch is not the last byte: headers follow)
    buf = bytes(outer) + _v2(6)
    assert _kinds(walk_batches(buf)) == ["RecordBatch", "RecordBatch"]
    # a batch at offset 3 grown over all of that: only the batch at offset 6 is a reason
    grown = bytearray(_v2(3))
    struct.pack_into(">i", grown, 8, len(grown) - 12 + len(buf))
    items = list(walk_batches(bytes(grown) + buf))
    assert _kinds(items) == ["RecordBatch", "OverlongEntry", "RecordBatch"]
    assert items[1].resume_at == len(grown) + len(outer) and items[2].base_offset == 6
    assert _kinds(walk_batches(bytes(grown) + buf, resync=False)) == ["RecordBatch"]


def test_every_truncation_gives_one_located_tail_finding():
    first, second = _v2(0), _v2(0x0101010101010101, codec=1)  # no zero byte in the offset
    for cut in range(1, len(second)):
        items = list(walk_batches(first + second[:cut]))
        assert len(items) == 2 and isinstance(items[0], RecordBatch), cut
        tail = items[1]
        assert isinstance(tail, TruncatedTail) and tail.position == len(first) and tail.length == cut


def test_zero_filled_tail_is_one_finding():
    buf = _v2(0) + bytes(4 * 1024 * 1024)
    items = list(walk_batches(buf))
    assert _kinds(items) == ["RecordBatch", "ZeroFilledRegion"]
    assert items[1].position == len(_v2(0)) and items[1].length == 4 * 1024 * 1024


def test_zero_region_then_batch_at_offset_zero():
    # the next batch itself starts with eight zero bytes (base offset 0)
    buf = _v2(5) + bytes(1000) + _v2(0)
    items = list(walk_batches(buf))
    assert _kinds(items) == ["RecordBatch", "ZeroFilledRegion", "RecordBatch"]
    assert items[1].length == 1000 and items[2].position == len(_v2(5)) + 1000


def test_small_zero_tail_below_header_size():
    items = list(walk_batches(_v2(0) + bytes(9)))
    assert isinstance(items[1], ZeroFilledRegion) and items[1].length == 9


def test_garbage_between_batches_is_cause_then_one_skipped_region():
    a, b = _v2(0), _v2(3)
    garbage = bytes(range(256)) * 3
    items = list(walk_batches(a + garbage + b))
    assert _kinds(items) == ["RecordBatch", "CorruptRecordError", "SkippedRegion", "RecordBatch"]
    skipped = items[2]
    assert (skipped.position, skipped.length) == (len(a), len(garbage))
    assert items[3].position == len(a) + len(garbage)


@pytest.mark.parametrize("size", [-5, 0, 13])
def test_size_below_14_is_located(size):
    a, b = _v2(0), _v2(3)
    bad = bytearray(_v2(100))
    struct.pack_into(">i", bad, 8, size)
    items = list(walk_batches(a + bytes(bad) + b))
    assert _kinds(items) == ["RecordBatch", "CorruptRecordError", "SkippedRegion", "RecordBatch"]
    assert items[1].position == len(a) + 8 and items[1].found == size
    assert items[2].length == len(bad) and items[3].base_offset == 3


def test_size_past_a_later_batch_is_corrupt_not_truncated():
    a, b = _v2(0), _v2(3)
    bad = bytearray(_v2(100))
    struct.pack_into(">i", bad, 8, 10_000)
    items = list(walk_batches(a + bytes(bad) + b))
    assert _kinds(items) == ["RecordBatch", "CorruptRecordError", "SkippedRegion", "RecordBatch"]


def test_unknown_magic_then_resync():
    bad = bytearray(_v2(100))
    bad[16] = 9
    items = list(walk_batches(bytes(bad) + _v2(3)))
    assert _kinds(items) == ["UnknownMagic", "SkippedRegion", "RecordBatch"]
    assert items[0].position == 16 and items[1].length == len(bad)


def test_v2_length_below_61_then_resync():
    bad = bytearray(_v2(100))
    struct.pack_into(">i", bad, 8, 20)
    items = list(walk_batches(bytes(bad) + _v2(3)))
    assert isinstance(items[0], CorruptRecordError) and isinstance(items[-1], RecordBatch)
    assert sum(x.length for x in items if isinstance(x, SkippedRegion)) == len(bad)


def test_resync_skips_candidates_with_bad_crc():
    bad = bytearray(_v2(100))
    bad[16] = 9  # unknown magic
    decoy = bytearray(_v2(200))
    decoy[-1] ^= 1  # looks like a batch but its CRC is wrong: not a resync point
    items = list(walk_batches(bytes(bad) + bytes(decoy) + _v2(3)))
    assert _kinds(items) == ["UnknownMagic", "SkippedRegion", "RecordBatch"]
    assert items[1].length == len(bad) + len(decoy)


def test_no_resync_stops_at_first_finding():
    bad = bytearray(_v2(100))
    bad[16] = 9
    items = list(walk_batches(_v2(0) + bytes(bad) + _v2(3), resync=False))
    assert _kinds(items) == ["RecordBatch", "UnknownMagic"]


def test_garbage_tail_without_later_batch():
    items = list(walk_batches(_v2(0) + b"\x7f" * 40))
    assert _kinds(items) == ["RecordBatch", "TruncatedTail"] and items[1].length == 40


def test_seventeen_trailing_bytes_end_the_log_as_in_kafka():
    # FileLogInputStream stops when at most HEADER_SIZE_UP_TO_MAGIC (17) bytes are left,
    # whatever they hold: here a size field below 14 that would otherwise be "corrupt".
    tail = struct.pack(">qi", 7, 3) + b"\x02" * 5
    items = list(walk_batches(_v2(0) + tail))
    assert _kinds(items) == ["RecordBatch", "TruncatedTail"] and items[1].length == 17


def test_cut_stops_at_an_entry_crossing_the_end():
    """``cut=True`` (kafka-dump-log --max-bytes): the entry crossing ``end`` ends the walk,
    even when a valid entry follows inside the cut (here one hidden in a payload)."""
    inner = _v2(9)
    outer = encode_batch([Rec(b"x" * 10 + inner + b"y" * 10, None, (), T0)], base_offset=1)
    buf = _v2(0) + outer
    end = len(_v2(0)) + len(outer) - 5
    assert _kinds(walk_batches(buf, 0, end)) == ["RecordBatch", "CorruptRecordError", "SkippedRegion",
                                                 "RecordBatch", "TruncatedTail"]
    items = list(walk_batches(buf, 0, end, cut=True))
    assert _kinds(items) == ["RecordBatch", "TruncatedTail"]
    assert (items[1].position, items[1].length) == (len(_v2(0)), len(outer) - 5)


def test_kafka_entries_frame_like_file_log_input_stream():
    a, b = _v2(0), _v2(3)
    assert list(kafka_entries(a + b, 0, len(a + b))) == [(0, len(a)), (len(a), len(b))]
    assert list(kafka_entries(a + b[:-1], 0, len(a + b) - 1)) == [(0, len(a))]  # truncated: stops
    assert list(kafka_entries(a + b[:17], 0, len(a) + 17)) == [(0, len(a))]  # <= 17 bytes left
    bad = bytearray(b)
    struct.pack_into(">i", bad, 8, 13)
    entries = kafka_entries(a + bytes(bad), 0, len(a) + len(bad))
    assert next(entries) == (0, len(a))
    with pytest.raises(CorruptRecordError) as e:
        next(entries)
    assert e.value.position == len(a) + 8 and e.value.found == 13


def test_crc32c_is_the_packages_function():
    import crc32c as package

    from logscan.format.batch import crc32c
    assert crc32c is package.crc32c and crc32c(b"123456789") == 0xE3069283


def test_walk_on_mmap(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(_mixed_segment()) + bytes(100))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        mv = memoryview(m)
        try:
            items = list(walk_batches(mv))
            records = [r.offset for x in items if isinstance(x, RecordBatch) for r in iter_records(mv, x)]
        finally:
            del items
            mv.release()
    assert records == [4, 5, 6, 7, 8, 9, 10]


# -- against Apache Kafka 4.1.1's own tools ------------------------------------------------------

# Writes a segment with Kafka's MemoryRecords (every magic x codec, transactional v2, markers).
KAFKA_GENERATOR = r"""
import java.io.FileOutputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.*;

public class GenSegment {
    static byte[] b(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }

    public static void main(String[] args) throws Exception {
        try (FileChannel ch = new FileOutputStream(args[0]).getChannel()) {
            long offset = 0;
            for (byte magic = 0; magic <= 2; magic++) {
                for (CompressionType t : CompressionType.values()) {
                    if (t == CompressionType.ZSTD && magic < 2) continue;
                    SimpleRecord[] recs = new SimpleRecord[3];
                    for (int i = 0; i < 3; i++) {
                        Header[] hs = (magic == 2 && i == 1)
                            ? new Header[]{new RecordHeader("h1", b("x")), new RecordHeader("h2", (byte[]) null)}
                            : new Header[0];
                        String value = i == 2 ? null : ("v-" + magic + "-" + t.name + "-" + i).repeat(i + 1);
                        recs[i] = new SimpleRecord(1700000000000L + i, i == 0 ? null : b("k" + i), b(value), hs);
                    }
                    MemoryRecords mr = magic == 2
                        ? MemoryRecords.withRecords(magic, offset, Compression.of(t).build(), TimestampType.CREATE_TIME,
                              4242L, (short) 1, (int) offset, 9, true, recs)
                        : MemoryRecords.withRecords(magic, offset, Compression.of(t).build(), TimestampType.CREATE_TIME, recs);
                    ch.write(mr.buffer());
                    offset += 3;
                }
            }
            ch.write(MemoryRecords.withEndTransactionMarker(offset++, 1700000001000L, 9, 4242L, (short) 1,
                new EndTransactionMarker(ControlRecordType.ABORT, 17)).buffer());
            ch.write(MemoryRecords.withEndTransactionMarker(offset++, 1700000002000L, 9, 4242L, (short) 1,
                new EndTransactionMarker(ControlRecordType.COMMIT, 18)).buffer());
        }
    }
}
"""


def _encoder_segment() -> bytes:
    parts, offset = [], 0
    for codec in range(5):
        recs = [Rec(b"value-%d-%d" % (codec, i) * (40 if i == 2 else 1), b"key-%d" % i,
                    (("h1", b"x"), ("h2", None)) if i == 1 else (), T0 + i) for i in range(3)]
        parts.append(encode_batch(recs, base_offset=offset, codec=codec, producer_id=7, producer_epoch=1,
                                  base_sequence=offset, partition_leader_epoch=3))
        offset += 3
    parts.append(end_txn_marker_batch(commit=True, coordinator_epoch=5, base_offset=offset,
                                      partition_leader_epoch=7, producer_id=7, producer_epoch=1, timestamp=T0))
    parts.append(end_txn_marker_batch(commit=False, coordinator_epoch=6, base_offset=offset + 1,
                                      producer_id=8, producer_epoch=0, timestamp=T0, log_append_time=T0 + 7))
    offset += 2
    parts.append(encode_batch([], base_offset=offset, last_offset_delta=1, delete_horizon_ms=T0 + 5000,
                              max_timestamp=T0, producer_id=9, producer_epoch=0, base_sequence=4))
    offset += 2
    parts.append(encode_batch([Rec(b"lat", None, (), 5)], base_offset=offset, log_append_time=T0 + 9999, codec=3))
    offset += 1
    for magic in (0, 1):
        parts.append(legacy_message(offset, b"plain", b"k", magic=magic, timestamp=T0 + 123))
        offset += 1
        for codec in (1, 2, 3):
            offset += 3
            inner = [(b"a", b"x%d" % codec, T0 + 1), (None, b"y" * 100, T0 + 2), (b"c", None, T0 + 3)]
            parts.append(legacy_wrapper(inner, offset=offset - 1, magic=magic, codec=codec, timestamp=T0 + 555,
                                        log_append_time=(codec == 2)))
    return b"".join(parts)


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", "replace")


def _dump_lines(buf: bytes) -> list[str]:
    """What kafka-dump-log --deep-iteration --print-data-log prints, rebuilt from our decoders
    (batch and record lines only, in the 4.1.1 Scala tool's format)."""
    lines = []
    for item in walk_batches(buf):
        assert not isinstance(item, DecodeError), item
        if isinstance(item, RecordBatch):
            horizon = "OptionalLong.empty" if item.delete_horizon_ms is None else f"OptionalLong[{item.delete_horizon_ms}]"
            lines.append(
                f"baseOffset: {item.base_offset} lastOffset: {item.last_offset} count: {item.records_count} "
                f"baseSequence: {item.base_sequence} lastSequence: {item.last_sequence} "
                f"producerId: {item.producer_id} producerEpoch: {item.producer_epoch} "
                f"partitionLeaderEpoch: {item.partition_leader_epoch} "
                f"isTransactional: {str(item.is_transactional).lower()} isControl: {str(item.is_control).lower()} "
                f"deleteHorizonMs: {horizon} position: {item.position} {item.timestamp_type}: {item.max_timestamp} "
                f"size: {item.size_in_bytes} magic: 2 compresscodec: {item.codec} crc: {item.crc} "
                f"isvalid: {str(item.crc_valid).lower()}")
            for r in iter_records(buf, item):
                line = (f"| offset: {r.offset} {item.timestamp_type}: {r.timestamp} "
                        f"keySize: {-1 if r.key is None else len(r.key)} "
                        f"valueSize: {-1 if r.value is None else len(r.value)} sequence: {r.sequence} "
                        f"headerKeys: [{','.join(k for k, _ in r.headers)}]")
                if item.is_control:
                    key = decode_control_key(r.key)
                    marker = decode_end_txn_marker(key, r.value)
                    line += f" endTxnMarker: {key.name} coordinatorEpoch: {marker.coordinator_epoch}"
                else:
                    line += "" if r.key is None else f" key: {_text(r.key)}"
                    line += "" if r.value is None else f" payload: {_text(r.value)}"
                lines.append(line)
        else:
            assert isinstance(item, LegacyBatch)
            lines.append(f"offset: {item.offset} position: {item.position} {item.timestamp_type}: {item.timestamp} "
                         f"size: {item.size_in_bytes} magic: {item.magic} compresscodec: {item.codec} "
                         f"crc: {item.crc} isvalid: {str(item.crc_valid).lower()}")
            for m in iter_legacy_records(item):
                line = (f"| offset: {m.offset} {m.timestamp_type}: {m.timestamp} "
                        f"keySize: {-1 if m.key is None else len(m.key)} "
                        f"valueSize: {-1 if m.value is None else len(m.value)} "
                        f"isValid: {str(m.crc_valid).lower()} crc: {m.crc}}}")  # the Scala tool's stray brace
                line += "" if m.key is None else f" key: {_text(m.key)}"
                line += "" if m.value is None else f" payload: {_text(m.value)}"
                lines.append(line)
    return lines


def _kafka_dump(path) -> list[str]:
    out, err, code = dump_log("--files", str(path), "--deep-iteration", "--print-data-log")
    assert code == 0, err
    return [line for line in out.split("\n") if line.startswith(("baseOffset:", "offset:", "| "))]


@pytest.mark.kafka
@requires_jdk
@pytest.mark.parametrize("source", ["encoder", "kafka"])
def test_kafka_dump_log_agrees(tmp_path, source):
    """Encoder-made segments read back by kafka-dump-log, and Kafka-made segments read by
    us, print the same batch and record lines."""
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    if source == "encoder":
        segment.write_bytes(_encoder_segment())
    else:
        proc = run_java_source(tmp_path, KAFKA_GENERATOR, segment)
        assert proc.returncode == 0, text(proc.stderr)
    expected = _kafka_dump(segment)
    assert len(expected) > 40 and all("isvalid: true" in x for x in expected if not x.startswith("|"))
    assert _dump_lines(segment.read_bytes()) == expected


# -- adversarial: any bytes around valid batches ---------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

REGION_TYPES = (SkippedRegion, TruncatedTail)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=120), st.sampled_from(_mixed_segment())), max_size=8))
def test_walk_never_raises_and_accounts_for_every_byte(chunks):
    """Invariant: the walk never raises, and its entries and reported regions tile the buffer
    exactly, in order; a cause finding points inside the region that follows it."""
    buf = b"".join(chunks)
    cursor = prev_position = 0
    for item in walk_batches(buf):
        assert isinstance(item, (RecordBatch, LegacyBatch, DecodeError))
        if isinstance(item, (RecordBatch, LegacyBatch)):
            assert item.position == cursor
            prev_position = item.position
            cursor += item.size_in_bytes
        elif isinstance(item, REGION_TYPES):
            assert item.position == cursor and item.length > 0
            cursor += item.length
        elif isinstance(item, OverlongEntry):  # back into the CRC-failed entry just yielded
            assert item.position == prev_position + 8 and prev_position < item.resume_at < cursor
            cursor = item.resume_at
        else:
            assert cursor <= item.position < len(buf)
    assert cursor == len(buf)


def test_unknown_magic_class_is_exported_for_findings():
    assert issubclass(ZeroFilledRegion, SkippedRegion) and issubclass(SkippedRegion, CorruptRecordError)
    assert UnknownMagic.reason == "magic"


def test_bulk_segment_for_benchmarks():
    from logscan.testing.encoder import bulk_segment
    template = _v2(0, n=5, codec=2)
    buf = b"".join(bulk_segment(template, 50, first_offset=100))
    batches = list(walk_batches(buf))
    assert [b.base_offset for b in batches] == list(range(100, 350, 5))
    assert all(isinstance(b, RecordBatch) and b.crc_valid for b in batches)
    assert [r.offset for r in iter_records(buf, batches[-1])] == list(range(345, 350))


@pytest.mark.parametrize("magic", [0, 1])
def test_resync_checks_a_legacy_candidates_lengths_before_its_crc(monkeypatch, magic):
    """Damaged bytes that look like a v0/v1 header claiming a 32 MiB message: the resync
    search rejects it by its key and value lengths, without a CRC-32 over the 32 MiB (a Spark
    task starting mid-file spent seconds per candidate on those), and still finds the
    legacy message and the batch that follow."""
    from logscan.format import logfile

    size = 32 << 20
    fake = struct.pack(">qiIbb", 7, size, 0xDEADBEEF, magic, 0) + b"\x01" * 64
    real = legacy_message(8, b"after the junk", b"k", magic=magic) + encode_batch([Rec(b"v")], base_offset=9)
    data = fake + real + bytes(size)  # room for the fake message's claimed extent
    crc_bytes = []
    real_crc32 = zlib.crc32

    class CountingZlib:
        @staticmethod
        def crc32(data, *args):
            crc_bytes.append(len(data))
            return real_crc32(data, *args)

    monkeypatch.setattr(logfile, "zlib", CountingZlib)
    assert logfile.find_next_entry(data, 0, len(data)) == len(fake)
    assert max(crc_bytes) < 1024, crc_bytes
