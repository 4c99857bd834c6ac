"""``__share_group_state`` records (the share coordinator of KIP-932, ``kafka-share-coordinator``).

Key = ``int16 record type`` + key message, value = ``int16 version`` + value message, null value
= tombstone (``ShareCoordinatorRecordSerde``, a CoordinatorRecordSerde as ``__consumer_offsets``'
is). Record types: 0 ShareSnapshotKey/Value (the whole state of a share-partition), 1
ShareUpdateKey/Value (a delta on the last snapshot). The tables are 4.4.0's
(``common/message`` of its kafka-share-coordinator jar); 4.1.1's lack the
``DeliveryCompleteCount`` tagged field (tag 0, default -1) that Kafka 4.2 added to both values
(KIP-1226): its reader skips it as an unknown tag and its JSON has no such field
(RECORD_TYPES_4_1).

kafka-dump-log ``--share-group-state-decoder`` (4.1.1 and 4.4.0; 3.9.2 has no such option) is
the coordinator records' parser (``CoordinatorRecordMessageParser``, as ``--offsets-decoder``)::

    key: {"type":"0","data":{"groupId":"g","topicId":"...","partition":0}}
    payload: {"version":"0","data":{"snapshotEpoch":0,...,"stateBatches":[...]}}
"""

from __future__ import annotations

from .message import F, M, render_coordinator_record

_KEY_FIELDS = [
    F("GroupId", "string", "0"),
    F("TopicId", "uuid", "0"),
    F("Partition", "int32", "0"),
]

_STATE_BATCH = [
    F("FirstOffset", "int64", "0+"),
    F("LastOffset", "int64", "0+"),
    F("DeliveryState", "int8", "0+"),
    F("DeliveryCount", "int16", "0+"),
]

_DELIVERY_COMPLETE_COUNT = F("DeliveryCompleteCount", "int32", "0+", tag=0, default=-1)

SHARE_SNAPSHOT_KEY = M("ShareSnapshotKey", "0", "none", 0, _KEY_FIELDS)

SHARE_SNAPSHOT_VALUE = M("ShareSnapshotValue", "0", "0+", 0, [
    F("SnapshotEpoch", "int32", "0+"),
    F("StateEpoch", "int32", "0+"),
    F("LeaderEpoch", "int32", "0+"),
    F("StartOffset", "int64", "0+"),
    _DELIVERY_COMPLETE_COUNT,
    F("CreateTimestamp", "int64", "0+"),
    F("WriteTimestamp", "int64", "0+"),
    F("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH),
])

SHARE_UPDATE_KEY = M("ShareUpdateKey", "0", "none", 1, _KEY_FIELDS)

SHARE_UPDATE_VALUE = M("ShareUpdateValue", "0", "0+", 1, [
    F("SnapshotEpoch", "int32", "0+"),
    F("LeaderEpoch", "int32", "0+"),
    F("StartOffset", "int64", "0+"),
    _DELIVERY_COMPLETE_COUNT,
    F("StateBatches", "[]StateBatch", "0+", fields=_STATE_BATCH),
])

#: Record type (the key's int16 prefix) -> (key schema, value schema): 4.4.0's.
RECORD_TYPES = {
    0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}


def _without_delivery_complete_count(schema):
    return M(schema.name, "0", "0+", schema.api_key, [f for f in schema.fields if f is not _DELIVERY_COMPLETE_COUNT])


#: The record types as Kafka 4.1.1 reads them (no DeliveryCompleteCount).
RECORD_TYPES_4_1 = {t: (key, _without_delivery_complete_count(value)) for t, (key, value) in RECORD_TYPES.items()}


def render_share_state_key_payload(key, value, offset: int, errors: list | None = None, *,
                                   types=RECORD_TYPES) -> tuple[str | None, str | None]:
    """What ``kafka-dump-log --share-group-state-decoder`` prints after ``key: `` and
    `` payload: `` (None = that part is not printed); ``types``: the release's tables. The
    cause of an error text goes to ``errors`` when given."""
    return render_coordinator_record(types, key, value, offset, errors=errors)
