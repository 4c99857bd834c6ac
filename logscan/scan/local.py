"""The single-process driver: a copied cluster in, partition states and hanging verdicts out.

The Spark job runs the same functions per replica on executors; this driver runs them in a
loop, which is what the tests compare the Spark tables with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from logscan.logdir.segment import Finding
from logscan.logdir.tree import Skipped, iter_brokers, read_offset_checkpoint
from logscan.state import hanging
from logscan.state.coordinator import TxnLogRecord, index_by_producer_id, latest_states
from logscan.state.partition import ReplicaState, replica_state
from logscan.state.plans import AbortPlan, plan_abort
from logscan.state.producer_state import ProducerStateManager
from logscan.state.spans import TxnSpan, replay

from .replica import TRANSACTION_STATE_TOPIC, load_snapshot_seed, read_replica


@dataclass(slots=True)
class ReplicaResult:
    state: ReplicaState
    spans: list[TxnSpan]
    producers: ProducerStateManager
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class HangingCandidate:
    broker: int
    topic: str
    partition: int
    txn: hanging.OpenTxn
    age_ms: int
    verdict: hanging.Verdict


@dataclass(slots=True)
class ScanResult:
    replicas: list[ReplicaResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    coordinator: dict[str, TxnLogRecord] = field(default_factory=dict)
    candidates: list[HangingCandidate] = field(default_factory=list)
    as_of_ms: int = -1
    bytes_read: int = 0


def scan(roots: list[Path], *, as_of_ms: Optional[int] = None,
         max_transaction_timeout_ms: int = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
         include_superseded: bool = False) -> ScanResult:
    result = ScanResult()
    # Per coordinator partition, the replica whose copy reaches furthest: the coordinator
    # loads up to its log end, and a lagging follower's copy would show an older state.
    txn_logs: dict[int, tuple[int, list[TxnLogRecord]]] = {}
    for broker in iter_brokers(roots, include_superseded=include_superseded):
        result.skipped.extend(broker.skipped)
        result.findings.extend(Finding(str(broker.path), -1, "corrupt", e) for e in broker.errors)
        errors: list[str] = []
        hws = read_offset_checkpoint(broker.path / "replication-offset-checkpoint", errors)
        starts = read_offset_checkpoint(broker.path / "log-start-offset-checkpoint", errors)
        result.findings.extend(Finding(str(broker.path), -1, "corrupt", e) for e in errors)
        for rdir in broker.replicas:
            read = read_replica(rdir)
            result.findings.extend(read.findings)
            result.bytes_read += read.bytes_read
            seed = load_snapshot_seed(rdir, read.first_offset, result.findings)
            rep = replay(read.facts, seed)
            key = (rdir.topic, rdir.partition)
            state = replica_state(
                broker.broker, rdir.topic, rdir.partition, rep,
                first_segment_base=rdir.segments[0][0] if rdir.segments else None,
                last_segment_base=rdir.segments[-1][0] if rdir.segments else None,
                hw_checkpoint=hws.get(key), log_start_checkpoint=starts.get(key))
            result.replicas.append(ReplicaResult(state, rep.spans, rep.producers, read.max_timestamp))
            if rdir.topic == TRANSACTION_STATE_TOPIC:
                best = txn_logs.get(rdir.partition)
                if best is None or state.log_end_offset > best[0]:
                    txn_logs[rdir.partition] = (state.log_end_offset, read.txn_log)
    records = [r for _, (_, recs) in sorted(txn_logs.items()) for r in recs]
    result.coordinator = latest_states(records)
    result.as_of_ms = as_of_ms if as_of_ms is not None else max(
        [r.max_timestamp for r in result.replicas] + [r.last_update_timestamp_ms for r in records] + [-1])
    coordinator_complete = bool(txn_logs) and set(txn_logs) == set(range(max(txn_logs) + 1))
    result.candidates = find_candidates(result.replicas, result.coordinator, result.as_of_ms,
                                        max_transaction_timeout_ms, coordinator_complete)
    return result


def find_candidates(replicas: list[ReplicaResult], coordinator: dict[str, TxnLogRecord], as_of_ms: int,
                    max_timeout_ms: int, coordinator_complete: bool) -> list[HangingCandidate]:
    """find-hanging over every replica: open transactions older than the max timeout,
    judged against the coordinator records (describe-producers' epoch and lastTimestamp)
    and against the other replicas of the same partition."""
    index = index_by_producer_id(coordinator)
    by_partition: dict[tuple[str, int], list[ReplicaResult]] = {}
    for rep in replicas:
        by_partition.setdefault((rep.state.topic, rep.state.partition), []).append(rep)
    out = []
    for rep in replicas:
        st = rep.state
        peers = [p for p in by_partition[(st.topic, st.partition)] if p is not rep]
        behind = any(p.state.log_end_offset > st.log_end_offset for p in peers)
        for pid, first in sorted(rep.producers.ongoing().items(), key=lambda kv: kv[1]):
            entry = rep.producers.producers[pid]
            txn = hanging.OpenTxn(st.topic, st.partition, pid, entry.producer_epoch, first, entry.last_timestamp)
            if not hanging.is_candidate(txn, as_of_ms, max_timeout_ms):
                continue
            verdict = hanging.classify(txn, index.get(pid, []), coordinator_complete)
            closed = [hanging.ClosedElsewhere(p.state.broker, s.end_marker_offset, s.outcome)
                      for p in peers for s in p.spans
                      if s.producer_id == pid and s.first_offset == first and s.end_marker_offset is not None]
            verdict = hanging.with_replicas(verdict, txn, closed, behind)
            out.append(HangingCandidate(st.broker, st.topic, st.partition, txn,
                                        as_of_ms - txn.last_timestamp, verdict))
    return out


def plan_aborts(result: ScanResult, bootstrap: str) -> list[AbortPlan]:
    """One plan per hanging transaction per partition, from the replica furthest ahead (the
    one the leader's describe-producers would agree with)."""
    best: dict[tuple[str, int, int, int], HangingCandidate] = {}
    by_key = {(r.state.broker, r.state.topic, r.state.partition): r for r in result.replicas}
    for c in result.candidates:
        if c.verdict.hanging is not True:
            continue
        key = (c.topic, c.partition, c.txn.producer_id, c.txn.start_offset)
        rep = by_key[(c.broker, c.topic, c.partition)]
        held = best.get(key)
        if held is None or rep.state.log_end_offset > by_key[(held.broker, held.topic, held.partition)].state.log_end_offset:
            best[key] = c
    plans = []
    for key in sorted(best):
        c = best[key]
        rep = by_key[(c.broker, c.topic, c.partition)]
        others = [f for pid, f in rep.producers.ongoing().items() if pid != c.txn.producer_id]
        # The marker lands at the log end; once replicated the HW passes it.
        next_lso = min(others) if others else rep.state.log_end_offset + 1
        entry = rep.producers.producers[c.txn.producer_id]
        plan = plan_abort(c.txn, c.verdict, entry.coordinator_epoch, bootstrap=bootstrap,
                          high_watermark=rep.state.log_end_offset + 1, next_lso=next_lso)
        if plan is not None:
            plans.append(plan)
    return plans
