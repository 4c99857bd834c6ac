"""``__consumer_offsets`` records (Kafka 4.1.1, ``kafka-group-coordinator``).

Key = ``int16 record type`` + key message, value = ``int16 version`` + value message, null
value = tombstone (``CoordinatorRecordSerde``). Record types of 4.1.1 (``CoordinatorRecordType``):
0 LegacyOffsetCommit, 1 OffsetCommit, 2 GroupMetadata, 3-8 ConsumerGroup* (KIP-848),
10-15 ShareGroup* (KIP-932), 16 ConsumerGroupRegularExpression, 17 and 19-23 StreamsGroup*
(KIP-1071). 9 and 18 are *not* defined in 4.1.1: Kafka reports them as unknown types.

kafka-dump-log 4.1.1 ``--offsets-decoder`` prints (after ``key: `` / `` payload: ``)::

    key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
    payload: {"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":...}}

``<DELETE>`` for a tombstone, ``Unknown record type T at offset O, skipping.`` as the key for
an unknown type, ``Error at offset O, skipping. <message>`` as the key for anything else. For
GroupMetadata of protocol type ``consumer`` each member's ``subscription`` and ``assignment``
bytes are replaced by the JSON of ConsumerProtocolSubscription/Assignment read at the int16
version they start with; when that read fails the base64 bytes stay.
"""

from __future__ import annotations

from .errors import DecodeError
from .message import (F, M, CoordinatorRecord, decode_coordinator_record, decode_message,
                      message_json, render_coordinator_record)
from .primitives import INT16
from .txnlog import java_string_hash, kafka_abs

# ConsumerProtocol (clients): what classic "consumer" groups put in member metadata.
CONSUMER_PROTOCOL_ASSIGNMENT = M("ConsumerProtocolAssignment", "0-3", "none", None, [
    F("AssignedPartitions", "[]TopicPartition", "0+", fields=[
        F("Topic", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("UserData", "bytes", "0+", null="0+", default=None),
])

CONSUMER_PROTOCOL_SUBSCRIPTION = M("ConsumerProtocolSubscription", "0-3", "none", None, [
    F("Topics", "[]string", "0+"),
    F("UserData", "bytes", "0+", null="0+", default=None),
    F("OwnedPartitions", "[]TopicPartition", "1+", fields=[
        F("Topic", "string", "1+"),
        F("Partitions", "[]int32", "1+"),
    ]),
    F("GenerationId", "int32", "2+", default=-1),
    F("RackId", "string", "3+", null="3+", default=None),
])

# Group coordinator records, transcribed from the 4.1.1 specs.

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("ConsumerGroupCurrentMemberAssignmentKey", "0", "none", 8, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", 8, [
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    F("State", "int8", "0+"),
    F("AssignedPartitions", "[]TopicPartitions", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("PartitionsPendingRevocation", "[]TopicPartitions", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

CONSUMER_GROUP_MEMBER_METADATA_KEY = M("ConsumerGroupMemberMetadataKey", "0", "none", 5, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

CONSUMER_GROUP_MEMBER_METADATA_VALUE = M("ConsumerGroupMemberMetadataValue", "0", "0+", 5, [
    F("InstanceId", "string", "0+", null="0+"),
    F("RackId", "string", "0+", null="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", "[]string", "0+"),
    F("SubscribedTopicRegex", "string", "0+", null="0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("ServerAssignor", "string", "0+", null="0+"),
    F("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", null="0+", tag=0, fields=[
        F("SessionTimeoutMs", "int32", "0+"),
        F("SupportedProtocols", "[]ClassicProtocol", "0+", fields=[
            F("Name", "string", "0+"),
            F("Metadata", "bytes", "0+"),
        ]),
    ]),
])

CONSUMER_GROUP_METADATA_KEY = M("ConsumerGroupMetadataKey", "0", "none", 3, [
    F("GroupId", "string", "0"),
])

CONSUMER_GROUP_METADATA_VALUE = M("ConsumerGroupMetadataValue", "0", "0+", 3, [
    F("Epoch", "int32", "0+"),
    F("MetadataHash", "int64", "0+", tag=0, default=0),
])

CONSUMER_GROUP_PARTITION_METADATA_KEY = M("ConsumerGroupPartitionMetadataKey", "0", "none", 4, [
    F("GroupId", "string", "0"),
])

CONSUMER_GROUP_PARTITION_METADATA_VALUE = M("ConsumerGroupPartitionMetadataValue", "0", "0+", 4, [
    F("Topics", "[]TopicMetadata", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("TopicName", "string", "0+"),
        F("NumPartitions", "int32", "0+"),
        F("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
            F("Partition", "int32", "0+"),
            F("Racks", "[]string", "0+"),
        ]),
    ]),
])

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = M("ConsumerGroupRegularExpressionKey", "0", "none", 16, [
    F("GroupId", "string", "0"),
    F("RegularExpression", "string", "0"),
])

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = M("ConsumerGroupRegularExpressionValue", "0", "0+", 16, [
    F("Topics", "[]string", "0+"),
    F("Version", "int64", "0+"),
    F("Timestamp", "int64", "0+"),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("ConsumerGroupTargetAssignmentMemberKey", "0", "none", 7, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("ConsumerGroupTargetAssignmentMemberValue", "0", "0+", 7, [
    F("TopicPartitions", "[]TopicPartition", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("ConsumerGroupTargetAssignmentMetadataKey", "0", "none", 6, [
    F("GroupId", "string", "0"),
])

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", 6, [
    F("AssignmentEpoch", "int32", "0+"),
])

GROUP_METADATA_KEY = M("GroupMetadataKey", "0", "none", 2, [
    F("group", "string", "0"),
])

GROUP_METADATA_VALUE = M("GroupMetadataValue", "0-4", "4+", 2, [
    F("protocolType", "string", "0+"),
    F("generation", "int32", "0+"),
    F("protocol", "string", "0+", null="0+"),
    F("leader", "string", "0+", null="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]MemberMetadata", "0+", fields=[
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "3+", null="3+", default=None),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32", "0+"),
        F("subscription", "bytes", "0+"),
        F("assignment", "bytes", "0+"),
    ]),
])

LEGACY_OFFSET_COMMIT_KEY = M("LegacyOffsetCommitKey", "0", "none", 0, [
    F("group", "string", "0"),
    F("topic", "string", "0"),
    F("partition", "int32", "0"),
])

LEGACY_OFFSET_COMMIT_VALUE = M("LegacyOffsetCommitValue", "0", "none", 0, [
    F("offset", "int64", "0"),
    F("metadata", "string", "0"),
    F("commitTimestamp", "int64", "0"),
])

OFFSET_COMMIT_KEY = M("OffsetCommitKey", "0", "none", 1, [
    F("group", "string", "0"),
    F("topic", "string", "0"),
    F("partition", "int32", "0"),
])

OFFSET_COMMIT_VALUE = M("OffsetCommitValue", "0-4", "4+", 1, [
    F("offset", "int64", "0+"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string", "0+"),
    F("commitTimestamp", "int64", "0+"),
    F("expireTimestamp", "int64", "1", default=-1),
    F("topicId", "uuid", "4+", tag=0),
])

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("ShareGroupCurrentMemberAssignmentKey", "0", "none", 14, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("ShareGroupCurrentMemberAssignmentValue", "0", "0+", 14, [
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    F("State", "int8", "0+"),
    F("AssignedPartitions", "[]TopicPartitions", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

SHARE_GROUP_MEMBER_METADATA_KEY = M("ShareGroupMemberMetadataKey", "0", "none", 10, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

SHARE_GROUP_MEMBER_METADATA_VALUE = M("ShareGroupMemberMetadataValue", "0", "0+", 10, [
    F("RackId", "string", "0+", null="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("SubscribedTopicNames", "[]string", "0+"),
])

SHARE_GROUP_METADATA_KEY = M("ShareGroupMetadataKey", "0", "none", 11, [
    F("GroupId", "string", "0"),
])

SHARE_GROUP_METADATA_VALUE = M("ShareGroupMetadataValue", "0", "0+", 11, [
    F("Epoch", "int32", "0+"),
    F("MetadataHash", "int64", "0+"),
])

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = M("ShareGroupStatePartitionMetadataKey", "0", "none", 15, [
    F("GroupId", "string", "0"),
])

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = M("ShareGroupStatePartitionMetadataValue", "0", "0+", 15, [
    F("InitializingTopics", "[]TopicPartitionsInfo", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("TopicName", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("InitializedTopics", "[]TopicPartitionsInfo", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("TopicName", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("DeletingTopics", "[]TopicInfo", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("TopicName", "string", "0+"),
    ]),
])

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("ShareGroupTargetAssignmentMemberKey", "0", "none", 13, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("ShareGroupTargetAssignmentMemberValue", "0", "0+", 13, [
    F("TopicPartitions", "[]TopicPartition", "0+", fields=[
        F("TopicId", "uuid", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("ShareGroupTargetAssignmentMetadataKey", "0", "none", 12, [
    F("GroupId", "string", "0"),
])

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("ShareGroupTargetAssignmentMetadataValue", "0", "0+", 12, [
    F("AssignmentEpoch", "int32", "0+"),
])

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("StreamsGroupCurrentMemberAssignmentKey", "0", "none", 22, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("StreamsGroupCurrentMemberAssignmentValue", "0", "0+", 22, [
    F("MemberEpoch", "int32", "0+"),
    F("PreviousMemberEpoch", "int32", "0+"),
    F("State", "int8", "0+"),
    F("ActiveTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("StandbyTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("WarmupTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("ActiveTasksPendingRevocation", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("StandbyTasksPendingRevocation", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("WarmupTasksPendingRevocation", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

STREAMS_GROUP_MEMBER_METADATA_KEY = M("StreamsGroupMemberMetadataKey", "0", "none", 19, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

STREAMS_GROUP_MEMBER_METADATA_VALUE = M("StreamsGroupMemberMetadataValue", "0", "0+", 19, [
    F("InstanceId", "string", "0+", null="0+"),
    F("RackId", "string", "0+", null="0+"),
    F("ClientId", "string", "0+"),
    F("ClientHost", "string", "0+"),
    F("RebalanceTimeoutMs", "int32", "0+", default=-1),
    F("TopologyEpoch", "int32", "0+"),
    F("ProcessId", "string", "0+"),
    F("UserEndpoint", "Endpoint", "0+", null="0+", default=None, fields=[
        F("Host", "string", "0+"),
        F("Port", "uint16", "0+"),
    ]),
    F("ClientTags", "[]KeyValue", "0+", fields=[
        F("Key", "string", "0+"),
        F("Value", "string", "0+"),
    ]),
])

STREAMS_GROUP_METADATA_KEY = M("StreamsGroupMetadataKey", "0", "none", 17, [
    F("GroupId", "string", "0"),
])

STREAMS_GROUP_METADATA_VALUE = M("StreamsGroupMetadataValue", "0", "0+", 17, [
    F("Epoch", "int32", "0+"),
    F("MetadataHash", "int64", "0+"),
])

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("StreamsGroupTargetAssignmentMemberKey", "0", "none", 21, [
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
])

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("StreamsGroupTargetAssignmentMemberValue", "0", "0+", 21, [
    F("ActiveTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("StandbyTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
    F("WarmupTasks", "[]TaskIds", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("Partitions", "[]int32", "0+"),
    ]),
])

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("StreamsGroupTargetAssignmentMetadataKey", "0", "none", 20, [
    F("GroupId", "string", "0"),
])

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("StreamsGroupTargetAssignmentMetadataValue", "0", "0+", 20, [
    F("AssignmentEpoch", "int32", "0+"),
])

STREAMS_GROUP_TOPOLOGY_KEY = M("StreamsGroupTopologyKey", "0", "none", 23, [
    F("GroupId", "string", "0"),
])

STREAMS_GROUP_TOPOLOGY_VALUE = M("StreamsGroupTopologyValue", "0", "0+", 23, [
    F("Epoch", "int32", "0+"),
    F("Subtopologies", "[]Subtopology", "0+", fields=[
        F("SubtopologyId", "string", "0+"),
        F("SourceTopics", "[]string", "0+"),
        F("SourceTopicRegex", "[]string", "0+"),
        F("StateChangelogTopics", "[]TopicInfo", "0+", fields=[
            F("Name", "string", "0+"),
            F("Partitions", "int32", "0+"),
            F("ReplicationFactor", "int16", "0+"),
            F("TopicConfigs", "[]TopicConfig", "0+", fields=[
                F("key", "string", "0+"),
                F("value", "string", "0+"),
            ]),
        ]),
        F("RepartitionSinkTopics", "[]string", "0+"),
        F("RepartitionSourceTopics", "[]TopicInfo", "0+", fields=[
            F("Name", "string", "0+"),
            F("Partitions", "int32", "0+"),
            F("ReplicationFactor", "int16", "0+"),
            F("TopicConfigs", "[]TopicConfig", "0+", fields=[
                F("key", "string", "0+"),
                F("value", "string", "0+"),
            ]),
        ]),
        F("CopartitionGroups", "[]CopartitionGroup", "0+", fields=[
            F("SourceTopics", "[]int16", "0+"),
            F("SourceTopicRegex", "[]int16", "0+"),
            F("RepartitionSourceTopics", "[]int16", "0+"),
        ]),
    ]),
])

# Record type (the key's int16 prefix) -> (key schema, value schema), as CoordinatorRecordType.
RECORD_TYPES = {
    0: (LEGACY_OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    17: (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}
GROUP_METADATA_TYPE = 2
CONSUMER_PROTOCOL_TYPE = "consumer"

# Kafka 4.4.0's additions to these records (common/message of its kafka-group-coordinator jar,
# compared with 4.1.1's), every one a tagged field, which 4.1.1's reader skips as an unknown tag
# and its JSON never shows; 4.4.0's kafka-dump-log prints each where it is not its default (found
# on the real share-4.4 cluster: ShareGroupTargetAssignmentMetadata with assignmentTimestamp).
_ASSIGNMENT_TIMESTAMP = F("AssignmentTimestamp", "int64", "0+", tag=0, default=0)
_ASSIGNMENT_EPOCHS = F("AssignmentEpochs", "[]int32", "0+", null="0+", tag=0, default=None)
_STREAMS_GROUP_METADATA_4_4 = [
    F("ValidatedTopologyEpoch", "int32", "0+", tag=0, default=-1),
    F("LastAssignmentConfigs", "[]LastAssignmentConfig", "0+", null="0+", tag=1, default=None, fields=[
        F("Key", "string", "0+"),
        F("Value", "string", "0+"),
    ]),
    F("StoredDescriptionTopologyEpoch", "int32", "0+", tag=2, default=-1),
    F("FailedDescriptionTopologyEpoch", "int32", "0+", tag=3, default=-1),
]


def _adding(schema, fields=(), structs=(), struct_fields=()):
    """``schema`` with ``fields`` appended, and ``struct_fields`` appended to the structs of
    its fields named in ``structs``."""
    def grown(f):
        if f.name not in structs:
            return f
        return F(f.name, f.type, "0+", fields=[*f.fields, *struct_fields])
    return M(schema.name, "0", "0+", schema.api_key, [*(grown(f) for f in schema.fields), *fields])


_TASKS = ("ActiveTasks", "StandbyTasks", "WarmupTasks", "ActiveTasksPendingRevocation",
          "StandbyTasksPendingRevocation", "WarmupTasksPendingRevocation")
#: The record types as Kafka 4.4.0 reads them (RECORD_TYPES: 4.1.1's).
RECORD_TYPES_4_4 = {
    **RECORD_TYPES,
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        _adding(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, [_ASSIGNMENT_TIMESTAMP])),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        _adding(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, structs=("AssignedPartitions", "PartitionsPendingRevocation"),
                struct_fields=[_ASSIGNMENT_EPOCHS])),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
         _adding(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, [_ASSIGNMENT_TIMESTAMP])),
    17: (STREAMS_GROUP_METADATA_KEY, _adding(STREAMS_GROUP_METADATA_VALUE, _STREAMS_GROUP_METADATA_4_4)),
    20: (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
         _adding(STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, [_ASSIGNMENT_TIMESTAMP])),
    22: (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
         _adding(STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, structs=_TASKS, struct_fields=[_ASSIGNMENT_EPOCHS])),
}


def decode_offsets_record(key, value) -> CoordinatorRecord:
    """Decode one ``__consumer_offsets`` record (key and value messages); unknown record
    types and value versions raise UnknownVersion."""
    return decode_coordinator_record(RECORD_TYPES, key, value)


def _expand(blob, schema):
    """Kafka's DumpLogSegments swaps the bytes for their JSON when they parse; any
    RuntimeException (short buffer, bad version of a nested struct) keeps the bytes."""
    if blob is None or len(blob) < 2:
        return blob
    (version,) = INT16.unpack_from(blob, 0)
    try:
        msg, _ = decode_message(schema, blob, 2, version, lenient=True)
    except DecodeError:
        return blob
    return message_json(msg)


def offsets_value_json(value) -> dict:
    """Value JSON as kafka-dump-log prints it: GroupMetadata of consumer groups expanded."""
    node = message_json(value)
    if value.schema.api_key != GROUP_METADATA_TYPE or node.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return node
    for member in node.get("members") or ():
        if "subscription" in member:
            member["subscription"] = _expand(member["subscription"], CONSUMER_PROTOCOL_SUBSCRIPTION)
        if "assignment" in member:
            member["assignment"] = _expand(member["assignment"], CONSUMER_PROTOCOL_ASSIGNMENT)
    return node


def render_offsets_key_payload(key, value, offset: int, errors: list | None = None, *, types=RECORD_TYPES
                               ) -> tuple[str | None, str | None]:
    """Exactly what ``kafka-dump-log --offsets-decoder`` prints after ``key: `` and `` payload: ``
    (None = that part is not printed); ``types``: the release's tables (RECORD_TYPES: 4.1.1's,
    RECORD_TYPES_4_4: 4.4.0's). The cause of an error text goes to ``errors`` when given."""
    return render_coordinator_record(types, key, value, offset, offsets_value_json,
                                     errors=errors)


def group_partition(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (``Utils.abs(hashCode) % n``)."""
    return kafka_abs(java_string_hash(group_id)) % num_partitions
