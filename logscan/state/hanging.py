"""Which open transactions hang, and why — find-hanging's rule, offline, with reasons.

KIP-664's tool: a producer with an open transaction whose lastTimestamp is older than the
maximum transaction timeout is a candidate; it hangs when the coordinator has no record of
that producer id, or its transaction does not list the partition. logscan also says why,
from the coordinator's records, and refuses to call a transaction hanging when the
coordinator is still writing its markers (PrepareCommit/PrepareAbort).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Iterable, Optional

from logscan.defaults import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

from .coordinator import PREPARING, CoordinatorCopy, ProducerIdMatch, TxnLogRecord

# ProducerStateManager.LATE_TRANSACTION_BUFFER_MS: PartitionsWithLateTransactionsCount pads by 5 min.
LATE_TRANSACTION_BUFFER_MS = 300_000

# Reason codes; `hanging` says whether an abort is the remedy.
NO_COORDINATOR_RECORD = "no_coordinator_record"
COORDINATOR_MOVED_ON = "coordinator_moved_on"
PARTITION_NOT_IN_TRANSACTION = "partition_not_in_transaction"
MARKERS_PENDING = "markers_pending"
COORDINATOR_STUCK_PREPARING = "coordinator_stuck_preparing"
TWO_PHASE_COMMIT_IN_DOUBT = "two_phase_commit_in_doubt"
#: The transaction timeout a coordinator records for a two-phase-commit producer (KIP-939):
#: TransactionCoordinator.handleInitProducerId resolves it to Int.MaxValue when the producer
#: asks for 2PC (javap of Kafka 4.4.0's class), so the coordinator never times it out.
TWO_PHASE_COMMIT_TIMEOUT_MS = 2_147_483_647
COORDINATOR_ONGOING = "coordinator_ongoing"
COORDINATOR_NOT_IN_COPY = "coordinator_not_in_copy"
PARTITION_NOT_IN_COPY = "partition_not_in_copy"
REPLICAS_DISAGREE = "replicas_disagree"
LOG_FAULT = "log_fault"
DIVERGED = "diverged"

HANGING_REASONS = frozenset({NO_COORDINATOR_RECORD, COORDINATOR_MOVED_ON, PARTITION_NOT_IN_TRANSACTION})


@dataclass(frozen=True, slots=True)
class OpenTxn:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    last_timestamp: int


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: str
    hanging: Optional[bool]  # None: cannot tell from this copy
    evidence: str
    transactional_id: Optional[str] = None


def is_candidate(txn: OpenTxn, as_of_ms: int, max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS) -> bool:
    """find-hanging's filter: now - lastTimestamp > max timeout (strict, no padding)."""
    return as_of_ms - txn.last_timestamp > max_timeout_ms


def is_late(oldest_txn_last_timestamp: int, as_of_ms: int,
            max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS) -> bool:
    """ProducerStateManager.hasLateTransaction, the PartitionsWithLateTransactionsCount rule."""
    return (oldest_txn_last_timestamp > 0
            and as_of_ms - oldest_txn_last_timestamp > max_timeout_ms + LATE_TRANSACTION_BUFFER_MS)


def classify(txn: OpenTxn, matches: list[ProducerIdMatch], coordinator: CoordinatorCopy, *,
             as_of_ms: Optional[int] = None, max_prepare_ms: Optional[int] = None) -> Verdict:
    """Judge one candidate against the coordinator records that name its producer id.

    A verdict that rests on what the coordinator's log lacks (no record names the producer id,
    or no record newer than the one found) is only given when the coordinator partition that
    would hold it is in the copy whole (``coordinator``); else the copy cannot tell
    (COORDINATOR_NOT_IN_COPY), and no abort is planned from it. A PrepareCommit/PrepareAbort
    record last updated more than ``max_prepare_ms`` before ``as_of_ms`` is
    COORDINATOR_STUCK_PREPARING rather than MARKERS_PENDING (both None: never stuck).
    """
    current = [m for m in matches if m.relation == "current"]
    if not current:
        lacking = coordinator.lacking()
        if lacking is not None:
            return Verdict(COORDINATOR_NOT_IN_COPY, None,
                           f"no coordinator record names producer id {txn.producer_id}, but the copy may lack "
                           f"it: {lacking}")
        verdict = _without_record(txn, matches)
    else:
        verdict = _with_record(txn, current[0].record, as_of_ms, max_prepare_ms)
        gap = coordinator.partition_gap(current[0].record.coordinator_partition)
        if verdict.hanging is True and gap is not None:
            return Verdict(COORDINATOR_NOT_IN_COPY, None,
                           f"{verdict.evidence}; but a newer record may be missing from the copy: {gap}",
                           verdict.transactional_id)
    return verdict


def with_copy(verdict: Verdict, copy_gap: Optional[str]) -> Verdict:
    """Withhold a hanging verdict on a replica the copy holds only in part
    (partition_state.copy_gap: the broker's own checkpoint or snapshot says its log went past
    the copy's end): the transaction's end marker may be in what was not copied, and an abort
    written for a transaction Kafka closed aborts whatever that producer has open now."""
    if verdict.hanging is not True or copy_gap is None:
        return verdict
    return Verdict(PARTITION_NOT_IN_COPY, None,
                   f"{verdict.evidence}; but this replica's copy is incomplete ({copy_gap}): its end marker may be "
                   f"in what was not copied", verdict.transactional_id)


def without_leader(verdict: Verdict, last_leader: Optional[int], brokers: Iterable[int]) -> Verdict:
    """Withhold a hanging verdict on a partition whose last leader (the last broker
    `__cluster_metadata` names as its leader) has no replica in the copy (``brokers``: those
    that do). The coordinator appends its markers with acks=all and a leader is elected from
    the ISR, so the last leader's log holds every marker written; a follower out of the ISR, or
    copied before it fetched, may lack one, and an abort written for a transaction Kafka closed
    aborts whatever that producer has open then."""
    held = sorted(set(brokers))
    if verdict.hanging is not True or last_leader is None or last_leader in held:
        return verdict
    return Verdict(PARTITION_NOT_IN_COPY, None,
                   f"{verdict.evidence}; but the copy holds this partition from its followers only (broker "
                   f"{', '.join(map(str, held))}), not from its last leader, broker {last_leader}, whose log holds "
                   f"every marker the coordinator wrote: copy broker {last_leader}'s log dirs to judge it",
                   verdict.transactional_id)


def diverged(verdict: Verdict, offset: int, broker: int, other: int, held: str, other_held: str) -> Verdict:
    """Withhold a verdict on a partition whose replicas in the copy hold two histories: at
    ``offset`` broker ``broker`` holds ``held`` and broker ``other`` holds ``other_held``
    (partition.ClosedMarkers.divergence), as an unclean leader election or a copy mixing two
    clusters leaves them. Kafka would truncate one of them to its leader's epoch history
    (OffsetsForLeaderEpoch); which one consumers read the copy cannot tell, so neither an abort
    (hanging) nor a lagging follower (replicas_disagree) is said. Other verdicts stand."""
    if verdict.hanging is not True and verdict.reason != REPLICAS_DISAGREE:
        return verdict
    return Verdict(DIVERGED, None,
                   f"{verdict.evidence}; but the replicas of this partition hold two histories: diverged_at "
                   f"{offset}, where broker {broker} holds {held} and broker {other} holds {other_held}. Kafka "
                   f"would truncate one of them to its leader's epoch history (an unclean leader election, or a copy "
                   f"mixing two clusters): check which log the partition's leader serves before acting",
                   verdict.transactional_id)


def log_fault(fault: str) -> Verdict:
    """The verdict on an open transaction of a replica whose log breaks a rule Kafka's recovery
    enforces (partition_state.log_fault): the copy cannot tell, and no abort is planned."""
    return Verdict(LOG_FAULT, None, f"this replica's log cannot be trusted: {fault}; the transaction may be "
                                    f"closed past that batch, or be the faulty data itself")


def _without_record(txn: OpenTxn, matches: list[ProducerIdMatch]) -> Verdict:
    other = "; ".join(f"{m.record.transactional_id!r} lists it as {m.relation} producer id" for m in matches)
    return Verdict(NO_COORDINATOR_RECORD, True,
                   f"no transactional id has producer id {txn.producer_id} as its current producer"
                   + (f" ({other})" if other else " (expired or never known)"),
                   matches[0].record.transactional_id if matches else None)


def _with_record(txn: OpenTxn, rec: TxnLogRecord, as_of_ms: Optional[int] = None,
                 max_prepare_ms: Optional[int] = None) -> Verdict:
    """The verdict of the coordinator record whose current producer id is the transaction's."""
    tid = rec.transactional_id
    where = f"coordinator record of {tid!r} at __transaction_state-{rec.coordinator_partition} offset {rec.offset}"
    state = f"{rec.state} at epoch {rec.producer_epoch}"
    listed = (txn.topic, txn.partition) in rec.partitions
    if rec.state in PREPARING and listed and txn.producer_epoch > rec.producer_epoch:
        # The coordinator's markers carry the Prepare* record's epoch (with KIP-890 TV2 the
        # bumped one, e+1), and this partition holds the producer at a higher epoch: its leader
        # refuses them (ProducerAppendInfo.checkProducerEpoch, INVALID_PRODUCER_EPOCH, on every
        # release: 4.4.0 also refuses a TV2 marker equal to it) and the coordinator cancels them
        # for good (TransactionMarkerRequestCompletionHandler: "permanently failed"; it sends
        # them again only when it loads the partition again, to the same refusal). Shown on the
        # real marker-epochs cluster: PrepareCommit forever, at once, whatever its age.
        return Verdict(COORDINATOR_STUCK_PREPARING, None,
                       f"{where} is {state} and lists {txn.topic}-{txn.partition}, but this partition holds "
                       f"producer {txn.producer_id} at epoch {txn.producer_epoch}, above the epoch of the "
                       f"coordinator's markers ({rec.producer_epoch}): the partition leader refuses them "
                       f"(INVALID_PRODUCER_EPOCH) and the coordinator has stopped sending them, so it stays "
                       f"{rec.state}. The transaction is decided: never abort this partition by hand. Epoch "
                       f"{txn.producer_epoch} is not one this record gave: check the producer that wrote it, and the "
                       f"coordinator of __transaction_state-{rec.coordinator_partition} (its log names the refused "
                       f"marker)", tid)
    if rec.state in PREPARING and listed:
        # The persisted Prepare* record lists every partition of the transaction; which
        # markers are already written is only in the coordinator's memory. Never abort here.
        age = None if as_of_ms is None or rec.last_update_timestamp_ms < 0 else as_of_ms - rec.last_update_timestamp_ms
        if age is not None and max_prepare_ms is not None and age > max_prepare_ms:
            # A coordinator retries its markers until they land (a partition short of its ISR
            # holds them back), but some have stayed in Prepare* for good (KAFKA-19999,
            # KAFKA-20322): past the limit the copy cannot say which. The transaction is decided
            # either way: the remedy is on the coordinator's side, never a partition abort.
            return Verdict(COORDINATOR_STUCK_PREPARING, None,
                           f"{where} has been {state} for {_duration(age)} (last updated {age} ms before the "
                           f"scan's time, more than {max_prepare_ms} ms): the coordinator has not finished writing "
                           f"its markers. The transaction is decided: never abort this partition by hand; check "
                           f"the coordinator of __transaction_state-{rec.coordinator_partition} (its leader and ISR, "
                           f"the partitions its markers go to, its log for marker errors) and move or restart it "
                           f"so it completes", tid)
        return Verdict(MARKERS_PENDING, False,
                       f"{where} is {state}: the coordinator is writing markers; let it roll forward", tid)
    if rec.state == "Ongoing" and listed and rec.transaction_timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS:
        # A 2PC participant: prepared on the client's side, decided by an external transaction
        # manager, however long that takes. Markers written on one partition would break the
        # external transaction's atomicity.
        return Verdict(TWO_PHASE_COMMIT_IN_DOUBT, None,
                       f"{where} is {state} with transactionTimeoutMs {TWO_PHASE_COMMIT_TIMEOUT_MS} and lists "
                       f"{txn.topic}-{txn.partition}: a two-phase-commit participant (KIP-939), which may hold the "
                       f"LSO until its external transaction manager decides. Never abort it by partition markers: "
                       f"that breaks the external transaction's atomicity. Resolve it through that transaction "
                       f"manager; if it is gone for good, the coordinator-side remedy aborts the transaction on "
                       f"every partition at once: kafka-transactions.sh --bootstrap-server HOST:PORT "
                       f"forceTerminateTransaction --transactionalId {shlex.quote(tid)}", tid)
    if rec.state in PREPARING or rec.state == "Ongoing":
        if listed:
            return Verdict(COORDINATOR_ONGOING, False,
                           f"{where} is {state} and lists {txn.topic}-{txn.partition}: a live transaction "
                           f"the coordinator will commit, abort or time out", tid)
        return Verdict(PARTITION_NOT_IN_TRANSACTION, True,
                       f"{where} is {state} but does not list {txn.topic}-{txn.partition}: a write to a "
                       f"partition never added to the transaction", tid)
    if rec.state == "Empty" and rec.producer_epoch <= txn.producer_epoch:
        # Empty is the state right after InitProducerId: no transaction was ever begun at
        # this epoch, so the coordinator never heard of this partition.
        return Verdict(PARTITION_NOT_IN_TRANSACTION, True,
                       f"{where} is {state}: the coordinator has no transaction in progress, yet "
                       f"{txn.topic}-{txn.partition} has one open since offset {txn.start_offset}: a "
                       f"transactional write to a partition never added to a transaction", tid)
    return Verdict(COORDINATOR_MOVED_ON, True,
                   f"{where} is {state} while {txn.topic}-{txn.partition} still has the transaction of "
                   f"epoch {txn.producer_epoch} open since offset {txn.start_offset}: a missed marker", tid)


def _duration(ms: int) -> str:
    """An age for a person: whole minutes, or seconds under one."""
    return f"{ms // 60000} min" if ms >= 60000 else f"{ms // 1000} s"


@dataclass(frozen=True, slots=True)
class ClosedElsewhere:
    """The same transaction (producer id, first offset) closed on another replica."""

    broker: int
    marker_offset: int
    outcome: str


def with_replicas(verdict: Verdict, txn: OpenTxn, closed: list[ClosedElsewhere], behind: bool) -> Verdict:
    """Amend a coordinator verdict when other replicas of the partition have the marker.

    A follower that is behind (a lower log end than another replica) and lacks a marker the
    others have is lagging or was copied mid-replication: it would fetch the marker, so it is
    not hanging. A replica that is not behind yet lacks the marker keeps the coordinator's
    verdict, with the disagreement as evidence (the leader is the one consumers read).
    """
    if not closed:
        return verdict
    where = ", ".join(f"broker {c.broker} has its {c.outcome} marker at offset {c.marker_offset}"
                      for c in closed)
    if behind:
        return Verdict(REPLICAS_DISAGREE, False,
                       f"this replica is behind and lacks the marker ({where}): a lagging follower or a "
                       f"copy taken mid-replication, not a hang", verdict.transactional_id)
    return Verdict(REPLICAS_DISAGREE, verdict.hanging,
                   f"{where}, this replica (not behind) has the transaction open; coordinator: "
                   f"{verdict.evidence}", verdict.transactional_id)
