"""The scan's tables as plain rows: every column's name, type and comment, declared once.

Both drivers use this module: the Spark job ships these rows as Arrow batches between the
executors' calls into ``logscan.state`` and writes them to Delta; the tests turn the
single-process driver's objects into the same rows and compare. Columns are Kafka's names in
snake_case (``producer_id``, ``base_offset``, ``coordinator_epoch``); timestamps stay epoch
milliseconds as Kafka writes them. Only pyarrow is needed here, never Spark.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import pyarrow as pa

from logscan.logdir.segment import Finding
from logscan.state.coordinator import TxnLogRecord
from logscan.state.facts import BatchFact
from logscan.state.hanging import OpenTxn, Verdict
from logscan.state.partition import ReplicaState
from logscan.state.producer_state import ProducerStateManager, describe_producers
from logscan.state.spans import TxnSpan

Row = dict[str, Any]


def _f(name: str, type_: pa.DataType, comment: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable, metadata={"comment": comment})


def _schema(*fields: pa.Field) -> pa.Schema:
    return pa.schema(fields)


_REPLICA = (
    _f("broker", pa.int32(), "node id of the broker whose log dir holds the file (meta.properties node.id, "
                             "else the folder name's digits)"),
    _f("topic", pa.string(), "topic name, from the partition folder topic-N"),
    _f("partition", pa.int32(), "partition number, from the partition folder topic-N"),
)
_FILE = _f("file", pa.string(), "path of the file as read by the scan")

#: One row per v2 record batch, in log order (segment_base_offset, batch_index).
BATCHES = _schema(
    *_REPLICA, _FILE,
    _f("segment_base_offset", pa.int64(), "base offset of the segment, from the file name"),
    _f("batch_index", pa.int32(), "ordinal of the batch within its segment file (log order)"),
    _f("base_offset", pa.int64(), "baseOffset of the batch"),
    _f("last_offset", pa.int64(), "baseOffset + lastOffsetDelta"),
    _f("records_count", pa.int32(), "recordsCount field of the batch header"),
    _f("producer_id", pa.int64(), "producerId (-1: no idempotent producer)"),
    _f("producer_epoch", pa.int32(), "producerEpoch (-1 when none)"),
    _f("base_sequence", pa.int32(), "baseSequence (-1 when none)"),
    _f("last_sequence", pa.int32(), "baseSequence + lastOffsetDelta, wrapping like Kafka (-1 when none)"),
    _f("is_transactional", pa.bool_(), "transactional attribute bit"),
    _f("is_control", pa.bool_(), "control attribute bit (transaction markers and other control records)"),
    _f("control_type", pa.string(), "control batches: COMMIT, ABORT, another control type, UNREADABLE, or "
                                    "null when the batch is empty (cleaned)"),
    _f("coordinator_epoch", pa.int32(), "end transaction marker's coordinatorEpoch (-1 otherwise)"),
    _f("max_timestamp", pa.int64(), "maxTimestamp of the batch, epoch ms"),
    _f("marker_timestamp", pa.int64(), "timestamp of the control record (what Kafka's lastTimestamp takes), "
                                       "epoch ms, -1 otherwise"),
    _f("size_in_bytes", pa.int32(), "batch size including the 12-byte log overhead"),
)

_PARTITIONS = pa.list_(pa.struct([pa.field("topic", pa.string()), pa.field("partition", pa.int32())]))
_TXN_RECORD = (
    _f("offset", pa.int64(), "offset of the record in __transaction_state"),
    _f("transactional_id", pa.string(), "transactional.id (the record key)"),
    _f("state", pa.string(), "TransactionState name (Empty, Ongoing, PrepareCommit, ...); null for a tombstone"),
    _f("producer_id", pa.int64(), "ProducerId of the transaction"),
    _f("previous_producer_id", pa.int64(), "PreviousProducerId (KIP-890, tagged field; -1 when absent)"),
    _f("next_producer_id", pa.int64(), "NextProducerId (KIP-890, tagged field; -1 when absent)"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("transaction_timeout_ms", pa.int32(), "TransactionTimeoutMs"),
    _f("partitions", _PARTITIONS, "TransactionPartitions: the partitions added to the transaction"),
    _f("last_update_timestamp_ms", pa.int64(), "TransactionLastUpdateTimestampMs, epoch ms"),
    _f("start_timestamp_ms", pa.int64(), "TransactionStartTimestampMs, epoch ms"),
    _f("coordinator_epoch", pa.int32(), "partitionLeaderEpoch of the batch holding the record: the "
                                        "coordinator epoch its markers carry"),
)
#: Every `__transaction_state` record of every replica; ``partition`` is the coordinator partition.
TXN_LOG = _schema(*_REPLICA, _FILE, *_TXN_RECORD)
#: The latest record per transactional id (tombstones remove it), as the coordinator loads it
#: from the replica of each coordinator partition whose copy reaches furthest.
COORDINATOR_STATE = _schema(*_REPLICA, *_TXN_RECORD)

#: Every located problem: bad bytes, unreadable files, bad checkpoints and snapshots.
CORRUPTIONS = _schema(
    *_REPLICA, _FILE,
    _f("position", pa.int64(), "byte position in the file (-1: about the whole file)"),
    _f("length", pa.int64(), "bytes affected, when known"),
    _f("reason", pa.string(), "short machine-readable word: truncated, crc, corrupt, skipped, io, ..."),
    _f("message", pa.string(), "what was expected and what was found"),
)

#: Every file the scan saw: segments it decoded, files it listed, files and folders it skipped.
FILES = _schema(
    *_REPLICA, _FILE,
    _f("kind", pa.string(), "log_segment, producer_snapshot, txn_index, checkpoint, skipped"),
    _f("size", pa.int64(), "file size in bytes (-1 when not stat'ed)"),
    _f("status", pa.string(), "ok, damaged (has corruptions), unreadable, listed (not read), skipped"),
    _f("error_count", pa.int32(), "number of corruptions rows for this file"),
    _f("batches", pa.int32(), "v2 batches decoded from the file"),
    _f("detail", pa.string(), "why the file was skipped, when it was"),
)

#: `kafka-transactions describe-producers` per replica, rebuilt from the batches.
PRODUCER_STATE = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("coordinator_epoch", pa.int32(), "LatestCoordinatorEpoch"),
    _f("last_sequence", pa.int32(), "LastSequence (-1 when the cached batches were dropped by an epoch bump)"),
    _f("last_timestamp", pa.int64(), "LastTimestamp, epoch ms"),
    _f("current_txn_start_offset", pa.int64(), "CurrentTransactionStartOffset; null when no transaction is open"),
)

#: One row per transaction per partition replica.
TXN_SPANS = _schema(
    *_REPLICA,
    _f("span_index", pa.int32(), "ordinal of the span within the replica (order of first offset seen)"),
    _f("producer_id", pa.int64(), "ProducerId"),
    _f("producer_epoch", pa.int32(), "producer epoch of the first data batch"),
    _f("first_offset", pa.int64(), "first offset of the transaction (Kafka's currentTxnFirstOffset)"),
    _f("last_data_offset", pa.int64(), "last offset of its last data batch"),
    _f("end_marker_offset", pa.int64(), "offset of the COMMIT/ABORT marker; null while OPEN"),
    _f("end_marker_epoch", pa.int32(), "producer epoch of the marker (bumped under KIP-890 TV2)"),
    _f("outcome", pa.string(), "COMMIT, ABORT or OPEN"),
    _f("coordinator_epoch", pa.int32(), "marker's coordinatorEpoch; null while OPEN"),
    _f("start_timestamp", pa.int64(), "maxTimestamp of the first data batch, epoch ms (-1: opened by a snapshot)"),
    _f("last_timestamp", pa.int64(), "maxTimestamp of the last data batch, epoch ms"),
    _f("end_timestamp", pa.int64(), "marker record's timestamp, epoch ms; null while OPEN"),
    _f("duration_ms", pa.int64(), "end_timestamp - start_timestamp; null while OPEN"),
    _f("batches", pa.int32(), "data batches of the transaction in this replica"),
    _f("records", pa.int64(), "records in those batches"),
    _f("bytes", pa.int64(), "bytes of those batches"),
    _f("from_snapshot", pa.bool_(), "opened by a producer snapshot: earlier batches are not in the copy"),
)

#: Per replica: offsets, LSO and LSO lag the way UnifiedLog derives them on load.
PARTITION_STATE = _schema(
    *_REPLICA,
    _f("log_start_offset", pa.int64(), "logStartOffset (log-start-offset-checkpoint, else first segment)"),
    _f("log_end_offset", pa.int64(), "log end offset: last batch's last offset + 1"),
    _f("high_watermark", pa.int64(), "high watermark from replication-offset-checkpoint, clamped as on load"),
    _f("high_watermark_checkpointed", pa.bool_(), "the partition was in replication-offset-checkpoint"),
    _f("first_unstable_offset", pa.int64(), "firstUnstableOffset; null when nothing is unstable"),
    _f("last_stable_offset", pa.int64(), "LSO: what a read_committed consumer can read up to"),
    _f("lso_lag", pa.int64(), "high_watermark - last_stable_offset (LastStableOffsetLag)"),
    _f("open_transactions", pa.int32(), "transactions still open at the end of the log"),
    _f("producers", pa.int32(), "producers in the rebuilt producer state"),
    _f("max_timestamp", pa.int64(), "newest batch maxTimestamp in the replica, epoch ms"),
)

#: find-hanging's candidates (open longer than the max transaction timeout) with a verdict.
HANGING_CANDIDATES = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId of the open transaction"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("start_offset", pa.int64(), "first offset of the open transaction (StartOffset)"),
    _f("last_timestamp", pa.int64(), "producer's LastTimestamp, epoch ms"),
    _f("age_ms", pa.int64(), "as_of - last_timestamp"),
    _f("hanging", pa.bool_(), "true: abort it; false: the coordinator will finish it; null: cannot tell"),
    _f("reason", pa.string(), "no_coordinator_record, coordinator_moved_on, partition_not_in_transaction, "
                              "markers_pending, coordinator_ongoing, coordinator_not_in_copy"),
    _f("evidence", pa.string(), "the coordinator record (or its absence) the verdict rests on"),
    _f("transactional_id", pa.string(), "transactional id of the coordinator record, when one matched"),
)

#: Open transactions at the end of a replica, in the order find-hanging considers them.
OPEN_TXNS = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("start_offset", pa.int64(), "currentTxnFirstOffset"),
    _f("last_timestamp", pa.int64(), "LastTimestamp, epoch ms"),
)

TABLES: dict[str, pa.Schema] = {
    "files": FILES, "batches": BATCHES, "corruptions": CORRUPTIONS, "txn_log": TXN_LOG,
    "coordinator_state": COORDINATOR_STATE, "producer_state": PRODUCER_STATE, "txn_spans": TXN_SPANS,
    "partition_state": PARTITION_STATE, "hanging_candidates": HANGING_CANDIDATES,
}


def replica_key(broker: int, topic: Optional[str], partition: Optional[int]) -> Row:
    return {"broker": broker, "topic": topic, "partition": partition}


# --- objects -> rows -------------------------------------------------------------------------

def batch_row(fact: BatchFact, key: Row, file: str, segment_base_offset: int, batch_index: int) -> Row:
    return {**key, "file": file, "segment_base_offset": segment_base_offset, "batch_index": batch_index,
            **fact._asdict()}


def txn_record_row(rec: TxnLogRecord) -> Row:
    return {"offset": rec.offset, "transactional_id": rec.transactional_id, "state": rec.state,
            "producer_id": rec.producer_id, "previous_producer_id": rec.previous_producer_id,
            "next_producer_id": rec.next_producer_id, "producer_epoch": rec.producer_epoch,
            "transaction_timeout_ms": rec.transaction_timeout_ms,
            "partitions": [{"topic": t, "partition": p} for t, p in rec.partitions],
            "last_update_timestamp_ms": rec.last_update_timestamp_ms,
            "start_timestamp_ms": rec.start_timestamp_ms, "coordinator_epoch": rec.coordinator_epoch}


def finding_row(finding: Finding, key: Row) -> Row:
    return {**key, "file": finding.path, "position": finding.position, "length": None,
            "reason": finding.reason, "message": finding.message}


def producer_rows(psm: ProducerStateManager, key: Row) -> Iterable[Row]:
    for pid, epoch, coord, seq, ts, start in describe_producers(psm):
        yield {**key, "producer_id": pid, "producer_epoch": epoch, "coordinator_epoch": coord,
               "last_sequence": seq, "last_timestamp": ts, "current_txn_start_offset": start}


def span_rows(spans: Iterable[TxnSpan], key: Row) -> Iterable[Row]:
    for i, s in enumerate(spans):
        yield {**key, "span_index": i, "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
               "first_offset": s.first_offset, "last_data_offset": s.last_data_offset,
               "end_marker_offset": s.end_marker_offset, "end_marker_epoch": s.end_marker_epoch,
               "outcome": s.outcome, "coordinator_epoch": s.coordinator_epoch,
               "start_timestamp": s.start_timestamp, "last_timestamp": s.last_timestamp,
               "end_timestamp": s.end_timestamp, "duration_ms": s.duration_ms, "batches": s.batches,
               "records": s.records, "bytes": s.bytes, "from_snapshot": s.from_snapshot}


def state_row(state: ReplicaState, max_timestamp: int) -> Row:
    return {**replica_key(state.broker, state.topic, state.partition),
            "log_start_offset": state.log_start_offset, "log_end_offset": state.log_end_offset,
            "high_watermark": state.high_watermark,
            "high_watermark_checkpointed": state.high_watermark_checkpointed,
            "first_unstable_offset": state.first_unstable_offset,
            "last_stable_offset": state.last_stable_offset, "lso_lag": state.lso_lag,
            "open_transactions": state.open_transactions, "producers": state.producers,
            "max_timestamp": max_timestamp}


def open_txn_rows(psm: ProducerStateManager, key: Row) -> Iterable[Row]:
    """Open transactions by first offset, with the producer's epoch and lastTimestamp."""
    for pid, first in sorted(psm.ongoing().items(), key=lambda kv: kv[1]):
        entry = psm.producers[pid]
        yield {**key, "producer_id": pid, "producer_epoch": entry.producer_epoch, "start_offset": first,
               "last_timestamp": entry.last_timestamp}


def candidate_row(key: Row, txn: OpenTxn, age_ms: int, verdict: Verdict) -> Row:
    return {**key, "producer_id": txn.producer_id, "producer_epoch": txn.producer_epoch,
            "start_offset": txn.start_offset, "last_timestamp": txn.last_timestamp, "age_ms": age_ms,
            "hanging": verdict.hanging, "reason": verdict.reason, "evidence": verdict.evidence,
            "transactional_id": verdict.transactional_id}


# --- rows -> objects -------------------------------------------------------------------------

_FACT_FIELDS = BatchFact._fields


def fact_from_row(row: Row) -> BatchFact:
    return BatchFact(*(row[f] for f in _FACT_FIELDS))


def txn_record_from_row(row: Row) -> TxnLogRecord:
    return TxnLogRecord(row["partition"], row["offset"], row["transactional_id"], row["state"],
                        row["producer_id"], row["previous_producer_id"], row["next_producer_id"],
                        row["producer_epoch"], row["transaction_timeout_ms"],
                        tuple((p["topic"], p["partition"]) for p in row["partitions"] or ()),
                        row["last_update_timestamp_ms"], row["start_timestamp_ms"], row["coordinator_epoch"])


def open_txn_from_row(row: Row) -> OpenTxn:
    return OpenTxn(row["topic"], row["partition"], row["producer_id"], row["producer_epoch"],
                   row["start_offset"], row["last_timestamp"])


# --- Arrow -----------------------------------------------------------------------------------

def to_batch(rows: list[Row], schema: pa.Schema) -> pa.RecordBatch:
    """Rows (dicts keyed by the schema's names; extra keys ignored) as one Arrow batch."""
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def tagged_schema(members: dict[str, pa.Schema]) -> pa.Schema:
    """A union of tables in one Arrow schema: ``record_type`` names the member; the struct
    column of that name holds the row, the others are null. Lets one Arrow function emit
    several tables in one pass."""
    return pa.schema([pa.field("record_type", pa.string(), False)]
                     + [pa.field(name, pa.struct(list(s)), True) for name, s in members.items()])


def to_tagged_batch(rows: list[tuple[str, Row]], schema: pa.Schema) -> pa.RecordBatch:
    names = schema.names[1:]
    return pa.RecordBatch.from_pylist(
        [{"record_type": kind, **{n: (row if n == kind else None) for n in names}} for kind, row in rows],
        schema=schema)
