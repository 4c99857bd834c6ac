"""Encoder-made log dirs holding every kind of file kafka-dump-log reads.

``build_corpus(root)`` writes the files and returns them grouped by how they are dumped;
the differential tests run kafka-dump-log and `logscan dump` over the same files.
"""

from __future__ import annotations

import os
import struct

from logscan.format import compression, index, snapshot
from logscan.format.control import (KRAFT_VERSION, LEADER_CHANGE, SNAPSHOT_FOOTER, SNAPSHOT_HEADER,
                                    encode_control_key)
from logscan.format.message import encode_message
from logscan.testing.encoder import (Rec, encode_batch, end_txn_marker_batch, legacy_message,
                                     legacy_wrapper)

T0 = 1_700_000_000_000


def _name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


def _write(path: str, data: bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def user_topic_batches() -> list[bytes]:
    """A segment of a user topic: every batch shape a broker writes, plus a gap."""
    recs = [Rec(b"v%d" % i, b"k%d" % i, (("h1", b"x"), ("h2", None)), T0 + i) for i in range(3)]
    batches = [
        encode_batch(recs, base_offset=0, partition_leader_epoch=0),
        encode_batch([Rec(None, b"tombstone", (), T0 + 5)], base_offset=3),
        encode_batch([Rec(b"\xff\xfe bad utf8 \xc3\xa9 ok", None, (), T0 + 6)], base_offset=4),
    ]
    offset = 5
    for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD):
        rs = [Rec(b"payload-%d-%d" % (codec, i) * 3, b"key%d" % i, (), T0 + 10 + i) for i in range(4)]
        batches.append(encode_batch(rs, base_offset=offset, codec=codec))
        offset += 4
    # transactional data, then COMMIT; another, then ABORT
    batches.append(encode_batch([Rec(b"t1", b"tk", (), T0 + 20), Rec(b"t2", None, (), T0 + 21)],
                                base_offset=offset, transactional=True, producer_id=1000,
                                producer_epoch=3, base_sequence=0))
    offset += 2
    batches.append(end_txn_marker_batch(commit=True, coordinator_epoch=7, base_offset=offset,
                                        producer_id=1000, producer_epoch=3, timestamp=T0 + 22))
    offset += 1
    batches.append(encode_batch([Rec(b"t3", None, (), T0 + 23)], base_offset=offset,
                                transactional=True, producer_id=1001, producer_epoch=0,
                                base_sequence=2147483647))
    offset += 1
    batches.append(end_txn_marker_batch(commit=False, coordinator_epoch=7, base_offset=offset,
                                        producer_id=1001, producer_epoch=0, timestamp=T0 + 24))
    offset += 1
    # compaction left a gap; the cleaner wrote a delete horizon; LogAppendTime
    offset += 5
    batches.append(encode_batch([Rec(b"after gap", b"g", (), T0 + 30)], base_offset=offset,
                                delete_horizon_ms=T0 + 86_400_000))
    offset += 1
    batches.append(encode_batch([Rec(b"lat", b"l", (), T0 + 31), Rec(b"lat2", b"l2", (), T0 + 32)],
                                base_offset=offset, log_append_time=T0 + 99))
    offset += 2
    # records inside a batch with offset gaps (compacted batch keeps its deltas)
    batches.append(encode_batch([Rec(b"a", b"a", (), T0 + 40, 0), Rec(b"c", b"c", (), T0 + 41, 2)],
                                base_offset=offset))
    return batches


def legacy_batches() -> list[bytes]:
    out = [
        legacy_message(0, b"v0 value", b"k", magic=0),
        legacy_message(1, None, b"null value", magic=0),
        legacy_message(2, b"v1 create", None, magic=1, timestamp=T0),
        legacy_wrapper([(b"a", b"1", T0 + 1), (None, b"2", T0 + 2)], offset=4, magic=1,
                       codec=compression.GZIP, timestamp=T0 + 2),
        legacy_wrapper([(b"b", b"3", -1), (b"c", b"4", -1)], offset=6, magic=0,
                       codec=compression.SNAPPY),
        legacy_wrapper([(b"d", b"5", T0 + 5)], offset=7, magic=1, codec=compression.LZ4,
                       timestamp=T0 + 9, log_append_time=True),
    ]
    return out


def txnlog_batches() -> list[bytes]:
    from logscan.format.txnlog import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE

    def key(tid: str) -> bytes:
        return struct.pack(">h", 0) + encode_message(TRANSACTION_LOG_KEY, 0, {"transactionalId": tid})

    def value(version: int, status: int, parts) -> bytes:
        return struct.pack(">h", version) + encode_message(TRANSACTION_LOG_VALUE, version, {
            "producerId": 1000, "producerEpoch": 3, "transactionTimeoutMs": 60000,
            "transactionStatus": status,
            "transactionPartitions": [{"topic": t, "partitionIds": p} for t, p in parts],
            "transactionLastUpdateTimestampMs": T0, "transactionStartTimestampMs": T0 - 5})

    return [
        encode_batch([Rec(value(0, 1, [("t", [0, 1])]), key("tx-a"), (), T0)], base_offset=0),
        encode_batch([Rec(value(1, 4, []), key("tx-a"), (), T0 + 1)], base_offset=1),
        encode_batch([Rec(None, key("tx-b"), (), T0 + 2)], base_offset=2),
        encode_batch([Rec(b"\x00", struct.pack(">h", 9) + b"zz", (), T0 + 3)], base_offset=3),
    ]


def metadata_batches() -> list[bytes]:
    from logscan.format.metadata import TOPIC_RECORD
    from logscan.format.raft import KRAFT_VERSION_RECORD, LEADER_CHANGE_MESSAGE, SNAPSHOT_FOOTER_RECORD, SNAPSHOT_HEADER_RECORD

    def framed(api_key: int, version: int, body: bytes) -> bytes:
        return bytes([1, api_key, version]) + body  # frame version, type, version (1-byte varints)

    topic = framed(2, 0, encode_message(TOPIC_RECORD, 0, {"name": "orders"}))
    leader = encode_message(LEADER_CHANGE_MESSAGE, 0, {"version": 0, "leaderId": 1,
                                                        "voters": [{"voterId": 1}],
                                                        "grantingVoters": [{"voterId": 1}]})
    header = encode_message(SNAPSHOT_HEADER_RECORD, 0, {"version": 0, "lastContainedLogTimestamp": T0})
    footer = encode_message(SNAPSHOT_FOOTER_RECORD, 0, {"version": 0})
    control = dict(control=True, partition_leader_epoch=1)
    return [
        encode_batch([Rec(leader, encode_control_key(LEADER_CHANGE), (), T0)], base_offset=0, **control),
        encode_batch([Rec(topic, None, (), T0 + 1), Rec(b"\x01\x7f\x00", None, (), T0 + 1)],
                     base_offset=1, partition_leader_epoch=1),
        encode_batch([Rec(header, encode_control_key(SNAPSHOT_HEADER), (), T0 + 2)], base_offset=3, **control),
        encode_batch([Rec(footer, encode_control_key(SNAPSHOT_FOOTER), (), T0 + 3)], base_offset=4, **control),
        encode_batch([Rec(encode_message(KRAFT_VERSION_RECORD, 0, {"version": 0, "kraftVersion": 1}), encode_control_key(KRAFT_VERSION), (), T0 + 4),
                      ], base_offset=5, **control),
        encode_batch([Rec(b"", encode_control_key(42), (), T0 + 5)], base_offset=6, **control),
    ]


def _index_for(batches: list[bytes], base: int) -> tuple[bytes, bytes]:
    """An .index and a .timeindex entry for every second batch (what the broker might keep)."""
    from logscan.format.batch import decode_batch_header, iter_records
    data = b"".join(batches)
    pos, oi, ti = 0, [], []
    for i, raw in enumerate(batches):
        b, _ = decode_batch_header(data, pos)
        if i % 2 == 0:
            oi.append((b.last_offset, pos))
            ts = max((r.timestamp for r in iter_records(data, b)), default=-1)
            ti.append((ts, b.last_offset))
        pos += len(raw)
    return index.encode_offset_index(base, oi), index.encode_time_index(base, ti)


def build_corpus(root: str) -> dict[str, list[str]]:
    """Write the corpus under ``root``; returns {"plain": [...], "transaction": [...], ...}."""
    files: dict[str, list[str]] = {"plain": [], "transaction": [], "metadata": [], "bad": []}
    user = user_topic_batches()
    d = os.path.join(root, "orders-0")
    log = _write(os.path.join(d, _name(0, ".log")), b"".join(user))
    oi, ti = _index_for(user, 0)
    files["plain"] += [log, _write(os.path.join(d, _name(0, ".index")), oi),
                       _write(os.path.join(d, _name(0, ".timeindex")), ti)]
    # an index whose second entry points at the wrong batch, a time index out of order
    bad_oi = index.encode_offset_index(0, [(2, 0), (4, 0)])
    bad_ti = index.encode_time_index(0, [(T0 + 99, 2), (T0 + 1, 4), (T0 + 2, 30)])
    files["plain"] += [_write(os.path.join(d, "mismatch", _name(0, ".log")), b"".join(user)),
                       _write(os.path.join(d, "mismatch", _name(0, ".index")), bad_oi),
                       _write(os.path.join(d, "mismatch", _name(0, ".timeindex")), bad_ti)]
    files["plain"].append(_write(os.path.join(d, _name(0, ".txnindex")),
                                 index.encode_aborted_txns([(1001, 16, 17, 16), (7, 1, 2, 0)])))
    files["plain"].append(_write(os.path.join(d, _name(18, ".snapshot")), snapshot.encode_producer_snapshot([
        (1000, 3, 1, 16, 1, T0 + 21, 7, -1), (1001, 0, 2147483647, 17, 0, T0 + 23, 7, 17),
        (1002, 0, -1, -1, 0, T0, -1, -1)])))
    files["plain"].append(_write(os.path.join(d, _name(20, ".log")), b""))
    files["plain"].append(_write(os.path.join(d, _name(20, ".index")), b""))
    # a segment starting at 100 with a cut-off last batch and trailing bytes
    tail = encode_batch([Rec(b"x" * 50, b"k", (), T0)], base_offset=101)
    files["plain"].append(_write(os.path.join(d, _name(100, ".log")),
                                 encode_batch([Rec(b"first", None, (), T0)], base_offset=100)
                                 + tail[: len(tail) - 7]))
    files["plain"].append(_write(os.path.join(d, _name(200, ".log")),
                                 encode_batch([Rec(b"y", None, (), T0)], base_offset=200) + b"\x01" * 9))
    files["plain"].append(_write(os.path.join(d, _name(0, ".log.deleted")), b""))
    crc_bad = bytearray(b"".join(user[:2]))
    crc_bad[-1] ^= 0xFF
    files["plain"].append(_write(os.path.join(root, "crc-0", _name(0, ".log")), bytes(crc_bad)))
    files["plain"].append(_write(os.path.join(root, "legacy-0", _name(0, ".log")),
                                 b"".join(legacy_batches())))
    files["transaction"].append(_write(os.path.join(root, "__transaction_state-0", _name(0, ".log")),
                                       b"".join(txnlog_batches())))
    files["metadata"].append(_write(os.path.join(root, "__cluster_metadata-0", _name(0, ".log")),
                                    b"".join(metadata_batches())))
    files["metadata"].append(_write(os.path.join(root, "__cluster_metadata-0",
                                                 "00000000000000000007-0000000001.checkpoint"),
                                    b"".join(metadata_batches())))
    # an active segment: the broker preallocates its indexes (zero-filled tails)
    active = user[:6]
    a_oi, a_ti = _index_for(active, 0)
    files["plain"] += [_write(os.path.join(root, "active-0", _name(0, ".log")), b"".join(active)),
                       _write(os.path.join(root, "active-0", _name(0, ".index")), a_oi + b"\0" * 800),
                       _write(os.path.join(root, "active-0", _name(0, ".timeindex")), a_ti + b"\0" * 1200)]
    # several compacted partitions with gaps: kafka-dump-log's stderr order is a hash order
    for p in range(6):
        gap = [encode_batch([Rec(b"a", b"a", (), T0)], base_offset=p),
               encode_batch([Rec(b"b", b"b", (), T0)], base_offset=p + 3 + p)]
        files["plain"].append(_write(os.path.join(root, f"compacted-{p}", _name(0, ".log")), b"".join(gap)))
    files["bad"].append(_write(os.path.join(root, "zero-0", _name(0, ".log")),
                               b"".join(user[:2]) + b"\0" * 1000))
    return files
