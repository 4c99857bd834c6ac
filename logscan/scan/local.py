"""The single-process driver: a copied cluster in, partition states and hanging verdicts out.

The Spark job runs the same functions per replica and per partition on executors; this
driver runs them in a loop, and :func:`tables` turns its result into the rows of every table
the Spark job writes, which is what the tests compare the Delta tables with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from logscan.logdir.segment import Finding
from logscan.logdir.tree import ReplicaDir, Skipped, file_size
from logscan.state import hanging
from logscan.state import partition as P
from logscan.state.coordinator import (CoordinatorCopy, TxnLogRecord, choose_replicas, coordinator_copy,
                                       index_by_producer_id, latest_states)
from logscan.state.partition import HangingCandidate, ReplicaAssessment, ReplicaState
from logscan.state.plans import AbortPlan
from logscan.state.producer_state import ProducerStateManager
from logscan.state.spans import TxnSpan

from . import rows as R
from .collector import collect_young, young_collections_only
from .listing import ListedReplica, list_copy
from .replica import (CLUSTER_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, ReplicaAnalysis, ReplicaRead,
                      ReplicaAnalyser, read_metadata_events, read_segment)

DEFAULT_BOOTSTRAP = "BOOTSTRAP:9092"

__all__ = ["HangingCandidate", "ReplicaResult", "ScanResult", "scan", "find_candidates", "plan_aborts", "tables"]


@dataclass(slots=True)
class ReplicaResult:
    state: ReplicaState
    spans: list[TxnSpan]
    producers: ProducerStateManager
    max_timestamp: int
    analysis: Optional[ReplicaAnalysis] = None
    assessment: Optional[ReplicaAssessment] = None

    def view(self) -> P.ReplicaView:
        if self.analysis is not None:
            return self.analysis.view()
        return P.ReplicaView(self.state, [], max_timestamp=self.max_timestamp)


def closed_txns(replicas: list[ReplicaResult]) -> list[tuple[int, P.ClosedTxn]]:
    """The closed transactions of ``replicas`` (one partition's) as assess_partition takes
    them: (broker, transaction) by end-marker offset, then broker and span index, the order
    the Spark job's partition stream sorts its span rows in."""
    closed = sorted(((s.end_marker_offset, r.state.broker, s.index), s) for r in replicas for s in r.spans
                    if s.end_marker_offset is not None)
    return [(broker, R.closed_txn(s)) for (_, broker, _), s in closed]


@dataclass(slots=True)
class ScanResult:
    replicas: list[ReplicaResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    coordinator: dict[str, TxnLogRecord] = field(default_factory=dict)
    coordinator_copy: CoordinatorCopy = field(default_factory=CoordinatorCopy)
    coordinator_replicas: dict[int, int] = field(default_factory=dict)  # partition -> broker read
    candidates: list[HangingCandidate] = field(default_factory=list)
    plans: list[tuple[int, AbortPlan]] = field(default_factory=list)  # (broker read, plan)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    as_of_ms: int = -1
    bytes_read: int = 0
    # Rows of the tables the loop above builds as it reads (files, batches, corruptions,
    # txn_log); the others come from the objects (see tables()).
    rows: dict[str, list[R.Row]] = field(default_factory=dict)


#: Called once per segment file the scan has read: (path, size in bytes).
OnFile = Callable[[str, int], None]


def _read_replica(listed: ListedReplica, analyser: ReplicaAnalyser, keep_batches: bool,
                  rows: dict[str, list[R.Row]], on_file: Optional[OnFile] = None) -> ReplicaRead:
    """Every segment of a replica, its batch facts streamed into ``analyser`` as they are read,
    with the rows of each segment file as the Spark job makes them."""
    r = listed.replica
    key = listed.key
    read = ReplicaRead()
    for base, path in r.segments:
        marks = (read.batches, len(read.findings), len(read.txn_log), read.damaged_count)
        if keep_batches:
            def on_fact(fact, header, path=str(path), base=base):
                analyser.feed(fact)
                rows["batches"].append(R.batch_row(fact, header, key, path, base))
        else:
            def on_fact(fact, header):
                analyser.feed(fact)
        read_segment(str(path), r.partition, is_txn_log=r.topic == TRANSACTION_STATE_TOPIC, out=read,
                     headers=keep_batches, on_fact=on_fact)
        found = read.findings[marks[1]:]
        size = file_size(path)
        rows["files"].append({**key, "file": str(path), "kind": "log_segment", "size": size,
                              "status": R.file_status(found), "error_count": len(found),
                              "batches": read.batches - marks[0] + read.damaged_count - marks[3],
                              "detail": None})
        if keep_batches:
            rows["batches"].extend(R.batch_row(f, h, key, str(path), base) for f, h in read.damaged)
            read.damaged.clear()
        part = ReplicaRead(txn_log=read.txn_log[marks[2]:], txn_log_positions=read.txn_log_positions[marks[2]:])
        rows["txn_log"].extend(R.txn_log_rows(part, key, str(path)))
        if on_file is not None:
            on_file(str(path), size)
    return read


@young_collections_only()
def scan(roots: list[Path], *, as_of_ms: Optional[int] = None,
         max_transaction_timeout_ms: int = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
         include_superseded: bool = False, keep_batches: bool = False,
         bootstrap: str = DEFAULT_BOOTSTRAP, on_file: Optional[OnFile] = None) -> ScanResult:
    """Scan a copy. ``keep_batches`` also keeps a row per batch (``rows['batches']``);
    ``on_file(path, size)`` is called as each segment file has been read (a progress bar).
    Python's cyclic collector is paused while it runs (collector.young_collections_only)."""
    result = ScanResult(rows={"files": [], "batches": [], "corruptions": [], "txn_log": []})
    listing = list_copy(roots, include_superseded=include_superseded)
    for broker in listing.brokers:
        result.skipped.extend(broker.skipped)
    result.rows["files"].extend(listing.files)
    _add_findings(result, listing.findings)
    txn_logs: dict[tuple[int, int], list[TxnLogRecord]] = {}   # (partition, broker) -> records
    txn_log_ends: list[tuple[int, int, int, Optional[int], Optional[str]]] = []
    metadata: dict[int, ReplicaDir] = {}
    metadata_ends: list[tuple[int, int, int]] = []
    for listed in listing.replicas:
        rdir, key = listed.replica, listed.key
        # Spans leave the replay as they close, as in the Spark job; this driver keeps them
        # for its result.
        closed: list[TxnSpan] = []
        analyser = ReplicaAnalyser(rdir, on_close=closed.append, hw_checkpoint=listed.hw_checkpoint,
                                   log_start_checkpoint=listed.log_start_checkpoint)
        read = _read_replica(listed, analyser, keep_batches, result.rows, on_file)
        result.bytes_read += read.bytes_read
        analysis = analyser.finish()
        _add_findings(result, [(key, f) for f in read.findings + analysis.findings])
        result.rows["files"].extend(R.snapshot_file_rows(analysis.snapshots, key))
        state = analysis.state
        spans = sorted(closed + analysis.replay.open_spans, key=lambda s: s.index)
        result.replicas.append(ReplicaResult(state, spans, analysis.replay.producers,
                                             analysis.max_timestamp, analysis))
        if rdir.topic == TRANSACTION_STATE_TOPIC:
            txn_logs[(rdir.partition, rdir.broker)] = read.txn_log
            txn_log_ends.append((rdir.partition, rdir.broker, state.log_end_offset,
                                 state.checkpointed_high_watermark, state.copy_gap))
        elif rdir.topic == CLUSTER_METADATA_TOPIC:
            metadata[rdir.broker] = rdir
            metadata_ends.append((rdir.partition, rdir.broker, state.log_end_offset))
        collect_young()

    chosen, coordinator = coordinator_copy(txn_log_ends)
    result.coordinator_replicas = chosen
    records = [rec for p, b in chosen.items() for rec in txn_logs[(p, b)]]
    result.coordinator = latest_states(records)
    result.as_of_ms = as_of_ms if as_of_ms is not None else max(
        [r.max_timestamp for r in result.replicas] + [r.last_update_timestamp_ms for r in records] + [-1])

    events = []
    for _, broker in choose_replicas(metadata_ends).items():
        found: list[Finding] = []
        events = read_metadata_events(metadata[broker], found)
        _add_findings(result, [(R.replica_key(broker, CLUSTER_METADATA_TOPIC, 0), f) for f in found])
    result.leaders = P.partition_leaders(events, result.as_of_ms)
    result.coordinator_copy = coordinator.counted(
        P.partition_counts(events, result.as_of_ms).get(TRANSACTION_STATE_TOPIC))
    _assess(result, max_transaction_timeout_ms, bootstrap)
    return result


def _add_findings(result: ScanResult, keyed: list[tuple[R.Row, Finding]]) -> None:
    for key, finding in keyed:
        result.findings.append(finding)
        result.rows["corruptions"].append(R.finding_row(finding, key))


def _partitions(replicas: list[ReplicaResult]) -> dict[tuple[str, int], list[ReplicaResult]]:
    by_partition: dict[tuple[str, int], list[ReplicaResult]] = {}
    for rep in replicas:
        by_partition.setdefault((rep.state.topic, rep.state.partition), []).append(rep)
    return by_partition


def _assess(result: ScanResult, max_timeout_ms: int, bootstrap: str) -> None:
    index = index_by_producer_id(result.coordinator)
    for (topic, partition), reps in sorted(_partitions(result.replicas).items()):
        views = [r.view() for r in reps]
        out = P.assess_partition(views, closed_txns(reps), metadata_leader=result.leaders.get((topic, partition)),
                                 index=index, as_of_ms=result.as_of_ms, max_timeout_ms=max_timeout_ms,
                                 coordinator=result.coordinator_copy, bootstrap=bootstrap)
        by_broker = {a.broker: a for a in out.replicas}
        for r in reps:
            r.assessment = by_broker[r.state.broker]
        result.candidates.extend(out.candidates)
        result.plans.extend(out.plans)
        collect_young()


def find_candidates(replicas: list[ReplicaResult], coordinator: dict[str, TxnLogRecord], as_of_ms: int,
                    max_timeout_ms: int, coordinator_copy: CoordinatorCopy) -> list[HangingCandidate]:
    """find-hanging over every replica (see logscan.state.partition.find_hanging), with
    another as-of time or timeout than the scan's."""
    index = index_by_producer_id(coordinator)
    out = []
    for _, reps in sorted(_partitions(replicas).items()):
        views = sorted((r.view() for r in reps), key=lambda v: v.state.broker)
        out.extend(P.find_hanging(views, P.closed_markers(views, closed_txns(reps)), index,
                                  as_of_ms, max_timeout_ms, coordinator_copy))
    return out


def plan_aborts(result: ScanResult, bootstrap: str) -> list[AbortPlan]:
    """One plan per hanging transaction per partition, from the replica furthest ahead."""
    plans = []
    by_partition = _partitions(result.replicas)
    for (topic, partition), reps in sorted(by_partition.items()):
        views = sorted((r.view() for r in reps), key=lambda v: v.state.broker)
        cands = [c for c in result.candidates if (c.topic, c.partition) == (topic, partition)]
        _, _, is_leader = P.leadership(views, result.leaders.get((topic, partition)))
        plans.extend(plan for _, plan in P.plan_aborts(views, cands, is_leader, bootstrap))
    return plans


def tables(result: ScanResult) -> dict[str, list[R.Row]]:
    """Every table of the Spark job as rows (``batches`` only with ``scan(keep_batches=True)``)."""
    out = {name: list(rows) for name, rows in result.rows.items()}
    out.update({"coordinator_state": [], "producer_snapshots": [], "producer_state": [], "txn_spans": [],
                "partition_state": [], "hanging_candidates": [], "abort_plans": []})
    for rec in result.coordinator.values():
        key = R.replica_key(result.coordinator_replicas[rec.coordinator_partition], TRANSACTION_STATE_TOPIC,
                            rec.coordinator_partition)
        out["coordinator_state"].append({**key, **R.txn_record_row(rec)})
    for rep in result.replicas:
        st = rep.state
        key = R.replica_key(st.broker, st.topic, st.partition)
        check = rep.analysis.snapshot_check if rep.analysis else None
        if rep.analysis is not None:
            out["producer_snapshots"].extend(R.snapshot_rows(rep.analysis.snapshots, key, check))
        out["producer_state"].extend(R.producer_rows(rep.producers, key, check))
        out["txn_spans"].extend(R.span_rows(rep.spans, key))
        out["partition_state"].append(R.state_row(st, rep.max_timestamp,
                                                  rep.analysis.leader_epoch if rep.analysis else None,
                                                  rep.assessment))
    for c in result.candidates:
        out["hanging_candidates"].append(R.candidate_row(R.replica_key(c.broker, c.topic, c.partition),
                                                         c.txn, c.age_ms, c.verdict))
    out["abort_plans"] = [R.plan_row(broker, plan) for broker, plan in result.plans]
    return out
