"""KRaft control record *values* (Kafka 4.1.1 ``ControlRecordUtils``), as generated messages.

Unlike coordinator values these carry no version prefix: Kafka always reads them at message
version 0 (``*_CURRENT_VERSION = 0``) and the message's own ``Version`` int16 field is data.
kafka-dump-log then writes the JSON with ``JsonConverter.write(msg, msg.version())`` — the
*field* value — so a LeaderChangeMessage whose Version field says 1 is read without voter
directory ids yet printed with ``"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"``.

Record-line suffixes printed by kafka-dump-log 4.1.1 for control batches (after the
record metadata, before the newline), by control type id::

    2 ' LeaderChange: {json}'   3 ' SnapshotHeader {json}'   4 ' SnapshotFooter {json}'
    5 ' KRaftVersion {json}'    6 ' KRaftVoters {json}'

(0/1, the transaction markers, and unknown types are :mod:`logscan.format.control`'s.)
A value that fails to parse makes Kafka's tool abort; here it raises DecodeError.
"""

from __future__ import annotations

from .errors import CorruptRecordError
from .message import F, M, Message, decode_message, message_json, to_kafka_json

LEADER_CHANGE_MESSAGE = M("LeaderChangeMessage", "0-1", "0+", None, [
    F("Version", "int16", "0+"),
    F("LeaderId", "int32", "0+"),
    F("Voters", "[]Voter", "0+", fields=[
        F("VoterId", "int32", "0+"),
        F("VoterDirectoryId", "uuid", "1+"),
    ]),
    F("GrantingVoters", "[]Voter", "0+", fields=[
        F("VoterId", "int32", "0+"),
        F("VoterDirectoryId", "uuid", "1+"),
    ]),
])

SNAPSHOT_HEADER_RECORD = M("SnapshotHeaderRecord", "0", "0+", None, [
    F("Version", "int16", "0+"),
    F("LastContainedLogTimestamp", "int64", "0+"),
])

SNAPSHOT_FOOTER_RECORD = M("SnapshotFooterRecord", "0", "0+", None, [
    F("Version", "int16", "0+"),
])

KRAFT_VERSION_RECORD = M("KRaftVersionRecord", "0", "0+", None, [
    F("Version", "int16", "0+"),
    F("KRaftVersion", "int16", "0+"),
])

VOTERS_RECORD = M("VotersRecord", "0", "0+", None, [
    F("Version", "int16", "0+"),
    F("Voters", "[]Voter", "0+", fields=[
        F("VoterId", "int32", "0+"),
        F("VoterDirectoryId", "uuid", "0+"),
        F("Endpoints", "[]Endpoint", "0+", fields=[
            F("Name", "string", "0+"),
            F("Host", "string", "0+"),
            F("Port", "uint16", "0+"),
        ]),
        F("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
            F("MinSupportedVersion", "int16", "0+"),
            F("MaxSupportedVersion", "int16", "0+"),
        ]),
    ]),
])

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

# control type id -> (schema, label printed before the JSON)
CONTROL_VALUES = {
    LEADER_CHANGE: (LEADER_CHANGE_MESSAGE, "LeaderChange:"),
    SNAPSHOT_HEADER: (SNAPSHOT_HEADER_RECORD, "SnapshotHeader"),
    SNAPSHOT_FOOTER: (SNAPSHOT_FOOTER_RECORD, "SnapshotFooter"),
    KRAFT_VERSION: (KRAFT_VERSION_RECORD, "KRaftVersion"),
    KRAFT_VOTERS: (VOTERS_RECORD, "KRaftVoters"),
}


def decode_control_value(control_type: int, buf, pos: int = 0,
                         end: int | None = None) -> tuple[Message, int]:
    """Decode the value of a KRaft control record of ``control_type`` (2..6) at version 0,
    as Kafka does; returns (message, next_pos). KeyError for other control types.

    A null value (a record written without one) is a CorruptRecordError: Kafka's
    ControlRecordUtils slices the null buffer and dies with a NullPointerException."""
    schema, _ = CONTROL_VALUES[control_type]
    if buf is None:
        raise CorruptRecordError(f"{schema.name} control record has a null value", pos,
                                 expected=schema.name, found=None)
    return decode_message(schema, buf, pos, 0, end)


def control_value_json(msg: Message) -> dict:
    """The JSON tree Kafka prints: written at the message's ``Version`` field."""
    return message_json(msg, msg["version"])


def render_control_value(control_type: int, value) -> str | None:
    """The text kafka-dump-log appends to a control record line for KRaft control types
    (with its leading space), or None when the type is not one of 2..6."""
    if control_type not in CONTROL_VALUES:
        return None
    msg, _ = decode_control_value(control_type, value, 0, None if value is None else len(value))
    return f" {CONTROL_VALUES[control_type][1]} {to_kafka_json(control_value_json(msg))}"
