"""The generic generated-message reader, its JSON, and the kafka-dump-log oracle helpers
(``kafka_dump_lines``) shared by the txnlog/offsets/metadata/raft tests."""

from __future__ import annotations

import json
import re
import struct
import uuid
from pathlib import Path

import pytest

from logscan.format.errors import CorruptRecordError, DecodeError, TruncatedInput, UnknownVersion
from logscan.format.message import (F, M, Message, decode_message, encode_message, java_double,
                                    jackson_string, kafka_uuid, message_json, to_kafka_json)
from logscan.format.txnlog import TRANSACTION_LOG_VALUE
from tests.kafkajava import DUMP_CLASS, KAFKA_LIBS, requires_kafka, run_java, text

needs_kafka = requires_kafka


def kafka_dump_lines(tmp_path: Path, records, decoder_flag: str, *, control: bool = False,
                     name: str = "00000000000000000000.log") -> list[str]:
    """Write ``records`` (key, value) as one v2 batch and return the record lines
    kafka-dump-log 4.1.1 prints for them with ``decoder_flag``."""
    from logscan.testing.encoder import Rec, encode_batch
    seg = tmp_path / name
    seg.write_bytes(encode_batch([Rec(key=k, value=v, timestamp=1000) for k, v in records],
                                 control=control))
    out = run_java(DUMP_CLASS, "--files", seg, decoder_flag)
    assert out.returncode == 0, text(out.stderr)
    return [line for line in text(out.stdout).split("\n") if line.startswith("| offset: ")]


def expected_line(offset: int, key, value, key_text, payload_text) -> str:
    """The record line kafka-dump-log prints, built from our renderer's output."""
    line = (f"| offset: {offset} CreateTime: 1000 keySize: {-1 if key is None else len(key)} "
            f"valueSize: {-1 if value is None else len(value)} sequence: -1 headerKeys: []")
    if key_text is not None:
        line += f" key: {key_text}"
    if payload_text is not None:
        line += f" payload: {payload_text}"
    return line


def sample_values(fields, version: int, seed: int = 1, *, nulls: bool = False) -> dict:
    """Non-default values for every field of ``fields`` (nested structs too), so a round
    trip or a comparison with Kafka exercises every field; ``nulls`` nulls the nullables."""
    out = {}
    for i, f in enumerate(fields):
        n = seed * 31 + i
        if nulls and f.nullable is not None and version in f.nullable:
            out[f.json_name] = None
            continue
        if f.is_array:
            out[f.json_name] = [_sample(f, f.element_type, version, n + j) for j in range(2)]
        else:
            out[f.json_name] = _sample(f, f.type, version, n)
    return out


def _sample(f, type, version, n):
    bits = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "int64": 63}
    if type in bits:
        return (n * 7919 + 3) % (1 << bits[type]) if type == "uint16" else (n * 7919 + 3) % (1 << bits[type]) - (1 << (bits[type] - 1)) // 2
    if type == "float64":
        return n * 1.25 + 0.1
    if type == "bool":
        return True
    if type == "string":
        return f"s{n}-\u00e9\"\t"
    if type in ("bytes", "records"):
        return bytes(range(n % 7 + 1))
    if type == "uuid":
        return uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % (1 << 128) or 1)
    return sample_values(f.fields, version, n + 1)


# --------------------------------------------------------------------------- unit tests

# TransactionLogValue v1 (flexible), written out by hand from the spec.
TXN_V1 = bytes.fromhex(
    "0000000000000005"      # ProducerId 5
    "0002"                  # ProducerEpoch 2
    "0000ea60"              # TransactionTimeoutMs 60000
    "04"                    # TransactionStatus CompleteCommit
    "02"                    # TransactionPartitions: 1 element (N+1)
    "0274"                  #   Topic "t"
    "0200000000"            #   PartitionIds [0]
    "00"                    #   no tagged fields
    "000000000000000a"      # TransactionLastUpdateTimestampMs 10
    "0000000000000009"      # TransactionStartTimestampMs 9
    "02"                    # 2 tagged fields
    "02020002"              #   tag 2 ClientTransactionVersion = 2
    "0903616263")           #   tag 9 (unknown to 4.1.1): 3 raw bytes


def test_decodes_flexible_literal_with_known_and_unknown_tags():
    msg, end = decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 1)
    assert end == len(TXN_V1)
    assert msg.producer_id == 5 and msg["producerEpoch"] == 2
    assert msg.transaction_timeout_ms == 60000 and msg.transaction_status == 4
    (part,) = msg.transaction_partitions
    assert (part.topic, part.partition_ids) == ("t", (0,))
    assert msg.client_transaction_version == 2
    assert msg.previous_producer_id == -1 and msg.next_producer_epoch == -1  # defaults
    assert msg.unknown_tagged == ((9, b"abc"),)
    assert list(msg)[:3] == ["producerId", "previousProducerId", "nextProducerId"]


def test_json_omits_default_tagged_fields_and_keeps_spec_order():
    msg, _ = decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 1)
    assert to_kafka_json(msg) == (
        '{"producerId":5,"producerEpoch":2,"transactionTimeoutMs":60000,"transactionStatus":4,'
        '"transactionPartitions":[{"topic":"t","partitionIds":[0]}],'
        '"transactionLastUpdateTimestampMs":10,"transactionStartTimestampMs":9,'
        '"clientTransactionVersion":2}')


def test_round_trip_keeps_unknown_tags():
    msg, _ = decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 1)
    assert encode_message(TRANSACTION_LOG_VALUE, 1, msg, msg.unknown_tagged) == TXN_V1


def test_junk_on_both_sides_and_next_pos():
    buf = b"\xde\xad\xbe" + TXN_V1 + b"\xff" * 5
    msg, end = decode_message(TRANSACTION_LOG_VALUE, buf, 3, 1)
    assert end == 3 + len(TXN_V1) and msg.position == 3
    assert msg.transaction_partitions[0].position == 3 + 16


def test_one_and_several_byte_lengths_and_counts_of_a_flexible_version():
    # Lengths, counts and tags are unsigned varints in flexible versions: one byte up to 127
    # (the reader's fast path), two bytes from 128 (the general one); both, side by side.
    for n in (126, 127, 128, 300):
        parts = [{"topic": "t" * n, "partitionIds": list(range(n))}, {"topic": "u", "partitionIds": [7]}]
        values = {**sample_values(TRANSACTION_LOG_VALUE.fields, 1), "transactionPartitions": parts}
        body = encode_message(TRANSACTION_LOG_VALUE, 1, values)
        msg, end = decode_message(TRANSACTION_LOG_VALUE, body, 0, 1)
        assert end == len(body)
        assert [(p.topic, p.partition_ids) for p in msg.transaction_partitions] == [
            ("t" * n, tuple(range(n))), ("u", (7,))]
        for cut in range(len(body)):  # cut anywhere, a two-byte length's first byte included
            with pytest.raises(TruncatedInput):
                decode_message(TRANSACTION_LOG_VALUE, body, 0, 1, cut)


def test_a_cut_names_the_field_that_does_not_fit():
    # The reader takes scalars next to each other in one unpack (producerId to
    # transactionStatus, tagged fields between them in the spec), and strings and arrays a
    # short way; when the bytes run out, the error is still the field's own, at its start.
    cases = {9: (8, "producerEpoch needs 2 bytes, 1 left"),
             12: (10, "transactionTimeoutMs needs 4 bytes, 2 left"),
             17: (17, "topic needs 1 bytes, 0 left"),
             21: (19, "partitionIds needs 4 bytes, 2 left"),
             30: (24, "transactionLastUpdateTimestampMs needs 8 bytes, 6 left"),
             35: (32, "transactionStartTimestampMs needs 8 bytes, 3 left"),
             43: (43, "clientTransactionVersion needs 2 bytes, 0 left")}
    for cut, (position, message) in cases.items():
        with pytest.raises(TruncatedInput) as err:
            decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 1, cut)
        assert (err.value.position, str(err.value)) == (position, f"{message} at byte {position}"), cut
    msg, _ = decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 1)
    assert list(msg) == [f.json_name for f in TRANSACTION_LOG_VALUE.fields]   # spec order
    v0 = encode_message(TRANSACTION_LOG_VALUE, 0, {"producerId": 1, "transactionPartitions": [
        {"topic": "abc", "partitionIds": [1, 2]}]})
    # v0: int16 string length and int32 counts. 15 bytes of scalars, count, length at 19.
    for cut, (position, message) in {22: (21, "topic needs 3 bytes, 1 left"),
                                     30: (28, "partitionIds needs 4 bytes, 2 left")}.items():
        with pytest.raises(TruncatedInput) as err:
            decode_message(TRANSACTION_LOG_VALUE, v0, 0, 0, cut)
        assert (err.value.position, str(err.value)) == (position, f"{message} at byte {position}"), cut
    assert decode_message(TRANSACTION_LOG_VALUE, v0, 0, 0)[0].transaction_partitions[0].partition_ids == (1, 2)


@pytest.mark.parametrize("version", [0, 1])
def test_every_prefix_is_truncated(version):
    body = encode_message(TRANSACTION_LOG_VALUE, version, sample_values(
        TRANSACTION_LOG_VALUE.fields, version))
    for cut in range(len(body)):
        with pytest.raises(TruncatedInput):
            decode_message(TRANSACTION_LOG_VALUE, body[:cut], 0, version)
        with pytest.raises(TruncatedInput):   # an ``end`` bound is honoured like a short buffer
            decode_message(TRANSACTION_LOG_VALUE, body + b"\0" * 9, 0, version, cut)


def test_unknown_version_and_corrupt_values_are_located_errors():
    with pytest.raises(UnknownVersion):
        decode_message(TRANSACTION_LOG_VALUE, TXN_V1, 0, 2)
    bad = bytearray(TXN_V1)
    bad[16] = 0   # PartitionsSchema.Topic as null
    with pytest.raises(CorruptRecordError) as err:
        decode_message(TRANSACTION_LOG_VALUE, bytes(bad), 0, 1)
    assert err.value.position == 16
    assert err.value.java_message == "non-nullable field topic was serialized as null"


def test_huge_array_count_is_refused_before_allocating():
    body = bytes(15) + b"\x7f\xff\xff\xff"   # v0 TransactionPartitions count 2^31-1
    with pytest.raises(TruncatedInput) as err:
        decode_message(TRANSACTION_LOG_VALUE, body, 0, 0)
    assert err.value.java_message == ("Tried to allocate a collection of size 2147483647, "
                                      "but there are only 0 bytes remaining.")


def test_nullable_struct_presence_markers():
    schema = M("X", "0", "0+", None, [
        F("A", "S", "0+", null="0+", default=None, fields=[F("B", "int8", "0+")]),
        F("T", "S", "0+", null="0+", tag=0, fields=[F("B", "int8", "0+")]),
    ])
    msg, end = decode_message(schema, bytes.fromhex("ff00"), 0, 0)
    assert end == 2 and msg.a is None and msg.t["b"] == 0      # tagged default: empty struct
    assert to_kafka_json(msg) == '{"a":null}'
    msg, end = decode_message(schema, bytes.fromhex("0107000100030105 00"), 0, 0)
    assert (msg.a["b"], msg.t["b"], end) == (7, 5, 9)
    assert to_kafka_json(msg) == '{"a":{"b":7},"t":{"b":5}}'
    msg, _ = decode_message(schema, bytes.fromhex("01070001000100"), 0, 0)
    assert msg.t is None and to_kafka_json(msg) == '{"a":{"b":7},"t":null}'


def test_jackson_escaping_and_numbers():
    assert jackson_string('a"\\/\b\t\n\f\r\x01\x1f\x7f\u2028é😀') == (
        '"a\\"\\\\/\\b\\t\\n\\f\\r\\u0001\\u001F\x7f\u2028é😀"')
    assert to_kafka_json({"a": [1, None, True, False, b"\x00\xff"]}) == (
        '{"a":[1,null,true,false,"AP8="]}')
    cases = {1.0: "1.0", 0.1: "0.1", 100.0: "100.0", 1e7: "1.0E7", 1.25e-5: "1.25E-5",
             0.001: "0.001", 123456.789: "123456.789", -2.5: "-2.5", -0.0: "-0.0",
             1e21: "1.0E21", 9999999.0: "9999999.0"}  # JDK < 19 prints 4.9E-324 for 5e-324: not reproduced
    for value, text in cases.items():
        assert java_double(value) == text, value
    assert to_kafka_json(float("nan")) == '"NaN"'


def test_java_utf8_replacement():
    from logscan.format.message import java_utf8
    assert java_utf8(b"\xed\xa0\x80") == "\ufffd"          # Python alone gives three
    assert java_utf8(b"\xed\xa0(") == "\ufffd("
    assert java_utf8(b"\xc0\xaf") == "\ufffd\ufffd"
    assert java_utf8("é😀".encode()) == "é😀"


def test_kafka_uuid_is_url_safe_base64_without_padding():
    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert kafka_uuid(uuid.UUID("fbfffbff-0000-0000-0000-000000000000")) == "-__7_wAAAAAAAAAAAAAAAA"


def test_versions_follow_kafka_generator_checks():
    schema = M("X", "0-3", "none", None, [F("A", "int8", "0+"), F("B", "int8", "1-2")])
    assert to_kafka_json(decode_message(schema, b"\x01\x02", 0, 1)[0]) == '{"a":1,"b":2}'
    assert to_kafka_json(decode_message(schema, b"\x01\x02", 0, 3)[0]) == '{"a":1}'
    # a lenient read of a version past the range keeps "0+" fields, like Kafka's code
    assert decode_message(schema, b"\x01", 0, 9, lenient=True)[0]["a"] == 1


def test_plans_are_kept_per_schema_and_version_up_to_a_bound(monkeypatch):
    """The reader works out each (schema, version)'s field decisions once. A lenient read of
    damaged records can meet every int16 version: past the bound, plans are worked out per
    message and not kept, and every read still decodes by its own version."""
    from logscan.format import message

    schema = M("X", "0-3", "none", None, [F("A", "int8", "0+"), F("B", "int8", "1-2")])
    monkeypatch.setattr(message, "_PLANS", {})
    monkeypatch.setattr(message, "_MAX_PLANS", 3)
    decoded = [decode_message(schema, b"\x01\x02", 0, v, lenient=True)[0] for v in range(8)]
    assert len(message._PLANS) == 3
    assert [dict(m) for m in decoded] == ([{"a": 1, "b": 0}] + [{"a": 1, "b": 2}] * 2
                                          + [{"a": 1, "b": 0}] * 5)
    again = [decode_message(schema, b"\x01\x02", 0, v, lenient=True)[0] for v in range(8)]
    assert again == decoded and len(message._PLANS) == 3


# --------------------------------------------------------------------------- real fixtures

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture_segments(topic_prefix: str, limit: int = 4) -> list[Path]:
    """Non-empty ``.log`` segments of the real-broker fixture cluster for a topic."""
    if not FIXTURES.is_dir():
        return []
    found = sorted(p for p in FIXTURES.rglob("*.log")
                   if p.parent.name.startswith(topic_prefix) and p.stat().st_size > 0)
    return found[:limit]


def compare_with_kafka_on_segment(segment: Path, decoder_flag: str, render_record,
                                  render_control=None) -> int:
    """Run kafka-dump-log on a real segment and check every record line ends with what our
    renderers produce; returns the number of record lines checked."""
    from logscan.format.batch import decode_batch_header, iter_records
    data = segment.read_bytes()
    out = run_java(DUMP_CLASS, "--files", segment, decoder_flag)
    assert out.returncode == 0, text(out.stderr)
    lines = [x for x in text(out.stdout).split("\n") if x.startswith("| offset: ")]
    expected, pos = [], 0
    while pos + 61 <= len(data):
        batch, nxt = decode_batch_header(data, pos)
        for rec in iter_records(data, batch):
            if batch.is_control:
                suffix = render_control(rec) if render_control else None
            else:
                suffix = render_record(rec)
            expected.append((rec.offset, suffix))
        pos = nxt
    assert len(expected) == len(lines)
    for (offset, suffix), line in zip(expected, lines):
        assert line.startswith(f"| offset: {offset} ")
        if suffix is not None:
            assert line.endswith(" headerKeys: []" + suffix), (line, suffix)
    return len(lines)


def kv_suffix(key_text, payload_text) -> str:
    return (f" key: {key_text}" if key_text is not None else "") + (
        f" payload: {payload_text}" if payload_text is not None else "")


# --------------------------------------------------------------------------- tables vs specs

def _spec_schema(spec: dict):
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}

    def default(f):
        d = f.get("default")
        if d is None:            # absent, or JSON null: Kafka then uses the type's default
            return {}
        if d == "null":
            return {"default": None}
        if f["type"] in ("string",):
            return {"default": d}
        if isinstance(d, str) and d in ("true", "false"):
            return {"default": d == "true"}
        return {"default": int(d, 0) if isinstance(d, str) else d}

    def field(f):
        base = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        sub = f.get("fields", common.get(base))
        return F(f["name"], f["type"], f.get("versions", f.get("taggedVersions")),
                 null=f.get("nullableVersions"), tag=f.get("tag"),
                 tagged=f.get("taggedVersions"), **default(f),
                 fields=[field(x) for x in sub] if sub is not None else None)

    return M(spec["name"], spec["validVersions"], spec.get("flexibleVersions", "none"),
             spec.get("apiKey"), [field(f) for f in spec["fields"]])


def _jar_specs(jar: str, folder: str) -> dict:
    import zipfile
    out = {}
    with zipfile.ZipFile(KAFKA_LIBS / jar) as z:
        for name in z.namelist():
            if name.startswith(folder) and name.endswith(".json"):
                spec_text = re.sub(r"^\s*//.*$", "", z.read(name).decode(), flags=re.M)
                spec = json.loads(spec_text)
                out[spec["name"]] = spec
    return out


@pytest.mark.kafka
@needs_kafka
def test_tables_equal_the_4_1_1_specs_in_the_jars():
    # __cluster_metadata's tables are 4.4.0's: tests/format/test_metadata.py compares them
    from logscan.format import offsets, raft, txnlog
    ours = {}
    for module in (txnlog, offsets, raft):
        for value in vars(module).values():
            if hasattr(value, "fields") and hasattr(value, "valid"):
                ours[value.name] = value
    specs = {}
    specs.update(_jar_specs("kafka-transaction-coordinator-4.1.1.jar", "common/message/"))
    specs.update(_jar_specs("kafka-group-coordinator-4.1.1.jar", "common/message/"))
    clients = _jar_specs("kafka-clients-4.1.1.jar", "common/message/")
    for name in ("LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord",
                 "KRaftVersionRecord", "VotersRecord", "ConsumerProtocolSubscription",
                 "ConsumerProtocolAssignment"):
        specs[name] = clients[name]
    assert set(ours) == set(specs)
    for name, spec in specs.items():
        expected = _spec_schema(spec)
        if expected.api_key is None or name.startswith("ConsumerProtocol"):
            expected = M(expected.name, spec["validVersions"], spec.get("flexibleVersions", "none"),
                         ours[name].api_key, list(expected.fields))
        assert ours[name] == expected, name


# --------------------------------------------------------------------------- fuzz

from hypothesis import given, settings, strategies as st  # noqa: E402


def _all_schemas():
    from logscan.format import metadata, offsets, raft, remotelog, sharestate, txnlog
    return [v for m in (txnlog, offsets, metadata, raft, remotelog, sharestate) for v in vars(m).values()
            if hasattr(v, "fields") and hasattr(v, "valid")]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_decoders_only_raise_decode_errors(data):
    """Invariant: any bytes give a value or a DecodeError, and renderers return text."""
    from logscan.format.metadata import render_metadata_payload
    from logscan.format.offsets import render_offsets_key_payload
    from logscan.format.raft import CONTROL_VALUES, render_control_value
    from logscan.format.txnlog import render_txnlog_key_payload
    schema = data.draw(st.sampled_from(_all_schemas()))
    version = data.draw(st.integers(-1, schema.valid.hi + 1))
    blob = data.draw(st.binary(max_size=80))
    try:
        msg, end = decode_message(schema, blob, 0, version, lenient=data.draw(st.booleans()))
        assert 0 <= end <= len(blob)
        to_kafka_json(msg)
    except DecodeError:
        pass
    key = data.draw(st.one_of(st.none(), st.binary(max_size=30)))
    if key is not None:
        assert isinstance(render_offsets_key_payload(key, blob, 1)[0], str)
        assert isinstance(render_txnlog_key_payload(key, blob, 1)[0], str)
    assert isinstance(render_metadata_payload(blob, 1), str)
    try:
        render_control_value(data.draw(st.sampled_from(sorted(CONTROL_VALUES))), blob)
    except DecodeError:
        pass


def test_mutated_valid_values_only_raise_decode_errors():
    body = bytearray(TXN_V1)
    for i in range(len(body)):
        for b in (0x00, 0x7F, 0x80, 0xFF):
            mutated = bytes(body[:i]) + bytes([b]) + bytes(body[i + 1:])
            try:
                to_kafka_json(decode_message(TRANSACTION_LOG_VALUE, mutated, 0, 1)[0])
            except DecodeError:
                pass
