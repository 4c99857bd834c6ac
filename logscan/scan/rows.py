"""The scan's tables as plain rows: every column's name, type and comment, declared once.

Both drivers use this module: the Spark job ships these rows as Arrow batches between the
executors' calls into ``logscan.state`` and writes them to Delta; the tests turn the
single-process driver's objects into the same rows and compare. Columns are Kafka's names in
snake_case (``producer_id``, ``base_offset``, ``coordinator_epoch``). An event time is two
columns: its epoch milliseconds as Kafka writes them (``max_timestamp``,
``last_update_timestamp_ms``), and beside it the same instant as a UTC timestamp named ``*_time``
(``max_time``, ``last_update_time``; :func:`_at`), null where the milliseconds are no instant
(-1, Kafka's "none", or past year 9999: a CreateTime a producer wrote in microseconds). Only
pyarrow is needed here, never Spark.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import pyarrow as pa
import pyarrow.compute as pc

from logscan.format import compiled
from logscan.format.batch import COMPRESSION_CODEC_MASK, TIMESTAMP_TYPE_MASK, RecordBatch, timestamp_type_name
from logscan.format.compression import codec_name
from logscan.format.legacy import LegacyBatch
from logscan.logdir.segment import TOO_LARGE, Finding
from logscan.logdir.tree import file_size
from logscan.state.coordinator import TxnLogRecord
from logscan.state.facts import BatchFact
from logscan.state.hanging import OpenTxn, Verdict
from logscan.state.partition import ClosedTxn, ReplicaAssessment, ReplicaState, ReplicaView
from logscan.state.plans import AbortPlan
from logscan.state.producer_state import ProducerStateManager, describe_producers
from logscan.state.spans import TxnSpan

from .replica import ReplicaRead, SnapshotCheck, SnapshotFile

Row = dict[str, Any]


def _f(name: str, type_: pa.DataType, comment: str, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable, metadata={"comment": comment})


def _schema(*fields: pa.Field) -> pa.Schema:
    return pa.schema(fields)


#: An event time as a timestamp column: what Delta and Spark call ``timestamp`` (UTC, microseconds).
TIME_TYPE = pa.timestamp("us", tz="UTC")
#: The last millisecond a timestamp column holds (9999-12-31T23:59:59.999Z, Spark's and Delta's
#: upper bound); a later value (a CreateTime in microseconds, int64 max) stays in its ms column only.
MAX_TIME_MS = 253_402_300_799_999


def _at(ms: pa.Field, name: str) -> tuple[pa.Field, pa.Field]:
    """An event time: its epoch-ms column ``ms``, then the timestamp column ``name`` beside it
    (:func:`time_columns` pairs them by that order)."""
    return ms, _f(name, TIME_TYPE, f"{ms.name} as a UTC timestamp; null when {ms.name} is null, negative (-1: "
                                   f"none) or past year 9999 (e.g. a CreateTime written in microseconds)")


def ms_time(ms: Optional[int]) -> Optional[int]:
    """A timestamp column's value (microseconds since the epoch) of an epoch-ms value; None
    where it is no instant (see MAX_TIME_MS)."""
    return ms * 1000 if ms is not None and 0 <= ms <= MAX_TIME_MS else None


def time_array(ms: pa.Array) -> pa.Array:
    """:func:`ms_time` over an int64 array, a column at a time."""
    ok = pc.and_kleene(pc.greater_equal(ms, 0), pc.less_equal(ms, MAX_TIME_MS))
    return pc.if_else(ok, pc.multiply(ms, 1000), pa.scalar(None, pa.int64())).cast(TIME_TYPE)


def time_columns(schema: pa.Schema) -> dict[str, str]:
    """Each timestamp column of a table (declared by :func:`_at`) -> its epoch-ms column."""
    return {f.name: schema.field(i - 1).name for i, f in enumerate(schema) if f.type == TIME_TYPE}


def _timed(row: Row, times: dict[str, str]) -> Row:
    """``row`` with its timestamp columns (``times``: :func:`time_columns`) from its ms columns."""
    for name, ms in times.items():
        row[name] = ms_time(row[ms])
    return row


_REPLICA = (
    _f("broker", pa.int32(), "node id of the broker whose log dir holds the file (meta.properties node.id, "
                             "else the folder name's digits)"),
    _f("topic", pa.string(), "topic name, from the partition folder topic-N"),
    _f("partition", pa.int32(), "partition number, from the partition folder topic-N"),
)
_FILE = _f("file", pa.string(), "path of the file as read by the scan")

#: One row per v2 record batch, in log order (segment_base_offset, position).
BATCHES = _schema(
    *_REPLICA, _FILE,
    _f("segment_base_offset", pa.int64(), "base offset of the segment, from the file name"),
    _f("position", pa.int64(), "byte position of the batch in the file (kafka-dump-log: position)"),
    _f("base_offset", pa.int64(), "baseOffset of the batch"),
    _f("last_offset", pa.int64(), "baseOffset + lastOffsetDelta"),
    _f("records_count", pa.int32(), "recordsCount field of the batch header (kafka-dump-log: count)"),
    _f("magic", pa.int8(), "magic (message format version): 2 for every row of this table"),
    _f("compression_type", pa.string(), "codec of the attributes: none, gzip, snappy, lz4, zstd "
                                        "(kafka-dump-log: compresscodec)"),
    _f("timestamp_type", pa.string(), "CreateTime or LogAppendTime (timestamp type attribute bit)"),
    _f("producer_id", pa.int64(), "producerId (-1: no idempotent producer)"),
    _f("producer_epoch", pa.int32(), "producerEpoch (-1 when none)"),
    _f("base_sequence", pa.int32(), "baseSequence (-1 when none)"),
    _f("last_sequence", pa.int32(), "baseSequence + lastOffsetDelta, wrapping like Kafka (-1 when none)"),
    _f("is_transactional", pa.bool_(), "transactional attribute bit"),
    _f("is_control", pa.bool_(), "control attribute bit (transaction markers and other control records)"),
    _f("control_type", pa.string(), "control batches: COMMIT, ABORT, another control type, UNREADABLE, or "
                                    "null when the batch is empty (cleaned)"),
    _f("coordinator_epoch", pa.int32(), "end transaction marker's coordinatorEpoch (-1 otherwise)"),
    _f("partition_leader_epoch", pa.int32(), "partitionLeaderEpoch: the leader epoch the batch was written in (null for a v0/v1 entry)"),
    *_at(_f("base_timestamp", pa.int64(), "baseTimestamp (first timestamp of the batch), epoch ms; the "
                                          "delete horizon instead when delete_horizon_ms is set"), "base_time"),
    *_at(_f("max_timestamp", pa.int64(), "maxTimestamp of the batch, epoch ms"), "max_time"),
    *_at(_f("delete_horizon_ms", pa.int64(), "KIP-534 delete horizon the cleaner stored in baseTimestamp; null "
                                             "when the attribute bit is clear"), "delete_horizon_time"),
    *_at(_f("marker_timestamp", pa.int64(), "timestamp of the control record (what Kafka's lastTimestamp takes), "
                                            "epoch ms, -1 otherwise"), "marker_time"),
    _f("size_in_bytes", pa.int32(), "batch size including the 12-byte log overhead (kafka-dump-log: size)"),
    _f("crc", pa.int64(), "CRC stored in the entry (unsigned): CRC-32C of a v2 batch, CRC-32 of a v0/v1 message"),
    _f("crc_valid", pa.bool_(), "the stored CRC equals the CRC-32C computed over the batch "
                                "(kafka-dump-log: isvalid)"),
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
    *_at(_f("last_update_timestamp_ms", pa.int64(), "TransactionLastUpdateTimestampMs, epoch ms"),
         "last_update_time"),
    *_at(_f("start_timestamp_ms", pa.int64(), "TransactionStartTimestampMs, epoch ms (-1: no transaction "
                                              "started)"), "start_time"),
    _f("coordinator_epoch", pa.int32(), "partitionLeaderEpoch of the batch holding the record: the "
                                        "coordinator epoch its markers carry"),
)
#: Every `__transaction_state` record of every replica; ``partition`` is the coordinator partition.
TXN_LOG = _schema(*_REPLICA, _FILE,
                  _f("position", pa.int64(), "byte position in the file of the batch holding the record"),
                  *_TXN_RECORD)
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
    _f("kind", pa.string(), "log_segment, producer_snapshot, txn_index, checkpoint, skipped; missing: a replica "
                            "folder its broker's checkpoints or __cluster_metadata name on a log dir in the copy, "
                            "absent from it while the copy holds the partition from other brokers (an "
                            "'incomplete' finding; file: where it belongs); not_copied: the same of a partition "
                            "the copy holds no replica of; no_metadata: a KRaft node's __cluster_metadata-0, in "
                            "none of its log dirs nor any other node's (an 'incomplete' finding: the leaders "
                            "cannot be read)"),
    _f("size", pa.int64(), "file size in bytes (-1 when not stat'ed)"),
    _f("status", pa.string(), "ok, damaged (has corruptions), unreadable, listed (not read), skipped, missing "
                              "(kinds missing, not_copied and no_metadata)"),
    _f("error_count", pa.int32(), "number of corruptions rows for this file"),
    _f("batches", pa.int32(), "v2 batches decoded from a segment; entries of a producer snapshot"),
    _f("detail", pa.string(), "why the file was skipped, when it was; for missing, not_copied and no_metadata, "
                              "what names it and what to copy"),
    *_at(_f("max_timestamp", pa.int64(), "log segments: the newest maxTimestamp of its checksum-valid batches, epoch "
                                         "ms (the segment's largestTimestamp, which min.compaction.lag.ms and "
                                         "retention.ms compare with; -1 when it holds no batch); null for other files "
                                         "and a segment with a finding and no batch"), "max_time"),
)

_SNAPSHOT_OFFSET = _f("snapshot_offset", pa.int64(), "offset in the snapshot's file name: the state after "
                                                     "every offset below it")

#: `kafka-transactions describe-producers` per replica, rebuilt from the batches, beside the
#: same producer in the replica's newest loadable producer snapshot.
PRODUCER_STATE = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("coordinator_epoch", pa.int32(), "LatestCoordinatorEpoch"),
    _f("last_sequence", pa.int32(), "LastSequence (-1 when the cached batches were dropped by an epoch bump)"),
    *_at(_f("last_timestamp", pa.int64(), "LastTimestamp, epoch ms"), "last_time"),
    _f("current_txn_start_offset", pa.int64(), "CurrentTransactionStartOffset; null when no transaction is open"),
    _f("loaded_from", pa.string(), "what gave this row, by the broker's loading rules (LogLoader, ProducerStateManager): "
                                   "'snapshot' (the entry of the producer snapshot it loads), 'snapshot+batches' (that "
                                   "entry with the later batches replayed over it) or 'batches' (no snapshot loaded, or "
                                   "a producer it does not hold)"),
    _f("snapshot_offset", pa.int64(), "offset of the replica's newest loadable producer snapshot (the "
                                      "state after every offset below it); null when there is none"),
    _f("snapshot_producer_epoch", pa.int32(), "ProducerEpoch in that snapshot (null: producer not in it)"),
    _f("snapshot_coordinator_epoch", pa.int32(), "LatestCoordinatorEpoch in that snapshot"),
    _f("snapshot_last_sequence", pa.int32(), "LastSequence in that snapshot"),
    *_at(_f("snapshot_last_timestamp", pa.int64(), "LastTimestamp in that snapshot, epoch ms"), "snapshot_last_time"),
    _f("snapshot_current_txn_start_offset", pa.int64(), "CurrentTransactionStartOffset in that snapshot"),
    _f("snapshot_agrees", pa.bool_(), "the snapshot's entry equals the state rebuilt from the batches below "
                                      "snapshot_offset; null when no snapshot or the rebuild starts from it"),
    _f("snapshot_difference", pa.string(), "what differs when snapshot_agrees is false"),
)

#: Every entry of every producer-state `.snapshot` file, decoded.
PRODUCER_SNAPSHOTS = _schema(
    *_REPLICA, _FILE, _SNAPSHOT_OFFSET,
    _f("position", pa.int64(), "byte position of the entry in the file"),
    _f("producer_id", pa.int64(), "producerId"),
    _f("producer_epoch", pa.int32(), "producerEpoch"),
    _f("coordinator_epoch", pa.int32(), "coordinatorEpoch"),
    _f("current_txn_first_offset", pa.int64(), "currentTxnFirstOffset; null when no transaction is open"),
    *_at(_f("last_timestamp", pa.int64(), "lastTimestamp, epoch ms"), "last_time"),
    _f("first_sequence", pa.int32(), "firstSequence of the retained batch (-1 without batch metadata)"),
    _f("last_sequence", pa.int32(), "lastSequence of the retained batch"),
    _f("last_offset", pa.int64(), "lastOffset of the retained batch (-1: none, e.g. only a marker)"),
    _f("offset_delta", pa.int32(), "offsetDelta of the retained batch"),
    _f("crc_valid", pa.bool_(), "the file's CRC-32C is valid (Kafka refuses a snapshot whose CRC is not)"),
    _f("newest", pa.bool_(), "this is the replica's newest loadable snapshot, the one producer_state "
                             "is compared with"),
    _f("rebuilt_agrees", pa.bool_(), "newest snapshot only: the entry equals the state rebuilt from the "
                                     "batches below snapshot_offset (null otherwise)"),
    _f("rebuilt_difference", pa.string(), "what differs when rebuilt_agrees is false"),
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
    *_at(_f("start_timestamp", pa.int64(), "maxTimestamp of the first data batch, epoch ms (-1: opened by a "
                                           "snapshot)"), "start_time"),
    *_at(_f("last_timestamp", pa.int64(), "maxTimestamp of the last data batch, epoch ms"), "last_time"),
    *_at(_f("end_timestamp", pa.int64(), "marker record's timestamp, epoch ms; null while OPEN"), "end_time"),
    _f("duration_ms", pa.int64(), "end_timestamp - start_timestamp; null while OPEN"),
    _f("batches", pa.int32(), "data batches of the transaction in this replica"),
    _f("records", pa.int64(), "records in those batches"),
    _f("bytes", pa.int64(), "bytes of those batches"),
    _f("from_snapshot", pa.bool_(), "opened by a producer snapshot: earlier batches are not in the copy"),
)

#: Per replica: offsets, LSO and LSO lag the way UnifiedLog derives them on load, the leader,
#: and how the replica compares with the other replicas of its partition.
PARTITION_STATE = _schema(
    *_REPLICA,
    _f("log_start_offset", pa.int64(), "logStartOffset (log-start-offset-checkpoint, else first segment)"),
    _f("log_end_offset", pa.int64(), "log end offset: last batch's last offset + 1"),
    _f("high_watermark", pa.int64(), "high watermark from replication-offset-checkpoint, clamped as on load"),
    _f("checkpointed_high_watermark", pa.int64(), "the high watermark replication-offset-checkpoint holds for "
                                                  "the partition, unclamped; null when it is not there"),
    _f("first_unstable_offset", pa.int64(), "firstUnstableOffset; null when nothing is unstable"),
    _f("last_stable_offset", pa.int64(), "LSO: what a read_committed consumer can read up to"),
    _f("lso_lag", pa.int64(), "high_watermark - last_stable_offset (LastStableOffsetLag)"),
    _f("open_transactions", pa.int32(), "transactions still open at the end of the log"),
    _f("producers", pa.int32(), "producers in the rebuilt producer state"),
    *_at(_f("max_timestamp", pa.int64(), "newest batch maxTimestamp in the replica, epoch ms, of those at most a "
                                         "day past the scan's clock (later ones are 'timestamp' findings)"),
         "max_time"),
    _f("leader_epoch", pa.int32(), "highest epoch in the replica's leader-epoch-checkpoint; null when empty"),
    _f("leader", pa.int32(), "broker that led the partition at as_of: the last leader in __cluster_metadata up "
                             "to as_of, else from leader epochs; null when the copy cannot tell"),
    _f("leader_source", pa.string(), "where leader comes from: cluster_metadata or leader_epoch_checkpoint"),
    _f("is_leader", pa.bool_(), "this replica is the leader; null when the copy cannot tell"),
    _f("replicas", pa.int32(), "replicas of this partition in the copy"),
    _f("replicas_agree", pa.bool_(), "log end, high watermark, LSO, open transactions and the end markers "
                                     "both hold equal those of every other replica in the copy"),
    _f("replica_differences", pa.list_(pa.struct([
        pa.field("other_broker", pa.int32()), pa.field("field", pa.string()), pa.field("value", pa.int64()),
        pa.field("other_value", pa.int64()), pa.field("text", pa.string())])),
       "what differs from each other replica (other_broker), one element per field: log_end_offset, "
       "high_watermark or last_stable_offset with value here and other_value there; open_here_only, "
       "open_there_only, end_markers_here_only or end_markers_there_only with value the number of "
       "transactions or markers (other_value null); diverged_at with value the first offset both hold "
       "different records at (two histories: the partition's verdicts are withheld, reason diverged); text "
       "says it in words (which transactions, which markers); empty when replicas_agree"),
    *_at(_f("oldest_txn_last_timestamp", pa.int64(), "lastTimestamp of the producer whose open transaction "
                                                     "started first (oldestTxnLastTimestamp), epoch ms; -1 when "
                                                     "none is open"), "oldest_txn_last_time"),
    _f("has_late_transaction", pa.bool_(), "as_of - oldest_txn_last_timestamp exceeds the max transaction "
                                           "timeout + 5 min: counted by PartitionsWithLateTransactionsCount"),
    _f("copy_gap", pa.string(), "what the broker's own files (its log dir's replication-offset-, recovery-point-"
                                "offset- and log-start-offset-checkpoint, producer snapshots, a segment's index "
                                "files) say it held that the copy lacks (an 'incomplete' finding); null when the "
                                "copy holds all they name"),
    _f("log_fault", pa.string(), "why Kafka's rules cannot be trusted on this replica's log: the first batch "
                                 "Kafka's log recovery refuses (an 'offset-order', 'overlap', 'segment-base' or "
                                 "'control-type' finding); the replay stopped there (offsets, LSO and producers "
                                 "are those of the log before it) and no verdict nor abort plan rests on this "
                                 "replica; null when the log keeps the rules"),
)

#: find-hanging's candidates (open longer than the max transaction timeout) with a verdict.
HANGING_CANDIDATES = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId of the open transaction"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("start_offset", pa.int64(), "first offset of the open transaction (StartOffset)"),
    *_at(_f("last_timestamp", pa.int64(), "producer's LastTimestamp, epoch ms"), "last_time"),
    _f("age_ms", pa.int64(), "as_of - last_timestamp"),
    _f("hanging", pa.bool_(), "true: abort it; false: the coordinator will finish it; null: cannot tell"),
    _f("reason", pa.string(), "no_coordinator_record, coordinator_moved_on, partition_not_in_transaction, "
                              "markers_pending, coordinator_ongoing, coordinator_stuck_preparing, "
                              "two_phase_commit_in_doubt, coordinator_not_in_copy, partition_not_in_copy, "
                              "replicas_disagree, log_fault, diverged"),
    _f("evidence", pa.string(), "the coordinator record (or its absence) the verdict rests on"),
    _f("transactional_id", pa.string(), "transactional id of the coordinator record, when one matched"),
)

#: One row per hanging transaction per partition: what to run, what the broker checks, what happens.
ABORT_PLANS = _schema(
    _REPLICA[1], _REPLICA[2],
    _f("broker", pa.int32(), "broker whose replica the plan was read from (the one furthest ahead)"),
    _f("producer_id", pa.int64(), "ProducerId of the hanging transaction"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch the abort marker must carry"),
    _f("coordinator_epoch", pa.int32(), "LatestCoordinatorEpoch of the producer (-1: never touched by a marker)"),
    _f("start_offset", pa.int64(), "first offset of the hanging transaction"),
    _f("reason", pa.string(), "the hanging_candidates reason the plan rests on"),
    _f("risk", pa.string(), "low, medium or high"),
    _f("risk_detail", pa.string(), "why that risk level"),
    _f("command", pa.string(), "kafka-transactions.sh abort --start-offset form (the broker looks the producer up)"),
    _f("command_explicit", pa.string(), "the older-broker form with --producer-id, --producer-epoch and "
                                        "--coordinator-epoch filled from the files"),
    _f("preconditions", pa.list_(pa.string()), "what the broker will check before writing the marker"),
    _f("effects", pa.list_(pa.string()), "what the abort does to the LSO, read_committed consumers and the "
                                         "compacted log"),
)

#: Open transactions at the end of a replica, in the order find-hanging considers them.
OPEN_TXNS = _schema(
    *_REPLICA,
    _f("producer_id", pa.int64(), "ProducerId"),
    _f("producer_epoch", pa.int32(), "ProducerEpoch"),
    _f("start_offset", pa.int64(), "currentTxnFirstOffset"),
    _f("last_timestamp", pa.int64(), "LastTimestamp, epoch ms"),
    _f("coordinator_epoch", pa.int32(), "LatestCoordinatorEpoch"),
)


#: One row per finished scan, committed by the Spark job after every table of the scan: a scan id
#: whose row is missing was killed or failed mid-write, and some tables may hold it in part
#: (each table commits on its own). Not one of TABLES: the local executor writes no tables.
SCANS = _schema(
    _f("tables", pa.list_(pa.string()), "the tables this scan wrote (its --tables); the others hold earlier scans"),
    _f("inputs", pa.list_(pa.string()), "the input roots the scan read"),
    *_at(_f("finished_ms", pa.int64(), "when the last table's commit was done, epoch ms"), "finished_time"),
)
SCANS_TABLE = "scans"

#: The last committed offset per (group, topic, partition) as the group coordinator loads it at
#: as_of, and the transactional commits still pending then (one row per producer).
COMMITTED_OFFSETS = _schema(
    _f("broker", pa.int32(), "broker whose __consumer_offsets replica was loaded (the partition's leader, else "
                             "the replica furthest ahead)"),
    _f("offsets_partition", pa.int32(), "the __consumer_offsets partition holding the group (abs(hashCode) % "
                                        "partitions)"),
    _f("group_id", pa.string(), "consumer group id"),
    _f("topic", pa.string(), "committed topic"),
    _f("partition", pa.int32(), "committed partition"),
    _f("state", pa.string(), "committed (served by OffsetFetch) or pending (a transactional commit whose "
                             "transaction has no marker yet)"),
    _f("committed_offset", pa.int64(), "the committed offset: the next offset the group will read"),
    _f("leader_epoch", pa.int32(), "committed leader epoch (-1: none)"),
    _f("metadata", pa.string(), "the commit's metadata string"),
    _f("commit_timestamp_ms", pa.int64(), "commitTimestamp of the OffsetCommitValue, epoch ms"),
    _f("record_offset", pa.int64(), "offset of the commit record in __consumer_offsets (Kafka's recordOffset: "
                                    "a transactional commit wins over a plain one only from a later record)"),
    _f("record_timestamp_ms", pa.int64(), "timestamp of the commit record, epoch ms"),
    _f("producer_id", pa.int64(), "producer id of the commit's batch: -1 for a plain OffsetCommit, the "
                                  "transactional producer's for a TxnOffsetCommit"),
    _f("producer_epoch", pa.int32(), "producer epoch of the commit's batch (-1 for a plain commit)"),
)

#: Groups a hanging or open transaction holds back, with the lag it costs them.
AFFECTED_GROUPS = _schema(
    _f("group_id", pa.string(), "consumer group id"),
    _f("topic", pa.string(), "the group's topic"),
    _f("partition", pa.int32(), "the group's partition"),
    _f("kind", pa.string(), "unstable_offset_commit: a pending transactional commit there, so an OffsetFetch "
                            "with requireStable (read_committed consumers) answers UNSTABLE_OFFSET_COMMIT; "
                            "read_committed_stuck: the committed offset is at or past the LSO, below the HW"),
    _f("committed_offset", pa.int64(), "the group's committed offset there (null: none)"),
    _f("pending_offset", pa.int64(), "the pending transactional commit's offset (unstable_offset_commit)"),
    _f("producer_id", pa.int64(), "producer of the transaction holding the group back"),
    _f("producer_epoch", pa.int32(), "its epoch"),
    _f("held_topic", pa.string(), "where that transaction is open: __consumer_offsets (unstable_offset_commit) "
                                  "or the group's topic (read_committed_stuck)"),
    _f("held_partition", pa.int32(), "partition of held_topic"),
    _f("hanging", pa.bool_(), "hanging_candidates' verdict on that transaction; null: cannot tell, or not a "
                              "candidate yet"),
    _f("reason", pa.string(), "hanging_candidates' reason, or 'open': within the max transaction timeout"),
    _f("transactional_id", pa.string(), "transactional id of the coordinator record the verdict rests on"),
    _f("last_stable_offset", pa.int64(), "the group's partition's LSO (its served replica's)"),
    _f("high_watermark", pa.int64(), "the group's partition's high watermark"),
    _f("lag_messages", pa.int64(), "high_watermark - committed_offset (kafka-consumer-groups' LAG)"),
    _f("since_ms", pa.int64(), "since when: the pending commit's record timestamp, or the start of the "
                               "transaction open at the LSO, epoch ms"),
    _f("lag_ms", pa.int64(), "as_of - since_ms"),
)

#: Per replica, what its LSO holds back on disk (logscan.state.retention.impact_rows).
PARTITION_IMPACT = _schema(
    *_REPLICA,
    _f("segments", pa.int32(), "live segments of the replica (.deleted/.cleaned/.swap files are not)"),
    _f("bytes", pa.int64(), "their bytes (kafka-log-dirs' size)"),
    _f("compacted", pa.bool_(), "cleanup.policy includes compact (__cluster_metadata's ConfigRecords, else an "
                                "internal compacted topic or a cleaner-offset-checkpoint entry)"),
    _f("cleaner_checkpoint", pa.int64(), "the log dir's cleaner-offset-checkpoint entry: where the cleaner stopped"),
    _f("cleaner_first_uncleanable_offset", pa.int64(), "where a cleaning pass must stop: the base of the segment "
                                                       "holding min(LSO, active segment base, compaction lag's "
                                                       "limit); null when not compacted"),
    _f("cleaner_at_limit", pa.bool_(), "the checkpoint is at that offset: the cleaner has done all it may"),
    _f("cleanable_bytes", pa.int64(), "bytes a pass may clean now (checkpoint to first uncleanable offset)"),
    _f("cleaner_held_bytes", pa.int64(), "bytes of the closed segments from the LSO's segment on: dirty until the "
                                         "LSO moves; null when not compacted"),
    _f("cleaner_held_segments", pa.int32(), "those segments"),
    _f("remote_storage", pa.bool_(), "the copy shows remote storage in use (__remote_log_metadata partitions)"),
    _f("tiering_held_bytes", pa.int64(), "bytes of the closed segments tiered storage may not upload: each whose "
                                         "next segment starts past the LSO; null without remote storage"),
    _f("tiering_held_segments", pa.int32(), "those segments"),
    _f("tiering_first_held_offset", pa.int64(), "base offset of the first of them; null when none"),
)

_PRODUCER_RUN = pa.struct([pa.field("producer_id", pa.int64()), pa.field("first_epoch", pa.int32()),
                           pa.field("last_epoch", pa.int32()), pa.field("first_ms", pa.int64()),
                           pa.field("last_ms", pa.int64())])

#: Per transactional id, its history (logscan.state.history.history_rows).
TRANSACTIONAL_ID_HISTORY = _schema(
    _f("transactional_id", pa.string(), "transactional.id"),
    _f("records", pa.int32(), "its __transaction_state records in the copy (a compacted topic: older ones may be "
                              "gone)"),
    _f("last_state", pa.string(), "the state of its last record; null: a tombstone (expired)"),
    _f("producers", pa.list_(_PRODUCER_RUN), "its producer ids in record order, each with its first and last epoch "
                                             "and the times of its first and last records (epoch ms)"),
    _f("committed", pa.int32(), "transactions ended by CompleteCommit"),
    _f("aborted", pa.int32(), "transactions ended by CompleteAbort"),
    _f("open", pa.int32(), "1 when its last record is Ongoing or Prepare*"),
    _f("timeouts", pa.int32(), "aborts begun TransactionTimeoutMs or more after the start: the coordinator's"),
    _f("fences", pa.int32(), "re-initialisations (InitProducerId after its first record), each fencing the "
                             "producer before it"),
    _f("duration_p50_ms", pa.int64(), "median transaction duration on the coordinator's clock (nearest rank)"),
    _f("duration_p99_ms", pa.int64(), "99th percentile (nearest rank)"),
    _f("duration_max_ms", pa.int64(), "longest"),
    _f("span_commits", pa.int32(), "committed transaction spans over the partitions (each partition once)"),
    _f("span_aborts", pa.int32(), "aborted spans"),
    _f("span_open", pa.int32(), "spans still open"),
    _f("span_duration_p50_ms", pa.int64(), "median span duration (first batch to marker)"),
    _f("span_duration_p99_ms", pa.int64(), "99th percentile"),
    _f("span_duration_max_ms", pa.int64(), "longest"),
)

#: Every table of a scan, in the order they are committed (logscan.scan.tables.commit_order).
#: The last four are the blast radius of a hang (pipeline.py's "after assess" steps): what is
#: left of __consumer_offsets, the groups held back, the bytes held back, each transactional id's
#: history.
TABLES: dict[str, pa.Schema] = {
    "files": FILES, "batches": BATCHES, "corruptions": CORRUPTIONS, "txn_log": TXN_LOG,
    "coordinator_state": COORDINATOR_STATE, "producer_snapshots": PRODUCER_SNAPSHOTS,
    "producer_state": PRODUCER_STATE, "txn_spans": TXN_SPANS, "partition_state": PARTITION_STATE,
    "hanging_candidates": HANGING_CANDIDATES, "abort_plans": ABORT_PLANS,
    "committed_offsets": COMMITTED_OFFSETS, "affected_groups": AFFECTED_GROUPS,
    "partition_impact": PARTITION_IMPACT, "transactional_id_history": TRANSACTIONAL_ID_HISTORY,
}

#: A `__consumer_offsets` replica's offset commits and transaction markers, in log order (decode
#: reads them as it walks the replica; logscan.scan.consumer_offsets): the groups step's input,
#: of no table.
OFFSET_COMMITS = _schema(
    _f("broker", pa.int32(), "broker whose replica holds the record"),
    _f("offsets_partition", pa.int32(), "the __consumer_offsets partition"),
    _f("kind", pa.string(), "offset_commit or marker"),
    _f("offset", pa.int64(), "offset of the record (a marker's: of its batch)"),
    _f("timestamp_ms", pa.int64(), "record timestamp, epoch ms"),
    _f("producer_id", pa.int64(), "producer id of the batch (-1: a plain commit)"),
    _f("producer_epoch", pa.int32(), "producer epoch of the batch"),
    _f("group_id", pa.string(), "committing group"),
    _f("topic", pa.string(), "committed topic"),
    _f("partition", pa.int32(), "committed partition"),
    _f("committed_offset", pa.int64(), "committed offset; null for a tombstone"),
    _f("leader_epoch", pa.int32(), "committed leader epoch"),
    _f("metadata", pa.string(), "commit metadata"),
    _f("commit_timestamp_ms", pa.int64(), "commitTimestamp"),
    _f("control_type", pa.string(), "a marker's COMMIT or ABORT"),
)
#: Rows the steps hand each other that are rows of no table, by name (an executor carries them
#: as it carries a table's rows: row_schema).
STEP_ROWS: dict[str, pa.Schema] = {"offset_commits": OFFSET_COMMITS}


def row_schema(name: str) -> pa.Schema:
    """The columns of a table's rows, or of a step's rows of no table (STEP_ROWS)."""
    return TABLES[name] if name in TABLES else STEP_ROWS[name]


def replica_key(broker: int, topic: Optional[str], partition: Optional[int]) -> Row:
    return {"broker": broker, "topic": topic, "partition": partition}


# --- objects -> rows -------------------------------------------------------------------------

#: The batches columns a batch header gives, in the order of :func:`header_values`.
HEADER_COLUMNS = ("position", "magic", "compression_type", "timestamp_type", "partition_leader_epoch",
                  "base_timestamp", "delete_horizon_ms", "crc", "crc_valid")


#: RecordBatch.codec of each value of the attributes' three codec bits, and RecordBatch.timestamp_type
#: of each value of the timestamp type bit: the names compiled.header_v2 gives.
_CODEC_NAMES = tuple(codec_name(i) for i in range(COMPRESSION_CODEC_MASK + 1))
_TIMESTAMP_NAMES = (timestamp_type_name(0), timestamp_type_name(TIMESTAMP_TYPE_MASK))


def header_values(header: RecordBatch | LegacyBatch) -> tuple:
    """A v2 batch's header columns (HEADER_COLUMNS), or a v0/v1 entry's (no leader epoch, base
    timestamp or delete horizon: null). Runs once per batch of the batches table: where the
    module is built, compiled.header_v2 gives a v2 batch's."""
    if type(header) is RecordBatch:
        native = compiled.header_v2
        if native is not None:
            return native(header, _CODEC_NAMES, _TIMESTAMP_NAMES)
        return (header.position, header.magic, header.codec, header.timestamp_type, header.partition_leader_epoch,
                header.base_timestamp, header.delete_horizon_ms, header.crc, header.crc_valid)
    return (header.position, header.magic, header.codec, header.timestamp_type, None, None, None,
            header.crc, header.crc_valid)


_BATCH_TIMES = time_columns(BATCHES)


def batch_row(fact: BatchFact, header: RecordBatch | LegacyBatch, key: Row, file: str,
              segment_base_offset: int) -> Row:
    """One batches row: a v2 batch, or a v0/v1 entry (see header_values)."""
    return _timed({**key, "file": file, "segment_base_offset": segment_base_offset,
                   **dict(zip(HEADER_COLUMNS, header_values(header))), **fact._asdict()}, _BATCH_TIMES)


def batch_struct(facts: list[BatchFact], headers: list[RecordBatch | LegacyBatch],
                 keys: dict[str, list]) -> pa.StructArray:
    """Batches rows as one Arrow struct array, built a column at a time: the facts and the
    header values transposed by zip, no dict per row; ``keys`` holds the other columns
    (broker, topic, partition, file, segment_base_offset), one value per row. The rows
    :func:`batch_row` gives, for the decode's millions of batches."""
    columns: dict[str, Any] = dict(keys)
    if facts:
        columns.update(zip(BatchFact._fields, zip(*facts)))
        columns.update(zip(HEADER_COLUMNS, zip(*map(header_values, headers))))
    else:
        columns.update((name, ()) for name in (*BatchFact._fields, *HEADER_COLUMNS))
    arrays: dict[str, pa.Array] = {}
    for f in BATCHES:
        ms = _BATCH_TIMES.get(f.name)
        arrays[f.name] = time_array(arrays[ms]) if ms else pa.array(columns[f.name], f.type)
    return pa.StructArray.from_arrays(list(arrays.values()), fields=list(BATCHES))


_TXN_RECORD_TIMES = time_columns(COORDINATOR_STATE)


def txn_record_row(rec: TxnLogRecord) -> Row:
    return _timed({"offset": rec.offset, "transactional_id": rec.transactional_id, "state": rec.state,
            "producer_id": rec.producer_id, "previous_producer_id": rec.previous_producer_id,
            "next_producer_id": rec.next_producer_id, "producer_epoch": rec.producer_epoch,
            "transaction_timeout_ms": rec.transaction_timeout_ms,
            "partitions": [{"topic": t, "partition": p} for t, p in rec.partitions],
            "last_update_timestamp_ms": rec.last_update_timestamp_ms,
            "start_timestamp_ms": rec.start_timestamp_ms, "coordinator_epoch": rec.coordinator_epoch},
                  _TXN_RECORD_TIMES)


def txn_log_rows(read: ReplicaRead, key: Row, file: str) -> Iterable[Row]:
    for rec, position in zip(read.txn_log, read.txn_log_positions):
        yield {**key, "file": file, "position": position, **txn_record_row(rec)}


def finding_row(finding: Finding, key: Row) -> Row:
    return {**key, "file": finding.path, "position": finding.position, "length": finding.length,
            "reason": finding.reason, "message": finding.message}


def file_status(findings: Iterable[Finding]) -> str:
    """ok, damaged (has findings) or unreadable (could not be opened at all, or too long to read)."""
    findings = list(findings)
    if any(f.reason == "io" and f.position < 0 or f.reason == TOO_LARGE for f in findings):
        return "unreadable"
    return "damaged" if findings else "ok"


#: files.status from best to worst: how the statuses of a file's byte ranges combine.
STATUS_ORDER = ("ok", "damaged", "unreadable")


_PRODUCER_TIMES = time_columns(PRODUCER_STATE)
_SNAPSHOT_TIMES = time_columns(PRODUCER_SNAPSHOTS)


def producer_rows(psm: ProducerStateManager, key: Row, check: Optional[SnapshotCheck] = None) -> Iterable[Row]:
    for pid, epoch, coord, seq, ts, start in describe_producers(psm):
        held = check.entries.get(pid) if check is not None else None
        difference = check.differences.get(pid) if check is not None and check.comparable else None
        yield _timed({**key, "producer_id": pid, "producer_epoch": epoch, "coordinator_epoch": coord,
               "last_sequence": seq, "last_timestamp": ts, "current_txn_start_offset": start,
               "loaded_from": psm.loaded_from(pid),
               "snapshot_offset": None if check is None else check.offset,
               **dict(zip(("snapshot_producer_epoch", "snapshot_coordinator_epoch", "snapshot_last_sequence",
                           "snapshot_last_timestamp", "snapshot_current_txn_start_offset"),
                          held or (None,) * 5)),
               "snapshot_agrees": None if check is None or not check.comparable else difference is None,
               "snapshot_difference": difference}, _PRODUCER_TIMES)


def snapshot_rows(snapshots: Iterable[SnapshotFile], key: Row, check: Optional[SnapshotCheck]) -> Iterable[Row]:
    for f in snapshots:
        if f.snapshot is None:
            continue
        newest = check is not None and f.path == check.path
        for e in f.snapshot.iter_entries():
            difference = check.differences.get(e.producer_id) if newest and check.comparable else None
            yield _timed({**key, "file": f.path, "snapshot_offset": f.offset, "position": e.position,
                   "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                   "coordinator_epoch": e.coordinator_epoch,
                   "current_txn_first_offset": e.current_txn_first_offset if e.has_ongoing_transaction else None,
                   "last_timestamp": e.timestamp, "first_sequence": e.first_sequence,
                   "last_sequence": e.last_sequence, "last_offset": e.last_offset, "offset_delta": e.offset_delta,
                   "crc_valid": f.snapshot.crc_valid, "newest": newest,
                   "rebuilt_agrees": difference is None if newest and check.comparable else None,
                   "rebuilt_difference": difference}, _SNAPSHOT_TIMES)


def snapshot_file_rows(snapshots: Iterable[SnapshotFile], key: Row) -> Iterable[Row]:
    for f in snapshots:
        bad = [f.finding] if f.finding is not None else []
        yield {**key, "file": f.path, "kind": "producer_snapshot", "size": _size(f.path),
               "status": file_status(bad), "error_count": len(bad),
               "batches": f.snapshot.count if f.snapshot is not None else 0, "detail": None}


def _size(path: str) -> int:
    try:
        return file_size(path)  # a local path or a URI (logscan.logdir.store)
    except OSError:
        return -1


_SPAN_TIMES = time_columns(TXN_SPANS)


def span_row(s: TxnSpan, key: Row) -> Row:
    return _timed({**key, "span_index": s.index, "producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
            "first_offset": s.first_offset, "last_data_offset": s.last_data_offset,
            "end_marker_offset": s.end_marker_offset, "end_marker_epoch": s.end_marker_epoch,
            "outcome": s.outcome, "coordinator_epoch": s.coordinator_epoch,
            "start_timestamp": s.start_timestamp, "last_timestamp": s.last_timestamp,
            "end_timestamp": s.end_timestamp, "duration_ms": s.duration_ms, "batches": s.batches,
            "records": s.records, "bytes": s.bytes, "from_snapshot": s.from_snapshot}, _SPAN_TIMES)


def span_rows(spans: Iterable[TxnSpan], key: Row) -> Iterable[Row]:
    return (span_row(s, key) for s in spans)


def closed_txn(s: TxnSpan) -> ClosedTxn:
    """A closed span as the cross-replica rules see it."""
    return ClosedTxn(s.producer_id, s.first_offset, s.end_marker_offset, s.outcome)


_STATE_FIELDS = ("log_start_offset", "log_end_offset", "high_watermark", "checkpointed_high_watermark",
                 "first_unstable_offset", "last_stable_offset", "open_transactions", "producers", "copy_gap",
                 "log_fault")
_ASSESSMENT_FIELDS = ("leader", "leader_source", "is_leader", "replicas", "replicas_agree", "replica_differences",
                      "oldest_txn_last_timestamp", "has_late_transaction")
_STATE_TIMES = time_columns(PARTITION_STATE)
#: The partition_state columns only the cross-replica assessment fills (:func:`assessed`), with
#: their time columns: null in a replica's own row (:func:`state_row` without an assessment).
ASSESSMENT_COLUMNS = (*_ASSESSMENT_FIELDS, *(t for t, ms in _STATE_TIMES.items() if ms in _ASSESSMENT_FIELDS))


def state_row(state: ReplicaState, max_timestamp: int, leader_epoch: Optional[int] = None,
              assessment: Optional[ReplicaAssessment] = None) -> Row:
    """A partition_state row; the cross-replica columns stay null until ``assessment`` is known."""
    row = {**replica_key(state.broker, state.topic, state.partition),
           **{name: getattr(state, name) for name in _STATE_FIELDS}, "lso_lag": state.lso_lag,
           "max_timestamp": max_timestamp, "leader_epoch": leader_epoch,
           **dict.fromkeys(_ASSESSMENT_FIELDS)}
    return _timed(row, _STATE_TIMES) if assessment is None else assessed(row, assessment)


def assessed(row: Row, assessment: ReplicaAssessment) -> Row:
    """A partition_state row with the cross-replica columns of ``assessment``."""
    row = {**row, **{name: getattr(assessment, name) for name in _ASSESSMENT_FIELDS}}
    row["replica_differences"] = [d._asdict() for d in assessment.replica_differences]
    return _timed(row, _STATE_TIMES)


def open_txn_rows(view: ReplicaView, key: Row) -> Iterable[Row]:
    """Open transactions by first offset, with the producer's epoch and lastTimestamp."""
    for t in view.open_txns:
        yield {**key, "producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
               "start_offset": t.start_offset, "last_timestamp": t.last_timestamp,
               "coordinator_epoch": view.coordinator_epochs.get(t.producer_id, -1)}


_CANDIDATE_TIMES = time_columns(HANGING_CANDIDATES)


def candidate_row(key: Row, txn: OpenTxn, age_ms: int, verdict: Verdict) -> Row:
    return _timed({**key, "producer_id": txn.producer_id, "producer_epoch": txn.producer_epoch,
                   "start_offset": txn.start_offset, "last_timestamp": txn.last_timestamp, "age_ms": age_ms,
                   "hanging": verdict.hanging, "reason": verdict.reason, "evidence": verdict.evidence,
                   "transactional_id": verdict.transactional_id}, _CANDIDATE_TIMES)


def scans_row(tables: Iterable[str], inputs: Iterable[str], finished_ms: int) -> Row:
    """The scans row of a finished scan."""
    return {"tables": list(tables), "inputs": list(inputs), "finished_ms": finished_ms,
            "finished_time": ms_time(finished_ms)}


def plan_row(broker: int, plan: AbortPlan) -> Row:
    return {"topic": plan.topic, "partition": plan.partition, "broker": broker, "producer_id": plan.producer_id,
            "producer_epoch": plan.producer_epoch, "coordinator_epoch": plan.coordinator_epoch,
            "start_offset": plan.start_offset, "reason": plan.reason, "risk": plan.risk,
            "risk_detail": plan.risk_detail, "command": plan.command, "command_explicit": plan.command_explicit,
            "preconditions": list(plan.preconditions), "effects": list(plan.effects)}


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


def state_from_row(row: Row) -> ReplicaState:
    return ReplicaState(row["broker"], row["topic"], row["partition"], *(row[n] for n in _STATE_FIELDS))


def view_from_rows(state: Row, open_txns: list[Row]) -> ReplicaView:
    """The ReplicaView of one replica out of its partition_state and open-transaction rows."""
    txns = sorted(open_txns, key=lambda r: r["start_offset"])
    return ReplicaView(state_from_row(state), [open_txn_from_row(r) for r in txns],
                       {r["producer_id"]: r["coordinator_epoch"] for r in txns},
                       state["max_timestamp"], state["leader_epoch"])


#: The txn_spans columns closed_from_row reads.
CLOSED_COLUMNS = ("broker", "producer_id", "first_offset", "end_marker_offset", "outcome")


def closed_from_row(span: Row) -> tuple[int, ClosedTxn]:
    """(broker, closed transaction) out of a txn_spans row with an end marker."""
    return span["broker"], ClosedTxn(span["producer_id"], span["first_offset"], span["end_marker_offset"],
                                     span["outcome"])


# --- Arrow -----------------------------------------------------------------------------------

def to_batch(rows: list[Row], schema: pa.Schema) -> pa.RecordBatch:
    """Rows (dicts keyed by the schema's names; extra keys ignored) as one Arrow batch."""
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def tagged_schema(members: dict[str, pa.Schema], keys: Iterable[pa.Field] = ()) -> pa.Schema:
    """A union of tables in one Arrow schema: ``record_type`` names the member; the struct
    column of that name holds the row, the others are null. Lets one Arrow function emit
    several tables in one pass. ``keys`` are top-level columns every row fills (from its own
    values of those names), for grouping or filtering the union without unpacking it."""
    return pa.schema([pa.field("record_type", pa.string(), False), *keys]
                     + [pa.field(name, pa.struct(list(s)), True) for name, s in members.items()])


def to_tagged_batch(rows: list[tuple[str, Row]], schema: pa.Schema, extra: Optional[Row] = None,
                    extras: Optional[list[Row]] = None) -> pa.RecordBatch:
    """Tagged rows as one batch, in their order; key columns come from ``extra`` (the same for
    every row), or ``extras`` (one dict per row), or else from each row's value of that name.
    Each member's struct column is built from its own rows only and spread to their places
    (null elsewhere) by one take: no second dict per row, no nulls converted one by one."""
    keys = [n for n in schema.names[1:] if not pa.types.is_struct(schema.field(n).type)]
    names = [n for n in schema.names[1:] if n not in keys]
    n = len(rows)
    if extras is None:
        extras = [extra or {}] * n
    kinds = [kind for kind, _ in rows]
    arrays = [pa.array(kinds, schema.field("record_type").type)]
    arrays += [pa.array([ex[k] if k in ex else row.get(k) for (_, row), ex in zip(rows, extras)],
                        schema.field(k).type) for k in keys]
    rows_of: dict[str, list[int]] = {}  # each member's row indexes, in one pass over the rows
    for i, kind in enumerate(kinds):
        rows_of.setdefault(kind, []).append(i)
    for name in names:
        struct = schema.field(name).type
        at = rows_of.get(name)
        if not at:
            arrays.append(pa.nulls(n, struct))
            continue
        member = pa.array([rows[i][1] for i in at], struct)
        if len(at) < n:
            places: list[Optional[int]] = [None] * n
            for j, i in enumerate(at):
                places[i] = j
            member = member.take(pa.array(places, pa.int32()))
        arrays.append(member)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def to_member_batch(member: pa.Array, schema: pa.Schema, kind: str, keys: dict[str, list],
                    column: Optional[str] = None) -> pa.RecordBatch:
    """Rows all of member ``kind`` (``member``: its struct column, e.g. from batch_struct) as
    one tagged batch: the other members are null and ``keys`` holds each key column's values.
    ``column``: the member's struct column when it is not named ``kind`` (a second record_type
    of one member's rows).
    What to_tagged_batch gives for such rows, without a second dict per row (the decode's
    batch rows: one per batch of the copy)."""
    n = len(member)
    arrays = []
    for field in schema:
        if field.name == "record_type":
            arrays.append(pa.array([kind] * n, field.type))
        elif field.name == (column or kind):
            arrays.append(member)
        elif pa.types.is_struct(field.type):
            arrays.append(pa.nulls(n, field.type))
        else:
            arrays.append(pa.array(keys[field.name], type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
