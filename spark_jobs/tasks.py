"""What runs inside Spark's Python workers: Arrow in, a call into logscan, Arrow out.

Nothing here knows Kafka's rules: decoding is ``logscan.scan.replica.read_segment``, the
per-replica logic ``logscan.scan.replica.ReplicaAnalyser``, the coordinator's view
``logscan.state.coordinator`` and the cross-replica rules (leader, agreement, find-hanging,
plans) ``logscan.state.partition.assess_partition``: the same calls the single-process
driver (``logscan.scan.local``) makes. These functions only move rows between Arrow and
those calls. The module is shipped to workers by value (``cloudpickle.register_pickle_by_value``
in scan.py), so workers need logscan, not spark_jobs, on their path.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from itertools import chain, groupby, repeat
from operator import itemgetter
from pathlib import Path
from typing import Iterable, Iterator, Optional

import pyarrow as pa
from pyspark import Broadcast, TaskContext

from logscan.logdir.segment import Finding
from logscan.logdir.tree import ReplicaDir
from logscan.scan import rows as R
from logscan.scan.collector import young_collections_only
from logscan.scan.listing import ListedReplica
from logscan.scan.replica import (TRANSACTION_STATE_TOPIC, ByteRange, ReplicaAnalyser, ReplicaRead, iter_segment,
                                  read_metadata_events)
from logscan.state import partition as P
from logscan.state.coordinator import CoordinatorCopy, index_by_producer_id, latest_states
from logscan.state.facts import BatchFact
from logscan.state.spans import TxnSpan

_BASE_AND_FILE = pa.list_(pa.struct([pa.field("base_offset", pa.int64()), pa.field("file", pa.string())]))

#: Per replica, what the per-replica rules need besides its batches (listed on the driver).
REPLICA_INFO = pa.schema([
    pa.field("broker", pa.int32()), pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("path", pa.string()), pa.field("segments", _BASE_AND_FILE), pa.field("snapshots", _BASE_AND_FILE),
    pa.field("indexes", _BASE_AND_FILE), pa.field("txn_indexes", _BASE_AND_FILE),
    pa.field("hw_checkpoint", pa.int64()), pa.field("log_start_checkpoint", pa.int64()),
])

#: One work unit per segment file or byte range of one; a Spark task gets a group of them
#: (see scan.plan_tasks). ``replica`` (its REPLICA_INFO row) is set on the first unit of a
#: replica the decode task replays itself: that replica's units follow it in log order, in
#: the same task.
WORK_UNIT = pa.schema([
    pa.field("task", pa.int32()), pa.field("broker", pa.int32()), pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()), pa.field("file", pa.string()),
    pa.field("segment_base_offset", pa.int64()), pa.field("size", pa.int64()),
    pa.field("range_index", pa.int32()), pa.field("ranges", pa.int32()), pa.field("split_bytes", pa.int64()),
    pa.field("replica", pa.struct(list(REPLICA_INFO))),
])

#: A byte range's hand-offs (see logscan.scan.replica.valid_ranges); files read whole have none.
RANGES = pa.schema([
    pa.field("file", pa.string()), pa.field("range_index", pa.int32()), pa.field("ranges", pa.int32()),
    pa.field("handoffs", pa.list_(pa.struct([pa.field("range_index", pa.int32()), pa.field("clean", pa.bool_())]))),
])

#: The leader of each partition at as_of, from __cluster_metadata.
LEADERS = pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                     pa.field("leader", pa.int32())])

_RANGE_KEYS = [pa.field("segment", pa.string()), pa.field("range_index", pa.int32()), pa.field("ranges", pa.int32())]
_PARTITION_KEYS = [pa.field("topic", pa.string()), pa.field("partition", pa.int32())]

#: What the per-replica rules give besides files and findings rows.
_REPLICA_MEMBERS = {"state": R.PARTITION_STATE, "producer": R.PRODUCER_STATE, "span": R.TXN_SPANS,
                    "open_txn": R.OPEN_TXNS, "snapshot": R.PRODUCER_SNAPSHOTS}
REPLICA_KINDS = tuple(_REPLICA_MEMBERS)
#: The decode's rows: each segment's, and the replica rows of the replicas it replays (their
#: files and findings rows among the segments').
DECODED = R.tagged_schema({"file": R.FILES, "batch": R.BATCHES, "txn_log": R.TXN_LOG, "finding": R.CORRUPTIONS,
                           "range": RANGES, **_REPLICA_MEMBERS}, _RANGE_KEYS + _PARTITION_KEYS)
REPLICA_OUT = R.tagged_schema({**_REPLICA_MEMBERS, "file": R.FILES, "finding": R.CORRUPTIONS}, _PARTITION_KEYS)
#: Partition count of each topic at as_of, from __cluster_metadata.
TOPICS = pa.schema([pa.field("topic", pa.string()), pa.field("partitions", pa.int32())])
METADATA_OUT = R.tagged_schema({"leader": LEADERS, "topic": TOPICS, "finding": R.CORRUPTIONS})
PARTITION_OUT = R.tagged_schema({"state": R.PARTITION_STATE, "candidate": R.HANGING_CANDIDATES,
                                 "plan": R.ABORT_PLANS})

#: Rows a Python worker holds before it hands them to Spark as one Arrow batch. The pending
#: rows (and their objects: a batch fact and header each in the decode) are most of a task's
#: memory beyond the mapped window: at 20,000 the decode's RssAnon swung by ~50 MiB between
#: flushes, at 4096 by ~16 MiB, for the same CPU time (make bench, 2026-11-23).
_FLUSH_ROWS = 4096


def freeze_worker_heap() -> None:
    """Called as each body here starts: in a Spark task, the objects alive then (the worker's
    modules: pyspark, pyarrow, logscan; what earlier tasks of the worker keep) move to the
    collector's permanent generation (gc.freeze). PySpark's daemon runs a full collection
    after every task of a reused worker (pyspark/daemon.py), which otherwise traverses them
    all: 40 to 100 ms a task for the ~88,000 objects of a decode worker, against ~110 ms of
    decoding in a task of 256 MiB of 48 KiB batches (make bench's 10 GB copy, 2026-11-24).
    Except in a worker's first task (which also freezes what its imports left), the daemon's
    collection has just run when a task starts, so what is frozen is in use; reference counting
    still frees it. Outside a Spark task (the tests, the local driver) nothing is frozen."""
    if TaskContext.get() is not None:
        gc.freeze()


def unit_tuples(group: list[R.Row]) -> list[tuple]:
    return [tuple(u.get(n) for n in WORK_UNIT.names) for u in group]


def replica_info(listed: ListedReplica) -> R.Row:
    """A replica's REPLICA_INFO row: what the listing knows of it, for a task to rebuild it."""
    r = listed.replica
    return {**listed.key, "path": str(r.path),
            **{name: [{"base_offset": b, "file": str(p)} for b, p in getattr(r, name)]
               for name in ("segments", "snapshots", "indexes", "txn_indexes")},
            "hw_checkpoint": listed.hw_checkpoint, "log_start_checkpoint": listed.log_start_checkpoint}


def _replica_dir(info: R.Row) -> ReplicaDir:
    def files(name: str) -> list[tuple[int, Path]]:
        return [(s["base_offset"], Path(s["file"])) for s in info[name] or ()]

    return ReplicaDir(info["broker"], info["topic"], info["partition"], Path(info["path"]),
                      segments=files("segments"), snapshots=files("snapshots"), txn_indexes=files("txn_indexes"),
                      indexes=files("indexes"))


class ReplicaReplay:
    """Kafka's per-replica rules (logscan.scan.replica.ReplicaAnalyser) over one replica, its
    listing row given, its checksum-valid batch facts fed in log order: a span's row comes out
    of :meth:`feed` as its end marker closes it, so a replica's closed transactions are never
    held; the other rows (and the spans still open) from :meth:`finish`. Run by the per-replica
    step, and by a decode task for the replicas it reads whole (their units' ``replica``)."""

    __slots__ = ("key", "ident", "_closed", "_analyser", "_listed", "_segments")

    def __init__(self, info: R.Row) -> None:
        replica = _replica_dir(info)
        self.key = R.replica_key(replica.broker, replica.topic, replica.partition)
        self.ident = (replica.broker, replica.topic, replica.partition)
        self._closed: list[TxnSpan] = []
        self._analyser = ReplicaAnalyser(replica, on_close=self._closed.append, hw_checkpoint=info["hw_checkpoint"],
                                         log_start_checkpoint=info["log_start_checkpoint"])
        self._listed = [base for base, _ in replica.segments]
        self._segments: list[int] = []  # the base offsets of the segments a decode task read

    def feed(self, fact: BatchFact) -> list[tuple[str, R.Row]]:
        self._analyser.feed(fact)
        if not self._closed:
            return []
        rows = [("span", R.span_row(span, self.key)) for span in self._closed]
        self._closed.clear()
        return rows

    def read(self, unit: R.Row) -> None:
        """Notes that a decode task has read the segment of ``unit`` whole."""
        self._segments.append(unit["segment_base_offset"])

    def finish(self) -> Iterator[tuple[str, R.Row]]:
        if self._segments and self._segments != self._listed:
            raise ValueError(f"replica {self.key}: a decode task read segments {self._segments}, not the listed "
                             f"{self._listed} in log order")
        a = self._analyser.finish()
        key = self.key
        view = a.view()
        yield "state", R.state_row(a.state, a.max_timestamp, a.leader_epoch)
        yield from (("producer", r) for r in R.producer_rows(a.replay.producers, key, a.snapshot_check))
        yield from (("span", r) for r in R.span_rows(a.replay.open_spans, key))
        yield from (("open_txn", r) for r in R.open_txn_rows(view, key))
        yield from (("snapshot", r) for r in R.snapshot_rows(a.snapshots, key, a.snapshot_check))
        yield from (("file", r) for r in R.snapshot_file_rows(a.snapshots, key))
        yield from (("finding", R.finding_row(f, key)) for f in a.findings)


def decode_segment(unit: R.Row, replay: Optional[ReplicaReplay] = None) -> Iterator[tuple[str, object]]:
    """One segment file (or byte range of one) into tagged items, streamed as the walk goes:
    its batches (a (BatchFact, header) pair each, for R.batch_struct), then txn-log records,
    findings, its hand-offs and its `files` row as rows (the files row last, once the counts
    are known; a split file's rows are summed over its kept ranges in scan.py). With
    ``replay`` (the segment's replica, replayed by this task) each checksum-valid batch is fed
    to it as it is read, and the spans it closes come out as they close."""
    key = R.replica_key(unit["broker"], unit["topic"], unit["partition"])
    path = unit["file"]
    split = unit["ranges"] > 1
    rng = ByteRange(unit["range_index"], unit["ranges"], unit["split_bytes"]) if split else None
    read = ReplicaRead()
    for pair in iter_segment(path, unit["partition"], is_txn_log=unit["topic"] == TRANSACTION_STATE_TOPIC,
                             out=read, headers=True, byte_range=rng):
        yield "batch", pair
        if replay is not None:
            closed = replay.feed(pair[0])
            if closed:
                yield from closed
    if replay is not None:
        replay.read(unit)
    for pair in read.damaged:
        yield "batch", pair
    for row in R.txn_log_rows(read, key, path):
        yield "txn_log", row
    for finding in read.findings:
        yield "finding", R.finding_row(finding, key)
    if split:
        yield "range", {"file": path, "range_index": unit["range_index"], "ranges": unit["ranges"],
                        "handoffs": [{"range_index": i, "clean": c} for i, c in read.handoffs]}
    yield "file", {**key, "file": path, "kind": "log_segment", "size": unit["size"],
                   "status": R.file_status(read.findings), "error_count": len(read.findings),
                   "batches": read.batches + read.damaged_count, "detail": None}


#: Per work unit, the value of each column its batch rows share: BATCHES' key columns (topic
#: and partition are DECODED's too), then DECODED's (segment, range_index, ranges).
_UNIT_COLUMNS = (("broker", "broker"), ("topic", "topic"), ("partition", "partition"), ("file", "file"),
                 ("segment_base_offset", "segment_base_offset"), ("segment", "file"),
                 ("range_index", "range_index"), ("ranges", "ranges"))
#: DECODED's key columns of a replayed replica's rows: of no one segment, and read whole.
_REPLICA_EXTRA = {"segment": None, "range_index": 0, "ranges": 1}


def _flush(rows: list[tuple[str, R.Row]], schema: pa.Schema, extras: Optional[list[R.Row]] = None
           ) -> pa.RecordBatch:
    """Pending tagged rows (and their ``extras``, see R.to_tagged_batch) as one Arrow batch, then
    dropped, then the young generations collected (young_collections_only)."""
    batch = R.to_tagged_batch(rows, schema, extras=extras)
    rows.clear()
    if extras is not None:
        extras.clear()
    gc.collect(1)
    return batch


def decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: work units in, tagged decoded rows out, in bounded Arrow batches. The
    rows of many small files share a batch; batch rows (one per batch of the copy) are built
    column-wise (R.batch_struct: no dict per row), the few others through to_tagged_batch.
    A replica whose first unit carries its listing row (scan.plan_tasks) is replayed as its
    units are read (ReplicaReplay), its rows leaving with the others as they are made. The
    collector runs young collections only, at each flush (young_collections_only)."""
    freeze_worker_heap()
    with young_collections_only():
        yield from _decode_files(batches)


def _decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    facts: list[BatchFact] = []
    headers: list = []
    runs: list[tuple[tuple, int]] = []  # per unit in the pending rows: its column values, its row count
    others: list[tuple[str, R.Row]] = []
    extras: list[R.Row] = []

    def flush_rows() -> pa.RecordBatch:
        columns = {name: list(chain.from_iterable(repeat(values[i], n) for values, n in runs))
                   for i, (name, _) in enumerate(_UNIT_COLUMNS)}
        batch = R.to_member_batch(R.batch_struct(facts, headers, columns), DECODED, "batch", columns)
        facts.clear()
        headers.clear()
        runs.clear()
        gc.collect(1)
        return batch

    replay: Optional[ReplicaReplay] = None

    def pending(kind: str, item: R.Row, extra: R.Row) -> bool:
        others.append((kind, item))
        extras.append(extra)
        return len(others) >= _FLUSH_ROWS

    def finished(replay: ReplicaReplay) -> Iterator[pa.RecordBatch]:
        for kind, item in replay.finish():
            if pending(kind, item, _REPLICA_EXTRA):
                yield _flush(others, DECODED, extras=extras)

    for batch in batches:
        for unit in batch.to_pylist():
            key = (unit["broker"], unit["topic"], unit["partition"])
            if replay is not None and (key != replay.ident or unit["replica"] is not None):
                yield from finished(replay)
                replay = None
            if unit["replica"] is not None:
                replay = ReplicaReplay(unit["replica"])
            values = tuple(unit[k] for _, k in _UNIT_COLUMNS)
            extra = {"segment": unit["file"], "range_index": unit["range_index"], "ranges": unit["ranges"]}
            start = len(facts)
            for kind, item in decode_segment(unit, replay):
                if kind == "batch":
                    facts.append(item[0])
                    headers.append(item[1])
                    if len(facts) >= _FLUSH_ROWS:
                        runs.append((values, len(facts) - start))
                        yield flush_rows()
                        start = 0
                elif pending(kind, item, _REPLICA_EXTRA if kind in _REPLICA_MEMBERS else extra):
                    yield _flush(others, DECODED, extras=extras)
            if len(facts) > start:
                runs.append((values, len(facts) - start))
    if replay is not None:
        yield from finished(replay)
    if facts:
        yield flush_rows()
    if others:
        yield _flush(others, DECODED, extras=extras)


#: ``kind`` of the rows of the per-replica stream (scan.replica_stream_input): a replica's
#: listing row sorts before its batch rows.
STREAM_INFO, STREAM_BATCH = 0, 1
_STREAM_KEYS = ("broker", "topic", "partition", "kind", "info")


def _stream_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[tuple, int, object]]:
    """(replica key, kind, the listing row or a BatchFact) per row of the sorted stream, one
    Arrow batch in memory at a time."""
    for batch in batches:
        keys = [batch.column(n).to_pylist() for n in _STREAM_KEYS]
        facts = [batch.column(n).to_pylist() for n in BatchFact._fields]
        for (broker, topic, partition, kind, info), values in zip(zip(*keys), zip(*facts)):
            yield (broker, topic, partition), kind, info if kind == STREAM_INFO else BatchFact(*values)


def replica_rows(info: R.Row, facts: Iterable[BatchFact]) -> Iterator[tuple[str, R.Row]]:
    """Kafka's per-replica rules over one replica (its listing row and its checksum-valid
    batch facts in log order): what logscan.scan.local.scan computes for it, as tagged rows
    (ReplicaReplay)."""
    replay = ReplicaReplay(info)
    for fact in facts:
        closed = replay.feed(fact)
        if closed:
            yield from closed
    yield from replay.finish()


def replica_stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over the per-replica stream: rows clustered by replica, each replica's
    listing row first, then its batch facts in log order (scan.replica_stream_input sorts them
    so). Each replica's batches are replayed as they arrive and its rows leave in Arrow batches of
    at most _FLUSH_ROWS as they are made (a span's as it closes), so memory holds one Arrow
    batch in, one out, and the replica's producer state and open spans: never the replica's
    batches nor its closed transactions. The collector runs young collections only, at each
    flush (young_collections_only)."""
    freeze_worker_heap()
    with young_collections_only():
        yield from _replica_stream(batches)


def _replica_stream(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    out: list[tuple[str, R.Row]] = []
    for _, rows in groupby(_stream_rows(batches), key=itemgetter(0)):
        _, kind, info = next(rows)
        if kind != STREAM_INFO:  # batches of a replica the driver did not list: cannot happen
            raise ValueError(f"batch rows of an unlisted replica {info!r}")
        for row in replica_rows(info, (fact for _, _, fact in rows)):
            out.append(row)
            if len(out) >= _FLUSH_ROWS:
                yield _flush(out, REPLICA_OUT)
    if out:
        yield _flush(out, REPLICA_OUT)


def coordinator_step(records: pa.Table) -> pa.Table:
    """Grouped by coordinator partition (one chosen replica): the latest record per
    transactional id of that partition, via logscan.state.coordinator.latest_states (the
    driver merges the partitions with coordinator.merge_partitions)."""
    freeze_worker_heap()
    rows = sorted(records.to_pylist(), key=lambda r: (r["file"], r["position"], r["offset"]))
    if not rows:
        return R.COORDINATOR_STATE.empty_table()
    key = R.replica_key(rows[0]["broker"], rows[0]["topic"], rows[0]["partition"])
    latest = latest_states(R.txn_record_from_row(r) for r in rows)
    out = [{**key, **R.txn_record_row(rec)} for rec in latest.values()]
    return pa.Table.from_batches([R.to_batch(out, R.COORDINATOR_STATE)])


def metadata_step(as_of_ms: int):
    """A mapInArrow body over the chosen `__cluster_metadata` replica (one REPLICA_INFO row):
    the last leader of every partition and the partition count of every topic up to as_of
    (logscan.state.partition.partition_leaders, partition_counts)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        for batch in batches:
            for info in batch.to_pylist():
                replica = _replica_dir(info)
                key = R.replica_key(replica.broker, replica.topic, replica.partition)
                findings: list[Finding] = []
                events = read_metadata_events(replica, findings)
                leaders = P.partition_leaders(events, as_of_ms)
                out = [("leader", {"topic": t, "partition": p, "leader": b}) for (t, p), b in leaders.items()]
                out.extend(("topic", {"topic": t, "partitions": n})
                           for t, n in P.partition_counts(events, as_of_ms).items())
                out.extend(("finding", R.finding_row(f, key)) for f in findings)
                yield R.to_tagged_batch(out, METADATA_OUT)
    return run


#: Order of the partition step's rows within a partition (scan.py sorts them so): the states
#: and open transactions, few, before the closed spans, which come by end-marker offset.
PARTITION_ROW_ORDER = ("state", "open_txn", "span")


def coordinator_index(coordinator_rows: list[R.Row]) -> dict[int, list]:
    """Producer id -> the coordinator records naming it (coordinator.index_by_producer_id),
    out of coordinator_state rows (one per transactional id): what assess_partition looks an
    open transaction's producer up in."""
    return index_by_producer_id({r["transactional_id"]: R.txn_record_from_row(r) for r in coordinator_rows})


def partition_stream(index: Broadcast, *, as_of_ms: int, max_timeout_ms: int,
                     coordinator: CoordinatorCopy, bootstrap: str):
    """mapInArrow body over the replicas' state, open-transaction and closed-span rows,
    clustered by (topic, partition), each carrying the partition's leader from
    __cluster_metadata (null when it names none): per partition,
    logscan.state.partition.assess_partition against the coordinator state: ``index.value``,
    coordinator_index's (a Broadcast; in-process, anything with that attribute).

    A broadcast because a Python worker loads it once and keeps it for its later tasks, where
    a value in the closure is unpickled by every task, and the index was built by every task
    from the rows. On the 30,000-replica copy (23,501 transactional ids, 31 tasks) that was
    ~0.2 s a task: 6.7 s of the step's task time (2026-11-24).

    Within a partition the rows come in PARTITION_ROW_ORDER, span rows by end-marker offset
    (then broker and span index): the views are built from the rows before the first span
    row, and the spans stream through assess_partition, so memory holds a partition's states
    and open transactions, never its closed transactions."""
    order = {kind: i for i, kind in enumerate(PARTITION_ROW_ORDER)}

    def closed(first: R.Row, rows: Iterator[tuple]) -> Iterator[tuple[int, P.ClosedTxn]]:
        for _, kind, _, _, span, _ in chain([(None, "span", None, None, first, None)], rows):
            if kind != "span":
                raise ValueError(f"partition rows out of order: a {kind} row after span rows")
            if span["end_marker_offset"] is not None:  # an open span's row: its open_txn row counts
                yield R.closed_from_row(span)

    def assess(rows: Iterator[tuple], index) -> list[tuple[str, R.Row]]:
        states: dict[int, R.Row] = {}
        open_txns: dict[int, list[R.Row]] = defaultdict(list)
        leader, first_span, last = None, None, -1
        for _, kind, state, txn, span, leader in rows:
            if order[kind] < last:
                raise ValueError(f"partition rows out of order: a {kind} row after {PARTITION_ROW_ORDER[last]} rows")
            last = order[kind]
            if kind == "state":
                states[state["broker"]] = state
            elif kind == "open_txn":
                open_txns[txn["broker"]].append(txn)
            else:
                first_span = span
                break
        if not states:
            for _ in rows:  # spans of no listed replica: nothing to assess
                pass
            return []
        views = [R.view_from_rows(states[b], open_txns[b]) for b in sorted(states)]
        result = P.assess_partition(views, () if first_span is None else closed(first_span, rows),
                                    metadata_leader=leader, index=index, as_of_ms=as_of_ms,
                                    max_timeout_ms=max_timeout_ms, coordinator=coordinator,
                                    bootstrap=bootstrap)
        out = [("state", R.assessed(states[a.broker], a)) for a in result.replicas]
        out.extend(("candidate", R.candidate_row(R.replica_key(c.broker, c.topic, c.partition), c.txn, c.age_ms,
                                                 c.verdict)) for c in result.candidates)
        out.extend(("plan", R.plan_row(broker, plan)) for broker, plan in result.plans)
        return out

    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple]:
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("topic", "partition", "record_type", "state",
                                                          "open_txn", "span", "leader")]
            for topic, partition, *rest in zip(*cols):
                yield ((topic, partition), *rest)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        by_producer = index.value
        out: list[tuple[str, R.Row]] = []
        for _, rows in groupby(rows_of(batches), key=itemgetter(0)):
            out.extend(assess(rows, by_producer))
            if len(out) >= _FLUSH_ROWS:
                yield R.to_tagged_batch(out, PARTITION_OUT)
                out = []
        if out:
            yield R.to_tagged_batch(out, PARTITION_OUT)
    return run
