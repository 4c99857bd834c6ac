"""Each transactional id's history across the cluster (issue 35 item 4): its producer ids and
epochs over time, its transactions by outcome with their durations, fences and timeouts, from
the coordinator's ``__transaction_state`` records and the data partitions' transaction spans.
What klog's txn-stat gives for one file, over plain rows.

From the records of one replica per coordinator partition, in log order (each id lives in one
coordinator partition; the coordinator writes every transition):

- a **transaction** runs from an Ongoing record to the CompleteCommit or CompleteAbort record
  of the same producer id and TransactionStartTimestampMs; its **duration** is that record's
  TransactionLastUpdateTimestampMs minus the start, the coordinator's own clock. One whose
  last record is Ongoing or Prepare* is still open.
- a **timeout** is an abort the coordinator began itself: its PrepareAbort (else
  CompleteAbort) was written at least TransactionTimeoutMs after the start, the condition of
  TransactionCoordinator.abortTimedOutTransactions (``txnStartTimestamp + txnTimeoutMs < now``).
- a **fence** is a re-initialisation: an Empty record (written only by InitProducerId, which
  bumps the epoch or gives a new producer id) after an earlier record of the id: it fences the
  producer instance before it, aborting the transaction that instance had open (the
  ``fenced`` scenario: Ongoing e0, PrepareAbort e1, CompleteAbort e1, Empty e2).
- **producers**: the producer ids in the order the records name them, each with its first and
  last epoch and the time span of its records.

``__transaction_state`` is compacted: once the cleaner has run, only each id's last record is
left of the older segments, so the counts are those of the records the copy holds (the
``records`` figure says how many).

From the spans (one per transaction per partition replica; the replicas of a partition count
once), mapped to the id through the producer ids its records name (ProducerId,
PreviousProducerId, NextProducerId): span counts by outcome and span durations, as txn-stat
counts a file's transactions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional

from .coordinator import NO_PRODUCER_ID, TxnLogRecord

OUTCOMES = {"CompleteCommit": "COMMIT", "CompleteAbort": "ABORT"}


@dataclass(frozen=True, slots=True)
class ProducerRun:
    """One producer id of a transactional id, as its records name it."""

    producer_id: int
    first_epoch: int
    last_epoch: int
    first_ms: int     # TransactionLastUpdateTimestampMs of its first record
    last_ms: int      # and of its last


@dataclass(frozen=True, slots=True)
class Durations:
    count: int
    p50_ms: Optional[int]
    p99_ms: Optional[int]
    max_ms: Optional[int]


@dataclass
class IdHistory:
    transactional_id: str
    records: int = 0
    producers: list[ProducerRun] = field(default_factory=list)
    committed: int = 0
    aborted: int = 0
    open: int = 0           # a transaction whose last record is Ongoing or Prepare*
    timeouts: int = 0
    fences: int = 0
    durations: Durations = Durations(0, None, None, None)
    span_outcomes: dict[str, int] = field(default_factory=dict)   # COMMIT/ABORT/OPEN -> spans
    span_durations: Durations = Durations(0, None, None, None)
    last_state: Optional[str] = None   # the id's last record's state; None: a tombstone (expired)


def percentile(values: list[int], p: float) -> Optional[int]:
    """Nearest-rank percentile: the smallest value with at least ``p`` of the values at or
    below it (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def durations(values: list[int]) -> Durations:
    return Durations(len(values), percentile(values, 0.5), percentile(values, 0.99), max(values) if values else None)


def _producers(records: list[TxnLogRecord]) -> list[ProducerRun]:
    runs: list[ProducerRun] = []
    for r in records:
        if r.state is None or r.producer_id == NO_PRODUCER_ID:
            continue
        if runs and runs[-1].producer_id == r.producer_id:
            last = runs[-1]
            runs[-1] = ProducerRun(last.producer_id, last.first_epoch, r.producer_epoch, last.first_ms,
                                   r.last_update_timestamp_ms)
        else:
            runs.append(ProducerRun(r.producer_id, r.producer_epoch, r.producer_epoch, r.last_update_timestamp_ms,
                                    r.last_update_timestamp_ms))
    return runs


def history_of(transactional_id: str, records: list[TxnLogRecord]) -> IdHistory:
    """One id's history from its records in log order."""
    h = IdHistory(transactional_id, records=len(records), producers=_producers(records))
    h.last_state = records[-1].state if records else None
    # a transaction: (producer id, start timestamp) -> its records' states in order
    open_txn: Optional[tuple[int, int]] = None
    abort_began: dict[tuple[int, int], TxnLogRecord] = {}
    took: list[int] = []
    for i, r in enumerate(records):
        if r.state == "Empty" and i > 0:
            h.fences += 1
        if r.state in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            open_txn = (r.producer_id, r.start_timestamp_ms)
            if r.state == "PrepareAbort":
                abort_began.setdefault(open_txn, r)
        elif r.state in OUTCOMES:
            key = (r.producer_id, r.start_timestamp_ms)
            if OUTCOMES[r.state] == "COMMIT":
                h.committed += 1
            else:
                h.aborted += 1
                began = abort_began.get(key, r)
                if began.last_update_timestamp_ms - r.start_timestamp_ms >= r.transaction_timeout_ms > 0:
                    h.timeouts += 1
            if r.start_timestamp_ms >= 0:
                took.append(r.last_update_timestamp_ms - r.start_timestamp_ms)
            open_txn = None
        else:   # Empty, Dead, a tombstone: no transaction in progress
            open_txn = None
    h.open = 1 if open_txn is not None else 0
    h.durations = durations(took)
    return h


def transactional_id_history(records: Iterable[TxnLogRecord], spans: Iterable[dict] = ()) -> dict[str, IdHistory]:
    """Transactional id -> its history. ``records``: every record of one replica per
    coordinator partition (in any order: they are put in log order per partition);
    ``spans``: txn_spans rows (every replica's; each partition's transaction counts once, its
    closed span over an open one)."""
    by_id: dict[str, list[TxnLogRecord]] = {}
    for r in sorted(records, key=lambda r: (r.coordinator_partition, r.offset)):
        by_id.setdefault(r.transactional_id, []).append(r)
    out = {tid: history_of(tid, recs) for tid, recs in by_id.items()}
    owner: dict[int, str] = {}
    for tid, recs in by_id.items():
        for r in recs:
            for pid in (r.producer_id, r.previous_producer_id, r.next_producer_id):
                if pid != NO_PRODUCER_ID:
                    owner.setdefault(pid, tid)
    unique: dict[tuple, dict] = {}
    for s in spans:
        key = (s["topic"], s["partition"], s["producer_id"], s["first_offset"])
        if key not in unique or (unique[key]["outcome"] == "OPEN" and s["outcome"] != "OPEN"):
            unique[key] = s
    took: dict[str, list[int]] = {}
    for s in unique.values():
        tid = owner.get(s["producer_id"])
        if tid is None:
            continue
        h = out[tid]
        h.span_outcomes[s["outcome"]] = h.span_outcomes.get(s["outcome"], 0) + 1
        if s.get("duration_ms") is not None:
            took.setdefault(tid, []).append(s["duration_ms"])
    for tid, values in took.items():
        out[tid].span_durations = durations(values)
    return out


def history_rows(histories: dict[str, IdHistory]) -> list[dict]:
    """A transactional_id_history row per id, by id."""
    out = []
    for tid in sorted(histories):
        h = histories[tid]
        out.append({"transactional_id": tid, "records": h.records, "last_state": h.last_state,
                    "producers": [{"producer_id": p.producer_id, "first_epoch": p.first_epoch,
                                   "last_epoch": p.last_epoch, "first_ms": p.first_ms, "last_ms": p.last_ms}
                                  for p in h.producers],
                    "committed": h.committed, "aborted": h.aborted, "open": h.open, "timeouts": h.timeouts,
                    "fences": h.fences, "duration_p50_ms": h.durations.p50_ms, "duration_p99_ms": h.durations.p99_ms,
                    "duration_max_ms": h.durations.max_ms,
                    "span_commits": h.span_outcomes.get("COMMIT", 0), "span_aborts": h.span_outcomes.get("ABORT", 0),
                    "span_open": h.span_outcomes.get("OPEN", 0), "span_duration_p50_ms": h.span_durations.p50_ms,
                    "span_duration_p99_ms": h.span_durations.p99_ms, "span_duration_max_ms": h.span_durations.max_ms})
    return out
