"""What runs inside Spark's Python workers: Arrow in, a call into logscan, Arrow out.

Nothing here knows Kafka's rules: decoding is ``logscan.scan.replica.read_segment`` and the
per-replica logic is ``logscan.state`` (replay, replica_state, latest_states, classify), the
same calls the single-process driver (``logscan.scan.local``) makes. These functions only
move rows between Arrow and those calls. The module is shipped to workers by value
(``cloudpickle.register_pickle_by_value`` in scan.py), so workers need logscan, not
spark_jobs, on their path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from logscan.logdir.segment import Finding
from logscan.logdir.tree import ReplicaDir
from logscan.scan import rows as R
from logscan.scan.replica import TRANSACTION_STATE_TOPIC, ReplicaRead, load_snapshot_seed, read_segment
from logscan.state import hanging
from logscan.state.coordinator import index_by_producer_id, latest_states
from logscan.state.facts import BatchFact
from logscan.state.partition import replica_state
from logscan.state.spans import replay

#: One work unit per segment file; a Spark task gets a group of them (see scan.plan_tasks).
WORK_UNIT = pa.schema([
    pa.field("task", pa.int32()), pa.field("broker", pa.int32()), pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()), pa.field("file", pa.string()),
    pa.field("segment_base_offset", pa.int64()), pa.field("size", pa.int64()),
])

#: Per replica, what the grouped step needs besides its batches (listed on the driver).
REPLICA_INFO = pa.schema([
    pa.field("broker", pa.int32()), pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("path", pa.string()), pa.field("first_segment_base", pa.int64()),
    pa.field("last_segment_base", pa.int64()),
    pa.field("snapshots", pa.list_(pa.struct([pa.field("base_offset", pa.int64()),
                                              pa.field("file", pa.string())]))),
    pa.field("hw_checkpoint", pa.int64()), pa.field("log_start_checkpoint", pa.int64()),
])

def unit_tuples(group: list[R.Row]) -> list[tuple]:
    return [tuple(u[n] for n in WORK_UNIT.names) for u in group]


DECODED = R.tagged_schema({"file": R.FILES, "batch": R.BATCHES, "txn_log": R.TXN_LOG,
                           "finding": R.CORRUPTIONS})
REPLICA_OUT = R.tagged_schema({"state": R.PARTITION_STATE, "producer": R.PRODUCER_STATE,
                               "span": R.TXN_SPANS, "open_txn": R.OPEN_TXNS, "finding": R.CORRUPTIONS})

_FLUSH_ROWS = 20_000


def _file_status(read: ReplicaRead) -> str:
    if any(f.reason == "io" and f.position < 0 for f in read.findings):
        return "unreadable"
    return "damaged" if read.findings else "ok"


def decode_segment(unit: R.Row) -> Iterator[tuple[str, R.Row]]:
    """One segment file into tagged rows: its batches, txn-log records, findings and its
    `files` row (last, once the counts are known)."""
    key = R.replica_key(unit["broker"], unit["topic"], unit["partition"])
    path = unit["file"]
    read = read_segment(path, unit["partition"], is_txn_log=unit["topic"] == TRANSACTION_STATE_TOPIC)
    for i, fact in enumerate(read.facts):
        yield "batch", R.batch_row(fact, key, path, unit["segment_base_offset"], i)
    for rec in read.txn_log:
        yield "txn_log", {**key, "file": path, **R.txn_record_row(rec)}
    for finding in read.findings:
        yield "finding", R.finding_row(finding, key)
    yield "file", {**key, "file": path, "kind": "log_segment", "size": unit["size"],
                   "status": _file_status(read), "error_count": len(read.findings),
                   "batches": len(read.facts), "detail": None}


def decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: work units in, tagged decoded rows out, in bounded Arrow batches."""
    out: list[tuple[str, R.Row]] = []
    for batch in batches:
        for unit in batch.to_pylist():
            for item in decode_segment(unit):
                out.append(item)
                if len(out) >= _FLUSH_ROWS:
                    yield R.to_tagged_batch(out, DECODED)
                    out = []
    if out:
        yield R.to_tagged_batch(out, DECODED)


def _facts(batches: pa.Table):
    """The replica's batch rows as BatchFacts in log order (segment, then position in it)."""
    if batches.num_rows == 0:
        return []
    batches = batches.sort_by([("segment_base_offset", "ascending"), ("batch_index", "ascending")])
    cols = [batches.column(name).to_pylist() for name in BatchFact._fields]
    return [BatchFact(*values) for values in zip(*cols)]


def replica_rows(info: R.Row, batches: pa.Table) -> list[tuple[str, R.Row]]:
    """Kafka's per-replica rules over one replica: what logscan.scan.local.scan computes
    for it, as tagged rows."""
    key = R.replica_key(info["broker"], info["topic"], info["partition"])
    facts = _facts(batches)
    findings: list[Finding] = []
    replica = ReplicaDir(info["broker"], info["topic"], info["partition"], Path(info["path"]),
                         snapshots=[(s["base_offset"], Path(s["file"])) for s in info["snapshots"] or ()])
    first_offset = facts[0].base_offset if facts else None
    seed = load_snapshot_seed(replica, first_offset, findings)
    rep = replay(facts, seed)
    state = replica_state(info["broker"], info["topic"], info["partition"], rep,
                          first_segment_base=info["first_segment_base"],
                          last_segment_base=info["last_segment_base"],
                          hw_checkpoint=info["hw_checkpoint"], log_start_checkpoint=info["log_start_checkpoint"])
    max_timestamp = max((f.max_timestamp for f in facts), default=-1)
    out: list[tuple[str, R.Row]] = [("state", R.state_row(state, max_timestamp))]
    out.extend(("producer", r) for r in R.producer_rows(rep.producers, key))
    out.extend(("span", r) for r in R.span_rows(rep.spans, key))
    out.extend(("open_txn", r) for r in R.open_txn_rows(rep.producers, key))
    out.extend(("finding", R.finding_row(f, key)) for f in findings)
    return out


def replica_step(infos: pa.Table, batches: pa.Table) -> pa.Table:
    """Cogrouped applyInArrow body: one replica's listing row and its batch rows."""
    if infos.num_rows == 0:  # batches of a replica the driver did not list: cannot happen
        return REPLICA_OUT.empty_table()
    info = infos.slice(0, 1).to_pylist()[0]
    return pa.Table.from_batches([R.to_tagged_batch(replica_rows(info, batches), REPLICA_OUT)])


def coordinator_step(records: pa.Table) -> pa.Table:
    """Grouped by coordinator partition (one chosen replica): the latest record per
    transactional id, via logscan.state.coordinator.latest_states."""
    rows = sorted(records.to_pylist(), key=lambda r: r["offset"])
    if not rows:
        return R.COORDINATOR_STATE.empty_table()
    key = R.replica_key(rows[0]["broker"], rows[0]["topic"], rows[0]["partition"])
    latest = latest_states(R.txn_record_from_row(r) for r in rows)
    out = [{**key, **R.txn_record_row(rec)} for rec in latest.values()]
    return pa.Table.from_batches([R.to_batch(out, R.COORDINATOR_STATE)])


def hanging_step(coordinator_rows: list[R.Row], as_of_ms: int, max_timeout_ms: int,
                 coordinator_complete: bool):
    """A mapInArrow body over open transactions: find-hanging's filter and verdict, judged
    against the coordinator state (shipped in the closure: one row per transactional id)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        latest = {r["transactional_id"]: R.txn_record_from_row(r) for r in coordinator_rows}
        index = index_by_producer_id(latest)
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                txn = R.open_txn_from_row(row)
                if not hanging.is_candidate(txn, as_of_ms, max_timeout_ms):
                    continue
                verdict = hanging.classify(txn, index.get(txn.producer_id, []), coordinator_complete)
                key = R.replica_key(row["broker"], row["topic"], row["partition"])
                out.append(R.candidate_row(key, txn, as_of_ms - txn.last_timestamp, verdict))
            yield R.to_batch(out, R.HANGING_CANDIDATES)
    return run
