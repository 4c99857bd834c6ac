"""``__cluster_metadata`` record values and kafka-dump-log ``--cluster-metadata-decoder`` text.

The tables are Kafka 4.4.0's: they are compared with 4.4.0's schemas (kafka-metadata jar) and
4.4.0's kafka-dump-log, and with the records of the kafka-4.4 fixture cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from logscan.format.errors import CorruptRecordError, TruncatedInput, UnknownVersion
from logscan.format.message import encode_message
from logscan.format.metadata import (FEATURE_LEVEL_RECORD, PARTITION_CHANGE_RECORD, RECORDS,
                                     TOPIC_RECORD, decode_metadata_record,
                                     render_metadata_payload)
from logscan.format.primitives import encode_unsigned_varint as uv
from tests.format.test_message import (_jar_specs, _spec_schema, expected_line, kafka_dump_lines,
                                       needs_kafka, sample_values)
from tests.kafkajava import UTF8_JVM_OPTS, text
from tools.kafka.cluster import TOOL_JVM_OPTS, jars_present, libs_for, tool_class

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LIBS_4_4 = libs_for("4.4.0")
needs_kafka_4_4 = pytest.mark.skipif(
    not (shutil.which("java") and jars_present(LIBS_4_4, "4.4.0")),
    reason="no Kafka 4.4.0 jars: make kafka-jars KAFKA_VERSION=4.4.0")

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
# frame 1, TopicRecord (2) v0: Name "t", TopicId, no tagged fields
TOPIC = bytes.fromhex("01" "02" "00" "0274") + TOPIC_ID.bytes + b"\x00"
# PartitionChangeRecord (5) v0: partition 1, topic id, tagged Isr [1,2] (tag 0), Leader 3 (tag 1)
PCR = (bytes.fromhex("01" "05" "00" "00000001") + TOPIC_ID.bytes
       + bytes.fromhex("02" "00" "09" "03" "00000001" "00000002" "01" "04" "00000003"))


def test_topic_record_literal():
    rec, end = decode_metadata_record(TOPIC)
    assert end == len(TOPIC) and (rec.api_key, rec.version, rec.type_name) == (2, 0, "TOPIC_RECORD")
    assert rec.message.name == "t" and rec.message.topic_id == TOPIC_ID
    assert render_metadata_payload(TOPIC, 3) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"ABEiM0RVZneImaq7zN3u_w"}}')


def test_partition_change_tagged_fields():
    rec, _ = decode_metadata_record(PCR)
    m = rec.message
    assert (m.partition_id, m.isr, m.leader, m.replicas, m.leader_recovery_state) == (1, (1, 2), 3, None, -1)
    assert render_metadata_payload(PCR, 0) == (
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":1,'
        '"topicId":"ABEiM0RVZneImaq7zN3u_w","isr":[1,2],"leader":3}}')


def test_window_and_junk_both_sides():
    buf = b"\xff\xff" + TOPIC + b"\x01\x02"
    rec, end = decode_metadata_record(buf, 2, 2 + len(TOPIC))
    assert end == 2 + len(TOPIC) and rec.message.position == 5


def test_every_prefix_is_truncated():
    for cut in range(len(PCR)):
        with pytest.raises(TruncatedInput):
            decode_metadata_record(PCR[:cut])


def test_unknown_types_raw_versions_and_garbage():
    rec, _ = decode_metadata_record(bytes([1, 6, 0]) + b"xyz")
    assert rec.message is None and (rec.api_key, rec.raw) == (6, b"xyz")
    with pytest.raises(UnknownVersion):
        decode_metadata_record(bytes([1, 2, 1]) + TOPIC[3:])
    rec, _ = decode_metadata_record(bytes([1, 2, 1]) + TOPIC[3:], lenient=True)
    assert rec.version == 1 and rec.message.name == "t"
    with pytest.raises(UnknownVersion):
        decode_metadata_record(bytes([0]) + TOPIC[1:])
    with pytest.raises(CorruptRecordError):
        decode_metadata_record(TOPIC + b"!")
    assert render_metadata_payload(TOPIC + b"!", 9) == (
        "Error at 9, skipping. Found 1 byte(s) of garbage after 2")
    assert render_metadata_payload(bytes([1, 6, 0]), 9) == (
        "Error at 9, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 6")
    assert render_metadata_payload(None, 9) == "Error at 9, skipping. Error while reading frame version"
    errors = []
    render_metadata_payload(TOPIC, 3, errors)
    assert errors == []
    for bad in (TOPIC + b"!", bytes([1, 6, 0]), None):
        render_metadata_payload(bad, 9, errors)
    assert [e.reason for e in errors] == ["corrupt", "version", "corrupt"]


def test_feature_level_round_trip():
    body = uv(1) + uv(12) + uv(0) + encode_message(
        FEATURE_LEVEL_RECORD, 0, {"name": "transaction.version", "featureLevel": 2})
    rec, _ = decode_metadata_record(body)
    assert (rec.type_name, rec.message.name, rec.message.feature_level) == (
        "FEATURE_LEVEL_RECORD", "transaction.version", 2)


def test_all_metadata_types_of_4_4_0():
    assert sorted(RECORDS) == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 17, 18, 19, 20,
                               21, 22, 23, 24, 25, 26, 27, 28, 29]
    for key, schema in RECORDS.items():
        for v in range(schema.valid.lo, schema.valid.hi + 1):
            body = uv(1) + uv(key) + uv(v) + encode_message(
                schema, v, sample_values(schema.fields, v, key))
            rec, end = decode_metadata_record(body)
            assert end == len(body) and rec.message.schema is schema
            again = uv(1) + uv(key) + uv(v) + encode_message(schema, v, rec.message)
            assert again == body


def kafka_4_4_dump_lines(tmp_path: Path, records, decoder_flag: str) -> list[str]:
    """The record lines kafka-dump-log 4.4.0 prints for ``records`` (key, value) in one batch."""
    from logscan.testing.encoder import Rec, encode_batch
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(encode_batch([Rec(key=k, value=v, timestamp=1000) for k, v in records]))
    cmd = ["java", *TOOL_JVM_OPTS, *UTF8_JVM_OPTS, "-cp", f"{LIBS_4_4}/*",
           tool_class("kafka-dump-log", LIBS_4_4), "--files", str(seg), decoder_flag]
    out = subprocess.run(cmd, capture_output=True, timeout=300,
                         env=dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8"))
    assert out.returncode == 0, text(out.stderr)
    return [line for line in text(out.stdout).split("\n") if line.startswith("| offset: ")]


@pytest.mark.kafka
@needs_kafka_4_4
def test_tables_equal_the_4_4_0_specs_in_the_jar():
    specs = _jar_specs(str(LIBS_4_4 / "kafka-metadata-4.4.0.jar"), "common/metadata/")
    assert {s.name for s in RECORDS.values()} == set(specs)
    for schema in RECORDS.values():
        assert schema == _spec_schema(specs[schema.name]), schema.name


def _every_type_and_version():
    recs = []
    for key, s in sorted(RECORDS.items()):
        for v in range(s.valid.lo, s.valid.hi + 2):          # one version past the range too
            for nulls in (False, True):
                recs.append((None, uv(1) + uv(key) + uv(v) + encode_message(
                    s, v, sample_values(s.fields, v, key + v, nulls=nulls))))
    recs += [(None, TOPIC + b"zz"), (None, TOPIC[:5]), (None, uv(0) + uv(2) + uv(0)),
             (None, uv(3) + uv(2) + uv(0)), (None, uv(1) + uv(6) + uv(0)),
             (None, uv(1) + uv(99) + uv(0)), (None, uv(1) + uv(40000) + uv(0)),
             (None, b""), (None, None), (b"k", PCR)]
    return recs


@pytest.mark.kafka
@needs_kafka_4_4
def test_every_type_and_version_matches_kafka_dump_log(tmp_path):
    """Every type at every version (and one past), against kafka-dump-log 4.4.0."""
    recs = _every_type_and_version()
    lines = kafka_4_4_dump_lines(tmp_path, recs, "--cluster-metadata-decoder")
    assert len(lines) == len(recs)
    for offset, ((key, value), line) in enumerate(zip(recs, lines)):
        assert expected_line(offset, key, value, None, render_metadata_payload(value, offset)) == line


@pytest.mark.kafka
@needs_kafka
def test_what_kafka_dump_log_4_1_1_makes_of_the_4_4_0_versions(tmp_path):
    """Why these tables follow 4.4.0: kafka-dump-log 4.1.1 cannot read RegisterBrokerRecord
    v4 at all ("Error at", as on the kafka-4.4 cluster's own logs) and prints
    BrokerRegistrationChangeRecord v3 without CordonedLogDirs (a tag it does not know)."""
    from logscan.format.metadata import BROKER_REGISTRATION_CHANGE_RECORD, REGISTER_BROKER_RECORD
    recs = []
    for schema, version in ((REGISTER_BROKER_RECORD, 4), (BROKER_REGISTRATION_CHANGE_RECORD, 3)):
        values = sample_values(schema.fields, version, schema.api_key)
        recs.append((None, uv(1) + uv(schema.api_key) + uv(version) + encode_message(schema, version, values)))
    register, change = (line.split(" payload: ", 1)[1]
                        for line in kafka_dump_lines(tmp_path, recs, "--cluster-metadata-decoder"))
    assert register == "Error at 0, skipping. Failed to deserialize record with type 0"
    ours = json.loads(render_metadata_payload(recs[1][1], 1))
    assert ours["data"].pop("cordonedLogDirs")
    assert json.loads(change) == ours


def test_the_4_4_fixture_holds_the_new_versions_and_decodes_them_strictly():
    """The kafka-4.4 cluster's own records (a real 4.4.0 controller wrote them): every value
    of its __cluster_metadata logs decodes without the lenient reading, and
    RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 are among them (the dump
    texts are compared with kafka-dump-log 4.4.0's in tests/dump/test_fixtures.py)."""
    from logscan.format.batch import iter_records
    from logscan.format.logfile import walk_batches
    logs = sorted((FIXTURES / "kafka-4.4" / "brokers").glob("*/__cluster_metadata-0/*.log"))
    if not logs:
        pytest.skip("no kafka-4.4 fixture cluster")
    seen = set()
    for log in logs:
        data = log.read_bytes()
        for batch in walk_batches(data):
            if batch.is_control:
                continue
            for rec in iter_records(data, batch):
                m, _ = decode_metadata_record(rec.value)
                seen.add((m.type_name, m.version))
    assert {("REGISTER_BROKER_RECORD", 4), ("BROKER_REGISTRATION_CHANGE_RECORD", 3)} <= seen


@pytest.mark.kafka
@needs_kafka
def test_real_fixture_segments_match_kafka_dump_log():
    from logscan.format.raft import render_control_value
    from tests.format.test_message import compare_with_kafka_on_segment, fixture_segments, kv_suffix
    segments = fixture_segments("__cluster_metadata-", limit=3)
    if not segments:
        pytest.skip("no __cluster_metadata segments under fixtures/ yet")
    for seg in segments:
        compare_with_kafka_on_segment(
            seg, "--cluster-metadata-decoder",
            lambda r: kv_suffix(None, render_metadata_payload(r.value, r.offset)),
            lambda r: render_control_value(int.from_bytes(r.key[2:4], "big", signed=True), r.value))
