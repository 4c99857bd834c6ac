"""Reading one replica's files into the plain rows Kafka's rules need.

Segments are walked in base-offset order over mmaps; only control batches (for the marker
type and coordinator epoch) and `__transaction_state` records are decoded past the header.
Every decode problem becomes a located Finding and the walk goes on.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from logscan.format.batch import RecordBatch, iter_records
from logscan.format.control import decode_control_key, decode_end_txn_marker
from logscan.format.errors import DecodeError
from logscan.format.logfile import walk_batches
from logscan.format.snapshot import decode_producer_snapshot
from logscan.format.txnlog import decode_txnlog_entry
from logscan.state.coordinator import TxnLogRecord
from logscan.state.facts import BatchFact
from logscan.state.producer_state import BatchMetadata, ProducerStateEntry

from logscan.logdir.segment import Finding, open_segment
from logscan.logdir.tree import ReplicaDir

TRANSACTION_STATE_TOPIC = "__transaction_state"


@dataclass(slots=True)
class ReplicaRead:
    """What one pass over a replica's segments produced."""

    facts: list[BatchFact] = field(default_factory=list)
    txn_log: list[TxnLogRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    first_offset: Optional[int] = None
    max_timestamp: int = -1
    bytes_read: int = 0


def batch_fact(buf, batch: RecordBatch, path: str, findings: list[Finding]) -> BatchFact:
    control_type = None
    coordinator_epoch = -1
    marker_ts = -1
    if batch.is_control and batch.records_count > 0:
        try:
            record = next(iter_records(buf, batch), None)
            if record is not None:
                key = decode_control_key(record.key, batch.position)
                control_type = key.name
                marker_ts = record.timestamp
                if key.is_transaction_marker:
                    coordinator_epoch = decode_end_txn_marker(key, record.value, batch.position).coordinator_epoch
        except DecodeError as e:
            findings.append(Finding.from_error(path, e))
            control_type = "UNREADABLE"
    return BatchFact(batch.base_offset, batch.last_offset, batch.producer_id, batch.producer_epoch,
                     batch.base_sequence, batch.last_sequence, batch.max_timestamp,
                     batch.is_transactional, batch.is_control, batch.records_count,
                     batch.size_in_bytes, control_type, coordinator_epoch, marker_ts)


def _txn_log_records(buf, batch: RecordBatch, partition: int, path: str,
                     findings: list[Finding]) -> Iterator[TxnLogRecord]:
    try:
        for rec in iter_records(buf, batch):
            try:
                e = decode_txnlog_entry(rec.key, rec.value)
            except DecodeError as err:
                findings.append(Finding(path, batch.position, err.reason,
                                        f"offset {rec.offset}: {err.message}"))
                continue
            if e.is_tombstone:
                yield TxnLogRecord(partition, rec.offset, e.transactional_id)
            else:
                yield TxnLogRecord(partition, rec.offset, e.transactional_id, e.state, e.producer_id,
                                   e.previous_producer_id, e.next_producer_id, e.producer_epoch,
                                   e.transaction_timeout_ms, e.partitions or (),
                                   e.last_update_timestamp_ms, e.start_timestamp_ms,
                                   batch.partition_leader_epoch)
    except DecodeError as e:
        findings.append(Finding.from_error(path, e))


def read_segment(path: str, partition: int, *, is_txn_log: bool, out: ReplicaRead | None = None) -> ReplicaRead:
    """One `.log` segment into batch facts (and `__transaction_state` records), appended to
    ``out``; the unit of work of a Spark task as much as of the local loop."""
    out = ReplicaRead() if out is None else out
    with ExitStack() as stack:
        try:
            seg = stack.enter_context(open_segment(path))
        except OSError as e:
            out.findings.append(Finding(path, -1, "io", str(e)))
            return out
        buf = seg.buf
        out.bytes_read += len(buf)
        for entry in walk_batches(buf, verify_crc=True):
            if isinstance(entry, DecodeError):
                out.findings.append(Finding.from_error(path, entry))
                continue
            if not isinstance(entry, RecordBatch):
                continue  # legacy v0/v1 entries carry no producer state
            if not entry.crc_valid:
                out.findings.append(Finding(path, entry.position, "crc",
                                            f"CRC mismatch in batch at offset {entry.base_offset}"))
            if out.first_offset is None:
                out.first_offset = entry.base_offset
            out.max_timestamp = max(out.max_timestamp, entry.max_timestamp)
            out.facts.append(batch_fact(buf, entry, path, out.findings))
            if is_txn_log and not entry.is_control:
                out.txn_log.extend(_txn_log_records(buf, entry, partition, path, out.findings))
    return out


def read_replica(replica: ReplicaDir) -> ReplicaRead:
    """Every segment of a replica, in base-offset order."""
    out = ReplicaRead()
    for _, path in replica.segments:
        read_segment(str(path), replica.partition, is_txn_log=replica.topic == TRANSACTION_STATE_TOPIC, out=out)
    return out


def load_snapshot_seed(replica: ReplicaDir, first_offset: Optional[int],
                       findings: list[Finding]) -> Optional[tuple[list[ProducerStateEntry], int]]:
    """The newest valid producer snapshot at or below the first offset we can replay.

    Only needed when the head of the log is gone (retention, DeleteRecords): replaying from
    the first segment otherwise rebuilds the same state the snapshot holds.
    """
    if first_offset is None or first_offset == 0 or not replica.snapshots:
        return None
    candidates = [s for s in replica.snapshots if s[0] <= first_offset]
    for base, path in reversed(candidates):
        try:
            snap = decode_producer_snapshot(Path(path).read_bytes())
        except (DecodeError, OSError) as e:
            pos = getattr(e, "position", -1)
            findings.append(Finding(str(path), pos, getattr(e, "reason", "io"), str(e)))
            continue
        entries = []
        for s in snap.entries:
            entry = ProducerStateEntry(s.producer_id, s.producer_epoch, s.coordinator_epoch, s.timestamp,
                                       None if s.current_txn_first_offset < 0 else s.current_txn_first_offset)
            if s.last_offset >= 0:
                entry.batches.append(BatchMetadata(s.last_sequence, s.last_offset, s.offset_delta, s.timestamp))
            entries.append(entry)
        return entries, base
    return None

