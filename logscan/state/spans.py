"""Transaction spans: one row per transaction per partition replica.

A span opens at a producer's first transactional data batch (exactly where Kafka sets
currentTxnFirstOffset) and closes at the COMMIT/ABORT marker that completes it. Spans still
open at the end of the log are the ones that pin the LSO.

A replay keeps only the open spans (at most one per producer): a span leaves through the
replay's ``on_close`` callback as its marker arrives, so the memory of a replica's replay
does not grow with the number of its transactions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from .columns import FactColumns, shifted, starts
from .facts import NO_TIMESTAMP, BatchFact
from .producer_state import ProducerStateEntry, ProducerStateManager

OPEN = "OPEN"


@dataclass(slots=True)
class TxnSpan:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_data_offset: int
    start_timestamp: int
    last_timestamp: int
    batches: int = 0
    records: int = 0
    bytes: int = 0
    end_marker_offset: Optional[int] = None
    end_marker_epoch: Optional[int] = None
    outcome: str = OPEN  # OPEN, COMMIT or ABORT
    coordinator_epoch: Optional[int] = None
    end_timestamp: Optional[int] = None
    # True when the span was opened by a producer snapshot: its earlier batches are not in
    # the scanned segments (deleted by retention, or before the scan start).
    from_snapshot: bool = False
    # Ordinal of the span within the replica, in the order the spans opened (txn_spans.span_index).
    index: int = 0

    @property
    def duration_ms(self) -> Optional[int]:
        if self.end_timestamp is None or self.start_timestamp == NO_TIMESTAMP:
            return None
        return self.end_timestamp - self.start_timestamp


@dataclass(slots=True)
class ReplicaReplay:
    """What one pass over a replica's batches leaves: the producers and the spans still open.
    Closed spans went to the replay's ``on_close`` as they closed; ``closed_spans`` holds them
    only when the caller kept them (``replay`` does)."""

    producers: ProducerStateManager
    open_spans: list[TxnSpan]  # by index
    closed_spans: list[TxnSpan] = field(default_factory=list)

    @property
    def spans(self) -> list[TxnSpan]:
        """Every span kept, by index (the order they opened)."""
        return sorted(self.closed_spans + self.open_spans, key=lambda s: s.index)


#: Called with each span as its end marker closes it.
OnClose = Callable[[TxnSpan], None]


class Replay:
    """A replay fed one batch at a time (offset order), so a replica's batches can stream
    through it: memory holds the producers and the open spans, never the batches nor the
    closed spans (each goes to ``on_close`` as its marker arrives, then is dropped)."""

    def __init__(self, seed: Optional[tuple[Iterable[ProducerStateEntry], int]] = None,
                 on_close: Optional[OnClose] = None, *, high_watermark_floor: Optional[int] = None) -> None:
        self.producers = ProducerStateManager(high_watermark_floor)
        self._on_close = on_close
        self._current: dict[int, TxnSpan] = {}  # producer id -> its open span
        self._opened = 0
        self._start = 0
        if seed is not None:
            entries, self._start = seed
            entries = list(entries)
            self.producers.seed(entries, self._start)
            for e in entries:
                if e.current_txn_first_offset is not None:
                    self._open(TxnSpan(e.producer_id, e.producer_epoch, e.current_txn_first_offset,
                                       e.last_data_offset, NO_TIMESTAMP, e.last_timestamp, from_snapshot=True))

    def _open(self, span: TxnSpan) -> TxnSpan:
        span.index = self._opened
        self._opened += 1
        self._current[span.producer_id] = span
        return span

    @property
    def open_spans(self) -> list[TxnSpan]:
        return sorted(self._current.values(), key=lambda s: s.index)

    def feed(self, batch: BatchFact) -> None:
        if batch.last_offset < self._start:
            return
        current = self._current
        producer_id = batch.producer_id
        was_open = producer_id in current
        completed = self.producers.append(batch)
        if producer_id < 0:
            return
        if not batch.is_control:
            if batch.is_transactional:
                span = current.get(producer_id)
                if span is None:
                    span = self._open(TxnSpan(producer_id, batch.producer_epoch, batch.base_offset,
                                              batch.last_offset, batch.max_timestamp, batch.max_timestamp))
                span.last_data_offset = batch.last_offset
                span.last_timestamp = batch.max_timestamp
                span.batches += 1
                span.records += batch.records_count
                span.bytes += batch.size_in_bytes
        elif completed is not None and was_open:
            span = current.pop(producer_id)
            span.end_marker_offset = batch.base_offset
            span.end_marker_epoch = batch.producer_epoch
            span.outcome = "ABORT" if completed.is_aborted else "COMMIT"
            span.coordinator_epoch = batch.coordinator_epoch
            span.end_timestamp = batch.marker_timestamp
            if self._on_close is not None:
                self._on_close(span)

    def feed_facts(self, facts: Iterable[BatchFact]) -> None:
        """feed() of each of ``facts``, in order, in one loop (ReplicaAnalyser._feed_rows': a
        segment of few batches): ProducerStateManager.append's own steps (the map end offset,
        the producer's entry) held in locals, its rules called as append() calls them
        (_append_data, _append_marker), each fact's fields read at once. feed() a fact at a
        time took ~9% of the bench copy's scan CPU samples (91,584 batches, 2026-12-08)."""
        start, current, on_close = self._start, self._current, self._on_close
        psm = self.producers
        producers = psm.producers
        append_data, append_marker = psm._append_data, psm._append_marker
        end = None
        for batch in facts:
            (base, last, producer_id, epoch, _, _, max_timestamp, transactional, control, records, size, _,
             coordinator_epoch, marker_timestamp) = batch
            if last < start:
                continue
            end = last + 1
            if producer_id < 0:
                continue
            entry = producers.get(producer_id)
            if entry is None:
                entry = producers[producer_id] = ProducerStateEntry(producer_id)
            if control:
                span = current.get(producer_id)   # (the span open before the marker)
                completed = append_marker(entry, batch)
                if completed is not None and span is not None:
                    del current[producer_id]
                    span.end_marker_offset = base
                    span.end_marker_epoch = epoch
                    span.outcome = "ABORT" if completed.is_aborted else "COMMIT"
                    span.coordinator_epoch = coordinator_epoch
                    span.end_timestamp = marker_timestamp
                    if on_close is not None:
                        on_close(span)
                continue
            append_data(entry, batch)
            if transactional:
                span = current.get(producer_id)
                if span is None:
                    span = self._open(TxnSpan(producer_id, epoch, base, last, max_timestamp, max_timestamp))
                span.last_data_offset = last
                span.last_timestamp = max_timestamp
                span.batches += 1
                span.records += records
                span.bytes += size
        if end is not None:
            psm.map_end_offset = end

    def feed_table(self, table) -> None:
        """feed() of every row of ``table`` (a fact table, logscan.scan.replica's), in order, in
        bulk: the producers replayed by ProducerStateManager.append_table, and the spans made of
        each producer's runs (its transactional data batches up to a marker that completes a
        transaction): a span opens at a run's first data batch unless one is open already, takes
        the run's batches, and closes at its marker; the spans are numbered in the order they
        open and go to ``on_close`` in the order their markers come, as feed() does."""
        self.feed_columns(FactColumns.of_table(table))

    def feed_columns(self, c: FactColumns) -> None:
        """feed_table over a fact table's columns."""
        import numpy as np

        keep = c.last_offset >= self._start  # (feed() skips what the seed holds)
        if not keep.all():
            c = c.take(np.flatnonzero(keep))
        done = self.producers.append_columns(c)
        pid = c.producer_id
        data = (pid >= 0) & ~c.is_control & c.is_transactional
        marker = np.zeros(len(pid), bool)
        marker[done] = True
        order = c.by_producer
        rows = order[(data | marker)[order]]  # by producer, in log order
        if not len(rows):
            return
        m = marker[rows]
        start = starts(pid[rows])
        run_start = start | shifted(m, False)  # a run: data batches, up to a completing marker
        run = np.cumsum(run_start) - 1
        n = int(run[-1]) + 1
        firsts = rows[run_start]
        ends = np.append(np.flatnonzero(run_start)[1:], len(rows)) - 1
        closes = m[ends]
        last_data = rows[np.where(closes, ends - 1, ends)]  # (where the run has data)
        ends = rows[ends]
        batches = np.bincount(run, weights=~m, minlength=n).astype(np.int64)
        records = np.bincount(run, weights=np.where(m, 0, c.records_count[rows]), minlength=n).astype(np.int64)
        sizes = np.bincount(run, weights=np.where(m, 0, c.size_in_bytes[rows]), minlength=n).astype(np.int64)
        base, epoch, last, max_ts = c.base_offset, c.producer_epoch, c.last_offset, c.max_timestamp
        current = self._current
        # A producer's first run continues the span it has open; a run with data that continues
        # none opens one (feed()'s _open, numbered in log order); a run that ends with its marker
        # closes the span it has.
        spans: dict[int, TxnSpan] = {}
        first_runs = np.flatnonzero(start[run_start])  # each producer's first run
        data_at = last_data[first_runs]
        for r, producer, n_batches, *fields in zip(first_runs.tolist(), pid[firsts[first_runs]].tolist(),
                                                   batches[first_runs].tolist(), last[data_at].tolist(),
                                                   max_ts[data_at].tolist(), records[first_runs].tolist(),
                                                   sizes[first_runs].tolist()):
            span = current.get(producer)
            if span is not None:
                spans[r] = span
                if n_batches:
                    span.last_data_offset, span.last_timestamp, records_, sizes_ = fields
                    span.batches += n_batches
                    span.records += records_
                    span.bytes += sizes_
        opening = np.flatnonzero(batches > 0)
        if spans:
            opening = opening[[r not in spans for r in opening.tolist()]]
        opening = opening[np.argsort(firsts[opening], kind="stable")]
        at, data_at = firsts[opening], last_data[opening]
        for r, index, *fields in zip(opening.tolist(), range(self._opened, self._opened + len(opening)),
                                     pid[at].tolist(), epoch[at].tolist(), base[at].tolist(), last[data_at].tolist(),
                                     max_ts[at].tolist(), max_ts[data_at].tolist(), batches[opening].tolist(),
                                     records[opening].tolist(), sizes[opening].tolist()):
            spans[r] = span = TxnSpan(*fields)
            span.index = index
        self._opened += len(opening)
        closing = np.flatnonzero(closes)
        closing = closing[np.argsort(ends[closing])]  # in the order their markers come
        at = ends[closing]
        for r, *fields in zip(closing.tolist(), base[at].tolist(), epoch[at].tolist(), c.aborted[at].tolist(),
                              c.coordinator_epoch[at].tolist(), c.marker_timestamp[at].tolist()):
            span = spans.pop(r, None)
            if span is None:
                continue
            current.pop(span.producer_id, None)
            span.end_marker_offset, span.end_marker_epoch, is_abort, span.coordinator_epoch, span.end_timestamp = fields
            span.outcome = "ABORT" if is_abort else "COMMIT"
            if self._on_close is not None:
                self._on_close(span)
        for span in spans.values():  # still open: a producer's last run's (the others closed)
            current[span.producer_id] = span

    def result(self) -> ReplicaReplay:
        return ReplicaReplay(self.producers, self.open_spans)


def replay(batches: Iterable[BatchFact],
           seed: Optional[tuple[Iterable[ProducerStateEntry], int]] = None) -> ReplicaReplay:
    """Replay a replica's batches (offset order) and keep producer state and every span."""
    closed: list[TxnSpan] = []
    r = Replay(seed, on_close=closed.append)
    for batch in batches:
        r.feed(batch)
    out = r.result()
    out.closed_spans = closed
    return out
