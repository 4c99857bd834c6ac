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
from itertools import chain, groupby, islice
from operator import itemgetter
from typing import Callable, Iterable, Iterator, Optional

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


def _rank(n: int, p: float) -> int:
    """The index, in ascending order, of the nearest-rank ``p`` percentile of ``n`` values."""
    return max(0, math.ceil(p * n) - 1)


def percentile(values: list[int], p: float) -> Optional[int]:
    """Nearest-rank percentile: the smallest value with at least ``p`` of the values at or
    below it (None for no values)."""
    if not values:
        return None
    return sorted(values)[_rank(len(values), p)]


class _IdFold:
    """One id's history, its records folded one at a time in log order."""

    __slots__ = ("h", "_open", "_abort_began", "durations")

    def __init__(self, transactional_id: str) -> None:
        self.h = IdHistory(transactional_id)
        # the transaction in progress: (producer id, start timestamp); and the PrepareAbort
        # of each abort the coordinator began and has not completed yet
        self._open: Optional[tuple[int, int]] = None
        self._abort_began: dict[tuple[int, int], TxnLogRecord] = {}
        self.durations = 0   # the durations add() gave

    def add(self, r: TxnLogRecord) -> Optional[int]:
        """Takes the id's next record; gives the duration of the transaction it completes."""
        h = self.h
        if r.state == "Empty" and h.records > 0:
            h.fences += 1
        h.records += 1
        h.last_state = r.state
        if r.state is not None and r.producer_id != NO_PRODUCER_ID:
            runs = h.producers
            if runs and runs[-1].producer_id == r.producer_id:
                last = runs[-1]
                runs[-1] = ProducerRun(last.producer_id, last.first_epoch, r.producer_epoch, last.first_ms,
                                       r.last_update_timestamp_ms)
            else:
                runs.append(ProducerRun(r.producer_id, r.producer_epoch, r.producer_epoch,
                                        r.last_update_timestamp_ms, r.last_update_timestamp_ms))
        if r.state in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            self._open = (r.producer_id, r.start_timestamp_ms)
            if r.state == "PrepareAbort":
                self._abort_began.setdefault(self._open, r)
            return None
        self._open = None   # Empty, Dead, a tombstone: no transaction in progress; or its end
        if r.state not in OUTCOMES:
            return None
        key = (r.producer_id, r.start_timestamp_ms)
        began = self._abort_began.pop(key, r)
        if OUTCOMES[r.state] == "COMMIT":
            h.committed += 1
        else:
            h.aborted += 1
            if began.last_update_timestamp_ms - r.start_timestamp_ms >= r.transaction_timeout_ms > 0:
                h.timeouts += 1
        if r.start_timestamp_ms < 0:
            return None
        self.durations += 1
        return r.last_update_timestamp_ms - r.start_timestamp_ms

    def finish(self) -> IdHistory:
        self.h.open = 1 if self._open is not None else 0
        return self.h


#: A stable sort with sorted()'s contract (an iterable and key=, giving the items in order):
#: how the history puts the spans (dicts) and the durations ((id, kind, ms) tuples, key None)
#: in order. sorted() holds them all; an executor may pass one that spills to disk
#: (logscan.scan.spool.SpoolFolder.sorted).
Order = Callable[..., Iterable]
#: The ``kind`` of a duration: a transaction's (its records') or a span's.
_RECORDS, _SPANS = 0, 1
#: A partition's transaction, in any replica: the order the spans are taken in.
SPAN_ORDER = ("topic", "partition", "producer_id", "first_offset")
_SPAN_KEY = itemgetter(*SPAN_ORDER)


def transactional_id_history(records: Iterable[TxnLogRecord], spans: Iterable[dict] = (), *,
                             order: Order = sorted, spans_in_order: bool = False) -> dict[str, IdHistory]:
    """Transactional id -> its history. ``records``: every record of one replica per
    coordinator partition, each id's in (coordinator partition, offset) order (the log order
    of each partition, partitions ascending), the ids' records interleaved in any way (all in
    that order, or an id's after another's); ``spans``: txn_spans rows (every replica's; each
    partition's transaction counts once, its closed span over an open one), any order, or,
    with ``spans_in_order``, each transaction's spans together (SPAN_ORDER's equal keys), in
    the order a stable sort by SPAN_ORDER leaves them (an executor that grouped them).
    What is held: a fold per id and the owner of each producer id; the spans (unless in
    order) and the durations go through ``order`` (by span, then by id: what the percentiles
    need)."""
    folds: dict[str, _IdFold] = {}
    # producer id -> (first record's place, id) of the id naming it whose first record comes
    # first in the log order: a record's place is (coordinator partition, offset)
    owner: dict[int, tuple[tuple[int, int], str]] = {}
    first: dict[str, tuple[int, int]] = {}

    def durations_of_records() -> Iterator[tuple]:
        for r in records:
            tid = r.transactional_id
            fold = folds.get(tid)
            if fold is None:
                fold = folds[tid] = _IdFold(tid)
                first[tid] = (r.coordinator_partition, r.offset)
            at = first[tid]
            for pid in (r.producer_id, r.previous_producer_id, r.next_producer_id):
                if pid != NO_PRODUCER_ID and (pid not in owner or owner[pid][0] > at):
                    owner[pid] = (at, tid)
            ms = fold.add(r)
            if ms is not None:
                yield tid, _RECORDS, ms

    def durations_of_spans() -> Iterator[tuple]:
        spans_of: dict[str, int] = {}
        for s in _each_transaction_once(spans if spans_in_order else order(spans, key=_SPAN_KEY)):
            entry = owner.get(s["producer_id"])
            if entry is None:
                continue
            tid = entry[1]
            h = folds[tid].h
            h.span_outcomes[s["outcome"]] = h.span_outcomes.get(s["outcome"], 0) + 1
            ms = s.get("duration_ms")
            if ms is not None:
                spans_of[tid] = spans_of.get(tid, 0) + 1
                yield tid, _SPANS, ms
        counts.update(spans_of)

    counts: dict[str, int] = {}
    # the records first (they name the producer ids' owners), then the spans; (id, kind, ms)
    # tuples, each compared whole
    values = order(chain(durations_of_records(), durations_of_spans()), key=None)
    for (tid, kind), rows in groupby(values, key=itemgetter(0, 1)):
        n = folds[tid].durations if kind == _RECORDS else counts[tid]
        d = _durations_in_order((r[2] for r in rows), n)
        if kind == _RECORDS:
            folds[tid].h.durations = d
        else:
            folds[tid].h.span_durations = d
    return {tid: fold.finish() for tid, fold in folds.items()}


def _each_transaction_once(spans: Iterable[dict]) -> Iterator[dict]:
    """Spans in _SPAN_KEY order, a transaction once: the first of its spans, or its first
    closed one when the first is open."""
    kept: Optional[dict] = None
    for s in spans:
        if kept is not None and _SPAN_KEY(s) == _SPAN_KEY(kept):
            if kept["outcome"] == "OPEN" and s["outcome"] != "OPEN":
                kept = s
            continue
        if kept is not None:
            yield kept
        kept = s
    if kept is not None:
        yield kept


def _durations_in_order(values: Iterable[int], n: int) -> Durations:
    """The count, nearest-rank p50 and p99 and the max of ``n`` values given in ascending
    order (a value at a time)."""
    at50, at99 = _rank(n, 0.5), _rank(n, 0.99)
    values = iter(values)
    p50 = next(islice(values, at50, None), None)
    p99 = p50 if at99 == at50 else next(islice(values, at99 - at50 - 1, None), None)
    last = p99
    for last in values:
        pass
    return Durations(n, p50, p99, last)


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
