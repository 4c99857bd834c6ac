"""Per-replica partition state (offsets, LSO and LSO lag, the way UnifiedLog derives them),
and what only all replicas of a partition together tell: the leader, whether the copies
agree, which open transactions hang and how to abort them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional

from . import hanging
from .coordinator import CoordinatorCopy, ProducerIdMatch
from .plans import AbortPlan, plan_abort
from .producer_state import first_unstable_offset, last_stable_offset
from .spans import ReplicaReplay


@dataclass(frozen=True, slots=True)
class ReplicaState:
    broker: int
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    checkpointed_high_watermark: Optional[int]  # as replication-offset-checkpoint has it; None: absent
    first_unstable_offset: Optional[int]
    last_stable_offset: int
    open_transactions: int
    producers: int
    copy_gap: Optional[str] = None  # what the broker's own files say it held that the copy lacks
    # Why Kafka's rules cannot be trusted on this replica's log (an offset-order, overlap,
    # segment-base or control-type finding): the replay stopped at that batch, and no verdict
    # nor abort plan rests on this replica. None: the log keeps Kafka's rules.
    log_fault: Optional[str] = None

    @property
    def lso_lag(self) -> int:
        """LastStableOffsetLag as the broker's gauge computes it: HW - LSO."""
        return self.high_watermark - self.last_stable_offset


def log_start_offset(first_segment_base: Optional[int], checkpointed: Optional[int]) -> int:
    """logStartOffset: the log-start-offset-checkpoint entry (written only when it is past the
    first segment) or else the first segment's base offset."""
    base = first_segment_base or 0
    return base if checkpointed is None else max(base, checkpointed)


def high_watermark(checkpointed: Optional[int], log_start: int, log_end: int) -> int:
    """UnifiedLog.updateHighWatermark on load: max(logStartOffset, min(hw, LEO)); a partition
    missing from replication-offset-checkpoint loads with hw 0."""
    return max(log_start, min(checkpointed or 0, log_end))


def copy_gaps(log_end: int, *, hw_checkpoint: Optional[int], snapshot_offsets: Iterable[int] = (),
              segment_bases: Iterable[int] = (), named_bases: Iterable[tuple[int, str]] = (),
              recovery_point: Optional[int] = None, log_start_checkpoint: Optional[int] = None,
              batches_end: Optional[int] = None) -> list[str]:
    """What the broker's own files say its log held that the copy does not, one sentence each:

    - a checkpointed high watermark past the copy's log end (the broker had replicated those
      offsets);
    - a checkpointed recovery point past it (the broker had flushed those offsets to disk);
    - a producer snapshot past it (Kafka writes one at each segment roll and at shutdown, and
      deletes those past the log end when it truncates);
    - a checkpointed log start offset past the end of the copy's batches (``batches_end``,
      default ``log_end``), or below the copy's first segment (``segment_bases``): segments
      missing at the end or at the front;
    - a segment whose other files (``named_bases``: (base offset, file name) of its .index,
      .timeindex, .txnindex) are in the copy without its .log.

    Empty when nothing says the copy lacks anything: a copy can still lack what no file of the
    broker names (a cut with its checkpoints cut too)."""
    gaps = []
    if hw_checkpoint is not None and hw_checkpoint > log_end:
        gaps.append(f"replication-offset-checkpoint has high watermark {hw_checkpoint} but the copy's log ends at "
                    f"{log_end}: {_missing(log_end, hw_checkpoint)} not in the copy")
    if recovery_point is not None and recovery_point > log_end:
        # UnifiedLog.flush moves the recovery point (LocalLog.markFlushed) only once the segments
        # below it are fsynced; LogManager.checkpointLogRecoveryOffsets writes it every
        # log.flush.offset.checkpoint.interval.ms and at shutdown, and LogManager.truncateTo
        # rewrites it after a truncation, so a truncated log is no gap. LogLoader.recoverLog
        # loads min(recovery point, log end): the broker itself would not notice.
        gaps.append(f"recovery-point-offset-checkpoint has recovery point {recovery_point} but the copy's log ends "
                    f"at {log_end}: the broker had flushed {_offsets(log_end, recovery_point)} to disk "
                    f"(UnifiedLog.flush moves the recovery point after the fsync), which the copy lacks")
    beyond = max((o for o in snapshot_offsets if o > log_end), default=None)
    if beyond is not None:
        gaps.append(f"a producer snapshot at offset {beyond} says the log reached {beyond}, but the copy's log "
                    f"ends at {log_end}")
    bases = sorted(set(segment_bases))
    ends = log_end if batches_end is None else batches_end
    if log_start_checkpoint is not None:
        if log_start_checkpoint > ends:
            # UnifiedLog.maybeIncrementLogStartOffset refuses a log start past the high watermark,
            # so the broker's log reached it; LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd
            # deletes every segment of such a log on load ("This could happen if segment files
            # were deleted from the file system").
            gaps.append(f"log-start-offset-checkpoint has log start offset {log_start_checkpoint} but the copy's "
                        f"log ends at {ends}: the broker's log reached at least {log_start_checkpoint} (a log start "
                        f"never passes the high watermark), and {_missing(ends, log_start_checkpoint)} not in the "
                        f"copy; Kafka would delete every segment of this copy on load "
                        f"(LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd)")
        elif bases and bases[0] > log_start_checkpoint:
            # LogManager.checkpointLogStartOffsetsInDir writes a partition's log start only while it
            # is past the first segment's base offset (or the topic keeps tiered storage), and a
            # segment deletion moves the log start to the next segment's base
            # (UnifiedLog.deleteSegments): the log held the segments from the log start on.
            gaps.append(f"log-start-offset-checkpoint has log start offset {log_start_checkpoint} but the copy's "
                        f"first segment starts at {bases[0]}: {_missing(log_start_checkpoint, bases[0])} missing at "
                        f"the front (unless the topic keeps tiered storage, remote.storage.enable, whose log start "
                        f"is below the local segments, or the broker deleted them less than "
                        f"log.flush.start.offset.checkpoint.interval.ms before the copy: their .deleted files "
                        f"are then in it)")
    logs = set(bases)
    orphans: dict[int, list[str]] = {}
    for base, name in named_bases:
        if base not in logs:
            orphans.setdefault(base, []).append(name)
    for base, names in sorted(orphans.items()):
        gaps.append(f"segment {base}: {', '.join(sorted(names))} in the copy without its .log")
    return gaps


def _offsets(start: int, end: int) -> str:
    """The offsets from ``start`` below ``end``, in words."""
    return f"offset {start}" if end == start + 1 else f"offsets {start} to {end - 1}"


def _missing(start: int, end: int) -> str:
    """The offsets from ``start`` below ``end``, as a sentence's subject."""
    return f"{_offsets(start, end)} {'is' if end == start + 1 else 'are'}"


def replica_state(broker: int, topic: str, partition: int, replay: ReplicaReplay, *,
                  first_segment_base: Optional[int], last_segment_base: Optional[int],
                  hw_checkpoint: Optional[int], log_start_checkpoint: Optional[int],
                  recovery_point_checkpoint: Optional[int] = None,
                  snapshot_offsets: Iterable[int] = (), segment_bases: Iterable[int] = (),
                  named_bases: Iterable[tuple[int, str]] = (), log_fault: Optional[str] = None,
                  copy_end: Optional[int] = None) -> ReplicaState:
    """The replica's offsets as UnifiedLog loads them, and what the copy lacks (copy_gaps).

    With ``log_fault`` the replay stopped at a batch Kafka's recovery refuses: the log ends
    where the replay stopped (LogLoader.recoverLog truncates the segment there and deletes the
    segments after it), not at the last segment's base offset; ``copy_end`` is where the
    copy's batches end, which copy_gaps compares the checkpoints with (the batches past the
    fault are in the copy, only not counted)."""
    log_start = log_start_offset(first_segment_base, log_start_checkpoint)
    psm = replay.producers
    log_end = max(psm.map_end_offset, log_start) if log_fault else max(psm.map_end_offset, last_segment_base or 0,
                                                                       log_start)
    hw = high_watermark(hw_checkpoint, log_start, log_end)
    ongoing = psm.ongoing()
    fuo = first_unstable_offset(ongoing.values(), psm.completed, hw, log_start)
    # Where the copy's own files end (a log start checkpointed past them raises log_end to it,
    # as LogLoader does after deleting every segment), and that with the log start.
    batches_end = max(psm.map_end_offset, last_segment_base or 0, copy_end or 0)
    held = log_end if copy_end is None else max(log_end, batches_end)
    gaps = copy_gaps(held, hw_checkpoint=hw_checkpoint, snapshot_offsets=snapshot_offsets,
                     segment_bases=segment_bases, named_bases=named_bases,
                     recovery_point=recovery_point_checkpoint, log_start_checkpoint=log_start_checkpoint,
                     batches_end=batches_end)
    return ReplicaState(broker, topic, partition, log_start, log_end, hw, hw_checkpoint,
                        fuo, last_stable_offset(fuo, hw), len(ongoing), len(psm.producers),
                        "; ".join(gaps) or None, log_fault)


# --- across the replicas of one partition ----------------------------------------------------
#
# Everything below looks at all copied replicas of one partition at once: who led it, whether
# the copies agree, which open transactions hang (find-hanging over every replica) and the
# abort plans. Both drivers build the same ReplicaViews and call assess_partition, the local
# loop per partition, the Spark job in a task grouped by (topic, partition). The closed
# transactions (one per transaction of the partition's history, per replica) are not part of
# the views: they stream through assess_partition once, ordered by end-marker offset, and
# only what the rules show of them is kept (see ClosedMarkers).

#: Where `leader` came from.
CLUSTER_METADATA = "cluster_metadata"
LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"


class ClosedTxn(NamedTuple):
    """A transaction an end marker closed on one replica (a NamedTuple: one is made per closed
    span the partition step reads, and a frozen dataclass takes twice as long to make)."""

    producer_id: int
    first_offset: int
    end_marker_offset: int
    outcome: str  # COMMIT or ABORT


@dataclass(slots=True)
class ReplicaView:
    """What the cross-replica rules need of one replica, from either driver, but its closed
    transactions (streamed into ClosedMarkers)."""

    state: ReplicaState
    open_txns: list[hanging.OpenTxn]  # by start offset, as find-hanging lists them
    coordinator_epochs: dict[int, int] = field(default_factory=dict)  # producer id -> its latest
    max_timestamp: int = -1
    leader_epoch: Optional[int] = None  # latest epoch of the replica's leader-epoch-checkpoint


@dataclass(frozen=True, slots=True)
class HangingCandidate:
    broker: int
    topic: str
    partition: int
    txn: hanging.OpenTxn
    age_ms: int
    verdict: hanging.Verdict


class Difference(NamedTuple):
    """One way a replica differs from another replica of its partition."""

    other_broker: int
    field: str                  # log_end_offset, high_watermark, last_stable_offset: value here, other_value
                                # there; open_here_only, open_there_only, end_markers_here_only,
                                # end_markers_there_only: value = how many (other_value None);
                                # diverged_at: value = the first offset both hold different records at
    value: int
    other_value: Optional[int]
    text: str                   # in words, as replica_differences_text prints it


def replica_differences_text(differences: Iterable[Difference]) -> Optional[str]:
    """Differences in words: "vs broker 2: log_end_offset 7 here, 5 there; open here only: ...
    | vs broker 3: ...", None for none."""
    by_broker: dict[int, list[str]] = {}
    for d in differences:
        by_broker.setdefault(d.other_broker, []).append(d.text)
    return " | ".join(f"vs broker {b}: " + "; ".join(texts) for b, texts in by_broker.items()) or None


@dataclass(frozen=True, slots=True)
class ReplicaAssessment:
    """The cross-replica columns of one replica's partition_state row."""

    broker: int
    leader: Optional[int]
    leader_source: Optional[str]
    is_leader: Optional[bool]
    replicas: int
    replicas_agree: bool
    replica_differences: tuple[Difference, ...]  # from every other replica, by broker; () when they agree
    oldest_txn_last_timestamp: int
    has_late_transaction: bool


@dataclass(slots=True)
class PartitionAssessment:
    replicas: list[ReplicaAssessment]
    candidates: list[HangingCandidate]
    plans: list[tuple[int, AbortPlan]]  # (broker whose replica the plan reads, plan)


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """A `__cluster_metadata` record that names a topic or moves a partition's leader."""

    offset: int
    timestamp: int  # record timestamp, epoch ms; -1 for a snapshot's records (older than the log)
    kind: str  # TOPIC, PARTITION, PARTITION_CHANGE or REMOVE_TOPIC
    topic_id: str
    name: Optional[str] = None
    partition: int = -1
    leader: int = -2  # -2: PartitionChangeRecord without a leader change; -1: no leader


TOPIC, PARTITION, PARTITION_CHANGE, REMOVE_TOPIC = "TOPIC", "PARTITION", "PARTITION_CHANGE", "REMOVE_TOPIC"


def partition_leaders(events: Iterable[MetadataEvent], as_of_ms: Optional[int] = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the last broker that led it, replaying `__cluster_metadata` in log
    order up to the first record newer than ``as_of_ms``.

    A leader of -1 (no leader: every replica is down, as at the end of a whole-cluster stop)
    keeps the previous leader: the replica whose log consumers last read. Replaying only up to
    the scan's as-of time keeps the leaders of that moment, not the moves of a controlled
    shutdown that came after it.
    """
    names: dict[str, str] = {}
    leaders: dict[tuple[str, int], int] = {}
    for e in events:
        if as_of_ms is not None and e.timestamp > as_of_ms:
            break
        if e.kind == TOPIC:
            names[e.topic_id] = e.name
        elif e.kind in (PARTITION, PARTITION_CHANGE):
            if e.leader >= 0:
                leaders[(e.topic_id, e.partition)] = e.leader
        elif e.kind == REMOVE_TOPIC:
            names.pop(e.topic_id, None)
            for key in [k for k in leaders if k[0] == e.topic_id]:
                del leaders[key]
    return {(names[tid], p): leader for (tid, p), leader in sorted(leaders.items()) if tid in names}


def partition_counts(events: Iterable[MetadataEvent], as_of_ms: Optional[int] = None) -> dict[str, int]:
    """Topic -> its number of partitions (highest partition id + 1), replaying the same records
    as partition_leaders up to ``as_of_ms``."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for e in events:
        if as_of_ms is not None and e.timestamp > as_of_ms:
            break
        if e.kind == TOPIC:
            names[e.topic_id] = e.name
        elif e.kind == PARTITION:
            counts[e.topic_id] = max(counts.get(e.topic_id, 0), e.partition + 1)
        elif e.kind == REMOVE_TOPIC:
            names.pop(e.topic_id, None)
            counts.pop(e.topic_id, None)
    return {names[tid]: n for tid, n in sorted(counts.items()) if tid in names}


def leadership(views: list[ReplicaView], metadata_leader: Optional[int]
               ) -> tuple[Optional[int], Optional[str], dict[int, Optional[bool]]]:
    """(leader, where it came from, broker -> is_leader).

    From `__cluster_metadata` when it names one. Else from leader epochs: a newly elected
    leader writes its epoch to leader-epoch-checkpoint at once, followers only when data of
    that epoch reaches them, so a replica whose latest epoch is below another's is not the
    leader, and a single replica with the highest epoch is. Several at the highest epoch:
    cannot tell (null)."""
    brokers = [v.state.broker for v in views]
    if metadata_leader is not None:
        return metadata_leader, CLUSTER_METADATA, {b: b == metadata_leader for b in brokers}
    epochs = {v.state.broker: v.leader_epoch for v in views if v.leader_epoch is not None}
    if not epochs:
        return None, None, {b: None for b in brokers}
    top = max(epochs.values())
    holders = [b for b, e in epochs.items() if e == top]
    if len(holders) == 1:
        return holders[0], LEADER_EPOCH_CHECKPOINT, {b: b == holders[0] for b in brokers}
    return None, LEADER_EPOCH_CHECKPOINT, {b: None if b in holders else False for b in brokers}


#: The Difference field naming the first offset two replicas hold different records at.
DIVERGED_AT = "diverged_at"

#: Transactions a difference names before "and N more".
SHOWN = 5


def _txns(items, limit: int = SHOWN) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


@dataclass(slots=True)
class Shown:
    """The first SHOWN items of a list and how many it has: what _txns prints of it."""

    items: list[str] = field(default_factory=list)
    count: int = 0

    def add(self, item: str) -> None:
        if self.count < SHOWN:
            self.items.append(item)
        self.count += 1

    def text(self) -> str:
        return ", ".join(self.items) + (f" and {self.count - SHOWN} more" if self.count > SHOWN else "")


_Marker = tuple[int, int, int, str]  # (end_marker_offset, producer_id, first_offset, outcome)


class ClosedMarkers:
    """Every replica's closed transactions of one partition, fed once in end-marker-offset
    order, reduced to what the cross-replica rules show of them:

    * per ordered pair of replicas (a, b), the end markers a holds and b does not, among those
      both should hold (end marker in [max log start, min log end) of the pair: a marker past
      a replica's log end is lag, shown by the log end offsets), as replica_differences
      prints them: the first SHOWN in (offset, producer, first offset, outcome) order and how
      many there are;
    * per replica, the closed transactions another replica holds open (find-hanging's
      "closed elsewhere");
    * per pair, the first offset both hold where they hold different things (``diverged``):
      two histories, as an unclean leader election or a copy mixing two clusters leaves them.
      Kafka's log cleaner removes batches but never changes what an offset holds, and a
      follower copies its leader's bytes, so where both replicas hold an offset it is the same
      record. What the spans show of an offset: an end marker (producer, outcome) at its end
      marker offset, a producer's data at a transaction's first offset, and a transaction still
      open (no marker of that producer) from its first offset on. So the replicas diverged at X
      when, X held by both (between the later log start and the earlier log end): each holds an
      end marker at X and they differ in producer or outcome; one holds a marker at X and the
      other data there; transactions of two producers start at X; or one holds producer p's
      marker at X while the other holds p's transaction open across X (open at its log end, or
      closed later). The last needs each replica's latest closed transaction per producer only
      (a producer's transactions follow each other), so what is held grows with the producers,
      not the transactions; a divergence shown only by a producer's earlier transactions is
      found at a later offset (``diverged`` is the first offset found).

    The markers of one offset sort before those of any later offset, so comparing each
    offset's markers (as sets, per replica) as the offset passes gives the differences of the
    whole sets in their sorted order, holding one offset's markers at a time."""

    def __init__(self, views: list[ReplicaView]) -> None:
        states = {v.state.broker: v.state for v in views}
        self._windows: list[tuple[int, int, int, int]] = []  # (a, b, low, high), a < b
        for a in sorted(states):
            for b in sorted(states):
                if a < b:
                    sa, sb = states[a], states[b]
                    low = max(sa.log_start_offset, sb.log_start_offset)
                    high = min(sa.log_end_offset, sb.log_end_offset)
                    if low < high:
                        self._windows.append((a, b, low, high))
        self._only: dict[tuple[int, int], Shown] = {}
        # (producer id, first offset) -> brokers holding that transaction open
        self._open: dict[tuple[int, int], set[int]] = {}
        # broker -> first offset -> producer ids of the transactions it holds open from there
        self._open_from: dict[int, dict[int, set[int]]] = {b: {} for b in states}
        for v in views:
            for t in v.open_txns:
                self._open.setdefault((t.producer_id, t.start_offset), set()).add(v.state.broker)
                self._open_from[v.state.broker].setdefault(t.start_offset, set()).add(t.producer_id)
        self._closed: dict[int, dict[tuple[int, int], ClosedTxn]] = {b: {} for b in states}
        # broker -> producer id -> its latest closed transaction there; and those by first
        # offset and by end marker offset (what divergence is checked against)
        self._last: dict[int, dict[int, ClosedTxn]] = {b: {} for b in states}
        self._last_from: dict[int, dict[int, set[int]]] = {b: {} for b in states}
        self._last_marker: dict[int, dict[int, set[int]]] = {b: {} for b in states}
        # (a, b), a < b -> (offset, what a holds there, what b holds there): the first found
        self._diverged: dict[tuple[int, int], tuple[int, str, str]] = {}
        self._at: Optional[int] = None
        self._group: dict[int, set[_Marker]] = {}
        # broker -> per other replica sharing a window with it: (there, low, high, and there's
        # _open_from, _last_from, _last_marker and _last maps), what _check reads per transaction
        self._peers: dict[int, list[tuple]] = {b: [] for b in states}
        for a, b, low, high in self._windows:
            for here, there in ((a, b), (b, a)):
                self._peers[here].append((there, low, high, self._open_from[there], self._last_from[there],
                                          self._last_marker[there], self._last[there]))
        for a, b, low, high in self._windows:
            for first in set(self._open_from[a]) & set(self._open_from[b]):
                pa_, pb = self._open_from[a][first], self._open_from[b][first]
                if low <= first < high and pa_ != pb:
                    self._diverge(a, b, first, _data_text(sorted(pa_)[0], first), _data_text(sorted(pb)[0], first))

    def add(self, broker: int, txn: ClosedTxn) -> None:
        """One closed transaction of ``broker``'s replica; end-marker offsets must not decrease."""
        pid, first, at = txn.producer_id, txn.first_offset, txn.end_marker_offset
        last = self._last.get(broker)
        if last is None:
            raise ValueError(f"closed transactions out of order: one of broker {broker}, whose replica state "
                             f"has not come (states come before the closed transactions)")
        if self._at != at:
            if self._at is not None and at < self._at:
                raise ValueError(f"closed transactions out of order: end marker {at} after {self._at}")
            self._compare()
            self._at = at
        group = self._group.get(broker)
        if group is None:
            group = self._group[broker] = set()
        group.add((at, pid, first, txn.outcome))
        key = (pid, first)
        holders = self._open.get(key)
        if holders is not None and (len(holders) > 1 or broker not in holders):
            self._closed[broker][key] = txn
        self._check(broker, txn)
        old = last.get(pid)
        if old is not None:
            _drop(self._last_from[broker], old.first_offset, pid)
            _drop(self._last_marker[broker], old.end_marker_offset, pid)
        last[pid] = txn
        by_first = self._last_from[broker].get(first)
        if by_first is None:
            self._last_from[broker][first] = {pid}
        else:
            by_first.add(pid)
        by_marker = self._last_marker[broker].get(at)
        if by_marker is None:
            self._last_marker[broker][at] = {pid}
        else:
            by_marker.add(pid)

    def _check(self, here: int, txn: ClosedTxn) -> None:
        """Whether ``txn`` (closed on ``here``) shows ``here``'s history leaving another
        replica's: see the class's docstring. Same-offset markers are compared in _compare."""
        pid, first, at = txn.producer_id, txn.first_offset, txn.end_marker_offset
        open_on = self._open.get((pid, first), ())
        for there, low, high, open_from, last_from, last_marker, last in self._peers[here]:
            at_held = low <= at < high
            if at_held and there in open_on:
                self._diverge(here, there, at, _marker_held(txn), _open_text(pid, first))
            if low <= first < high:
                opened, closed = open_from.get(first), last_from.get(first)
                # (commonly none are open there, and there's latest transaction from ``first`` is pid's)
                if opened or closed and (len(closed) > 1 or pid not in closed):
                    other = _other(pid, opened, closed)
                    if other is not None:
                        self._diverge(here, there, first, _data_text(pid, first), _data_text(other, first))
                marked = last_marker.get(first)
                if marked:
                    self._diverge(here, there, first, _data_text(pid, first), _marker_held(last[min(marked)]))
            if at_held:
                opened = open_from.get(at)
                if opened:
                    self._diverge(here, there, at, _marker_held(txn), _data_text(min(opened), at))
            before = last.get(pid)
            if before is not None:
                closed_at = before.end_marker_offset
                if first <= closed_at < at and low <= closed_at < high:
                    # there closed pid's transaction at an offset where here still holds it open
                    self._diverge(here, there, closed_at, _open_text(pid, first), _marker_held(before))

    def _diverge(self, here: int, there: int, offset: int, held_here: str, held_there: str) -> None:
        key, texts = ((here, there), (held_here, held_there)) if here < there else ((there, here),
                                                                                   (held_there, held_here))
        known = self._diverged.get(key)
        if known is None or offset < known[0]:
            self._diverged[key] = (offset, *texts)

    def _compare(self) -> None:
        group, at = self._group, self._at
        if not group:
            return
        empty: set[_Marker] = set()
        for a, b, low, high in self._windows:
            if low <= at < high:
                here, there = group.get(a, empty), group.get(b, empty)
                if here == there:   # the common case: both hold the same markers here
                    continue
                kinds_a, kinds_b = {m[1::2] for m in here}, {m[1::2] for m in there}
                if kinds_a and kinds_b and kinds_a != kinds_b:
                    # both hold an end marker at this offset, of another producer or outcome
                    self._diverge(a, b, at, _markers_text(here), _markers_text(there))
                for pair, diff in (((a, b), here - there), ((b, a), there - here)):
                    for m in sorted(diff):
                        self._only.setdefault(pair, Shown()).add(_marker_text(m))
        self._group = {}

    def finish(self) -> "ClosedMarkers":
        """Compare the last offset's markers; call once every transaction is in."""
        self._compare()
        self._at = None
        return self

    def only(self, here: int, there: int) -> Shown:
        """The end markers ``here`` holds and ``there`` does not, both should hold."""
        return self._only.get((here, there), Shown())

    def diverged(self, here: int, there: int) -> Optional[tuple[int, str, str]]:
        """(the first offset where ``here`` and ``there`` were found holding different records,
        what ``here`` holds there, what ``there`` holds), None when none was found."""
        if here < there:
            return self._diverged.get((here, there))
        found = self._diverged.get((there, here))
        return None if found is None else (found[0], found[2], found[1])

    def divergence(self) -> Optional[tuple[int, int, int, str, str]]:
        """The partition's first divergence: (offset, broker a, broker b, what a holds there,
        what b holds), the lowest offset then brokers; None when the replicas share one history."""
        found = [(at, a, b, x, y) for (a, b), (at, x, y) in self._diverged.items()]
        return min(found) if found else None

    def closed(self, broker: int, producer_id: int, first_offset: int) -> Optional[ClosedTxn]:
        """The transaction (producer_id, first_offset) as ``broker``'s replica closed it, when
        another replica holds it open."""
        return self._closed.get(broker, {}).get((producer_id, first_offset))


def _other(producer_id: int, *held: Optional[set[int]]) -> Optional[int]:
    """The lowest producer id other than ``producer_id`` in the sets ``held`` (None: absent),
    None when there is none."""
    others = [p for ps in held if ps for p in ps if p != producer_id]
    return min(others) if others else None


def _drop(by_offset: dict[int, set[int]], offset: int, producer_id: int) -> None:
    """``producer_id`` out of ``by_offset[offset]``, and the offset out when none is left: the
    map holds the offsets of each producer's latest transaction only, never one per transaction."""
    held = by_offset[offset]
    held.discard(producer_id)
    if not held:
        del by_offset[offset]


def _marker_text(m: _Marker) -> str:
    at, pid, first, kind = m
    return f"{kind} at {at} (producer {pid}, from {first})"


def _marker_held(txn: ClosedTxn) -> str:
    return f"the {txn.outcome} marker of producer {txn.producer_id}'s transaction from {txn.first_offset}"


def _markers_text(markers: set[_Marker]) -> str:
    return " and ".join(_marker_held(ClosedTxn(pid, first, at, kind)) for at, pid, first, kind in sorted(markers))


def _data_text(pid: int, first: int) -> str:
    return f"the first data of producer {pid}'s transaction from {first}"


def _open_text(pid: int, first: int) -> str:
    return f"producer {pid}'s transaction from {first} still open (no marker of it at that offset)"


def closed_markers(views: list[ReplicaView], closed: Iterable[tuple[int, ClosedTxn]]) -> ClosedMarkers:
    """ClosedMarkers of ``views`` over ``closed``: (broker, closed transaction) ordered by
    end-marker offset."""
    markers = ClosedMarkers(views)
    for broker, txn in closed:
        markers.add(broker, txn)
    return markers.finish()


def replica_differences(view: ReplicaView, other: ReplicaView, markers: ClosedMarkers) -> list[Difference]:
    """What differs between two replicas of a partition: log end, high watermark and LSO, the
    open transactions, and the end markers both copies should hold (those between the later
    log start and the earlier log end: a marker past a replica's log end is lag, shown by
    the log end offsets); ``markers``: the partition's closed transactions, compared."""
    a, b = view.state, other.state
    out = []
    for name in ("log_end_offset", "high_watermark", "last_stable_offset"):
        here, there = getattr(a, name), getattr(b, name)
        if here != there:
            out.append(Difference(b.broker, name, here, there, f"{name} {here} here, {there} there"))
    if view.open_txns or other.open_txns:
        open_a = {(t.producer_id, t.start_offset) for t in view.open_txns}
        open_b = {(t.producer_id, t.start_offset) for t in other.open_txns}
        for label, diff in (("open here only", open_a - open_b), ("open there only", open_b - open_a)):
            if diff:
                txns = sorted(diff, key=lambda x: x[1])
                out.append(Difference(b.broker, label.replace(" ", "_"), len(txns), None,
                                      f"{label}: " + _txns([f"producer {p} from offset {o}" for p, o in txns])))
    if markers._only:   # (commonly every marker one replica should hold, the other holds too)
        for label, shown in (("end markers here only", markers.only(a.broker, b.broker)),
                             ("end markers there only", markers.only(b.broker, a.broker))):
            if shown.count:
                out.append(Difference(b.broker, label.replace(" ", "_"), shown.count, None,
                                      f"{label}: " + shown.text()))
    diverged = markers.diverged(a.broker, b.broker)
    if diverged is not None:
        at, here, there = diverged
        out.append(Difference(b.broker, DIVERGED_AT, at, None,
                              f"diverged_at {at}: {here} here, {there} there (two histories)"))
    return out


def find_hanging(views: list[ReplicaView], markers: ClosedMarkers, index: dict[int, list[ProducerIdMatch]],
                 as_of_ms: int, max_timeout_ms: int, coordinator: CoordinatorCopy,
                 max_prepare_ms: Optional[int] = None, last_leader: Optional[int] = None) -> list[HangingCandidate]:
    """find-hanging over every replica of one partition: open transactions older than the max
    timeout, judged against the coordinator records that name the producer id and against
    the other replicas (a marker they hold, whether this one is behind). A PrepareCommit or
    PrepareAbort record older than ``max_prepare_ms`` (None: the max timeout) is
    hanging.COORDINATOR_STUCK_PREPARING. ``last_leader``: the last broker `__cluster_metadata`
    names as the partition's leader (None: it names none); when the copy lacks its replica, no
    verdict says hanging (hanging.without_leader). Replicas holding two histories
    (ClosedMarkers.divergence) withhold the partition's verdicts (hanging.diverged)."""
    if max_prepare_ms is None:
        max_prepare_ms = max_timeout_ms
    out = []
    brokers = [v.state.broker for v in views]
    diverged = markers.divergence()
    for view in views:
        st = view.state
        peers = [p for p in views if p is not view]
        behind = any(p.state.log_end_offset > st.log_end_offset for p in peers)
        for txn in view.open_txns:
            if not hanging.is_candidate(txn, as_of_ms, max_timeout_ms):
                continue
            if st.log_fault is not None:
                # The replay stopped at a batch Kafka's recovery refuses: what it left open may
                # be closed past that batch, or be the lie itself. Never a plan from it.
                out.append(HangingCandidate(st.broker, st.topic, st.partition, txn, as_of_ms - txn.last_timestamp,
                                            hanging.log_fault(st.log_fault)))
                continue
            verdict = hanging.classify(txn, index.get(txn.producer_id, []), coordinator, as_of_ms=as_of_ms,
                                       max_prepare_ms=max_prepare_ms)
            closed = [hanging.ClosedElsewhere(p.state.broker, c.end_marker_offset, c.outcome)
                      for p in peers
                      for c in [markers.closed(p.state.broker, txn.producer_id, txn.start_offset)] if c is not None]
            verdict = hanging.with_copy(hanging.with_replicas(verdict, txn, closed, behind), st.copy_gap)
            verdict = hanging.without_leader(verdict, last_leader, brokers)
            if diverged is not None:
                verdict = hanging.diverged(verdict, *diverged)
            out.append(HangingCandidate(st.broker, st.topic, st.partition, txn, as_of_ms - txn.last_timestamp, verdict))
    return out


def plan_aborts(views: list[ReplicaView], candidates: list[HangingCandidate], is_leader: dict[int, Optional[bool]],
                bootstrap: str) -> list[tuple[int, AbortPlan]]:
    """One plan per hanging transaction of the partition, read from the replica furthest
    ahead (the one the leader's describe-producers agrees with); ties: the leader, then the
    lowest broker."""
    by_broker = {v.state.broker: v for v in views}

    def rank(c: HangingCandidate) -> tuple:
        return (-by_broker[c.broker].state.log_end_offset, is_leader.get(c.broker) is not True, c.broker)

    best: dict[tuple[int, int], HangingCandidate] = {}
    for c in candidates:
        if c.verdict.hanging is not True:
            continue
        key = (c.txn.producer_id, c.txn.start_offset)
        if key not in best or rank(c) < rank(best[key]):
            best[key] = c
    plans = []
    for key in sorted(best):
        c = best[key]
        view = by_broker[c.broker]
        others = [t.start_offset for t in view.open_txns if t.producer_id != c.txn.producer_id]
        # The marker lands at the log end; once replicated the HW passes it.
        next_lso = min(others) if others else view.state.log_end_offset + 1
        plan = plan_abort(c.txn, c.verdict, view.coordinator_epochs.get(c.txn.producer_id, -1), bootstrap=bootstrap,
                          high_watermark=view.state.log_end_offset + 1, next_lso=next_lso)
        if plan is not None:
            plans.append((c.broker, plan))
    return plans


def oldest_txn_last_timestamp(view: ReplicaView) -> int:
    """ProducerStateManager.oldestTxnLastTimestamp: lastTimestamp of the producer whose open
    transaction started first, -1 when none is open."""
    if not view.open_txns:
        return -1
    return min(view.open_txns, key=lambda t: t.start_offset).last_timestamp


def assess_partition(views: list[ReplicaView], closed: Iterable[tuple[int, ClosedTxn]] = (), *,
                     metadata_leader: Optional[int], index: dict[int, list[ProducerIdMatch]], as_of_ms: int,
                     max_timeout_ms: int, coordinator: CoordinatorCopy, bootstrap: str,
                     max_prepare_ms: Optional[int] = None, last_leader: Optional[int] = None) -> PartitionAssessment:
    """Every cross-replica fact of one partition (views: all its replicas in the copy;
    closed: their closed transactions as (broker, transaction) ordered by end-marker offset,
    consumed once; ``max_prepare_ms``, ``last_leader``: find_hanging's)."""
    views = sorted(views, key=lambda v: v.state.broker)
    markers = closed_markers(views, closed)
    leader, source, is_leader = leadership(views, metadata_leader)
    replicas = []
    for view in views:
        diffs = tuple(d for p in views if p is not view for d in replica_differences(view, p, markers))
        oldest = oldest_txn_last_timestamp(view)
        replicas.append(ReplicaAssessment(
            view.state.broker, leader, source, is_leader[view.state.broker], len(views), not diffs,
            diffs, oldest, hanging.is_late(oldest, as_of_ms, max_timeout_ms)))
    candidates = find_hanging(views, markers, index, as_of_ms, max_timeout_ms, coordinator, max_prepare_ms,
                              last_leader)
    return PartitionAssessment(replicas, candidates, plan_aborts(views, candidates, is_leader, bootstrap))


def replica_view(state: ReplicaState, replay: ReplicaReplay, *, max_timestamp: int = -1,
                 leader_epoch: Optional[int] = None) -> ReplicaView:
    """The view of a replica the local driver replayed (the Spark job builds it from rows)."""
    psm = replay.producers
    ongoing = sorted(psm.ongoing().items(), key=lambda kv: kv[1])
    open_txns = [hanging.OpenTxn(state.topic, state.partition, pid, psm.producers[pid].producer_epoch, first,
                                 psm.producers[pid].last_timestamp) for pid, first in ongoing]
    return ReplicaView(state, open_txns, {pid: psm.producers[pid].coordinator_epoch for pid, _ in ongoing},
                       max_timestamp, leader_epoch)
