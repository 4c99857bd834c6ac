"""Damage under a valid CRC: records a writer got wrong (unknown versions, bad control
records, undecodable compressed payloads, decompression bombs) inside real segments.

The batch framing is intact, so the walk is not disturbed; what is asked is that the record
decoders report a located error for the batch, keep every other batch, and never crash or
allocate past the decompression cap.
"""

from __future__ import annotations

import random
import struct
import zlib

import cramjam
import pytest

from logscan.format import compression
from logscan.format.batch import decode_batch_header, iter_records

from .harness import (ATTRIBUTES_AT, RECORDS_AT, REAL_LOGS, Damage, check_log_damage, patch_record,
                      rebuilt_batch, record_layout, reference, replace_batch, reseal, xor)


def _batches(ref, *, control: bool | None = None, compressed: bool | None = None):
    out = []
    for p, s in ref.spans:
        b = decode_batch_header(ref.data, p)[0]
        if control is not None and b.is_control != control:
            continue
        if compressed is not None and bool(b.compression) != compressed:
            continue
        out.append((p, s, b))
    return out


def _check_all(ref, damages, tmp_path, **kw) -> list[str]:
    problems = []
    for d in damages:
        problems += [f"{d!r}: {p}" for p in check_log_damage(ref, d, tmp_path, **kw).problems]
    return problems


# --- unknown record and schema versions ----------------------------------------------------

TXNLOG_VERSIONS = [
    ("value", struct.pack(">h", 99), "TransactionLogValue version 99"),
    ("value", struct.pack(">h", -1), "TransactionLogValue version -1"),
    ("key", struct.pack(">h", 99), "record type (key version) 99"),
]
OFFSETS_VERSIONS = [
    ("key", struct.pack(">h", 99), "record type (key version) 99"),
    ("value", struct.pack(">h", 99), "OffsetCommitValue version 99"),
]


def _version_damages(ref, table, records=3):
    damages = []
    for p, _, b in _batches(ref, control=False)[:records]:
        for field, prefix, label in table:
            damages.append(patch_record(ref.data, p, 0, field, prefix, f"{label} at batch {p}"))
    return damages


@pytest.mark.parametrize("field,prefix,label", TXNLOG_VERSIONS, ids=[t[2] for t in TXNLOG_VERSIONS])
def test_scan_reports_unknown_transaction_log_versions(tmp_path, field, prefix, label):
    """The coordinator would refuse to load such a record; the scan says which one, where."""
    ref = reference(REAL_LOGS["txnlog"], tmp_path)
    damages = _version_damages(ref, [(field, prefix, label)])
    problems = []
    for d in damages:
        out = check_log_damage(ref, d, tmp_path, must_report=False)
        problems += [f"{d!r}: {p}" for p in out.problems if p.startswith(("scan", "dump lost", "dump changed"))]
        p = max(q for q, _ in ref.spans if q <= d.lo)
        hits = [f for f in out.read.findings if f.position == p and f.reason == "version"]
        if len(hits) != 1 or "offset" not in hits[0].message:
            problems.append(f"{d!r}: scan findings {out.read.findings}")
    assert problems == []


@pytest.mark.parametrize("log,table", [("txnlog", TXNLOG_VERSIONS), ("offsets", OFFSETS_VERSIONS)])
def test_dump_reports_unknown_coordinator_record_versions(tmp_path, log, table):
    ref = reference(REAL_LOGS[log], tmp_path)
    assert _check_all(ref, _version_damages(ref, table, records=1), tmp_path, scan_sees=log == "txnlog") == []


@pytest.mark.parametrize("log,table", [("txnlog", TXNLOG_VERSIONS), ("offsets", OFFSETS_VERSIONS)])
def test_unknown_coordinator_record_versions_keep_kafkas_text(tmp_path, log, table):
    """Whatever else, the dump keeps printing what kafka-dump-log prints for such a record
    (its --transaction-log-decoder / --offsets-decoder text) and loses nothing else."""
    ref = reference(REAL_LOGS[log], tmp_path)
    for d in _version_damages(ref, table, records=1):
        out = check_log_damage(ref, d, tmp_path, must_report=False, scan_sees=False)
        assert [p for p in out.problems if "lost" in p or "changed" in p] == [], d
        p = max(q for q, _ in ref.spans if q <= d.lo)
        key = out.dump.records[p][0]["key"]
        assert key.startswith(("Error at offset", "Unknown record type 99 at offset")), key


# --- control records -----------------------------------------------------------------------

CONTROL_DAMAGE = [
    ("key", struct.pack(">h", -1), "control key version -1"),
    ("value", struct.pack(">h", -1), "end transaction marker version -1"),
]


@pytest.mark.parametrize("field,prefix,label", CONTROL_DAMAGE, ids=[c[2] for c in CONTROL_DAMAGE])
@pytest.mark.parametrize("log", ["txn", "offsets", "codecs"])
def test_corrupt_control_records(tmp_path, log, field, prefix, label):
    """A marker the broker would refuse (negative versions): reported by the dump and by the
    scan, which reads every marker for its type and coordinator epoch."""
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = [patch_record(ref.data, p, 0, field, prefix, f"{label} at {p}")
               for p, _, _ in _batches(ref, control=True)]
    assert damages
    assert _check_all(ref, damages, tmp_path) == []


def test_control_record_without_a_key(tmp_path):
    """A control batch whose record has a null key: ControlRecordType.parseTypeId refuses it."""
    ref = reference(REAL_LOGS["txn"], tmp_path)
    p, _, _ = _batches(ref, control=True)[0]
    rec = record_layout(ref.data, p)[0]
    # key length varint (zig-zag) -> -1 (null); the key bytes become attributes-like filler
    # inside the same record length, so the record no longer parses as written: reported.
    klen_at = rec["key_at"] - 1
    data = bytearray(ref.data)
    data[klen_at] = 0x01
    d = Damage(reseal(bytes(data), p), klen_at, klen_at + 1, "control key length -1")
    assert _check_all(ref, [d], tmp_path) == []


def test_kraft_control_record_with_a_null_value(tmp_path):
    """Regression (atheris, tools/fuzz/crashes/control-kraft-record-null-value.bin): a
    LeaderChange control record written without a value made `logscan dump` die with a
    TypeError inside the KRaft value renderer. Now: a located finding, the dump goes on."""
    from logscan.testing.encoder import Rec, encode_batch

    from .harness import BROKER, batch_spans, dump_json, place

    source = BROKER / "__cluster_metadata-0" / "00000000000000000000.log"
    data = source.read_bytes()
    spans = batch_spans(data)
    p, s = spans[0]
    b = decode_batch_header(data, p)[0]
    (record,) = list(iter_records(data, b))
    assert b.is_control and record.key == b"\x00\x00\x00\x02"  # LEADER_CHANGE
    nulled = encode_batch([Rec(None, record.key, (), record.timestamp)], base_offset=b.base_offset,
                          partition_leader_epoch=b.partition_leader_epoch, control=True,
                          producer_id=b.producer_id, producer_epoch=b.producer_epoch)
    path = place(tmp_path, source, nulled + data[p + s:])
    run = dump_json(path)
    assert run.status == 1
    assert [(f["position"], f["reason"]) for f in run.findings] == [(0, "corrupt")]
    assert len(run.batches) == len(spans)


# --- compressed payloads -------------------------------------------------------------------

@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_damaged_compressed_payload_under_a_valid_crc(tmp_path, codec):
    """Every byte of a real compressed payload flipped in turn, CRC resealed: a decode error
    at the batch (or a still-valid stream), never a crash, the other batches intact."""
    ref = reference(REAL_LOGS["codecs"], tmp_path)
    (p, s, _), = [(p, s, b) for p, s, b in _batches(ref, compressed=True) if b.codec == codec][:1]
    damages = []
    for at in range(p + RECORDS_AT, p + s):
        d = xor(ref.data, at, 0x01 if at % 2 else 0xFF)
        damages.append(Damage(reseal(d.data, p), d.lo, d.hi, d.label + " (resealed)"))
    assert _check_all(ref, damages, tmp_path, must_report=False, scan_sees=False) == []


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_id(tmp_path, codec_id):
    ref = reference(REAL_LOGS["codecs"], tmp_path)
    damages = []
    for p, _, _ in _batches(ref):
        data = bytearray(ref.data)
        data[p + ATTRIBUTES_AT + 1] = (data[p + ATTRIBUTES_AT + 1] & ~0x07) | codec_id
        damages.append(Damage(reseal(bytes(data), p), p + ATTRIBUTES_AT + 1, p + ATTRIBUTES_AT + 2,
                              f"codec id {codec_id} at {p}"))
    # the scan decodes records of control batches only: the marker at the end
    assert _check_all(ref, damages[:-1], tmp_path, scan_sees=False) == []
    assert _check_all(ref, damages[-1:], tmp_path) == []


# --- decompression bombs -------------------------------------------------------------------

def bomb_payload(codec: int, total: int) -> bytes:
    """A payload in Kafka's framing for ``codec`` that inflates to at least ``total`` zero
    bytes, built from one small compressed unit repeated (gzip members, zstd frames, lz4 and
    snappy-java blocks are all read back to back)."""
    if codec == compression.GZIP:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        unit = c.compress(bytes(1 << 20)) + c.flush()
        return unit * (total // (1 << 20) + 1)
    if codec == compression.ZSTD:
        unit = bytes(cramjam.zstd.compress(bytes(16 << 20)))
        return unit * (total // (16 << 20) + 1)
    if codec == compression.LZ4:
        frame = compression.kafka_lz4_compress(bytes(1 << 16))
        return frame[:7] + frame[7:-4] * (total // (1 << 16) + 1) + frame[-4:]
    stream = compression.snappy_java_compress(bytes(compression.SNAPPY_JAVA_BLOCK_SIZE))
    header = compression.SNAPPY_JAVA_HEADER.size
    return stream[:header] + stream[header:] * (total // compression.SNAPPY_JAVA_BLOCK_SIZE + 1)


CODECS = {"gzip": compression.GZIP, "snappy": compression.SNAPPY, "lz4": compression.LZ4,
          "zstd": compression.ZSTD}


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_decompression_bomb_in_a_data_batch_dump(tmp_path, codec):
    """The dump stops inflating at --max-decompressed-bytes, says where, and goes on."""
    ref = reference(REAL_LOGS["codecs"], tmp_path)
    p, s = ref.spans[2]
    bomb = rebuilt_batch(ref.data, p, bomb_payload(CODECS[codec], 8 << 20), codec=CODECS[codec])
    damage, shift = replace_batch(ref.data, p, bomb, f"{codec} bomb")
    out = check_log_damage(ref, damage, tmp_path, shift=shift, scan_sees=False,
                           dump_options={"max_decompressed": 1 << 20})
    assert out.problems == []
    assert [(f["position"], f["reason"]) for f in out.dump.findings] == [(p + RECORDS_AT, "bomb")]
    assert out.dump.records[p] == []


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_decompression_bomb_the_scan_reads(tmp_path, codec):
    """A bomb where the scan must decompress: a __transaction_state batch. It inflates past
    the default 256 MiB cap; the scan stops at the cap with a located 'bomb' finding."""
    ref = reference(REAL_LOGS["txnlog"], tmp_path)
    p, s = ref.spans[1]
    total = compression.DEFAULT_MAX_OUTPUT + (1 << 20)
    bomb = rebuilt_batch(ref.data, p, bomb_payload(CODECS[codec], total), codec=CODECS[codec])
    damage, shift = replace_batch(ref.data, p, bomb, f"{codec} bomb past the default cap")
    out = check_log_damage(ref, damage, tmp_path, shift=shift,
                           dump_options={"max_decompressed": 1 << 20})
    assert out.problems == []
    assert [(f.position, f.reason) for f in out.read.findings] == [(p + RECORDS_AT, "bomb")]


def test_decompression_bomb_in_a_control_batch(tmp_path):
    """Brokers never compress markers, but the scan decodes every marker: a compressed one
    that inflates past the cap is reported, not followed."""
    ref = reference(REAL_LOGS["txn"], tmp_path)
    p, s, _ = _batches(ref, control=True)[0]
    total = compression.DEFAULT_MAX_OUTPUT + (1 << 20)
    bomb = rebuilt_batch(ref.data, p, bomb_payload(compression.ZSTD, total), codec=compression.ZSTD)
    damage, shift = replace_batch(ref.data, p, bomb, "zstd bomb as a marker")
    out = check_log_damage(ref, damage, tmp_path, shift=shift, dump_options={"max_decompressed": 1 << 20})
    assert out.problems == []
    assert [(f.position, f.reason) for f in out.read.findings] == [(p + RECORDS_AT, "bomb")]


# --- any byte of the records, under a valid CRC ----------------------------------------------

@pytest.mark.parametrize("log", sorted(REAL_LOGS))
def test_flipped_record_bytes_under_a_valid_crc(tmp_path, log):
    """A sample of single-byte changes in the records of uncompressed batches, each batch's
    CRC resealed: what breaks the record structure is reported at that batch, what does not
    is printed as the new value; nothing else moves."""
    ref = reference(REAL_LOGS[log], tmp_path)
    rnd = random.Random(log)
    damages = []
    for p, s, _ in _batches(ref, compressed=False):
        for at in rnd.sample(range(p + RECORDS_AT, p + s), min(12, s - RECORDS_AT)):
            d = xor(ref.data, at, rnd.choice([0x01, 0x40, 0x80, 0xFF]))
            damages.append(Damage(reseal(d.data, p), d.lo, d.hi, d.label + " (resealed)"))
    assert _check_all(ref, damages[:150], tmp_path, must_report=False, scan_sees=False) == []
