"""``__cluster_metadata`` (KRaft) record values (Kafka 4.4.0's schemas, ``kafka-metadata``).

The tables are those of 4.4.0, which reads every file 4.1.1 writes: 4.4.0 adds
CordonedLogDirs to RegisterBrokerRecord (v4) and BrokerRegistrationChangeRecord (v3), and
UnregisterControllerRecord (apiKey 29); nothing else changed since 4.1.1.

Every value is framed by ``AbstractApiMessageSerde``: unsigned varint frame version (must be
1; 0 was the 2.8 preview), unsigned varint apiKey, unsigned varint version, then the message;
bytes left after the message are an error ("garbage"). No version check: Kafka reads any
version with the field ranges of the spec, and so does the renderer here.

kafka-dump-log ``--cluster-metadata-decoder`` (4.1.1 and 4.4.0 alike) prints no key and, after `` payload: ``::

    {"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"..."}}

(``type`` is the ``MetadataRecordType`` enum name, ``version`` a JSON number), or
``Error at O, skipping. <message>`` (no "offset" word, unlike the coordinator decoders).
Control batches (leader change, snapshot header/footer, KRaft version, voters) are printed
by the record-line code, see :mod:`logscan.format.raft`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import CorruptRecordError, DecodeError, UnknownVersion
from .message import (F, M, Message, _error, decode_message, jackson_string, java_message,
                      to_kafka_json)
from .primitives import read_unsigned_varint

FRAME_VERSION = 1

ABORT_TRANSACTION_RECORD = M("AbortTransactionRecord", "0", "0+", 25, [
    F("Reason", "string", "0+", null="0+", tag=0, default=None),
])

ACCESS_CONTROL_ENTRY_RECORD = M("AccessControlEntryRecord", "0", "0+", 18, [
    F("Id", "uuid", "0+"),
    F("ResourceType", "int8", "0+"),
    F("ResourceName", "string", "0+"),
    F("PatternType", "int8", "0+"),
    F("Principal", "string", "0+"),
    F("Host", "string", "0+"),
    F("Operation", "int8", "0+"),
    F("PermissionType", "int8", "0+"),
])

BEGIN_TRANSACTION_RECORD = M("BeginTransactionRecord", "0", "0+", 23, [
    F("Name", "string", "0+", null="0+", tag=0, default=None),
])

# v3 (4.4.0): CordonedLogDirs, null when unchanged
BROKER_REGISTRATION_CHANGE_RECORD = M("BrokerRegistrationChangeRecord", "0-3", "0+", 17, [
    F("BrokerId", "int32", "0+"),
    F("BrokerEpoch", "int64", "0+"),
    F("Fenced", "int8", "0+", tag=0),
    F("InControlledShutdown", "int8", "1+", tag=1),
    F("LogDirs", "[]uuid", "2+", tag=2),
    F("CordonedLogDirs", "[]uuid", "3+", null="3+", tag=3, default=None),
])

CLEAR_ELR_RECORD = M("ClearElrRecord", "0", "0+", 28, [
    F("TopicName", "string", "0+"),
])

CLIENT_QUOTA_RECORD = M("ClientQuotaRecord", "0", "0+", 14, [
    F("Entity", "[]EntityData", "0+", fields=[
        F("EntityType", "string", "0+"),
        F("EntityName", "string", "0+", null="0+"),
    ]),
    F("Key", "string", "0+"),
    F("Value", "float64", "0+"),
    F("Remove", "bool", "0+"),
])

CONFIG_RECORD = M("ConfigRecord", "0", "0+", 4, [
    F("ResourceType", "int8", "0+"),
    F("ResourceName", "string", "0+"),
    F("Name", "string", "0+"),
    F("Value", "string", "0+", null="0+"),
])

DELEGATION_TOKEN_RECORD = M("DelegationTokenRecord", "0", "0+", 10, [
    F("Owner", "string", "0+"),
    F("Requester", "string", "0+"),
    F("Renewers", "[]string", "0+"),
    F("IssueTimestamp", "int64", "0+"),
    F("MaxTimestamp", "int64", "0+"),
    F("ExpirationTimestamp", "int64", "0+"),
    F("TokenId", "string", "0+"),
])

END_TRANSACTION_RECORD = M("EndTransactionRecord", "0", "0+", 24, [
])

FEATURE_LEVEL_RECORD = M("FeatureLevelRecord", "0", "0+", 12, [
    F("Name", "string", "0+"),
    F("FeatureLevel", "int16", "0+"),
])

FENCE_BROKER_RECORD = M("FenceBrokerRecord", "0", "0+", 7, [
    F("Id", "int32", "0+"),
    F("Epoch", "int64", "0+"),
])

NO_OP_RECORD = M("NoOpRecord", "0", "0+", 20, [
])

PARTITION_CHANGE_RECORD = M("PartitionChangeRecord", "0-2", "0+", 5, [
    F("PartitionId", "int32", "0+", default=-1),
    F("TopicId", "uuid", "0+"),
    F("Isr", "[]int32", "0+", null="0+", tag=0, default=None),
    F("Leader", "int32", "0+", tag=1, default=-2),
    F("Replicas", "[]int32", "0+", null="0+", tag=2, default=None),
    F("RemovingReplicas", "[]int32", "0+", null="0+", tag=3, default=None),
    F("AddingReplicas", "[]int32", "0+", null="0+", tag=4, default=None),
    F("LeaderRecoveryState", "int8", "0+", tag=5, default=-1),
    F("Directories", "[]uuid", "1+", null="1+", tag=8, default=None),
    F("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tag=6, default=None),
    F("LastKnownElr", "[]int32", "2+", null="2+", tag=7, default=None),
])

PARTITION_RECORD = M("PartitionRecord", "0-2", "0+", 3, [
    F("PartitionId", "int32", "0+", default=-1),
    F("TopicId", "uuid", "0+"),
    F("Replicas", "[]int32", "0+"),
    F("Isr", "[]int32", "0+"),
    F("RemovingReplicas", "[]int32", "0+"),
    F("AddingReplicas", "[]int32", "0+"),
    F("Leader", "int32", "0+", default=-1),
    F("LeaderRecoveryState", "int8", "0+", tag=0, default=0),
    F("LeaderEpoch", "int32", "0+", default=-1),
    F("PartitionEpoch", "int32", "0+", default=-1),
    F("Directories", "[]uuid", "1+"),
    F("EligibleLeaderReplicas", "[]int32", "2+", null="2+", tag=1, default=None),
    F("LastKnownElr", "[]int32", "2+", null="2+", tag=2, default=None),
])

PRODUCER_IDS_RECORD = M("ProducerIdsRecord", "0", "0+", 15, [
    F("BrokerId", "int32", "0+"),
    F("BrokerEpoch", "int64", "0+", default=-1),
    F("NextProducerId", "int64", "0+"),
])

# v4 (4.4.0): CordonedLogDirs, null until the broker's heartbeats send it
REGISTER_BROKER_RECORD = M("RegisterBrokerRecord", "0-4", "0+", 0, [
    F("BrokerId", "int32", "0+"),
    F("IsMigratingZkBroker", "bool", "2+", default=False),
    F("IncarnationId", "uuid", "0+"),
    F("BrokerEpoch", "int64", "0+"),
    F("EndPoints", "[]BrokerEndpoint", "0+", fields=[
        F("Name", "string", "0+"),
        F("Host", "string", "0+"),
        F("Port", "uint16", "0+"),
        F("SecurityProtocol", "int16", "0+"),
    ]),
    F("Features", "[]BrokerFeature", "0+", fields=[
        F("Name", "string", "0+"),
        F("MinSupportedVersion", "int16", "0+"),
        F("MaxSupportedVersion", "int16", "0+"),
    ]),
    F("Rack", "string", "0+", null="0+"),
    F("Fenced", "bool", "0+", default=True),
    F("InControlledShutdown", "bool", "1+", default=False),
    F("LogDirs", "[]uuid", "3+", tag=0),
    F("CordonedLogDirs", "[]uuid", "4+", null="4+", tag=1, default=None),
])

REGISTER_CONTROLLER_RECORD = M("RegisterControllerRecord", "0", "0+", 27, [
    F("ControllerId", "int32", "0+"),
    F("IncarnationId", "uuid", "0+"),
    F("ZkMigrationReady", "bool", "0+"),
    F("EndPoints", "[]ControllerEndpoint", "0+", fields=[
        F("Name", "string", "0+"),
        F("Host", "string", "0+"),
        F("Port", "uint16", "0+"),
        F("SecurityProtocol", "int16", "0+"),
    ]),
    F("Features", "[]ControllerFeature", "0+", fields=[
        F("Name", "string", "0+"),
        F("MinSupportedVersion", "int16", "0+"),
        F("MaxSupportedVersion", "int16", "0+"),
    ]),
])

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = M("RemoveAccessControlEntryRecord", "0", "0+", 19, [
    F("Id", "uuid", "0+"),
])

REMOVE_DELEGATION_TOKEN_RECORD = M("RemoveDelegationTokenRecord", "0", "0+", 26, [
    F("TokenId", "string", "0+"),
])

REMOVE_TOPIC_RECORD = M("RemoveTopicRecord", "0", "0+", 9, [
    F("TopicId", "uuid", "0+"),
])

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = M("RemoveUserScramCredentialRecord", "0", "0+", 22, [
    F("Name", "string", "0+"),
    F("Mechanism", "int8", "0+"),
])

TOPIC_RECORD = M("TopicRecord", "0", "0+", 2, [
    F("Name", "string", "0+"),
    F("TopicId", "uuid", "0+"),
])

UNFENCE_BROKER_RECORD = M("UnfenceBrokerRecord", "0", "0+", 8, [
    F("Id", "int32", "0+"),
    F("Epoch", "int64", "0+"),
])

UNREGISTER_CONTROLLER_RECORD = M("UnregisterControllerRecord", "0", "0+", 29, [
    F("ControllerId", "int32", "0+"),
])

UNREGISTER_BROKER_RECORD = M("UnregisterBrokerRecord", "0", "0+", 1, [
    F("BrokerId", "int32", "0+"),
    F("BrokerEpoch", "int64", "0+"),
])

USER_SCRAM_CREDENTIAL_RECORD = M("UserScramCredentialRecord", "0", "0+", 11, [
    F("Name", "string", "0+"),
    F("Mechanism", "int8", "0+"),
    F("Salt", "bytes", "0+"),
    F("StoredKey", "bytes", "0+"),
    F("ServerKey", "bytes", "0+"),
    F("Iterations", "int32", "0+"),
])

ZK_MIGRATION_STATE_RECORD = M("ZkMigrationStateRecord", "0", "0+", 21, [
    F("ZkMigrationState", "int8", "0+"),
])

RECORDS = {s.api_key: s for s in (
    REGISTER_BROKER_RECORD, UNREGISTER_BROKER_RECORD, TOPIC_RECORD, PARTITION_RECORD,
    CONFIG_RECORD, PARTITION_CHANGE_RECORD, FENCE_BROKER_RECORD, UNFENCE_BROKER_RECORD,
    REMOVE_TOPIC_RECORD, DELEGATION_TOKEN_RECORD, USER_SCRAM_CREDENTIAL_RECORD,
    FEATURE_LEVEL_RECORD, CLIENT_QUOTA_RECORD, PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD, ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD, NO_OP_RECORD, ZK_MIGRATION_STATE_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD, BEGIN_TRANSACTION_RECORD, END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD, REMOVE_DELEGATION_TOKEN_RECORD, REGISTER_CONTROLLER_RECORD,
    CLEAR_ELR_RECORD, UNREGISTER_CONTROLLER_RECORD)}


def record_type_name(schema_name: str) -> str:
    """``MetadataRecordType`` enum name: TopicRecord -> TOPIC_RECORD."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", schema_name).upper()


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One framed metadata record. ``message`` is None for an apiKey 4.4.0 does not know;
    then ``raw`` holds the undecoded message bytes."""
    api_key: int
    version: int
    message: Message | None
    raw: bytes = b""
    frame_version: int = FRAME_VERSION

    @property
    def type_name(self) -> str | None:
        return None if self.message is None else record_type_name(self.message.schema.name)


def _frame_varint(buf, pos: int, end: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = read_unsigned_varint(buf, pos, end)
    except DecodeError as exc:
        exc.java_message = f"Error while reading {entity}"
        raise
    if value > 0x7FFF:
        raise _error(CorruptRecordError, f"{entity} {value} too large", pos,
                     f"Value for {entity} was too large.", expected="<= 32767", found=value)
    return value, pos


def decode_metadata_record(buf, pos: int = 0, end: int | None = None, *,
                           lenient: bool = False, records=None) -> tuple[MetadataRecord, int]:
    """Decode one framed value occupying ``buf[pos:end]``; returns (record, end).

    Unknown apiKeys come back raw; an unknown version of a known record raises
    UnknownVersion unless ``lenient`` (Kafka's own reading, used by the renderer).
    ``records``: apiKey -> schema of another topic framed the same way (AbstractApiMessageSerde:
    ``__remote_log_metadata``); by default the metadata records.
    """
    end = len(buf) if end is None else end
    start = pos
    frame, pos = _frame_varint(buf, pos, end, "frame version")
    if frame == 0:
        raise _error(UnknownVersion, "metadata frame version 0", start,
                     "Could not deserialize metadata record with frame version 0. Note that "
                     "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                     "not supported.", expected=FRAME_VERSION, found=0)
    if frame != FRAME_VERSION:
        raise _error(UnknownVersion, f"unknown metadata frame version {frame}", start,
                     f"Could not deserialize metadata record due to unknown frame version "
                     f"{frame}(only frame version {FRAME_VERSION} is supported)",
                     expected=FRAME_VERSION, found=frame)
    api_key, pos = _frame_varint(buf, pos, end, "type")
    version, pos = _frame_varint(buf, pos, end, "version")
    schema = (RECORDS if records is None else records).get(api_key)
    if schema is None:
        return MetadataRecord(api_key, version, None, bytes(buf[pos:end]), frame), end
    try:
        message, pos = decode_message(schema, buf, pos, version, end, lenient=lenient)
    except DecodeError as exc:
        exc.java_message = f"Failed to deserialize record with type {api_key}"
        raise
    if pos != end:
        raise _error(CorruptRecordError, f"{end - pos} bytes after {schema.name}", pos,
                     f"Found {end - pos} byte(s) of garbage after {api_key}",
                     expected=0, found=end - pos)
    return MetadataRecord(api_key, version, message, b"", frame), end


def render_metadata_payload(value, offset: int, errors: list | None = None) -> str:
    """Exactly what ``kafka-dump-log --cluster-metadata-decoder`` (4.4.0) prints after
    `` payload: `` for a (non-control) record value; there is never a key part. The cause
    of an ``Error at`` text goes to ``errors`` when given."""
    if errors is None:
        errors = []
    try:
        if value is None:
            # Kafka dereferences the null buffer inside the frame-version read.
            errors.append(CorruptRecordError("metadata record without a value", 0,
                                             expected="a value", found=None))
            return f"Error at {offset}, skipping. Error while reading frame version"
        rec, _ = decode_metadata_record(value, 0, len(value), lenient=True)
    except DecodeError as exc:
        errors.append(exc)
        return f"Error at {offset}, skipping. {java_message(exc)}"
    if rec.message is None:
        errors.append(UnknownVersion(f"unknown metadata record type {rec.api_key}", 0,
                                     expected="a known metadata record type", found=rec.api_key))
        return (f"Error at {offset}, skipping. org.apache.kafka.common.errors."
                f"UnsupportedVersionException: Unknown metadata id {rec.api_key}")
    return '{"type":%s,"version":%d,"data":%s}' % (
        jackson_string(rec.type_name), rec.version, to_kafka_json(rec.message))
