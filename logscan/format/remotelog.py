"""``__remote_log_metadata`` record values (tiered storage's topic-based remote log metadata
manager, KIP-405) and kafka-dump-log ``--remote-log-metadata-decoder`` text.

The schemas are those of ``storage/src/main/resources/message`` in Kafka's kafka-storage jar,
the same in 3.9.2, 4.1.1 and 4.4.0 but for the ``TxnIndexEmpty`` tagged field (tag 0) of
RemoteLogSegmentMetadataRecord and RemoteLogSegmentMetadataSnapshotRecord, which 4.0 added:
3.9.2 skips it as an unknown tag and prints no ``txnIdxEmpty``.

A value is framed as ``__cluster_metadata``'s (``BytesApiMessageSerde`` over
``AbstractApiMessageSerde``: unsigned varint frame version 1, apiKey, version, then the
message, nothing after it), with apiKeys 0 RemoteLogSegmentMetadataRecord, 1
RemoteLogSegmentMetadataUpdateRecord, 2 RemotePartitionDeleteMetadataRecord and 3
RemoteLogSegmentMetadataSnapshotRecord (``RemoteLogMetadataSerde.deserialize`` turns each into
its ``RemoteLogMetadata`` object). The records carry no key; kafka-dump-log prints none.

kafka-dump-log (3.9.2, 4.1.1 and 4.4.0 alike) prints after `` payload: `` the ``toString()`` of
that object::

    RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topicId>:<topic>-<p>,
      id=<segmentId>}, startOffset=0, endOffset=14, brokerId=1, maxTimestampMs=..., eventTimestampMs=...,
      segmentLeaderEpochs={0=0}, segmentSizeInBytes=903, customMetadata=Optional.empty,
      state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}

(one line), or, when reading or building the object throws, ``Error at offset O, skipping.
<getMessage()>``: an unknown state id makes ``state can not be null`` (RemotePartitionDeleteMetadata:
``null``), a negative start offset or an end offset before it, and an empty leader-epoch list,
the constructor's IllegalArgumentException text.
"""

from __future__ import annotations

import base64

from .errors import CorruptRecordError, DecodeError, UnknownVersion
from .message import F, M, Message, _error, java_message, kafka_uuid

_TOPIC_ID_PARTITION = [
    F("Name", "string", "0+"),
    F("Id", "uuid", "0+"),
    F("Partition", "int32", "0+"),
]

_SEGMENT_ID = [
    F("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_TOPIC_ID_PARTITION),
    F("Id", "uuid", "0+"),
]

_LEADER_EPOCHS = [
    F("LeaderEpoch", "int32", "0+"),
    F("Offset", "int64", "0+"),
]

_TXN_INDEX_EMPTY = F("TxnIndexEmpty", "bool", "0+", tag=0)

REMOTE_LOG_SEGMENT_METADATA_RECORD = M("RemoteLogSegmentMetadataRecord", "0", "0+", 0, [
    F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=_SEGMENT_ID),
    F("StartOffset", "int64", "0+"),
    F("EndOffset", "int64", "0+"),
    F("BrokerId", "int32", "0+"),
    F("MaxTimestampMs", "int64", "0+"),
    F("EventTimestampMs", "int64", "0+"),
    F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_LEADER_EPOCHS),
    F("SegmentSizeInBytes", "int32", "0+"),
    F("CustomMetadata", "bytes", "0+", null="0+", default=None),
    F("RemoteLogSegmentState", "int8", "0+"),
    _TXN_INDEX_EMPTY,
])

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = M("RemoteLogSegmentMetadataUpdateRecord", "0", "0+", 1, [
    F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=_SEGMENT_ID),
    F("BrokerId", "int32", "0+"),
    F("EventTimestampMs", "int64", "0+"),
    F("CustomMetadata", "bytes", "0+", null="0+", default=None),
    F("RemoteLogSegmentState", "int8", "0+"),
])

REMOTE_PARTITION_DELETE_METADATA_RECORD = M("RemotePartitionDeleteMetadataRecord", "0", "0+", 2, [
    F("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_TOPIC_ID_PARTITION),
    F("BrokerId", "int32", "0+"),
    F("EventTimestampMs", "int64", "0+"),
    F("RemotePartitionDeleteState", "int8", "0+"),
])

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = M("RemoteLogSegmentMetadataSnapshotRecord", "0", "0+", 3, [
    F("SegmentId", "uuid", "0+"),
    F("StartOffset", "int64", "0+"),
    F("EndOffset", "int64", "0+"),
    F("BrokerId", "int32", "0+"),
    F("MaxTimestampMs", "int64", "0+"),
    F("EventTimestampMs", "int64", "0+"),
    F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_LEADER_EPOCHS),
    F("SegmentSizeInBytes", "int32", "0+"),
    F("CustomMetadata", "bytes", "0+", null="0+", default=None),
    F("RemoteLogSegmentState", "int8", "0+"),
    _TXN_INDEX_EMPTY,
])

#: apiKey -> schema: the records 4.0+ reads (RemoteLogMetadataSerde's MetadataRecordType).
RECORDS = {s.api_key: s for s in (
    REMOTE_LOG_SEGMENT_METADATA_RECORD, REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
    REMOTE_PARTITION_DELETE_METADATA_RECORD, REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD)}


def _without_txn_index_empty(schema):
    return M(schema.name, "0", "0+", schema.api_key, [f for f in schema.fields if f is not _TXN_INDEX_EMPTY])


#: The records as Kafka 3.9.2 reads them: no TxnIndexEmpty (its tag 0 is an unknown tag there).
RECORDS_3_9 = {k: _without_txn_index_empty(s) for k, s in RECORDS.items()}

#: RemoteLogSegmentState and RemotePartitionDeleteState, by id (``forId``; null for any other).
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}

#: The Java class RemoteLogMetadataSerde makes of each apiKey (the ``type`` of the JSON form).
CLASS_NAMES = {0: "RemoteLogSegmentMetadata", 1: "RemoteLogSegmentMetadataUpdate",
               2: "RemotePartitionDeleteMetadata", 3: "RemoteLogSegmentMetadataSnapshot"}


class RemoteLogMetadataRefused(CorruptRecordError):
    """The record decodes, but Kafka's RemoteLogMetadata constructors refuse its values."""


def decode_remote_log_metadata(value, *, records=RECORDS):
    """The framed value's (api_key, message); raises DecodeError with Kafka's message as
    ``java_message`` (the frame errors are ``__cluster_metadata``'s)."""
    from .metadata import decode_metadata_record

    rec, _ = decode_metadata_record(value, 0, len(value), lenient=True, records=records)
    if rec.message is None:
        err = _error(UnknownVersion, f"unknown remote log metadata record type {rec.api_key}", 0,
                     f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {rec.api_key}",
                     expected="0-3", found=rec.api_key)
        raise err
    return rec.api_key, rec.message


def remote_log_metadata(api_key: int, msg: Message) -> dict:
    """The RemoteLogMetadata object Kafka builds from a record, as a dict in its toString's
    field order (``type``: the Java class); raises RemoteLogMetadataRefused where Kafka's
    transform or constructor throws, with its message."""
    def refused(text: str | None, why: str):
        return _error(RemoteLogMetadataRefused, why, 0, text)

    if api_key == 2:
        state = PARTITION_DELETE_STATES.get(msg.remote_partition_delete_state)
        if state is None:   # Objects.requireNonNull(state): no message
            raise refused(None, f"unknown remote partition delete state {msg.remote_partition_delete_state}")
        return {"type": CLASS_NAMES[2], "topicPartition": _topic_id_partition(msg.topic_id_partition),
                "state": state, "eventTimestampMs": msg.event_timestamp_ms, "brokerId": msg.broker_id}
    custom = None if msg.custom_metadata is None else bytes(msg.custom_metadata)
    state = SEGMENT_STATES.get(msg.remote_log_segment_state)
    if api_key == 1:
        if state is None:
            raise refused("state can not be null", f"unknown remote log segment state {msg.remote_log_segment_state}")
        return {"type": CLASS_NAMES[1], "remoteLogSegmentId": _segment_id(msg.remote_log_segment_id),
                "customMetadata": custom, "state": state, "eventTimestampMs": msg.event_timestamp_ms,
                "brokerId": msg.broker_id}
    # a HashMap of the entries (a repeated epoch keeps its last offset), then a TreeMap
    epochs = dict(sorted({e.leader_epoch: e.offset for e in msg.segment_leader_epochs}.items()))
    txn_idx_empty = msg.get("txnIndexEmpty")
    if api_key == 3:
        if state is None:
            raise refused("state can not be null", f"unknown remote log segment state {msg.remote_log_segment_state}")
        if not epochs:
            raise refused("segmentLeaderEpochs can not be null or empty", "no segment leader epochs")
        return {"type": CLASS_NAMES[3], "segmentId": kafka_uuid(msg.segment_id), "startOffset": msg.start_offset,
                "endOffset": msg.end_offset, "maxTimestampMs": msg.max_timestamp_ms, "segmentLeaderEpochs": epochs,
                "segmentSizeInBytes": msg.segment_size_in_bytes, "customMetadata": custom, "state": state,
                "txnIdxEmpty": txn_idx_empty, "brokerId": msg.broker_id,
                "eventTimestampMs": msg.event_timestamp_ms}
    # RemoteLogSegmentMetadataTransform: the metadata (COPY_SEGMENT_STARTED), then the update
    # with the record's state
    start, end = msg.start_offset, msg.end_offset
    if start < 0:
        raise refused(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative",
                      f"negative start offset {start}")
    if end < start:
        raise refused(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
                      f"startOffset = {start}", f"end offset {end} before start offset {start}")
    if not epochs:
        raise refused("segmentLeaderEpochs can not be null or empty", "no segment leader epochs")
    if state is None:
        raise refused("state can not be null", f"unknown remote log segment state {msg.remote_log_segment_state}")
    return {"type": CLASS_NAMES[0], "remoteLogSegmentId": _segment_id(msg.remote_log_segment_id),
            "startOffset": start, "endOffset": end, "brokerId": msg.broker_id,
            "maxTimestampMs": msg.max_timestamp_ms, "eventTimestampMs": msg.event_timestamp_ms,
            "segmentLeaderEpochs": epochs, "segmentSizeInBytes": msg.segment_size_in_bytes,
            "customMetadata": custom, "state": state, "txnIdxEmpty": txn_idx_empty}


def _topic_id_partition(tip: Message) -> dict:
    return {"topicId": kafka_uuid(tip.id), "topic": tip.name, "partition": tip.partition}


def _segment_id(sid: Message) -> dict:
    return {"topicIdPartition": _topic_id_partition(sid.topic_id_partition), "id": kafka_uuid(sid.id)}


# --------------------------------------------------------------------------- Java's toString


def _tip_text(tip: dict) -> str:
    return f"{tip['topicId']}:{tip['topic']}-{tip['partition']}"   # TopicIdPartition.toString


def _segment_id_text(sid: dict) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_tip_text(sid['topicIdPartition'])}, id={sid['id']}}}"


def _custom_text(custom: bytes | None) -> str:
    return "Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]"


def _epochs_text(epochs: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in epochs.items()) + "}"   # AbstractMap.toString


def _bool(value: bool) -> str:
    return "true" if value else "false"


def remote_log_metadata_text(obj: dict, *, txn_idx_empty: bool = True) -> str:
    """``RemoteLogMetadata.toString()`` of :func:`remote_log_metadata`'s object;
    ``txn_idx_empty``: the release prints ``txnIdxEmpty`` (4.0+)."""
    kind = obj["type"]
    tail = f", txnIdxEmpty={_bool(obj.get('txnIdxEmpty'))}}}" if txn_idx_empty else "}"
    if kind == CLASS_NAMES[0]:
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id_text(obj['remoteLogSegmentId'])}, "
                f"startOffset={obj['startOffset']}, endOffset={obj['endOffset']}, brokerId={obj['brokerId']}, "
                f"maxTimestampMs={obj['maxTimestampMs']}, eventTimestampMs={obj['eventTimestampMs']}, "
                f"segmentLeaderEpochs={_epochs_text(obj['segmentLeaderEpochs'])}, "
                f"segmentSizeInBytes={obj['segmentSizeInBytes']}, customMetadata={_custom_text(obj['customMetadata'])}, "
                f"state={obj['state']}" + tail)
    if kind == CLASS_NAMES[1]:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id_text(obj['remoteLogSegmentId'])}, "
                f"customMetadata={_custom_text(obj['customMetadata'])}, state={obj['state']}, "
                f"eventTimestampMs={obj['eventTimestampMs']}, brokerId={obj['brokerId']}}}")
    if kind == CLASS_NAMES[2]:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_tip_text(obj['topicPartition'])}, "
                f"state={obj['state']}, eventTimestampMs={obj['eventTimestampMs']}, brokerId={obj['brokerId']}}}")
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={obj['segmentId']}, startOffset={obj['startOffset']}, "
            f"endOffset={obj['endOffset']}, maxTimestampMs={obj['maxTimestampMs']}, "
            f"segmentLeaderEpochs={_epochs_text(obj['segmentLeaderEpochs'])}, "
            f"segmentSizeInBytes={obj['segmentSizeInBytes']}, customMetadata={_custom_text(obj['customMetadata'])}, "
            f"state={obj['state']}" + tail)


def json_form(obj: dict) -> dict:
    """:func:`remote_log_metadata`'s object for ``--format json``: custom metadata as base64
    (standard, padded), the leader epochs as ``{"epoch": offset}``."""
    out = dict(obj)
    if out.get("customMetadata") is not None:
        out["customMetadata"] = base64.b64encode(out["customMetadata"]).decode("ascii")
    if "segmentLeaderEpochs" in out:
        out["segmentLeaderEpochs"] = {str(k): v for k, v in out["segmentLeaderEpochs"].items()}
    return out


def render_remote_log_metadata(value, offset: int, errors: list | None = None, *, records=RECORDS,
                               txn_idx_empty: bool = True, null_value_text: str | None = None,
                               structured: bool = False):
    """What kafka-dump-log ``--remote-log-metadata-decoder`` prints after `` payload: `` for a
    record value (``structured``: the object as a dict for JSON instead, where Kafka prints no
    error). The cause of an ``Error at`` text goes to ``errors`` when given.

    ``records``/``txn_idx_empty``: the release's schemas and toString; ``null_value_text``: the
    message of the NullPointerException a value-less record gives the release's parser."""
    if errors is None:
        errors = []
    if value is None:
        errors.append(CorruptRecordError("remote log metadata record without a value", 0,
                                         expected="a value", found=None))
        return f"Error at offset {offset}, skipping. {null_value_text}"
    try:
        api_key, msg = decode_remote_log_metadata(value, records=records)
        obj = remote_log_metadata(api_key, msg)
    except DecodeError as exc:
        errors.append(exc)
        return f"Error at offset {offset}, skipping. {java_message(exc)}"
    if structured:
        return json_form(obj)
    return remote_log_metadata_text(obj, txn_idx_empty=txn_idx_empty)


def encode_remote_log_metadata(api_key: int, values: dict, *, version: int = 0, frame_version: int = 1,
                               records=RECORDS) -> bytes:
    """A framed value as RemoteLogMetadataSerde.serialize writes it (tests and the test encoder;
    ``values`` may hold what Kafka would refuse)."""
    from .message import encode_message
    from .primitives import encode_unsigned_varint as uv

    return (uv(frame_version) + uv(api_key) + uv(version)
            + encode_message(records[api_key], version, values))
