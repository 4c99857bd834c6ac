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
from typing import Callable, Iterable, Iterator, NamedTuple, Optional

from .coordinator import NO_PRODUCER_ID, TxnLogRecord

OUTCOMES = {"CompleteCommit": "COMMIT", "CompleteAbort": "ABORT"}


class ProducerRun(NamedTuple):
    """One producer id of a transactional id, as its records name it. A NamedTuple, as
    Durations: the history makes one per id at least (47,016 and 94,032 of them on make
    bench's cores copy), and a frozen dataclass's object.__setattr__ calls took 0.55 and
    0.48 us each against 0.23 (min of 7 x 100,000, 2026-12-07), as coordinator.TxnLogRecord found."""

    producer_id: int
    first_epoch: int
    last_epoch: int
    first_ms: int     # TransactionLastUpdateTimestampMs of its first record
    last_ms: int      # and of its last


class Durations(NamedTuple):
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
    """One id's history, its records folded one at a time in log order, then its spans. Its
    figures are held as plain slots and counters (a producer's run as a list) and made an
    IdHistory once, by finish(): a record (an IdHistory field or a ProducerRun made anew)
    at a time cost more than the rule's own work (issue 30: 1.80 s under cProfile of the
    driver's 5.2 s on make bench's cores copy, 47,015 ids, 2026-12-07)."""

    __slots__ = ("tid", "first", "records", "runs", "_run", "committed", "aborted", "timeouts", "fences",
                 "last_state", "_open", "_abort_began", "durations", "spans", "span_outcomes", "held",
                 "held_spans", "record_durations", "span_durations")

    def __init__(self, transactional_id: str, first: tuple[int, int] = (0, 0)) -> None:
        self.tid = transactional_id
        self.first = first   # (coordinator partition, offset) of its first record
        self.records = self.committed = self.aborted = self.timeouts = self.fences = 0
        self.runs: list[list] = []   # [producer id, first epoch, last epoch, first ms, last ms]
        self._run: Optional[list] = None
        self.last_state: Optional[str] = None
        # the transaction in progress: (producer id, start timestamp); and the PrepareAbort
        # of each abort the coordinator began and has not completed yet (None: none yet)
        self._open: Optional[tuple[int, int]] = None
        self._abort_began: Optional[dict[tuple[int, int], TxnLogRecord]] = None
        self.durations = 0   # the durations add() gave
        self.spans = 0       # the span durations counted
        self.span_outcomes: Optional[dict[str, int]] = None
        # the first HELD_DURATIONS of each kind's durations (None: none yet; _SPILLED: past
        # that, every one of them went through the history's ``order``), and what they make
        self.held: object = None
        self.held_spans: object = None
        self.record_durations = self.span_durations = _NO_DURATIONS

    def add(self, r: TxnLogRecord) -> Optional[int]:
        """Takes the id's next record; gives the duration of the transaction it completes."""
        _, _, _, state, pid, _, _, epoch, timeout, _, last_ms, start_ms, _ = r
        if state == "Empty" and self.records > 0:
            self.fences += 1
        self.records += 1
        self.last_state = state
        if state is not None and pid != NO_PRODUCER_ID:
            run = self._run
            if run is not None and run[0] == pid:
                run[2] = epoch
                run[4] = last_ms
            else:
                self._run = run = [pid, epoch, epoch, last_ms, last_ms]
                self.runs.append(run)
        if state in _IN_PROGRESS:
            self._open = opened = (pid, start_ms)
            if state == "PrepareAbort":
                began = self._abort_began
                if began is None:
                    self._abort_began = {opened: r}
                elif opened not in began:
                    began[opened] = r
            return None
        self._open = None   # Empty, Dead, a tombstone: no transaction in progress; or its end
        outcome = OUTCOMES.get(state)
        if outcome is None:
            return None
        began = self._abort_began.pop((pid, start_ms), r) if self._abort_began else r
        if outcome == "COMMIT":
            self.committed += 1
        else:
            self.aborted += 1
            if began.last_update_timestamp_ms - start_ms >= timeout > 0:
                self.timeouts += 1
        if start_ms < 0:
            return None
        self.durations += 1
        return last_ms - start_ms

    def row(self) -> dict:
        """history_rows's row of finish()'s IdHistory, made from the fold itself: the history
        step's rows (transactional_id_history_rows) without an IdHistory, its ProducerRuns and
        Durations made first, a row per id (47,016 on make bench's cores copy, 2026-12-08)."""
        p50, p99, top = _percentiles(self.held, self.record_durations)
        s50, s99, stop = _percentiles(self.held_spans, self.span_durations)
        outcomes = self.span_outcomes
        if outcomes is None:
            commits = aborts = opened = 0
        else:
            commits, aborts, opened = outcomes.get("COMMIT", 0), outcomes.get("ABORT", 0), outcomes.get("OPEN", 0)
        return {"transactional_id": self.tid, "records": self.records, "last_state": self.last_state,
                "producers": [{"producer_id": pid, "first_epoch": first_epoch, "last_epoch": last_epoch,
                               "first_ms": first_ms, "last_ms": last_ms}
                              for pid, first_epoch, last_epoch, first_ms, last_ms in self.runs],
                "committed": self.committed, "aborted": self.aborted, "open": 1 if self._open is not None else 0,
                "timeouts": self.timeouts, "fences": self.fences, "duration_p50_ms": p50, "duration_p99_ms": p99,
                "duration_max_ms": top, "span_commits": commits, "span_aborts": aborts, "span_open": opened,
                "span_duration_p50_ms": s50, "span_duration_p99_ms": s99, "span_duration_max_ms": stop}

    def finish(self) -> IdHistory:
        held = self.held
        if held is not None and held is not _SPILLED:
            self.record_durations = _durations_of(held)
        held = self.held_spans
        if held is not None and held is not _SPILLED:
            self.span_durations = _durations_of(held)
        return IdHistory(self.tid, records=self.records, producers=[ProducerRun(*run) for run in self.runs],
                         committed=self.committed, aborted=self.aborted, open=1 if self._open is not None else 0,
                         timeouts=self.timeouts, fences=self.fences, durations=self.record_durations,
                         span_outcomes=self.span_outcomes if self.span_outcomes is not None else {},
                         span_durations=self.span_durations, last_state=self.last_state)


def _percentiles(held: Optional[list], durations) -> tuple:
    """(p50, p99, max) of an id's durations of one kind: of ``held``, the few its fold kept
    (HELD_DURATIONS), else of ``durations`` (the Durations the history's order gave it)."""
    _, p50, p99, top = durations if held is None or held is _SPILLED else _durations_of(held)
    return p50, p99, top


#: The states of a transaction in progress.
_IN_PROGRESS = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
_NO_DURATIONS = Durations(0, None, None, None)
#: How many durations of each kind (its transactions', its spans') an id's fold holds before
#: they all go through the history's ``order``: the percentiles of so few are taken in
#: memory, and the sort, the spilling and the grouping of what it gives are spared them. On
#: make bench's cores copy one id of 47,016 had more (9 span durations; 88,296 spans,
#: 2026-12-07); what is held stays a few values per id, as the fold itself is.
HELD_DURATIONS = 8
_SPILLED = object()
#: _rank(n, 0.5) and _rank(n, 0.99) of the n values an id's fold may hold (n <= HELD_DURATIONS).
_AT50 = [_rank(n, 0.5) for n in range(HELD_DURATIONS + 1)]
_AT99 = [_rank(n, 0.99) for n in range(HELD_DURATIONS + 1)]


def _durations_of(values: list[int]) -> Durations:
    """:func:`_durations_in_order` of a few values held in memory, in any order."""
    n = len(values)
    if n == 1:
        (v,) = values
        return Durations(1, v, v, v)
    values.sort()
    return Durations(n, values[_AT50[n]], values[_AT99[n]], values[-1]) if n <= HELD_DURATIONS else \
        Durations(n, values[_rank(n, 0.5)], values[_rank(n, 0.99)], values[-1])


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
    What is held: a fold per id (with at most HELD_DURATIONS durations of each kind) and the
    owner of each producer id; the spans (unless in order) and the durations of an id past
    those its fold holds go through ``order`` (by span, then by id: what the percentiles
    need)."""
    return {tid: fold.finish() for tid, fold in _folds(records, spans, order, spans_in_order).items()}


def transactional_id_history_rows(records: Iterable[TxnLogRecord], spans: Iterable[dict] = (), *,
                                  order: Order = sorted, spans_in_order: bool = False) -> list[dict]:
    """history_rows(transactional_id_history(...)), each row made from its id's fold: what the
    history step gives. The IdHistory, ProducerRuns and Durations of each id, made and read
    once, took 0.80 of the 1.77 s of the step under cProfile on make bench's cores copy
    (47,016 ids, 2026-12-08)."""
    folds = _folds(records, spans, order, spans_in_order)
    return [folds[tid].row() for tid in sorted(folds)]


def _folds(records: Iterable[TxnLogRecord], spans: Iterable[dict], order: Order,
           spans_in_order: bool) -> dict[str, _IdFold]:
    """The fold of each id, finished but for finish() (transactional_id_history's arguments)."""
    folds: dict[str, _IdFold] = {}
    # producer id -> (first record's place, fold) of the id naming it whose first record comes
    # first in the log order: a record's place is (coordinator partition, offset)
    owner: dict[int, tuple[tuple[int, int], _IdFold]] = {}

    def durations_of_records() -> Iterator[tuple]:
        for r in records:
            tid = r.transactional_id
            fold = folds.get(tid)
            if fold is None:
                fold = folds[tid] = _IdFold(tid, (r.coordinator_partition, r.offset))
            at = fold.first
            for pid in (r.producer_id, r.previous_producer_id, r.next_producer_id):
                if pid != NO_PRODUCER_ID:
                    named = owner.get(pid)
                    if named is None or named[0] > at:
                        owner[pid] = (at, fold)
            ms = fold.add(r)
            if ms is not None:
                held = fold.held
                if held is None:
                    fold.held = [ms]
                elif held is _SPILLED:
                    yield tid, _RECORDS, ms
                elif len(held) < HELD_DURATIONS:
                    held.append(ms)
                else:
                    fold.held = _SPILLED
                    for v in held:
                        yield tid, _RECORDS, v
                    yield tid, _RECORDS, ms

    def durations_of_spans() -> Iterator[tuple]:
        for s in _each_transaction_once(spans if spans_in_order else order(spans, key=_SPAN_KEY)):
            entry = owner.get(s["producer_id"])
            if entry is None:
                continue
            fold = entry[1]
            outcome = s["outcome"]
            outcomes = fold.span_outcomes
            if outcomes is None:
                fold.span_outcomes = {outcome: 1}
            else:
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
            ms = s.get("duration_ms")
            if ms is not None:
                fold.spans += 1
                held = fold.held_spans
                if held is None:
                    fold.held_spans = [ms]
                elif held is _SPILLED:
                    yield fold.tid, _SPANS, ms
                elif len(held) < HELD_DURATIONS:
                    held.append(ms)
                else:
                    fold.held_spans = _SPILLED
                    for v in held:
                        yield fold.tid, _SPANS, v
                    yield fold.tid, _SPANS, ms

    # the records first (they name the producer ids' owners), then the spans; (id, kind, ms)
    # tuples, each compared whole: of an id's durations of a kind, those past the few its fold
    # holds (HELD_DURATIONS), all of them
    values = order(chain(durations_of_records(), durations_of_spans()), key=None)
    for (tid, kind), rows in groupby(values, key=itemgetter(0, 1)):
        fold = folds[tid]
        if kind == _RECORDS:
            fold.record_durations = _durations_in_order((r[2] for r in rows), fold.durations)
        else:
            fold.span_durations = _durations_in_order((r[2] for r in rows), fold.spans)
    return folds


def _each_transaction_once(spans: Iterable[dict]) -> Iterator[dict]:
    """Spans in _SPAN_KEY order, a transaction once: the first of its spans, or its first
    closed one when the first is open."""
    kept: Optional[dict] = None
    kept_key: object = None   # _SPAN_KEY(kept): a tuple, never None
    for s in spans:
        key = _SPAN_KEY(s)
        if key == kept_key:
            if kept["outcome"] == "OPEN" and s["outcome"] != "OPEN":
                kept = s
            continue
        if kept is not None:
            yield kept
        kept, kept_key = s, key
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
        d, sd, outcomes = h.durations, h.span_durations, h.span_outcomes
        out.append({"transactional_id": tid, "records": h.records, "last_state": h.last_state,
                    "producers": [{"producer_id": p.producer_id, "first_epoch": p.first_epoch,
                                   "last_epoch": p.last_epoch, "first_ms": p.first_ms, "last_ms": p.last_ms}
                                  for p in h.producers],
                    "committed": h.committed, "aborted": h.aborted, "open": h.open, "timeouts": h.timeouts,
                    "fences": h.fences, "duration_p50_ms": d.p50_ms, "duration_p99_ms": d.p99_ms,
                    "duration_max_ms": d.max_ms,
                    "span_commits": outcomes.get("COMMIT", 0), "span_aborts": outcomes.get("ABORT", 0),
                    "span_open": outcomes.get("OPEN", 0), "span_duration_p50_ms": sd.p50_ms,
                    "span_duration_p99_ms": sd.p99_ms, "span_duration_max_ms": sd.max_ms})
    return out
