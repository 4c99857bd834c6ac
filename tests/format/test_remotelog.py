"""``__remote_log_metadata`` values (logscan.format.remotelog): the schemas against the
kafka-storage jars' specs, the texts of kafka-dump-log --remote-log-metadata-decoder, and the
edge-case values tests/dump/test_remote_log_metadata.py runs the real tool on."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings, strategies as st

from logscan.format.errors import DecodeError
from logscan.format.primitives import encode_unsigned_varint as uv
from logscan.format.remotelog import (RECORDS, RECORDS_3_9, encode_remote_log_metadata, remote_log_metadata,
                                      decode_remote_log_metadata, render_remote_log_metadata)
from tests.format.test_message import _jar_specs, _spec_schema
from tools.kafka.cluster import jars_present, libs_for

TOPIC_ID = uuid.UUID("4f2f1e6b-6853-4aec-b1c7-97b94f1e793f")    # Ty8ea2hTSuyxx5e5Tx55Pw
SEGMENT_ID = uuid.UUID("6b4549e1-adba-4792-8a22-f4bd4ee3ebae")  # a0VJ4a26R5KKIvS9TuPrrg
SID_TEXT = "RemoteLogSegmentId{topicIdPartition=Ty8ea2hTSuyxx5e5Tx55Pw:orders-3, id=a0VJ4a26R5KKIvS9TuPrrg}"


def _segment_id(name: str = "orders", partition: int = 3) -> dict:
    return {"topicIdPartition": {"name": name, "id": TOPIC_ID, "partition": partition}, "id": SEGMENT_ID}


def segment(**kw) -> bytes:
    """RemoteLogSegmentMetadataRecord (apiKey 0), one field changed by ``kw``."""
    values = {"remoteLogSegmentId": _segment_id(), "startOffset": 100, "endOffset": 250, "brokerId": 2,
              "maxTimestampMs": 1_700_000_000_123, "eventTimestampMs": 1_700_000_000_456,
              "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 100}], "segmentSizeInBytes": 4096,
              "customMetadata": None, "remoteLogSegmentState": 0, "txnIndexEmpty": True}
    return encode_remote_log_metadata(0, {**values, **kw})


def update(**kw) -> bytes:
    values = {"remoteLogSegmentId": _segment_id(), "brokerId": 1, "eventTimestampMs": 1_700_000_001_000,
              "customMetadata": None, "remoteLogSegmentState": 1}
    return encode_remote_log_metadata(1, {**values, **kw})


def partition_delete(**kw) -> bytes:
    values = {"topicIdPartition": {"name": "orders", "id": TOPIC_ID, "partition": 3}, "brokerId": 0,
              "eventTimestampMs": 1_700_000_002_000, "remotePartitionDeleteState": 0}
    return encode_remote_log_metadata(2, {**values, **kw})


def snapshot(**kw) -> bytes:
    values = {"segmentId": SEGMENT_ID, "startOffset": 0, "endOffset": 9, "brokerId": 3, "maxTimestampMs": 5,
              "eventTimestampMs": 6, "segmentLeaderEpochs": [{"leaderEpoch": 2, "offset": 0}],
              "segmentSizeInBytes": 77, "customMetadata": b"\x00\x01", "remoteLogSegmentState": 1,
              "txnIndexEmpty": False}
    return encode_remote_log_metadata(3, {**values, **kw})


GOOD = segment()

#: Record values of every kind and every way kafka-dump-log's parser fails on one (None: a
#: record without a value): the real tool's text on them is the expected text
#: (tests/dump/test_remote_log_metadata.py).
EDGE_VALUES = [
    GOOD,
    segment(customMetadata=b"custom-bytes", txnIndexEmpty=False, remoteLogSegmentState=3,
            segmentLeaderEpochs=[{"leaderEpoch": 5, "offset": 180}, {"leaderEpoch": 1, "offset": 100},
                                 {"leaderEpoch": 5, "offset": 200}, {"leaderEpoch": 3, "offset": 150},
                                 {"leaderEpoch": -1, "offset": 7}]),
    segment(customMetadata=b"", remoteLogSegmentState=1),
    segment(remoteLogSegmentState=2, remoteLogSegmentId=_segment_id("t\u00e9st.\u2603-x_1", 2147483647)),
    segment(remoteLogSegmentState=4),
    segment(remoteLogSegmentState=-1),
    segment(startOffset=-1),
    segment(startOffset=10, endOffset=9),
    segment(startOffset=10, endOffset=10),
    segment(segmentLeaderEpochs=[]),
    segment(segmentLeaderEpochs=[], remoteLogSegmentState=9),
    segment(startOffset=-5, remoteLogSegmentState=9),
    update(),
    update(customMetadata=b"x" * 300, remoteLogSegmentState=2),
    update(remoteLogSegmentState=0),
    update(remoteLogSegmentState=3),
    update(remoteLogSegmentState=7),
    partition_delete(),
    partition_delete(remotePartitionDeleteState=1),
    partition_delete(remotePartitionDeleteState=2),
    partition_delete(remotePartitionDeleteState=3),
    snapshot(),
    snapshot(remoteLogSegmentState=5),
    snapshot(segmentLeaderEpochs=[]),
    snapshot(startOffset=-3, endOffset=-9, customMetadata=None, txnIndexEmpty=True),
    uv(1) + uv(4) + uv(0) + b"\x00",                        # an apiKey no release has
    uv(1) + uv(9) + uv(0),
    uv(1) + uv(40000) + uv(0),                              # past a short
    uv(0) + uv(0) + uv(0),                                  # KRaft 2.8's frame version
    uv(2) + GOOD[1:],
    GOOD[:40],                                              # cut in the message
    GOOD[:3],
    GOOD[:1],                                               # cut in the frame
    b"",
    GOOD + b"\x00\x00",                                     # garbage after the message
    uv(1) + uv(0) + uv(1) + GOOD[3:],                       # a version 1 no release has
    uv(1) + uv(1) + uv(0) + GOOD[3:],                       # a segment read as an update
    None,
    b"\x80",
    GOOD[:-4] + b"\x02" + b"\x00\x01\x00" + b"\x07\x02ab",    # TxnIndexEmpty false, and an unknown tag 7
]


def test_the_fixture_segment_record_reads_as_kafka_prints_it():
    text = render_remote_log_metadata(GOOD, 0)
    assert text == (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SID_TEXT}, startOffset=100, endOffset=250, "
                    "brokerId=2, maxTimestampMs=1700000000123, eventTimestampMs=1700000000456, "
                    "segmentLeaderEpochs={0=100}, segmentSizeInBytes=4096, customMetadata=Optional.empty, "
                    "state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}")
    # 3.9.2 has no TxnIndexEmpty: its toString ends at the state
    assert render_remote_log_metadata(GOOD, 0, records=RECORDS_3_9, txn_idx_empty=False).endswith(
        "state=COPY_SEGMENT_STARTED}")


def test_leader_epochs_are_a_sorted_map_and_custom_metadata_its_size():
    text = render_remote_log_metadata(EDGE_VALUES[1], 1)
    assert "segmentLeaderEpochs={-1=7, 1=100, 3=150, 5=200}" in text
    assert "customMetadata=Optional[CustomMetadata{12 bytes}], state=DELETE_SEGMENT_FINISHED, txnIdxEmpty=false}" in text


def test_update_delete_and_snapshot_texts():
    assert render_remote_log_metadata(update(customMetadata=b"x" * 300, remoteLogSegmentState=2), 13) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SID_TEXT}, customMetadata=Optional[CustomMetadata"
        "{300 bytes}], state=DELETE_SEGMENT_STARTED, eventTimestampMs=1700000001000, brokerId=1}")
    assert render_remote_log_metadata(partition_delete(remotePartitionDeleteState=2), 0) == (
        "RemotePartitionDeleteMetadata{topicPartition=Ty8ea2hTSuyxx5e5Tx55Pw:orders-3, "
        "state=DELETE_PARTITION_FINISHED, eventTimestampMs=1700000002000, brokerId=0}")
    assert render_remote_log_metadata(snapshot(), 0) == (
        "RemoteLogSegmentMetadataSnapshot{segmentId=a0VJ4a26R5KKIvS9TuPrrg, startOffset=0, endOffset=9, "
        "maxTimestampMs=5, segmentLeaderEpochs={2=0}, segmentSizeInBytes=77, "
        "customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_FINISHED, txnIdxEmpty=false}")


@pytest.mark.parametrize("value,text", [
    (segment(remoteLogSegmentState=4), "state can not be null"),
    (partition_delete(remotePartitionDeleteState=3), "null"),
    (segment(startOffset=10, endOffset=9),
     "Unexpected end offset = 9. EndOffset for a remote segment cannot be less than startOffset = 10"),
    (snapshot(segmentLeaderEpochs=[]), "segmentLeaderEpochs can not be null or empty"),
    (uv(1) + uv(4) + uv(0), "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4"),
    (GOOD[:40], "Failed to deserialize record with type 0"),
    (GOOD + b"\x00\x00", "Found 2 byte(s) of garbage after 0"),
    (b"", "Error while reading frame version"),
])
def test_what_kafka_refuses_is_its_error_text_and_a_cause(value, text):
    errors = []
    assert render_remote_log_metadata(value, 7, errors) == f"Error at offset 7, skipping. {text}"
    [cause] = errors
    assert isinstance(cause, DecodeError) and cause.message


def test_a_record_without_a_value_is_the_null_pointer_text_of_the_release():
    errors = []
    text = render_remote_log_metadata(None, 3, errors, null_value_text="NPE")
    assert text == "Error at offset 3, skipping. NPE" and len(errors) == 1


def test_json_form_is_the_object_with_its_bytes_and_epochs():
    obj = render_remote_log_metadata(EDGE_VALUES[1], 1, structured=True)
    assert obj["type"] == "RemoteLogSegmentMetadata" and obj["customMetadata"] == "Y3VzdG9tLWJ5dGVz"
    assert obj["segmentLeaderEpochs"] == {"-1": 7, "1": 100, "3": 150, "5": 200}
    assert obj["remoteLogSegmentId"]["topicIdPartition"] == {"topicId": "Ty8ea2hTSuyxx5e5Tx55Pw",
                                                            "topic": "orders", "partition": 3}
    # where Kafka prints an error, JSON has that text too
    assert render_remote_log_metadata(b"", 4, structured=True).startswith("Error at offset 4, skipping.")


def test_encoded_values_decode_back():
    api_key, msg = decode_remote_log_metadata(snapshot())
    assert api_key == 3 and remote_log_metadata(api_key, msg)["segmentSizeInBytes"] == 77


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.booleans())
def test_any_bytes_give_a_text_never_an_exception(data, structured):
    for value in (data, GOOD[:len(data)] + data, uv(1) + bytes([len(data) % 5]) + b"\x00" + data):
        for records in (RECORDS, RECORDS_3_9):
            out = render_remote_log_metadata(value, 0, [], records=records, structured=structured)
            assert isinstance(out, (str, dict))


def _storage_specs(release: str) -> dict:
    libs = libs_for(release)
    if not jars_present(libs, release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    return _jar_specs(str(libs / f"kafka-storage-{release}.jar"), "message/")


@pytest.mark.kafka
@pytest.mark.parametrize("release,records", [("3.9.2", RECORDS_3_9), ("4.1.1", RECORDS), ("4.4.0", RECORDS)])
def test_tables_equal_the_specs_in_the_storage_jars(release, records):
    specs = {name: spec for name, spec in _storage_specs(release).items() if name.startswith("Remote")}
    assert {s.name for s in records.values()} == set(specs)
    for schema in records.values():
        assert schema == _spec_schema(specs[schema.name]), schema.name
