"""Producer state rebuilt the way the broker rebuilds it (ProducerAppendInfo, REPLICATION origin).

During log recovery and replication Kafka never rejects a batch: a lower epoch or an older
coordinator epoch is only logged. We do the same and record those as anomalies, so the
result equals what `kafka-transactions describe-producers` shows for that replica.

A broker loading a log does not replay it from its start when it has a producer snapshot
(:class:`BrokerLoad`): it loads the newest snapshot and replays only the batches from the
snapshot's offset on. On a compacted log the two differ, because the cleaner keeps a
producer's last batch only as an empty shell and the replay learns nothing from an empty
control batch; the broker's state comes from its snapshot.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterable, Iterator, NamedTuple, Optional, Sequence

from .columns import FactColumns, shifted, starts
from .facts import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP, BatchFact

# ProducerStateEntry.NUM_BATCHES_TO_RETAIN
NUM_BATCHES_TO_RETAIN = 5

# Where a producer's state came from (ProducerStateManager.loaded_from), as the broker loads a
# log: its entry in the producer snapshot loaded, that entry with the batches after the
# snapshot's offset replayed over it, or the batches alone (no snapshot loaded, or a producer
# the snapshot does not hold).
FROM_SNAPSHOT = "snapshot"
FROM_SNAPSHOT_AND_BATCHES = "snapshot+batches"
FROM_BATCHES = "batches"


class BatchMetadata(NamedTuple):
    """A batch a producer's entry keeps (Kafka's BatchMetadata; a NamedTuple: the replay makes
    one per data batch, and a frozen dataclass cost twice as much to build)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: Optional[int] = None
    # (a partial, not a lambda: no Python frame a producer made)
    batches: deque = field(default_factory=partial(deque, maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def update_epoch(self, epoch: int) -> None:
        # Any change of epoch (up or down) drops the cached batches: this is why, under
        # KIP-890 TV2, describe-producers shows LastSequence -1 right after a marker.
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch


#: A NamedTuple made from its values without its generated __new__ (a Python function whose
#: frame cost the replay ~2.5% of the bench copy's scan CPU samples, one BatchMetadata a data
#: batch, 2026-12-08): tuple.__new__(BatchMetadata, values) is the same tuple.
_made = tuple.__new__


class CompletedTxn(NamedTuple):
    """A transaction closed by a marker (Kafka's CompletedTxn; a NamedTuple, as BatchMetadata)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class Anomaly:
    """Something the broker would only log (or reject from a client) during rebuild."""

    offset: int
    producer_id: int
    kind: str
    detail: str


class ProducerStateManager:
    """Producers of one partition replica, fed batches in offset order.

    ``completed`` holds the completed transactions that can still hold back the first
    unstable offset: Kafka keeps a completed transaction (unreplicatedTxns) until the high
    watermark passes its marker. With ``high_watermark_floor`` (what the replica's high
    watermark loads as at least: max(log start, HW checkpoint)) the others are dropped as they
    complete, and of the rest only the one that started first is kept (the first unstable
    offset takes the earliest), so memory does not grow with the transactions replayed."""

    def __init__(self, high_watermark_floor: Optional[int] = None) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        self.completed: list[CompletedTxn] = []
        self._floor = high_watermark_floor
        self.anomalies: list[Anomaly] = []
        self.map_end_offset = 0
        # Where the producers come from: None, replayed from the log; else the offset of the
        # producer snapshot they were loaded from (then the batches from that offset on).
        self.loaded_snapshot_offset: Optional[int] = None
        # With a snapshot loaded: the producers it held, and those a batch after it changed.
        self._from_snapshot: frozenset[int] = frozenset()
        self._replayed: Optional[set[int]] = None

    def seed(self, entries: Iterable[ProducerStateEntry], snapshot_offset: int) -> None:
        """Start from a producer snapshot: the state after every offset below ``snapshot_offset``."""
        for entry in entries:
            self.producers[entry.producer_id] = entry
        self.map_end_offset = snapshot_offset
        self.loaded_snapshot_offset = snapshot_offset
        self._from_snapshot = frozenset(self.producers)
        self._replayed = set()

    def loaded_from(self, producer_id: int) -> str:
        """FROM_SNAPSHOT, FROM_SNAPSHOT_AND_BATCHES or FROM_BATCHES: what gave this producer's
        state. A batch counts when the broker's append takes something from it: an emptied
        control batch (count 0) gives nothing (ProducerAppendInfo.append), so a snapshot entry
        it follows stays the snapshot's."""
        if self.loaded_snapshot_offset is None or producer_id not in self._from_snapshot:
            return FROM_BATCHES
        return FROM_SNAPSHOT_AND_BATCHES if producer_id in self._replayed else FROM_SNAPSHOT

    def take_producers(self, loaded: "ProducerStateManager") -> None:
        """Replace the producers with the ones the broker loads (:class:`BrokerLoad`); the
        completed transactions and anomalies stay this replay's."""
        self.producers = loaded.producers
        self.loaded_snapshot_offset = loaded.loaded_snapshot_offset
        self._from_snapshot, self._replayed = loaded._from_snapshot, loaded._replayed

    def ongoing(self) -> dict[int, int]:
        """Open transactions: producer id -> first offset."""
        return {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                if e.current_txn_first_offset is not None}

    def append(self, batch: BatchFact) -> Optional[CompletedTxn]:
        self.map_end_offset = batch.last_offset + 1
        producer_id = batch.producer_id
        if producer_id < 0:
            return None
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        if batch.is_control:
            return self._append_marker(entry, batch)
        self._append_data(entry, batch)
        return None

    def append_table(self, table):
        """append() of every row of ``table`` (a fact table: an Arrow record batch or table with
        BatchFact's columns, logscan.scan.replica.FACT_TABLE_COLUMNS), in order, in bulk: the
        same producers, completed transactions and anomalies.

        A producer's rows are applied over the columns at once where ProducerAppendInfo's rules
        come to plain bookkeeping: its epochs and its markers' coordinator epochs never go down,
        no non-transactional batch while its transaction is open, no control type but COMMIT
        and ABORT (an emptied control batch changes nothing). A producer with anything else has
        each of its rows taken by append(), the reference, in log order with the completed
        transactions of the others (so the lists keep append()'s order).

        Returns the rows (ascending, a numpy array) whose marker completed a transaction: where
        append() returns a CompletedTxn."""
        return self.append_columns(FactColumns.of_table(table))

    def append_columns(self, c: FactColumns):
        """append_table over a fact table's columns."""
        import numpy as np

        if len(c) == 0:
            return np.zeros(0, np.int64)
        order = c.by_producer
        owned = order[c.producer_id[order] >= 0]  # by producer, in log order
        pid = c.producer_id[owned]
        first = np.flatnonzero(starts(pid))
        new = [(int(owned[s]), p) for s, p in zip(first.tolist(), pid[first].tolist()) if p not in self.producers]
        for _, p in sorted(new):  # created in the order append() creates them: its first row's
            self.producers[p] = ProducerStateEntry(p)
        rows = owned[~c.empty_control[owned]]  # an emptied control batch: nothing is read from it
        done = self._append_rows(c, rows) if len(rows) else np.zeros(0, np.int64)
        self.map_end_offset = int(c.last_offset[-1]) + 1
        return done

    def _append_rows(self, c: FactColumns, rows):
        """append_table's work over ``rows``: producer-owned data batches and control batches
        with a record, grouped by producer, in log order within a group; the rows whose marker
        completed a transaction."""
        import numpy as np

        pid, epoch, marker = c.producer_id[rows], c.producer_epoch[rows], c.marker[rows]
        other = c.other_control[rows] if c.other_control.any() else None
        transactional, base = c.is_transactional[rows], c.base_offset[rows]
        start = starts(pid)
        gid = np.cumsum(start) - 1
        group_at = np.flatnonzero(start)
        entries = [self.producers[p] for p in pid[group_at].tolist()]
        entry_epoch, entry_coordinator, entry_open, entry_first = np.array(
            [(e.producer_epoch, e.coordinator_epoch, e.current_txn_first_offset is not None,
              e.current_txn_first_offset or 0) for e in entries], np.int64).reshape(-1, 4).T
        entry_open = entry_open.astype(bool)
        # _check_epoch: an epoch below the one before it (the entry's, for a producer's first row).
        prev_epoch = shifted(epoch, 0)
        prev_epoch[group_at] = entry_epoch
        unusual = epoch < prev_epoch
        if other is not None:
            unusual |= other
        # _append_marker: a coordinator epoch below the producer's last marker's.
        at = np.flatnonzero(marker)
        m_gid, m_epoch = gid[at], c.coordinator_epoch[rows[at]]
        unusual[at] |= np.where(starts(m_gid), entry_coordinator[m_gid], shifted(m_epoch, 0)) > m_epoch
        # The transaction open before each row: a transactional data batch since the producer's
        # last marker (a "span": the rows after a marker, or a producer's first rows), or the
        # entry's own open transaction, before its first marker.
        data = ~marker if other is None else ~marker & ~other
        txn_data = data & transactional
        span_start = start | shifted(marker, False)
        span = np.cumsum(span_start) - 1
        before = np.cumsum(txn_data) - txn_data
        entry_span = start[span_start] & entry_open[gid[span_start]]
        open_before = (before - before[span_start][span] > 0) | entry_span[span]
        unusual |= data & ~transactional & open_before  # non_transactional_in_txn
        unusual_group = np.zeros(len(group_at), bool)
        unusual_group[gid[unusual]] = True
        common = ~unusual_group[gid]
        # Where each span's transaction starts: the entry's, or its first transactional data batch
        # (span is ascending: the first of each value is where it starts).
        txn_at = np.flatnonzero(txn_data)
        first_in = starts(span[txn_at])
        spans, txn_first = span[txn_at[first_in]], base[txn_at[first_in]]
        span_first = entry_first[gid[span_start]]
        span_first[spans] = np.where(entry_span[spans], span_first[spans], txn_first)
        span_open = entry_span.copy()
        span_open[spans] = True
        changed = np.flatnonzero((epoch != prev_epoch) & common)
        group_end = np.append(group_at[1:], len(rows))
        last_span = span[group_end - 1]
        still_open = ~marker[group_end - 1] & span_open[last_span]
        open_from = span_first[last_span]
        # Each group's last marker (-1: none): its coordinator epoch is the entry's.
        last_marker = np.full(len(group_at), -1, np.int64)
        group_last = np.append(m_gid[1:] != m_gid[:-1], True)[:len(m_gid)]  # (m_gid ascends)
        last_marker[m_gid[group_last]] = rows[at[group_last]]
        for g in np.flatnonzero(~unusual_group).tolist():
            s, e = int(group_at[g]), int(group_end[g])
            k = int(np.searchsorted(changed, e)) - 1
            found = k >= 0 and changed[k] >= s
            change = int(changed[k]) if found else s
            self._apply_common(entries[g], c, rows[change:e], data[change:e], found, int(last_marker[g]),
                               bool(marker[e - 1]), int(open_from[g]) if still_open[g] else None)
        # The transactions the common producers' markers complete, then the unusual producers'
        # rows through append(), in log order.
        done = np.flatnonzero(marker & open_before & common)
        completed = (rows[done], span_first[span[done]], base[done], c.aborted[rows[done]])
        return self._keep_all(c, completed, rows[~common])

    def _apply_common(self, entry: ProducerStateEntry, c: FactColumns, rows, data, changed: bool, last_marker: int,
                      ends_with_marker: bool, open_from: Optional[int]) -> None:
        """One common producer's rows applied to its entry: what append() of each leaves.
        ``rows``: its rows from the last whose epoch differs from the one before it (its first
        row when none does); ``data``: which of them are data batches; ``changed``: whether the
        epoch changed there (the batches kept before it are dropped); ``last_marker``: the row of
        its last marker (-1: none); ``ends_with_marker``: whether its last row is one;
        ``open_from``: where the transaction open after the rows started (None: none)."""
        if self._replayed is not None:
            self._replayed.add(entry.producer_id)
        # update_epoch: a change of epoch drops the batches kept before it.
        if changed:
            entry.batches.clear()
        kept = rows[data][-NUM_BATCHES_TO_RETAIN:]
        for seq, last_offset, base_offset, ts in zip(c.last_sequence[kept].tolist(), c.last_offset[kept].tolist(),
                                                      c.base_offset[kept].tolist(), c.max_timestamp[kept].tolist()):
            entry.batches.append(BatchMetadata(seq, last_offset, last_offset - base_offset, ts))
        last = rows[-1]
        entry.producer_epoch = int(c.producer_epoch[last])
        if last_marker >= 0:
            entry.coordinator_epoch = int(c.coordinator_epoch[last_marker])
        entry.last_timestamp = int(c.marker_timestamp[last] if ends_with_marker else c.max_timestamp[last])
        entry.current_txn_first_offset = open_from

    def _keep_all(self, c: FactColumns, completed: tuple, reference_rows):
        """The common producers' completed transactions ((rows, first offsets, marker offsets,
        aborted)) kept, and ``reference_rows`` taken by append(), in log order. With a high
        watermark floor _keep keeps one transaction: only the one it would keep is made.
        Returns the rows of every completed transaction, ascending."""
        import numpy as np

        rows, firsts, lasts, aborted = completed
        done = [rows]
        if self._floor is not None:
            # _keep keeps the first, in log order, of the earliest starting ones past the floor:
            # only that one can be kept, at its place among the reference's rows.
            kept = np.flatnonzero(lasts >= self._floor)
            at = kept[np.lexsort((rows[kept], firsts[kept]))[:1]]
            rows, firsts, lasts, aborted = rows[at], firsts[at], lasts[at], aborted[at]
        if len(rows) or len(reference_rows):
            events = sorted([*zip(rows.tolist(), [None] * len(rows), range(len(rows))),
                             *((r, c.fact(r), -1) for r in reference_rows.tolist())])
            for r, fact, i in events:
                if fact is None:
                    self._keep(CompletedTxn(int(c.producer_id[r]), int(firsts[i]), int(lasts[i]), bool(aborted[i])))
                elif self.append(fact) is not None:
                    done.append(np.array([r], np.int64))
        return np.sort(np.concatenate(done))

    def _check_epoch(self, entry: ProducerStateEntry, epoch: int, offset: int) -> None:
        if epoch < entry.producer_epoch:
            self._note(offset, entry.producer_id, "epoch_regression",
                       f"epoch {epoch} is smaller than the last seen epoch {entry.producer_epoch}")

    def _append_data(self, entry: ProducerStateEntry, batch: BatchFact) -> None:
        base, last, epoch, max_timestamp = batch.base_offset, batch.last_offset, batch.producer_epoch, batch.max_timestamp
        if self._replayed is not None:
            self._replayed.add(entry.producer_id)
        if epoch != entry.producer_epoch:   # (_check_epoch and update_epoch keep an equal epoch)
            self._check_epoch(entry, epoch, base)
            entry.update_epoch(epoch)
        entry.batches.append(_made(BatchMetadata, (batch.last_sequence, last, last - base, max_timestamp)))
        entry.last_timestamp = max_timestamp
        first = entry.current_txn_first_offset
        if first is not None and not batch.is_transactional:
            # Kafka throws InvalidTxnStateException here even during recovery.
            self._note(base, entry.producer_id, "non_transactional_in_txn",
                       f"non-transactional batch while a transaction is open since {first}")
        elif first is None and batch.is_transactional:
            entry.current_txn_first_offset = base

    def _append_marker(self, entry: ProducerStateEntry, batch: BatchFact) -> Optional[CompletedTxn]:
        control_type = batch.control_type
        if control_type is None:
            # An empty control batch (count 0): the cleaner removed its marker record once the
            # transaction's data was gone and the delete horizon passed, and kept the batch
            # because it was the producer's last entry (Cleaner's RETAIN_EMPTY). Kafka's
            # ProducerAppendInfo.append reads nothing from it ("the entire transaction has
            # been cleaned from the log"), not even the epoch or timestamp of its header; the
            # entry append() made stays ProducerStateEntry.empty. The broker has the values
            # in memory and in its snapshots, which is what BrokerLoad loads.
            return None
        base = batch.base_offset
        if control_type != "COMMIT" and control_type != "ABORT":
            self._note(base, entry.producer_id, "unknown_control_type",
                       f"producer-owned control batch of type {control_type}")
            return None
        if self._replayed is not None:
            self._replayed.add(entry.producer_id)
        epoch, coordinator_epoch = batch.producer_epoch, batch.coordinator_epoch
        if epoch != entry.producer_epoch:   # (_check_epoch and update_epoch keep an equal epoch)
            self._check_epoch(entry, epoch, base)
        if entry.coordinator_epoch > coordinator_epoch:
            self._note(base, entry.producer_id, "coordinator_epoch_regression",
                       f"marker coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}")
        completed = None
        first = entry.current_txn_first_offset
        if first is not None:
            completed = _made(CompletedTxn, (entry.producer_id, first, base, control_type == "ABORT"))
            self._keep(completed)
        if epoch != entry.producer_epoch:
            entry.update_epoch(epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = batch.marker_timestamp
        return completed

    def _keep(self, txn: CompletedTxn) -> None:
        if self._floor is None:
            self.completed.append(txn)
        elif txn.last_offset >= self._floor and (not self.completed or txn.first_offset < self.completed[0].first_offset):
            # The high watermark is either the floor (then every kept marker is at or past
            # it) or past the log end (then none is): one earliest transaction answers both.
            self.completed[:] = [txn]

    def _note(self, offset: int, producer_id: int, kind: str, detail: str) -> None:
        self.anomalies.append(Anomaly(offset, producer_id, kind, detail))


#: A producer snapshot as BrokerLoad takes it: (offset from the file name, a function giving
#: fresh entries of the file, or None when the file cannot be loaded, e.g. a bad CRC).
SnapshotSource = tuple[int, Optional[Callable[[], list[ProducerStateEntry]]]]


def snapshots_kept_on_load(snapshot_offsets: Iterable[int], segment_bases: Iterable[int]) -> set[int]:
    """The snapshot files a broker keeps when it opens the log (LogLoader.load calls
    ProducerStateManager.removeStraySnapshots first): those named after a segment's base
    offset, and of the others only the newest, and only when it is past the last segment's
    base offset (the snapshot of a clean shutdown, at the log end)."""
    bases = set(segment_bases)
    stray = [o for o in snapshot_offsets if o not in bases]
    kept = {o for o in snapshot_offsets if o in bases}
    if stray and (not bases or max(stray) >= max(bases)):
        kept.add(max(stray))
    return kept


class BrokerLoad:
    """The producer state a broker loads for a log when it opens it, fed the log's batches in
    order (those it does not need cost one comparison in the caller: ``start_offset``).

    Kafka's rule (UnifiedLog.rebuildProducerState, ProducerStateManager.truncateAndReload
    and loadFromSnapshot, Kafka 3.x to 4.4.0): snapshots past the log end offset or at or
    below the log start offset are deleted; the newest remaining one that loads (a corrupt
    one is deleted and the next older tried) gives the producers, and only the batches from
    its offset on are replayed over them (LogSegment.read from the snapshot offset: every
    batch whose last offset is at or past it). With no snapshot left the broker replays the
    log from its start, which is the replay logscan runs anyway: ``finish`` says None.

    Not modelled: producers the broker expires while loading (lastTimestamp older than
    producer.id.expiration.ms and no open transaction), and a clean shutdown that left no
    snapshot at all (the broker then starts empty instead of replaying).
    """

    def __init__(self, snapshots: Sequence[SnapshotSource], log_start_offset: int,
                 known_below_log_end: Optional[int] = None) -> None:
        """``snapshots``: the replica's snapshot files kept on load (snapshots_kept_on_load),
        by offset. ``known_below_log_end``: an offset the log surely reaches (the last
        segment's base offset); no snapshot older than the newest loadable one at or below it
        can be the one loaded, so the replay over a snapshot starts there."""
        usable = sorted((o, load) for o, load in snapshots if o > log_start_offset and load is not None)
        if known_below_log_end is not None:
            sure = [i for i, (o, _) in enumerate(usable) if o <= known_below_log_end]
            if sure:
                usable = usable[sure[-1]:]
        self._pending = usable
        self._floor = log_start_offset
        self.psm: Optional[ProducerStateManager] = None
        #: The first batch last offset that matters (feed only batches at or past it).
        self.start_offset = usable[0][0] if usable else None

    def feed(self, batch: BatchFact) -> None:
        """The next batch of the log (offset order), one whose last offset is at or past
        ``start_offset``: a snapshot it reaches is one the broker would load rather than
        any older one (the log end is past it)."""
        pending = self._pending
        if pending and batch.last_offset >= pending[0][0]:
            n = 0
            while n < len(pending) and batch.last_offset >= pending[n][0]:
                n += 1
            self._load(*pending[n - 1])
            del pending[:n]
        if self.psm is not None:
            self.psm.append(batch)

    def feed_table(self, table) -> None:
        """feed() of every row of ``table`` (a fact table, logscan.scan.replica's, of rows whose
        last offset is at or past ``start_offset``), in order, the replay in bulk
        (ProducerStateManager.append_table) between the rows where a snapshot is loaded."""
        self.feed_columns(FactColumns.of_table(table))

    def feed_columns(self, c: FactColumns) -> None:
        """feed_table over a fact table's columns."""
        import numpy as np

        last = c.last_offset
        at = 0
        while at < len(last) and self._pending:
            # the first row from ``at`` that reaches the next snapshot: feed() loads there
            reach = at + int(np.searchsorted(np.maximum.accumulate(last[at:]), self._pending[0][0]))
            if reach >= len(last):
                break
            if self.psm is not None and reach > at:
                self.psm.append_columns(c.take(slice(at, reach)))
            self.feed(c.fact(reach))
            at = reach + 1
        if self.psm is not None and at < len(last):
            self.psm.append_columns(c.take(slice(at, None)))

    def finish(self, log_end_offset: int) -> Optional[ProducerStateManager]:
        """The broker's producers for a log ending at ``log_end_offset``: the newest snapshot
        at or below it with the batches after it, or None (the broker replays the whole log)."""
        at_end = [s for s in self._pending if s[0] <= log_end_offset]
        if at_end:
            self._load(*at_end[-1])
        self._pending = []
        return self.psm

    def _load(self, offset: int, load: Callable[[], list[ProducerStateEntry]]) -> None:
        # Only the producers are taken from this manager: the completed transactions stay the
        # full replay's, kept by the high watermark floor (here the log start: at most one).
        psm = ProducerStateManager(self._floor)
        psm.seed(load(), offset)
        self.psm = psm


def rebuild(batches: Iterable[BatchFact], seed: Optional[tuple[Iterable[ProducerStateEntry], int]] = None
            ) -> ProducerStateManager:
    """Replay ``batches`` (offset order) over an optional (snapshot entries, snapshot offset) seed.

    Batches below the snapshot offset are skipped: the snapshot already holds their effect.
    """
    psm = ProducerStateManager()
    start = 0
    if seed is not None:
        entries, start = seed
        psm.seed(entries, start)
    for batch in batches:
        if batch.last_offset < start:
            continue
        psm.append(batch)
    return psm


def first_unstable_offset(ongoing_first_offsets: Iterable[int], completed: Iterable[CompletedTxn],
                          high_watermark: int, log_start_offset: int) -> Optional[int]:
    """UnifiedLog's first unstable offset: the earliest open transaction, or the earliest
    completed one whose marker is not yet replicated (marker offset >= HW), clamped to the
    log start offset."""
    candidates = list(ongoing_first_offsets)
    candidates.extend(t.first_offset for t in completed if t.last_offset >= high_watermark)
    if not candidates:
        return None
    return max(min(candidates), log_start_offset)


def last_stable_offset(first_unstable: Optional[int], high_watermark: int) -> int:
    """LSO = first unstable offset when it is below the HW, else the HW (never above it)."""
    if first_unstable is not None and first_unstable < high_watermark:
        return first_unstable
    return high_watermark


def describe_producers(psm: ProducerStateManager) -> Iterator[tuple[int, int, int, int, int, Optional[int]]]:
    """Rows as `kafka-transactions describe-producers` prints them: (ProducerId, ProducerEpoch,
    LatestCoordinatorEpoch, LastSequence, LastTimestamp, CurrentTransactionStartOffset)."""
    for pid in sorted(psm.producers):
        yield describe_entry(psm.producers[pid])


def describe_entry(e: ProducerStateEntry) -> tuple[int, int, int, int, int, Optional[int]]:
    """One producer as describe_producers lists it."""
    return (e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_sequence, e.last_timestamp,
            e.current_txn_first_offset)
