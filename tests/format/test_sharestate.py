"""``__share_group_state`` records (logscan.format.sharestate): the tables against the
kafka-share-coordinator jars' specs, the texts of kafka-dump-log --share-group-state-decoder,
and the records tests/dump/test_share_group_state.py runs the real tool on."""

from __future__ import annotations

import struct
import uuid

import pytest

from logscan.format.message import encode_message
from logscan.format.sharestate import (RECORD_TYPES, RECORD_TYPES_4_1, SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE,
                                       SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE, render_share_state_key_payload)
from tests.format.test_message import _jar_specs, _spec_schema
from tools.kafka.cluster import jars_present, libs_for

TOPIC_ID = uuid.UUID("4f2f1e6b-6853-4aec-b1c7-97b94f1e793f")    # Ty8ea2hTSuyxx5e5Tx55Pw
BATCHES = [{"firstOffset": 10, "lastOffset": 19, "deliveryState": 2, "deliveryCount": 1},
           {"firstOffset": 20, "lastOffset": 20, "deliveryState": 4, "deliveryCount": 5}]


def key(record_type: int, group: str = "grp", partition: int = 4) -> bytes:
    schema = SHARE_SNAPSHOT_KEY if record_type == 0 else SHARE_UPDATE_KEY
    return struct.pack(">h", record_type) + encode_message(schema, 0, {"groupId": group, "topicId": TOPIC_ID,
                                                                       "partition": partition})


def snapshot(**kw) -> bytes:
    values = {"snapshotEpoch": 3, "stateEpoch": 1, "leaderEpoch": 7, "startOffset": 10,
              "createTimestamp": 1_700_000_000_000, "writeTimestamp": 1_700_000_000_500, "stateBatches": BATCHES}
    return struct.pack(">h", 0) + encode_message(SHARE_SNAPSHOT_VALUE, 0, {**values, **kw})


def update(**kw) -> bytes:
    values = {"snapshotEpoch": 3, "leaderEpoch": 7, "startOffset": -1, "stateBatches": BATCHES[:1]}
    return struct.pack(">h", 0) + encode_message(SHARE_UPDATE_VALUE, 0, {**values, **kw})


#: (key, value) records of both types and every way the tool's parser skips one; the tool's
#: text on them is the expected text. (A record without a key kills the tool: not here.)
EDGE_RECORDS = [
    (key(0), snapshot()),
    (key(0, "gr\u00fcppe \"q\"\n", 0), snapshot(deliveryCompleteCount=12, stateBatches=[])),
    (key(1), update()),
    (key(1), update(deliveryCompleteCount=0, startOffset=30)),
    (key(1), update(deliveryCompleteCount=-1)),
    (key(0), None),
    (struct.pack(">h", 2) + b"\x00\x01g", snapshot()),
    (struct.pack(">h", 0) + b"\x00", snapshot()),
    (b"\x00", snapshot()),
    (key(0), struct.pack(">h", 1) + snapshot()[2:]),
    (key(0), snapshot()[:20]),
    (key(0), snapshot() + b"junk"),
    (key(1), snapshot()),
    (key(0), b"\x00"),
]


def test_snapshot_text():
    k, v = render_share_state_key_payload(key(0), snapshot(), 0)
    assert k == '{"type":"0","data":{"groupId":"grp","topicId":"Ty8ea2hTSuyxx5e5Tx55Pw","partition":4}}'
    assert v == ('{"version":"0","data":{"snapshotEpoch":3,"stateEpoch":1,"leaderEpoch":7,"startOffset":10,'
                 '"createTimestamp":1700000000000,"writeTimestamp":1700000000500,"stateBatches":['
                 '{"firstOffset":10,"lastOffset":19,"deliveryState":2,"deliveryCount":1},'
                 '{"firstOffset":20,"lastOffset":20,"deliveryState":4,"deliveryCount":5}]}}')


def test_delivery_complete_count_is_read_by_4_4_only():
    value = update(deliveryCompleteCount=0, startOffset=30)
    assert '"startOffset":30,"deliveryCompleteCount":0,"stateBatches"' in render_share_state_key_payload(
        key(1), value, 0)[1]
    assert '"startOffset":30,"stateBatches"' in render_share_state_key_payload(
        key(1), value, 0, types=RECORD_TYPES_4_1)[1]


def test_errors_are_the_coordinator_parsers_texts():
    errors = []
    assert render_share_state_key_payload(struct.pack(">h", 2) + b"\x00\x01g", None, 6, errors) == (
        "Unknown record type 2 at offset 6, skipping.", None)
    assert render_share_state_key_payload(key(0), struct.pack(">h", 1) + snapshot()[2:], 9, errors) == (
        "Error at offset 9, skipping. Found an unknown record version 1 for 0 type", None)
    assert render_share_state_key_payload(key(0), None, 5) == (render_share_state_key_payload(key(0), snapshot(), 5)[0],
                                                               "<DELETE>")
    assert len(errors) == 2


@pytest.mark.kafka
@pytest.mark.parametrize("release,types", [("4.1.1", RECORD_TYPES_4_1), ("4.4.0", RECORD_TYPES)])
def test_tables_equal_the_specs_in_the_share_coordinator_jars(release, types):
    libs = libs_for(release)
    if not jars_present(libs, release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    specs = _jar_specs(str(libs / f"kafka-share-coordinator-{release}.jar"), "common/message/")
    ours = [schema for pair in types.values() for schema in pair]
    assert {s.name for s in ours} == set(specs)
    for schema in ours:
        assert schema == _spec_schema(specs[schema.name]), schema.name
