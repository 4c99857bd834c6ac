"""A ``__consumer_offsets`` replica read into the rows logscan.state.offsets replays.

Each segment is walked in log order (a window at a time, as the scan reads every log); a
batch whose checksum fails, a record that does not decode and a decompression budget spent
are located findings, the rest goes on. Two kinds of rows come out, in log order:

* an offset commit (OffsetCommit records, key types 0 and 1, and the magic 0/1 messages of a
  log written before 0.11): the committing group, topic and partition with the committed
  offset (None for a tombstone), and the batch's producer id and epoch, which is all the
  group coordinator looks at to tell a transactional commit from a plain one
  (``OffsetMetadataManager.replay``: ``producerId == NO_PRODUCER_ID``);
* a transaction marker (a COMMIT or ABORT control batch): its producer id and epoch.

Group metadata and the KIP-848/932/1071 records are not rows: they do not move offsets.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Iterable, Iterator, Optional

from logscan.format.batch import RecordBatch, iter_records
from logscan.format.compression import DecompressionBudget
from logscan.format.errors import DecodeError, DecompressionBudgetSpent
from logscan.format.legacy import LegacyBatch, iter_legacy_records
from logscan.format.logfile import walk_windows
from logscan.format.offsets import decode_offsets_record
from logscan.logdir.segment import Finding, LogWindows
from logscan.logdir.tree import ReplicaDir
from logscan.state.facts import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from logscan.state.offsets import COMMIT_KINDS, MARKER, OFFSET_COMMIT

from .replica import batch_fact, crc_finding, segment_budget
from .rows import Row

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
#: CoordinatorRecordType: LegacyOffsetCommit (key version 0) and OffsetCommit (1)
OFFSET_COMMIT_TYPES = (0, 1)


def commit_row(offsets_partition: int, offset: int, timestamp_ms: int, producer_id: int, producer_epoch: int,
               key, value) -> Optional[Row]:
    """The row of one decoded ``__consumer_offsets`` record, or None when it is not an offset
    commit. Raises DecodeError for a record that does not decode."""
    rec = decode_offsets_record(key, value)
    if rec.record_type not in OFFSET_COMMIT_TYPES:
        return None
    v = rec.value
    return {"kind": OFFSET_COMMIT, "offsets_partition": offsets_partition, "offset": offset,
            "timestamp_ms": timestamp_ms, "producer_id": producer_id, "producer_epoch": producer_epoch,
            "group_id": rec.key["group"], "topic": rec.key["topic"], "partition": rec.key["partition"],
            "committed_offset": None if v is None else v["offset"],
            "leader_epoch": None if v is None else v["leaderEpoch"],
            "metadata": None if v is None else v["metadata"],
            "commit_timestamp_ms": None if v is None else v["commitTimestamp"]}


def marker_row(offsets_partition: int, offset: int, timestamp_ms: int, producer_id: int, producer_epoch: int,
               control_type: str) -> Row:
    return {"kind": MARKER, "offsets_partition": offsets_partition, "offset": offset,
            "timestamp_ms": timestamp_ms, "producer_id": producer_id, "producer_epoch": producer_epoch,
            "control_type": control_type}


def _batch_rows(path: str, partition: int, position: int, records: Iterable, producer_id: int, producer_epoch: int,
                findings: list[Finding], budget: DecompressionBudget) -> Iterator[Row]:
    """The commit rows of one batch's ``records`` (each with offset, timestamp, key and value;
    a v2 batch's or a legacy wrapper's): a record that does not decode is a finding at the
    batch and the next goes on; records that cannot be read end the batch with one."""
    try:
        for rec in records:
            try:
                row = commit_row(partition, rec.offset, rec.timestamp, producer_id, producer_epoch, rec.key, rec.value)
            except DecodeError as err:
                findings.append(Finding(path, position, err.reason, f"offset {rec.offset}: {err.message}"))
                continue
            if row is not None:
                yield row
    except DecompressionBudgetSpent as e:
        if e.position == budget.spent_at:  # said once per segment, where it was spent
            findings.append(Finding.from_error(path, e))
    except DecodeError as e:
        findings.append(Finding.from_error(path, e))


def segment_rows(path: str, partition: int, findings: list[Finding]) -> Iterator[Row]:
    """One ``__consumer_offsets`` segment's commit and marker rows, in log order."""
    with ExitStack() as stack:
        try:
            log = stack.enter_context(LogWindows(path))
        except OSError as e:
            findings.append(Finding(path, -1, "io", str(e)))
            return
        budget = segment_budget(log.size)  # --max-decompressed-ratio and the rest (replica.BUDGET_ENV)
        for entry, win in walk_windows(log):
            if not isinstance(entry, (RecordBatch, LegacyBatch)):
                findings.append(Finding.from_error(path, entry))
                continue
            if not entry.crc_valid:
                findings.append(crc_finding(path, entry))
                continue
            fact = batch_fact(win.buf, entry, path, findings, win.base) if isinstance(entry, RecordBatch) else None
            yield from batch_rows(win.buf, entry, fact, partition, path, findings, win.base, budget)


def batch_rows(buf, entry, fact, partition: int, path: str, findings: list[Finding], base: int,
               budget: DecompressionBudget) -> Iterator[Row]:
    """The commit and marker rows of one checksum-valid entry of a ``__consumer_offsets``
    segment (``fact``: a v2 batch's batch fact, None for a v0/v1 entry), read from ``buf``, a
    window of the log starting at byte ``base``: what the scan's decode calls as it walks the
    replica (replica.iter_segment's ``offsets``), so the partition is read once."""
    if isinstance(entry, LegacyBatch):   # before 0.11: no producer, never transactional
        yield from _batch_rows(path, partition, entry.position, iter_legacy_records(entry, budget=budget),
                               NO_PRODUCER_ID, NO_PRODUCER_EPOCH, findings, budget)
    elif entry.is_control:
        if fact.control_type in COMMIT_KINDS:
            yield marker_row(partition, entry.base_offset, fact.marker_timestamp, entry.producer_id,
                             entry.producer_epoch, fact.control_type)
    else:
        yield from _batch_rows(path, partition, entry.position, iter_records(buf, entry, base=base, budget=budget),
                               entry.producer_id, entry.producer_epoch, findings, budget)


def replica_rows(replica: ReplicaDir, findings: Optional[list[Finding]] = None) -> Iterator[Row]:
    """Every segment of a ``__consumer_offsets`` replica, in log order; findings go to
    ``findings`` as they are met."""
    findings = [] if findings is None else findings
    for _, path in replica.segments:
        yield from segment_rows(str(path), replica.partition, findings)
