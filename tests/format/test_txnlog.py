"""``__transaction_state`` decoding, typed view, partitioning and kafka-dump-log text."""

from __future__ import annotations

import struct

import pytest

from logscan.format import compiled
from logscan.format.errors import DecodeError, TruncatedInput, UnknownVersion
from logscan.format.message import encode_message
from logscan.format.txnlog import (_TAGGED, _TAGGED_DEFAULTS, TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE,
                                   TransactionLogEntry, read_generic, decode_txnlog_entry, java_string_hash,
                                   render_txnlog_key_payload, transactional_id_partition)
from tests.format.test_message import FIXTURES, TXN_V1, expected_line, kafka_dump_lines, needs_kafka

KEY_TX1 = bytes.fromhex("0000" "0004" "74782d31")          # type 0, "tx-1"
VALUE_V1 = b"\x00\x01" + TXN_V1
# v0: ProducerId 7, epoch 0, timeout 1000, Empty, partitions null, timestamps 5 and -1
VALUE_V0_EMPTY = bytes.fromhex("0000" "0000000000000007" "0000" "000003e8" "00" "ffffffff"
                               "0000000000000005" "ffffffffffffffff")


def K(tid: str) -> bytes:
    return struct.pack(">h", 0) + encode_message(TRANSACTION_LOG_KEY, 0, {"transactionalId": tid})


def V(version: int, **values) -> bytes:
    return struct.pack(">h", version) + encode_message(TRANSACTION_LOG_VALUE, version, values)


FULL = dict(producerId=5, previousProducerId=3, nextProducerId=8, producerEpoch=2,
            nextProducerEpoch=0, transactionTimeoutMs=60000, transactionStatus=1,
            transactionPartitions=[{"topic": "a", "partitionIds": [0, 2]},
                                   {"topic": "b\u00e9", "partitionIds": [1]}],
            transactionLastUpdateTimestampMs=10, transactionStartTimestampMs=9,
            clientTransactionVersion=2)


def test_typed_view_of_v1_literal():
    e = decode_txnlog_entry(KEY_TX1, VALUE_V1)
    assert (e.transactional_id, e.value_version, e.producer_id, e.producer_epoch) == ("tx-1", 1, 5, 2)
    assert (e.state_id, e.state, e.partitions) == (4, "CompleteCommit", (("t", 0),))
    assert (e.last_update_timestamp_ms, e.start_timestamp_ms) == (10, 9)
    assert (e.previous_producer_id, e.next_producer_id, e.next_producer_epoch) == (-1, -1, -1)
    assert e.client_transaction_version == 2 and not e.is_tombstone


def test_typed_view_of_v0_empty_and_tombstone():
    e = decode_txnlog_entry(KEY_TX1, VALUE_V0_EMPTY)
    assert (e.value_version, e.producer_id, e.state, e.partitions) == (0, 7, "Empty", None)
    assert (e.start_timestamp_ms, e.client_transaction_version) == (-1, 0)
    t = decode_txnlog_entry(KEY_TX1, None)
    assert t.is_tombstone and t.transactional_id == "tx-1" and t.state is None


def test_all_tagged_fields_of_4_1_1():
    e = decode_txnlog_entry(K("x"), V(1, **FULL))
    assert (e.previous_producer_id, e.next_producer_id, e.next_producer_epoch) == (3, 8, 0)
    assert e.partitions == (("a", 0), ("a", 2), ("b\u00e9", 1))


def test_unknown_state_id_is_named_not_fatal():
    assert decode_txnlog_entry(K("x"), V(0, **{**FULL, "transactionStatus": 9,
                                               "previousProducerId": -1, "nextProducerId": -1,
                                               "nextProducerEpoch": -1,
                                               "clientTransactionVersion": 0})).state == "Unknown(9)"


def test_errors_are_typed():
    with pytest.raises(UnknownVersion):
        decode_txnlog_entry(K("x"), V(1, **FULL)[:1] + b"\x02" + V(1, **FULL)[2:])
    with pytest.raises(UnknownVersion):
        decode_txnlog_entry(b"\x00\x01" + K("x")[2:], None)
    for cut in range(len(VALUE_V1)):
        with pytest.raises(TruncatedInput):
            decode_txnlog_entry(KEY_TX1, VALUE_V1[:cut])
    for cut in range(len(KEY_TX1)):
        with pytest.raises(TruncatedInput):
            decode_txnlog_entry(KEY_TX1[:cut], VALUE_V1)


def test_missing_key_is_a_decode_error():
    from logscan.format.errors import CorruptRecordError
    with pytest.raises(CorruptRecordError):
        decode_txnlog_entry(None, VALUE_V1)
    with pytest.raises(CorruptRecordError):
        render_txnlog_key_payload(None, VALUE_V1, 3)


def test_trailing_bytes_are_ignored_like_kafka():
    assert decode_txnlog_entry(KEY_TX1 + b"junk", VALUE_V1 + b"junk").producer_id == 5


def test_render_texts():
    key, payload = render_txnlog_key_payload(KEY_TX1, VALUE_V0_EMPTY, 4)
    assert key == '{"type":"0","data":{"transactionalId":"tx-1"}}'
    assert payload == ('{"version":"0","data":{"producerId":7,"producerEpoch":0,'
                       '"transactionTimeoutMs":1000,"transactionStatus":0,'
                       '"transactionPartitions":null,"transactionLastUpdateTimestampMs":5,'
                       '"transactionStartTimestampMs":-1}}')
    assert render_txnlog_key_payload(KEY_TX1, None, 4)[1] == "<DELETE>"
    assert render_txnlog_key_payload(b"\x00\x03x", None, 4) == (
        "Unknown record type 3 at offset 4, skipping.", None)
    assert render_txnlog_key_payload(KEY_TX1, b"\x00\x05", 4) == (
        "Error at offset 4, skipping. Found an unknown record version 5 for 0 type", None)
    # the cause behind Kafka's text, for the dump's finding; nothing for a good record
    errors = []
    render_txnlog_key_payload(KEY_TX1, VALUE_V0_EMPTY, 4, errors)
    assert errors == []
    render_txnlog_key_payload(KEY_TX1, b"\x00\x05", 4, errors)
    render_txnlog_key_payload(b"\x00\x03x", None, 4, errors)
    assert [(type(e).__name__, e.found) for e in errors] == [("UnknownVersion", 5), ("UnknownVersion", 3)]


def test_java_string_hash_and_partition():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)      # Utils.abs -> 0
    assert transactional_id_partition("polygenelubricants", 50) == 0
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00   # UTF-16 code units
    assert transactional_id_partition("hello", 50) == 99162322 % 50
    assert transactional_id_partition("Aa", 7) == transactional_id_partition("BB", 7)


@pytest.mark.kafka
@needs_kafka
def test_render_matches_kafka_dump_log(tmp_path):
    recs = [
        (K('tx\n\x01\x1f"\\'), V(1, **FULL)),
        (KEY_TX1, VALUE_V1), (KEY_TX1, VALUE_V0_EMPTY), (KEY_TX1, None),
        (K("\u00e9\u2028/\U0001F600"), V(1, **{**FULL, "transactionPartitions": None})),
        (KEY_TX1, VALUE_V1[:9]), (KEY_TX1, VALUE_V1[:-1]), (KEY_TX1, b"\x00"),
        (b"\x00\x01xx", None), (b"\x00", VALUE_V1), (KEY_TX1, b"\x00\x02" + TXN_V1),
        (b"\x00\x00\x00\x09ab", VALUE_V1), (KEY_TX1, VALUE_V0_EMPTY[:30]),
        (KEY_TX1, b"\x00\x00" + bytes(15) + b"\x7f\xff\xff\xff"),
        (KEY_TX1 + b"junk", VALUE_V1 + b"junk"),
    ]
    # malformed UTF-8: Java's replacement characters, incl. its CESU-8 surrogate rule
    recs += [(struct.pack(">hh", 0, len(s)) + s, None) for s in (
        b"\xed\xa0", b"\xed\xa0(", b"\xed\xa0\x80\xed\xb0\x80", b"\xed\x9f\xbf", b"\xff",
        b"\xc3(", b"\xe2\x82(", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xf4\x90\x80\x80",
        b"\xe0\x80\xaf", b"\xf8\x88\x80\x80\x80")]
    lines = kafka_dump_lines(tmp_path, recs, "--transaction-log-decoder")
    assert len(lines) == len(recs)
    for offset, ((key, value), line) in enumerate(zip(recs, lines)):
        key_text, payload_text = render_txnlog_key_payload(key, value, offset)
        assert expected_line(offset, key, value, key_text, payload_text) == line


@pytest.mark.kafka
@needs_kafka
def test_real_fixture_segments_match_kafka_dump_log():
    from tests.format.test_message import compare_with_kafka_on_segment, fixture_segments, kv_suffix
    segments = fixture_segments("__transaction_state-")
    if not segments:
        pytest.skip("no __transaction_state segments under fixtures/ yet")
    checked = 0
    for seg in segments:
        checked += compare_with_kafka_on_segment(
            seg, "--transaction-log-decoder",
            lambda r: kv_suffix(*render_txnlog_key_payload(r.key, r.value, r.offset)))
    assert checked > 0


# --- the common layout's compiled step (compiled.txn_entry_v2) -------------------------------
# Where the module is built, decode_txnlog_entry reads a record laid out as a coordinator
# writes it through compiled.txn_entry_v2 and leaves anything else to the generic message
# reader, the reference. These tests hold the two to the same entry: on every record the
# fixture brokers wrote, on edge layouts, and on every byte of a record set to each of its 256
# values and every cut.

@pytest.fixture
def txn_entry_v2():
    if compiled.txn_entry_v2 is None:
        pytest.skip("logscan._native's txn_entry_v2 is not in use (LOGSCAN_PURE_PYTHON, or a build before it)")
    return compiled.txn_entry_v2


def _outcome(read, key, value):
    """The entry, or the class of the error raised."""
    try:
        return read(key, value)
    except DecodeError as e:
        return type(e)


def _same_as_generic(key, value) -> bool:
    """True when the compiled step took the record; it must then give the generic reader's
    entry (and never take a record the generic reader refuses)."""
    fast = compiled.txn_entry_v2(key, value, TransactionLogEntry, _TAGGED_DEFAULTS, _TAGGED)
    if fast is not None:
        assert fast == _outcome(read_generic, key, value), (key, value)
        assert type(fast) is TransactionLogEntry and type(fast.partitions) in (tuple, type(None))
    return fast is not None


def _fixture_records() -> list[tuple[bytes, bytes | None]]:
    from logscan.format.batch import RecordBatch, iter_records
    from logscan.format.logfile import walk_batches
    recs = []
    for seg in sorted(FIXTURES.glob("*/brokers/*/__transaction_state-*/*.log")):
        data = seg.read_bytes()
        for batch in walk_batches(data):
            if type(batch) is RecordBatch and not batch.is_control:
                recs += [(r.key, r.value) for r in iter_records(data, batch)]
    return recs


def test_every_fixture_record_takes_the_common_layout(txn_entry_v2):
    recs = _fixture_records()
    assert len(recs) >= 300   # the four fixture clusters' coordinators (TV1 and TV2 brokers)
    assert all(_same_as_generic(k, v) for k, v in recs)
    assert {v is None for _, v in recs} >= {False}


def _value_v0(**values) -> bytes:
    return V(0, **{**FULL, "previousProducerId": -1, "nextProducerId": -1, "nextProducerEpoch": -1,
                   "clientTransactionVersion": 0, **values})


def _tagged(*fields: tuple[int, bytes]) -> bytes:
    """A v1 value with FULL's fields and these tagged fields, in this order."""
    body = V(1, **{**FULL, "previousProducerId": -1, "nextProducerId": -1, "nextProducerEpoch": -1,
                   "clientTransactionVersion": 0})
    assert body.endswith(b"\x00")   # no tagged field written at the defaults
    return body[:-1] + bytes([len(fields)]) + b"".join(bytes([tag, len(raw)]) + raw for tag, raw in fields)


MANY = [{"topic": "t%d" % i, "partitionIds": list(range(i))} for i in range(4)]
TAKEN = [
    (K("x"), V(1, **FULL)), (K("x"), None), (K(""), V(1, **FULL)), (K("\u00e9\U0001F600"), V(1, **FULL)),
    (K("x"), V(1, **{**FULL, "transactionPartitions": None})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": []})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": MANY})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "t", "partitionIds": list(range(126))}]})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "y" * 126, "partitionIds": [1]}]})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "", "partitionIds": [2**31 - 1, -5]}]})),
    (K("x"), _value_v0()), (K("x"), _value_v0(transactionPartitions=None)),
    (K("x"), _value_v0(transactionPartitions=[])), (K("x"), _value_v0(transactionPartitions=MANY)),
    (K("x"), _value_v0(transactionPartitions=[{"topic": "z" * 300, "partitionIds": list(range(300))}])),
    (K("x"), _tagged((3, b"\x00\x07"), (0, bytes(8)), (2, b"\xff\xfe"), (1, b"\x80" + bytes(7)))),
    (K("x"), _tagged((0, bytes(7) + b"\x01"), (0, bytes(7) + b"\x02"))),   # the last one wins
    (K("x"), _tagged((4, b"new"), (2, b"\x00\x01"), (9, b""))),   # unknown tags passed over
    (K("x") + b"tail", V(1, **FULL) + b"tail"), (K("x"), _value_v0() + b"tail"),
    (K("x"), VALUE_V0_EMPTY), (KEY_TX1, VALUE_V1),
]
LEFT_TO_THE_GENERIC_READER = [
    (None, VALUE_V1), (b"", None), (b"\x00\x00\x00", None), (b"\x00\x01" + K("x")[2:], None),
    (b"\x00\x00\xff\xff", None), (b"\x00\x00\x00\x09ab", VALUE_V1),
    (struct.pack(">hh", 0, 2) + b"\xed\xa0", None), (struct.pack(">hh", 0, 1) + b"\xff", V(1, **FULL)),
    (K("x"), b""), (K("x"), b"\x00\x02" + TXN_V1), (K("x"), b"\xff\xff" + TXN_V1),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "y" * 127, "partitionIds": [1]}]})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "t", "partitionIds": list(range(127))}]})),
    (K("x"), V(1, **{**FULL, "transactionPartitions": [{"topic": "t\xff", "partitionIds": [1]}] * 127})),
    # a partition with a tagged field (tag 5, empty): the generic reader passes it over
    (K("x"), struct.pack(">hqhib", 1, 5, 2, 60000, 1) + b"\x02\x02y\x02" + struct.pack(">i", 1) + b"\x01\x05\x00"
     + struct.pack(">qq", 10, 9) + b"\x00"),
    (K("x"), _tagged((0, bytes(4)))), (K("x"), _tagged((2, bytes(8)))), (K("x"), _tagged((4, b"\x01" * 200))),
    (K("x"), _tagged((200, b"\x01"))), (K("x"), _tagged((4, b"\x01\x02"))[:-1]),
    (K("x"), _value_v0(transactionPartitions=[{"topic": "y", "partitionIds": [1]}]).replace(b"\x00\x01y", b"\xff\xffy")),
]


@pytest.mark.parametrize("key,value", TAKEN)
def test_common_layouts_are_read_as_the_generic_reader_reads_them(txn_entry_v2, key, value):
    assert _same_as_generic(key, value)


def test_other_buffer_types_are_read_alike():
    key, value = K("x"), V(1, **FULL)
    entry = decode_txnlog_entry(key, value)
    for wrap in (memoryview, bytearray):
        assert decode_txnlog_entry(wrap(key), wrap(value)) == entry
        assert decode_txnlog_entry(wrap(key), None) == decode_txnlog_entry(key, None)


@pytest.mark.parametrize("key,value", LEFT_TO_THE_GENERIC_READER)
def test_other_layouts_are_left_to_the_generic_reader(txn_entry_v2, key, value):
    assert not _same_as_generic(key, value)
    assert _outcome(decode_txnlog_entry, key, value) == _outcome(read_generic, key, value)


@pytest.mark.parametrize("key,value", [
    (K("tx-1"), V(1, **{**FULL, "transactionPartitions": MANY[:3]})),
    (K("tx-1"), _tagged((1, bytes(7) + b"\x09"), (2, b"\x00\x02"))),
    (K("tx-1"), _value_v0(transactionPartitions=MANY[:3])),
    (K("tx-1"), None),
], ids=["v1", "v1-tags", "v0", "tombstone"])
def test_every_byte_set_to_every_value_and_every_cut(txn_entry_v2, key, value):
    """Whatever a byte becomes, the record is read to the generic reader's entry or error."""
    raw = key + (value or b"")
    taken = 0
    for i in range(len(raw)):
        for b in range(256):
            changed = raw[:i] + bytes([b]) + raw[i + 1:]
            k, v = changed[:len(key)], (None if value is None else changed[len(key):])
            taken += _same_as_generic(k, v)
            assert _outcome(decode_txnlog_entry, k, v) == _outcome(read_generic, k, v)
    cuts = [(key[:cut], value) for cut in range(len(key))]
    cuts += [(key, value[:cut]) for cut in range(len(value))] if value is not None else []
    for k, v in cuts:
        assert _outcome(decode_txnlog_entry, k, v) == _outcome(read_generic, k, v)
    assert taken > len(raw) * 60   # many single-byte changes keep the common layout


def test_the_compiled_step_refuses_a_wrong_call(txn_entry_v2):
    key, value = K("x"), V(1, **FULL)
    assert txn_entry_v2(key, value, TransactionLogEntry, _TAGGED_DEFAULTS, _TAGGED) == read_generic(key, value)
    for cls, defaults, tags in ((dict, _TAGGED_DEFAULTS, _TAGGED), (TransactionLogEntry, _TAGGED_DEFAULTS[:-1], _TAGGED),
                                (TransactionLogEntry, _TAGGED_DEFAULTS, ((0, 3, 3),)),
                                (TransactionLogEntry, _TAGGED_DEFAULTS, ((0, 8, 13),))):
        with pytest.raises(ValueError):
            txn_entry_v2(key, value, cls, defaults, tags)
