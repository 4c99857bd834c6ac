"""Control records (batches with the control bit): their key, and the EndTxnMarker value.

Key and marker value follow ControlRecordType / EndTransactionMarker of Kafka 4.1: a
version < 0 is corruption, a newer version is parsed as v0 (forward compatibility), extra
bytes are ignored, and an unknown type id is reported as UNKNOWN(id), never fatal. The KRaft
control values (LeaderChangeMessage, SnapshotHeader, ...) are decoded in ``raft.py``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .errors import CorruptRecordError

# ControlRecordType key, v0: Version int16, Type int16.
CONTROL_KEY = struct.Struct(">hh")
# EndTxnMarker value, v0: Version int16, CoordinatorEpoch int32.
END_TXN_MARKER = struct.Struct(">hi")
CURRENT_CONTROL_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0
ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}


@dataclass(frozen=True, slots=True)
class ControlRecordKey:
    version: int
    type_id: int

    @property
    def name(self) -> str:
        """ControlRecordType name, ``UNKNOWN`` for ids Kafka does not know."""
        return CONTROL_TYPE_NAMES.get(self.type_id, "UNKNOWN")

    @property
    def label(self) -> str:
        """As kafka-dump-log prints an unhandled type: ``controlType: NAME(id)``."""
        return f"{self.name}({self.type_id})"

    @property
    def is_transaction_marker(self) -> bool:
        return self.type_id in (ABORT, COMMIT)


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    version: int
    coordinator_epoch: int


def decode_control_key(key: bytes | None, position: int = 0) -> ControlRecordKey:
    """Parse a control record key; ``position`` locates the record for errors."""
    if key is None or len(key) < CONTROL_KEY.size:
        raise CorruptRecordError(
            "Invalid value size found for end control record key. Must have at least "
            f"{CONTROL_KEY.size} bytes, but found only {0 if key is None else len(key)}",
            position, expected=CONTROL_KEY.size, found=None if key is None else len(key))
    version, type_id = CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption",
            position, expected=">= 0", found=version)
    return ControlRecordKey(version, type_id)


def decode_end_txn_marker(key: ControlRecordKey, value: bytes | None,
                          position: int = 0) -> EndTxnMarker:
    """EndTransactionMarker.deserializeValue: only for ABORT/COMMIT keys."""
    if not key.is_transaction_marker:
        raise CorruptRecordError(
            f"Invalid control record type for end transaction marker {key.label}", position,
            expected="ABORT or COMMIT", found=key.label)
    if value is None or len(value) < END_TXN_MARKER.size:
        raise CorruptRecordError(
            "end transaction marker value is too short", position,
            expected=END_TXN_MARKER.size, found=None if value is None else len(value))
    version, coordinator_epoch = END_TXN_MARKER.unpack_from(value, 0)
    if version < 0:
        raise CorruptRecordError(
            f"Invalid version found for end transaction marker: {version}. May indicate data corruption",
            position, expected=">= 0", found=version)
    return EndTxnMarker(version, coordinator_epoch)


def encode_control_key(type_id: int, version: int = CURRENT_CONTROL_KEY_VERSION) -> bytes:
    return CONTROL_KEY.pack(version, type_id)


def encode_end_txn_marker(coordinator_epoch: int, version: int = CURRENT_END_TXN_MARKER_VERSION) -> bytes:
    return END_TXN_MARKER.pack(version, coordinator_epoch)
