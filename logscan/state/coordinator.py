"""The transaction coordinator's view, rebuilt from `__transaction_state` records.

TransactionStateManager.loadTransactionMetadata reads each partition from its start to the
log end (above the high watermark too), record by record; per transactional id the last
record wins and a tombstone removes the id. We do the same, per coordinator partition.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

PREPARING = frozenset({"PrepareCommit", "PrepareAbort"})
COMPLETE = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})
#: The TransactionState names Kafka 4.1.1 loads (TransactionState.fromId: ids 0 to 7). A record
#: of another id reads as "Unknown(<id>)" (logscan.format.txnlog).
KNOWN_STATES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                          "Dead", "PrepareEpochFence"})
NO_PRODUCER_ID = -1


class TxnLogRecord(NamedTuple):
    """One `__transaction_state` record; ``state`` is None for a tombstone. A NamedTuple, not
    a frozen dataclass: a scan makes one per record, and the dataclass's 13
    ``object.__setattr__`` calls took 2.7 us a record (2026-11-24)."""

    coordinator_partition: int
    offset: int
    transactional_id: str
    state: Optional[str] = None
    producer_id: int = NO_PRODUCER_ID
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    transaction_timeout_ms: int = 0
    partitions: tuple[tuple[str, int], ...] = ()
    last_update_timestamp_ms: int = -1
    start_timestamp_ms: int = -1
    # Leader epoch of the coordinator partition when written (the batch's partitionLeaderEpoch):
    # the coordinator epoch its markers carry.
    coordinator_epoch: int = -1


def latest_states(records: Iterable[TxnLogRecord]) -> dict[str, TxnLogRecord]:
    """Transactional id -> its last record, as the coordinator would load it.

    Records must come in log order per coordinator partition; partitions may be
    interleaved freely. Each partition is loaded on its own (last record wins, a tombstone
    removes the id), then the partitions are merged by :func:`merge_partitions`.

    A record whose transactionStatus is no TransactionState (KNOWN_STATES) ends its partition's
    load: Kafka's TransactionState.fromId throws on it, and
    TransactionStateManager.loadTransactionMetadata catches the error ("Error loading
    transactions from transaction log"), keeping what it loaded before that record and none
    after it. The scan's 'txn-state' finding locates the record, and the replica's copy_gap
    withholds every verdict that rests on that partition.
    """
    per_partition: dict[tuple[int, str], TxnLogRecord] = {}
    stopped: set[int] = set()
    for rec in records:
        if rec.coordinator_partition in stopped:
            continue
        key = (rec.coordinator_partition, rec.transactional_id)
        if rec.state is not None and rec.state not in KNOWN_STATES:
            stopped.add(rec.coordinator_partition)
            continue
        if rec.state is None:
            per_partition.pop(key, None)
        else:
            per_partition[key] = rec
    return merge_partitions(per_partition.values())


def merge_partitions(latest: Iterable[TxnLogRecord]) -> dict[str, TxnLogRecord]:
    """One record per transactional id out of per-partition latest records, keyed in id order
    (:func:`merged_positions`' rule)."""
    records = list(latest)
    return {records[i].transactional_id: records[i] for i in merged_positions(
        [r.transactional_id for r in records], [r.last_update_timestamp_ms for r in records],
        [r.coordinator_partition for r in records])}


def merged_positions(transactional_ids: Sequence[str], last_update_timestamps_ms: Sequence[int],
                     coordinator_partitions: Sequence[int]) -> list[int]:
    """The positions of the records merge_partitions keeps, in transactional id order, out of
    per-partition latest records given as columns (a record's values at one position).

    A transactional id hashes to exactly one coordinator partition, so it appears in two
    only in a damaged or mixed-up copy; then the newer TransactionLastUpdateTimestampMs wins
    and, on a tie, the lower coordinator partition (then the first given). Both executors
    merge by this rule (logscan.scan.pipeline.coordinator_view), so the Spark job (one task
    per partition) and the local loop pick the same record.
    """
    order = sorted(range(len(transactional_ids)),
                   key=lambda i: (transactional_ids[i], -last_update_timestamps_ms[i], coordinator_partitions[i]))
    kept: list[int] = []
    last = None
    for i in order:
        if transactional_ids[i] != last:
            kept.append(i)
            last = transactional_ids[i]
    return kept


class ReplicaEnd(NamedTuple):
    """What the scan picks an internal topic's replica to load by: one replica's partition_state
    columns (logscan.scan.rows.PARTITION_STATE)."""

    partition: int
    broker: int
    log_end_offset: int
    checkpointed_high_watermark: Optional[int] = None
    copy_gap: Optional[str] = None
    leader_epoch: Optional[int] = None  # the highest epoch of its leader-epoch-checkpoint


def choose_replicas(replicas: Iterable[ReplicaEnd]) -> dict[int, int]:
    """Partition -> broker whose copy to load.

    The coordinator loads a `__transaction_state` partition from its leader's log, to its end.
    A replica left behind by a newer leader epoch (its leader-epoch-checkpoint's highest epoch
    below another replica's) is a follower that has not fetched in that epoch, or a former
    leader whose unreplicated tail Kafka truncates when it fetches again
    (OffsetsForLeaderEpoch): its log past the new epoch's start offset is not the partition's
    history, however far it reaches. So only the replicas of the highest epoch (and those whose
    epoch the copy does not show) compete; of those the replica with the highest log end
    offset wins, ties the lowest broker id (a rule that depends on nothing but the rows, so
    every driver picks the same replica). Used for `__cluster_metadata` the same way.
    """
    rows = [ReplicaEnd(*r) for r in replicas]
    newest: dict[int, int] = {}
    for r in rows:
        if r.leader_epoch is not None:
            newest[r.partition] = max(newest.get(r.partition, r.leader_epoch), r.leader_epoch)
    best: dict[int, tuple[int, int]] = {}
    for r in rows:
        if r.leader_epoch is not None and r.leader_epoch < newest[r.partition]:
            continue
        held = best.get(r.partition)
        if held is None or (-r.log_end_offset, r.broker) < (-held[1], held[0]):
            best[r.partition] = (r.broker, r.log_end_offset)
    return {p: b for p, (b, _) in sorted(best.items())}


def is_complete(partitions: Iterable[int], partition_count: Optional[int] = None) -> bool:
    """Every coordinator partition is in the copy: only then does a missing record prove that
    the coordinator has none (find-hanging's premise). ``partition_count`` is the topic's
    partition count from __cluster_metadata when the copy has it; without it, partitions
    0..max found count as all (a copy lacking the last one cannot be told from a complete one)."""
    seen = set(partitions)
    if partition_count is not None:
        return partition_count > 0 and seen >= set(range(partition_count))
    return bool(seen) and seen == set(range(max(seen) + 1))


@dataclass(frozen=True, slots=True)
class CoordinatorCopy:
    """What the copy holds of `__transaction_state`, as far as an absent record can prove
    anything: which partitions are here, and what the replica read of each lacks against what
    the brokers' own files say it held (``gaps``: partition -> why, see
    logscan.state.partition.copy_gaps). A verdict resting on a record's absence (or on no
    newer record) only stands when the partition that would hold it is here whole.

    ``held``: (partition, broker) of every replica in the copy; ``last_leaders``: partition ->
    the last broker `__cluster_metadata` names as its leader (counted). A partition whose last
    leader has no replica in the copy was read from followers only: a follower out of the ISR,
    or copied before it fetched, lacks the records its leader appended last (the coordinator
    loads its partition from the leader's log, to its end), so it is a gap too."""

    partitions: frozenset[int] = frozenset()
    partition_count: Optional[int] = None
    gaps: tuple[tuple[int, str], ...] = ()
    held: frozenset[tuple[int, int]] = frozenset()
    last_leaders: tuple[tuple[int, int], ...] = ()

    def partition_gap(self, partition: int) -> Optional[str]:
        """Why ``partition``'s copy may lack records; None when it is here whole."""
        if partition not in self.partitions:
            return f"__transaction_state-{partition} is not in the copy"
        gap = dict(self.gaps).get(partition)
        if gap is not None:
            return gap
        return self._follower_gap(partition)

    def _follower_gap(self, partition: int) -> Optional[str]:
        leader = dict(self.last_leaders).get(partition)
        if leader is None or (partition, leader) in self.held:
            return None
        read = sorted(b for p, b in self.held if p == partition)
        return (f"__transaction_state-{partition} is in the copy from its followers only (broker "
                f"{', '.join(map(str, read))}); its last leader, broker {leader}, is not: a follower may lack the "
                f"records its leader wrote last (copy broker {leader}'s log dirs)")

    def lacking(self) -> Optional[str]:
        """Why some coordinator record may be missing from the copy; None when every partition
        is here whole. Names at most two partitions' reasons and counts the rest."""
        if not is_complete(self.partitions, self.partition_count):
            return "the copy lacks part of __transaction_state"
        why = [(p, gap) for p in sorted(self.partitions) for gap in [self.partition_gap(p)] if gap is not None]
        if not why:
            return None
        text = "; ".join(gap if gap.startswith("__transaction_state-") else f"__transaction_state-{p}: {gap}"
                         for p, gap in why[:2])
        return text + (f"; and {len(why) - 2} more partitions of __transaction_state" if len(why) > 2 else "")

    def counted(self, partition_count: Optional[int],
                last_leaders: Optional[dict[int, int]] = None) -> "CoordinatorCopy":
        """The same copy, with what `__cluster_metadata` says of the topic: its partition count
        and each partition's last leader."""
        return CoordinatorCopy(self.partitions, partition_count, self.gaps, self.held,
                               tuple(sorted((last_leaders or {}).items())))


#: A copy holding every coordinator partition whole (tests; a copy with a single partition).
WHOLE = CoordinatorCopy(frozenset({0}), 1)


def coordinator_copy(replicas: Iterable[ReplicaEnd]) -> tuple[dict[int, int], CoordinatorCopy]:
    """(partition -> broker to load, what the copy holds) out of one ReplicaEnd per
    `__transaction_state` replica.

    The replica chosen (choose_replicas) is whole when nothing of its own says otherwise and
    its log reaches every high watermark a replica of the partition has checkpointed: a high
    watermark is an offset every in-sync replica had."""
    rows = [ReplicaEnd(*r) for r in replicas]
    chosen = choose_replicas(rows)
    highest: dict[int, int] = {}
    for r in rows:
        if r.checkpointed_high_watermark is not None:
            highest[r.partition] = max(highest.get(r.partition, r.checkpointed_high_watermark),
                                       r.checkpointed_high_watermark)
    gaps = []
    for p, b, end, _, gap, _ in sorted(rows):
        if chosen.get(p) != b:
            continue
        if gap is None and highest.get(p, end) > end:
            gap = (f"the replica read (broker {b}) ends at {end}, below the high watermark {highest[p]} another "
                   f"replica checkpointed")
        if gap is not None:
            gaps.append((p, f"broker {b}: {gap}"))
    return chosen, CoordinatorCopy(frozenset(chosen), None, tuple(gaps), frozenset((r.partition, r.broker) for r in rows))


@dataclass(frozen=True, slots=True)
class ProducerIdMatch:
    """How a data producer id relates to a coordinator record."""

    record: TxnLogRecord
    relation: str  # 'current', 'previous' or 'next'


#: The relations a coordinator record names a producer id in, in the order index_by_producer_id
#: lists one record's matches.
RELATIONS = ("current", "previous", "next")


def index_by_producer_id(latest: dict[str, TxnLogRecord]) -> "ProducerIdIndex":
    """Producer id -> coordinator records naming it as current, previous or next producer id.

    find-hanging's listTransactions only matches the *current* producer id; logscan also
    keeps previous/next (KIP-890 epoch exhaustion, KIP-939) so the evidence can say why.
    """
    records = list(latest.values())
    return ProducerIdIndex.of(records, [r.producer_id for r in records], [r.previous_producer_id for r in records],
                              [r.next_producer_id for r in records])


class ProducerIdIndex(Mapping):
    """Producer id -> [ProducerIdMatch], as a read-only mapping: of each producer id, the
    records naming it in the records' order, and of one record its current, previous and next
    producer ids in that order (RELATIONS).

    Held as three flat arrays (the producer ids, sorted; each one's record position and
    relation) and ``records``, any sequence of TxnLogRecord by position, e.g. one that makes a
    record from Arrow columns only when it is looked up (logscan.scan.pipeline.coordinator_view):
    what a Spark job ships to every Python worker of its partition step pickles as a few
    buffers, where a dict of lists of records was an object per record and match (5.6 MB and
    ~0.5 s a pickle on 47,000 transactional ids). A producer id's matches are made on its first
    lookup and kept."""

    __slots__ = ("_pids", "_entries", "_records", "_made")

    def __init__(self, pids: array, entries: array, records: Sequence[TxnLogRecord]) -> None:
        self._pids = pids          # sorted; one per (record, relation) naming a producer id
        self._entries = entries    # position * len(RELATIONS) + relation, at the same index
        self._records = records
        self._made: dict[int, list[ProducerIdMatch]] = {}

    @classmethod
    def of(cls, records: Sequence[TxnLogRecord], current: Sequence[int], previous: Sequence[int],
           next_: Sequence[int]) -> "ProducerIdIndex":
        """The index of ``records`` from their producer id columns (a record's current,
        previous and next producer id at its position; NO_PRODUCER_ID names none)."""
        named = sorted((pid, i * 3 + relation) for relation, column in enumerate((current, previous, next_))
                       for i, pid in enumerate(column) if pid != NO_PRODUCER_ID)
        return cls(array("q", [pid for pid, _ in named]), array("q", [e for _, e in named]), records)

    def __getstate__(self):
        return self._pids, self._entries, self._records

    def __setstate__(self, state) -> None:
        self._pids, self._entries, self._records = state
        self._made = {}

    def __getitem__(self, pid: int) -> list[ProducerIdMatch]:
        made = self._made.get(pid)
        if made is not None:
            return made
        lo = bisect_left(self._pids, pid)
        hi = bisect_right(self._pids, pid, lo)
        if lo == hi:
            raise KeyError(pid)
        made = self._made[pid] = [ProducerIdMatch(self._records[e // 3], RELATIONS[e % 3])
                                  for e in self._entries[lo:hi]]
        return made

    def get(self, pid: int, default=None):
        try:
            return self[pid]
        except (KeyError, TypeError):
            return default

    def __contains__(self, pid: object) -> bool:
        if not isinstance(pid, int):
            return False
        i = bisect_left(self._pids, pid)
        return i < len(self._pids) and self._pids[i] == pid

    def __iter__(self) -> Iterator[int]:
        last = None
        for pid in self._pids:
            if pid != last:
                yield pid
                last = pid

    def __len__(self) -> int:
        return sum(1 for _ in self)
