"""``__consumer_offsets`` decoding and kafka-dump-log ``--offsets-decoder`` text."""

from __future__ import annotations

import struct

import pytest

from logscan.format.errors import CorruptRecordError, TruncatedInput, UnknownVersion
from logscan.format.message import encode_message
from logscan.format.offsets import (CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION,
                                    GROUP_METADATA_KEY, GROUP_METADATA_VALUE, RECORD_TYPES,
                                    decode_offsets_record, group_partition,
                                    render_offsets_key_payload)
from tests.format.test_message import (expected_line, kafka_dump_lines, needs_kafka,
                                       sample_values)

# OffsetCommitKey (type 1): group "g", topic "t", partition 3
OFFSET_KEY = bytes.fromhex("0001" "000167" "000174" "00000003")
# OffsetCommitValue v1: offset 42, metadata "m", commit 100, expire 200
OFFSET_V1 = bytes.fromhex("0001" "000000000000002a" "00016d" "0000000000000064"
                          "00000000000000c8")
# OffsetCommitValue v4 (flexible): offset 42, leaderEpoch 5, metadata "", commit 100, no tags
OFFSET_V4 = bytes.fromhex("0004" "000000000000002a" "00000005" "01" "0000000000000064" "00")


def test_offset_commit_literals():
    rec = decode_offsets_record(OFFSET_KEY, OFFSET_V1)
    assert rec.record_type == 1 and (rec.key.group, rec.key.topic, rec.key.partition) == ("g", "t", 3)
    v = rec.value
    assert (v.version, v.offset, v.metadata, v.commit_timestamp, v.expire_timestamp) == (1, 42, "m", 100, 200)
    assert v.leader_epoch == -1                       # not in v1: default
    assert render_offsets_key_payload(OFFSET_KEY, OFFSET_V1, 0) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":3}}',
        '{"version":"1","data":{"offset":42,"metadata":"m","commitTimestamp":100,'
        '"expireTimestamp":200}}')
    v4 = decode_offsets_record(OFFSET_KEY, OFFSET_V4).value
    assert (v4.version, v4.leader_epoch, v4.metadata) == (4, 5, "")
    assert render_offsets_key_payload(OFFSET_KEY, OFFSET_V4, 0)[1] == (
        '{"version":"4","data":{"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":100}}')


def test_every_prefix_truncated_and_unknowns():
    for cut in range(len(OFFSET_V4)):
        with pytest.raises(TruncatedInput):
            decode_offsets_record(OFFSET_KEY, OFFSET_V4[:cut])
    with pytest.raises(UnknownVersion):
        decode_offsets_record(OFFSET_KEY, b"\x00\x05" + OFFSET_V4[2:])
    with pytest.raises(UnknownVersion):
        decode_offsets_record(b"\x00\x09" + OFFSET_KEY[2:], None)      # 9: not in 4.1.1
    assert render_offsets_key_payload(b"\x00\x12", None, 7) == (
        "Unknown record type 18 at offset 7, skipping.", None)
    errors = []
    render_offsets_key_payload(OFFSET_KEY, OFFSET_V4, 0, errors)
    assert errors == []
    render_offsets_key_payload(b"\x00\x12", None, 7, errors)
    assert len(errors) == 1 and errors[0].reason == "version"
    with pytest.raises(CorruptRecordError):
        render_offsets_key_payload(None, OFFSET_V1, 7)


def test_record_types_of_4_1_1():
    assert sorted(RECORD_TYPES) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16,
                                    17, 19, 20, 21, 22, 23]
    assert all(k.name[:-3] == v.name[:-5] for k, v in RECORD_TYPES.values())


def _group(members, protocol_type="consumer", version=3):
    key = struct.pack(">h", 2) + encode_message(GROUP_METADATA_KEY, 0, {"group": "grp"})
    value = struct.pack(">h", version) + encode_message(GROUP_METADATA_VALUE, version, {
        "protocolType": protocol_type, "generation": 4, "protocol": "range", "leader": "m1",
        "currentStateTimestamp": 77, "members": members})
    return key, value


def _member(sub: bytes | None, asg: bytes | None):
    return {"memberId": "m1", "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
            "rebalanceTimeout": 300000, "sessionTimeout": 45000, "subscription": sub,
            "assignment": asg}


SUB_V1 = struct.pack(">h", 1) + encode_message(CONSUMER_PROTOCOL_SUBSCRIPTION, 1, {
    "topics": ["t"], "userData": None, "ownedPartitions": [{"topic": "t", "partitions": [0]}]})
ASG_V0 = struct.pack(">h", 0) + encode_message(CONSUMER_PROTOCOL_ASSIGNMENT, 0, {
    "assignedPartitions": [{"topic": "t", "partitions": [0, 1]}], "userData": b"\x01"})


def test_group_metadata_expands_consumer_protocol():
    key, value = _group([_member(SUB_V1, ASG_V0)])
    _, payload = render_offsets_key_payload(key, value, 0)
    assert payload == (
        '{"version":"3","data":{"protocolType":"consumer","generation":4,"protocol":"range",'
        '"leader":"m1","currentStateTimestamp":77,"members":[{"memberId":"m1",'
        '"groupInstanceId":null,"clientId":"c","clientHost":"/h","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["t"],"userData":null,'
        '"ownedPartitions":[{"topic":"t","partitions":[0]}]},"assignment":{'
        '"assignedPartitions":[{"topic":"t","partitions":[0,1]}],"userData":"AQ=="}}]}}')


def test_group_metadata_keeps_bytes_that_do_not_parse_or_other_protocols():
    key, value = _group([_member(b"\x00", ASG_V0[:-3])])
    _, payload = render_offsets_key_payload(key, value, 0)
    assert '"subscription":"AA==","assignment":"' in payload
    key, value = _group([_member(SUB_V1, ASG_V0)], protocol_type="connect")
    assert '"subscription":"AAEAAAABAAF0' in render_offsets_key_payload(key, value, 0)[1]


def test_group_partition():
    assert group_partition("hello", 50) == 99162322 % 50
    assert group_partition("polygenelubricants", 50) == 0


@pytest.mark.kafka
@needs_kafka
def test_every_record_type_and_version_matches_kafka_dump_log(tmp_path):
    recs = []
    for rtype, (ks, vs) in sorted(RECORD_TYPES.items()):
        key = struct.pack(">h", rtype) + encode_message(ks, 0, sample_values(ks.fields, 0, rtype))
        for v in range(vs.valid.lo, vs.valid.hi + 1):
            for nulls in (False, True):
                recs.append((key, struct.pack(">h", v) + encode_message(
                    vs, v, sample_values(vs.fields, v, rtype + v, nulls=nulls))))
        recs.append((key, None))
    for sv in range(4):
        sub = struct.pack(">h", sv) + encode_message(
            CONSUMER_PROTOCOL_SUBSCRIPTION, sv, sample_values(CONSUMER_PROTOCOL_SUBSCRIPTION.fields, sv, 3))
        asg = struct.pack(">h", sv) + encode_message(
            CONSUMER_PROTOCOL_ASSIGNMENT, sv, sample_values(CONSUMER_PROTOCOL_ASSIGNMENT.fields, sv, 4))
        for gv in range(5):
            d = sample_values(GROUP_METADATA_VALUE.fields, gv, 9)
            d["protocolType"] = "consumer"
            d["members"][0].update(subscription=sub, assignment=asg)
            d["members"][1].update(subscription=sub[:3], assignment=b"\x00\x09" + asg[2:])
            recs.append(_group([], version=gv)[0:1] + (
                struct.pack(">h", gv) + encode_message(GROUP_METADATA_VALUE, gv, d),))
    recs += [(struct.pack(">h", t) + b"\x00\x01a", b"\x00\x00") for t in (9, 18, 24, -1)]
    recs += [(OFFSET_KEY, OFFSET_V4[:5]), (OFFSET_KEY[:3], OFFSET_V4), (OFFSET_KEY, b"\x00\x09")]
    lines = kafka_dump_lines(tmp_path, recs, "--offsets-decoder")
    assert len(lines) == len(recs)
    for offset, ((key, value), line) in enumerate(zip(recs, lines)):
        key_text, payload_text = render_offsets_key_payload(key, value, offset)
        assert expected_line(offset, key, value, key_text, payload_text) == line


@pytest.mark.kafka
@needs_kafka
def test_real_fixture_segments_match_kafka_dump_log():
    from tests.format.test_message import compare_with_kafka_on_segment, fixture_segments, kv_suffix
    segments = fixture_segments("__consumer_offsets-", limit=8)
    if not segments:
        pytest.skip("no __consumer_offsets segments under fixtures/ yet")
    for seg in segments:
        compare_with_kafka_on_segment(
            seg, "--offsets-decoder",
            lambda r: kv_suffix(*render_offsets_key_payload(r.key, r.value, r.offset)))
