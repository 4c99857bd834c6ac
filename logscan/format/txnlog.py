"""``__transaction_state`` records (Kafka 4.1.1, ``kafka-transaction-coordinator``).

Key: ``int16 0`` (the coordinator record type, which doubles as the key "version") +
TransactionLogKey. Value: ``int16 version`` + TransactionLogValue v0, or v1 (flexible, written
when the ``transaction.version`` feature is >= 1) with tagged PreviousProducerId (tag 0),
NextProducerId (1), ClientTransactionVersion (2) and NextProducerEpoch (3, new in 4.x).
A null value is a tombstone: the transactional id expired or was removed.

kafka-dump-log 4.1.1 ``--transaction-log-decoder`` prints (after ``key: `` / `` payload: ``)::

    key: {"type":"0","data":{"transactionalId":"tx-1"}}
    payload: {"version":"1","data":{"producerId":7,"producerEpoch":3,"transactionTimeoutMs":60000,
      "transactionStatus":4,"transactionPartitions":[{"topic":"t","partitionIds":[0]}],
      "transactionLastUpdateTimestampMs":...,"transactionStartTimestampMs":...,
      "clientTransactionVersion":2}}

``transactionStatus`` is the state *number* in 4.1.1 and ``type``/``version`` are JSON
strings. Other texts (printed as the *key*, with no payload part):

* ``<DELETE>`` is the payload of a tombstone (null value);
* ``Unknown record type T at offset O, skipping.`` for a key type other than 0;
* ``Error at offset O, skipping. Could not read version from key's buffer.`` (key < 2 bytes),
  ``... Could not read version from value's buffer.`` (value < 2 bytes),
  ``... Found an unknown record version V for 0 type`` (value version not 0-1),
  ``... Could not read record with version V from value's buffer due to: M.`` where M is
  Java's message, ``null`` for a short buffer (BufferUnderflowException).

A record without a key aborts Kafka's tool; :func:`render_txnlog_key_payload` raises.
"""

from __future__ import annotations

from typing import NamedTuple

from . import compiled
from .message import (FIXED_LAYOUTS, F, M, CoordinatorRecord, decode_coordinator_record, message_json,
                      render_coordinator_record)

TRANSACTION_LOG_KEY = M("TransactionLogKey", "0", "none", 0, [
    F("TransactionalId", "string", "0"),
])

TRANSACTION_LOG_VALUE = M("TransactionLogValue", "0-1", "1+", 0, [
    F("ProducerId", "int64", "0+"),
    F("PreviousProducerId", "int64", "1+", tag=0, default=-1),
    F("NextProducerId", "int64", "1+", tag=1, default=-1),
    F("ProducerEpoch", "int16", "0+"),
    F("NextProducerEpoch", "int16", "1+", tag=3, default=-1),
    F("TransactionTimeoutMs", "int32", "0+"),
    F("TransactionStatus", "int8", "0+"),
    F("TransactionPartitions", "[]PartitionsSchema", "0+", null="0+", fields=[
        F("Topic", "string", "0+"),
        F("PartitionIds", "[]int32", "0+"),
    ]),
    F("TransactionLastUpdateTimestampMs", "int64", "0+"),
    F("TransactionStartTimestampMs", "int64", "0+"),
    F("ClientTransactionVersion", "int16", "1+", tag=2, default=0),
])

RECORD_TYPES = {0: (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)}

# TransactionState ids as persisted (Dead and PrepareEpochFence are never written: a
# tombstone, resp. PrepareAbort with a bumped epoch, is written instead).
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                      4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead",
                      7: "PrepareEpochFence"}

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


class TransactionLogEntry(NamedTuple):
    """One ``__transaction_state`` record; the typed fields are None for a tombstone.
    A NamedTuple, not a frozen dataclass: a scan builds one per record, and the dataclass's
    13 ``object.__setattr__`` calls were ~1.5 us of the ~13 us a record took (2026-11-24)."""
    transactional_id: str
    value_version: int | None
    producer_id: int | None = None
    previous_producer_id: int | None = None
    next_producer_id: int | None = None
    producer_epoch: int | None = None
    next_producer_epoch: int | None = None
    transaction_timeout_ms: int | None = None
    state_id: int | None = None
    partitions: tuple[tuple[str, int], ...] | None = None   # None when the log says null
    last_update_timestamp_ms: int | None = None
    start_timestamp_ms: int | None = None
    client_transaction_version: int | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.value_version is None

    @property
    def state(self) -> str | None:
        """Kafka's state name; ``Unknown(<id>)`` for an id Kafka would refuse to load."""
        if self.state_id is None:
            return None
        return TRANSACTION_STATES.get(self.state_id, f"Unknown({self.state_id})")


def decode_txnlog_record(key, value) -> CoordinatorRecord:
    """The generic decoded record (key and value messages)."""
    return decode_coordinator_record(RECORD_TYPES, key, value)


def decode_txnlog_entry(key, value) -> TransactionLogEntry:
    """Typed view of one record; raises DecodeError subclasses (UnknownVersion for unknown
    key types and value versions, TruncatedInput for short input). Where the module is built,
    compiled.txn_entry_v2 reads a record laid out as a coordinator writes it (nearly every
    record: the scan reads all of the coordinators' logs) and read_generic every other."""
    native = compiled.txn_entry_v2
    if native is not None:
        entry = native(key, value, TransactionLogEntry, _TAGGED_DEFAULTS, _TAGGED)
        if entry is not None:
            return entry
    return read_generic(key, value)


def read_generic(key, value) -> TransactionLogEntry:
    """decode_txnlog_entry through the generic message reader: any layout, every error."""
    rec = decode_txnlog_record(key, value)
    tid = rec.key["transactionalId"]
    v = rec.value
    if v is None:
        return TransactionLogEntry(tid, None)
    # Read by JSON name (the mapping's keys): one entry per __transaction_state record of a scan.
    parts = v["transactionPartitions"]
    if parts is not None:
        parts = tuple((p["topic"], pid) for p in parts for pid in p["partitionIds"])
    return TransactionLogEntry(
        tid, v.version, v["producerId"], v["previousProducerId"], v["nextProducerId"], v["producerEpoch"],
        v["nextProducerEpoch"], v["transactionTimeoutMs"], v["transactionStatus"], parts,
        v["transactionLastUpdateTimestampMs"], v["transactionStartTimestampMs"], v["clientTransactionVersion"])


#: TransactionLogValue's tagged fields (v1), from its schema, as compiled.txn_entry_v2 takes
#: them: (tag, size, index in TransactionLogEntry) each, and an entry whose tagged fields are
#: at their schema defaults (a v0 value's, and a v1 value's until its tags are read).
_TAGGED = tuple((f.tag, FIXED_LAYOUTS[f.type].size, TransactionLogEntry._fields.index(f.attr_name))
                for f in TRANSACTION_LOG_VALUE.fields if f.tag is not None)
_TAGGED_DEFAULTS = TransactionLogEntry("", None, **{f.attr_name: f.default for f in TRANSACTION_LOG_VALUE.fields
                                                     if f.tag is not None})


def render_txnlog_key_payload(key, value, offset: int, errors: list | None = None, *,
                              status_names: bool = False) -> tuple[str | None, str | None]:
    """Exactly what ``kafka-dump-log --transaction-log-decoder`` (4.1.1) prints after
    ``key: `` and `` payload: `` (None = that part is not printed); the cause of an error
    text goes to ``errors`` when given. ``status_names``: transactionStatus as 4.4.0 prints
    it, the state's name (an id no state has: the number, as a JSON string)."""
    if status_names:
        return render_coordinator_record(RECORD_TYPES, key, value, offset, value_json=_with_state_name,
                                         errors=errors)
    return render_coordinator_record(RECORD_TYPES, key, value, offset, errors=errors)


def _with_state_name(msg) -> dict:
    node = message_json(msg)
    status = node.get("transactionStatus")
    if status is not None:
        node["transactionStatus"] = TRANSACTION_STATES.get(status, str(status))
    return node


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, int32 wrap."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: abs, except Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def transactional_id_partition(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition owning ``transactional_id``."""
    return kafka_abs(java_string_hash(transactional_id)) % num_partitions
