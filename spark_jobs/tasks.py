"""What runs inside Spark's Python workers: Arrow in, a step of the scan, Arrow out.

Nothing here knows Kafka's rules, nor the scan's: every step is logscan.scan.pipeline's
(decode, Replay, coordinator, metadata, assess), the same calls the single-process executor
(logscan.scan.local) makes. These functions only move rows between Arrow and those steps and
keep a Python worker's memory bounded (flushes, the collector). The module is shipped to
workers by value (``cloudpickle.register_pickle_by_value`` in scan.py), so workers need
logscan, not spark_jobs, on their path.
"""

from __future__ import annotations

import gc
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import Iterable, Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Broadcast, TaskContext

from logscan.scan import pipeline
from logscan.scan import rows as R
from logscan.scan.collector import young_collections_only
from logscan.scan.output import WRITTEN, Parts
from logscan.scan.pipeline import DAMAGED, Replay, decode, replica_rows
from logscan.state.coordinator import CoordinatorCopy
from logscan.state.facts import BatchFact

_BASE_AND_FILE = pa.list_(pa.struct([pa.field("base_offset", pa.int64()), pa.field("file", pa.string())]))

#: Per replica, what the per-replica rules need besides its batches (listed on the driver).
REPLICA_INFO = pa.schema([
    pa.field("broker", pa.int32()), pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("path", pa.string()), pa.field("segments", _BASE_AND_FILE), pa.field("snapshots", _BASE_AND_FILE),
    pa.field("indexes", _BASE_AND_FILE), pa.field("txn_indexes", _BASE_AND_FILE),
    pa.field("hw_checkpoint", pa.int64()), pa.field("log_start_checkpoint", pa.int64()),
    pa.field("recovery_point_checkpoint", pa.int64()), pa.field("dir_gap", pa.string()),
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
#: A checksum-valid batch's fact and place: what the per-replica step reads of a replica its
#: decode task did not replay, when the batches table (a superset of these columns) is not
#: asked for.
FACTS = pa.schema([R.BATCHES.field(n) for n in ("broker", "topic", "partition", "segment_base_offset", "position",
                                                *BatchFact._fields)])
def _decoded(per_batch: dict[str, pa.Schema]) -> pa.Schema:
    return R.tagged_schema({"file": R.FILES, **per_batch, "txn_log": R.TXN_LOG, "finding": R.CORRUPTIONS,
                            "range": RANGES, **_REPLICA_MEMBERS}, _RANGE_KEYS + _PARTITION_KEYS)


#: The decode's rows: each segment's, and the replica rows of the replicas it replays (their
#: files and findings rows among the segments'), with a ``batch`` row per batch: the batches
#: table asked for. A batch failing its CRC is a row of record_type ``damaged`` (pipeline.DAMAGED)
#: in the ``batch`` column: the batches table has both kinds, the per-replica step reads
#: ``batch`` rows only.
DECODED = _decoded({"batch": R.BATCHES})
#: The same without the batches table: a ``fact`` row per batch of a replica the task does
#: not replay, none for the others. A schema of its own, not a member more of DECODED: every
#: member is a column of every row (null where it is not the row's): FACTS' columns as a
#: member of DECODED made its batches ~100 bytes a row larger (80.1 -> 87.8 MiB of Arrow on a
#: copy of 81,618 rows, 2026-11-27).
DECODED_FACTS = _decoded({"fact": FACTS})
REPLICA_OUT = R.tagged_schema({**_REPLICA_MEMBERS, "file": R.FILES, "finding": R.CORRUPTIONS}, _PARTITION_KEYS)
#: Partition count of each topic at as_of, from __cluster_metadata.
TOPICS = pa.schema([pa.field("topic", pa.string()), pa.field("partitions", pa.int32())])
METADATA_OUT = R.tagged_schema({"leader": LEADERS, "topic": TOPICS, "finding": R.CORRUPTIONS})
#: The partition step's rows by kind, and the table each is a row of (it writes them itself).
PARTITION_TABLES = {"state": "partition_state", "candidate": "hanging_candidates", "plan": "abort_plans"}

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


def decode_units(units: Iterable[R.Row], *, batches: bool = True) -> Iterator[pa.RecordBatch]:
    """The decode of one task (a group of scan.plan_tasks: the reader of spark_jobs.source
    calls it per partition): its work units in, tagged decoded rows out, in bounded Arrow
    batches. The rows of many small files share a batch; batch rows (one per batch of the
    copy) are built column-wise (R.batch_struct: no dict per row), the few others through
    to_tagged_batch. A replica whose first unit carries its listing row (scan.plan_tasks) is
    replayed as its units are read (pipeline.Replay), its rows leaving with the others as
    they are made. Without ``batches`` (the batches table not asked for) no batch row is made:
    a replayed replica's batches leave nothing, another's leave their facts (FACTS) for the
    per-replica step (DECODED_FACTS rows). The collector runs young collections only, at each
    flush (young_collections_only)."""
    freeze_worker_heap()
    with young_collections_only():
        yield from _decode_units(units, batches)


def _fact_struct(facts: list[BatchFact], headers: list, keys: dict[str, list]) -> pa.StructArray:
    """FACTS rows as one struct array, a column at a time (as R.batch_struct, no header columns
    but the position)."""
    columns: dict[str, object] = {**keys, "position": [h.position for h in headers]}
    columns.update(zip(BatchFact._fields, zip(*facts)) if facts else ((n, ()) for n in BatchFact._fields))
    return pa.StructArray.from_arrays([pa.array(columns[f.name], f.type) for f in FACTS], fields=list(FACTS))


def _decode_units(units: Iterable[R.Row], batches: bool) -> Iterator[pa.RecordBatch]:
    facts: list[BatchFact] = []
    headers: list = []
    runs: list[tuple[tuple, int]] = []  # per unit in the pending rows: its column values, its row count
    others: list[tuple[str, R.Row]] = []
    extras: list[R.Row] = []
    schema = DECODED if batches else DECODED_FACTS

    def flush_rows() -> pa.RecordBatch:
        columns = {name: list(chain.from_iterable(repeat(values[i], n) for values, n in runs))
                   for i, (name, _) in enumerate(_UNIT_COLUMNS)}
        if batches:
            batch = R.to_member_batch(R.batch_struct(facts, headers, columns), schema, "batch", columns)
        else:
            batch = R.to_member_batch(_fact_struct(facts, headers, columns), schema, "fact", columns)
        facts.clear()
        headers.clear()
        runs.clear()
        gc.collect(1)
        return batch

    replay: Optional[Replay] = None

    def pending(kind: str, item: R.Row, extra: R.Row) -> bool:
        others.append((kind, item))
        extras.append(extra)
        return len(others) >= _FLUSH_ROWS

    def finished(replay: Replay) -> Iterator[pa.RecordBatch]:
        for kind, item in replay.finish():
            if pending(kind, item, _REPLICA_EXTRA):
                yield _flush(others, schema, extras=extras)

    for unit in units:
        key = (unit["broker"], unit["topic"], unit["partition"])
        info = unit.get("replica")
        if replay is not None and (key != replay.ident or info is not None):
            yield from finished(replay)
            replay = None
        if info is not None:
            replay = Replay(info)
        values = tuple(unit[k] for _, k in _UNIT_COLUMNS)
        extra = {"segment": unit["file"], "range_index": unit["range_index"], "ranges": unit["ranges"]}
        rows = batches or replay is None  # does a batch of this unit leave the task?
        start = len(facts)
        damaged: list = []
        for kind, item in decode(unit, replay, headers=batches):
            if kind == DAMAGED:   # with batches only: a row of the batches table, rare
                damaged.append(item)
            elif kind == "batch":
                if not rows:
                    continue
                facts.append(item[0])
                headers.append(item[1])
                if len(facts) >= _FLUSH_ROWS:
                    runs.append((values, len(facts) - start))
                    yield flush_rows()
                    start = 0
            elif pending(kind, item, _REPLICA_EXTRA if kind in _REPLICA_MEMBERS else extra):
                yield _flush(others, schema, extras=extras)
        if len(facts) > start:
            runs.append((values, len(facts) - start))
        if damaged:
            keys = {name: [values[i]] * len(damaged) for i, (name, _) in enumerate(_UNIT_COLUMNS)}
            yield R.to_member_batch(R.batch_struct(*zip(*damaged), keys), schema, DAMAGED, keys, column="batch")
    if replay is not None:
        yield from finished(replay)
    if facts:
        yield flush_rows()
    if others:
        yield _flush(others, schema, extras=extras)


#: ``kind`` of the rows of the per-replica stream (scan.replica_stream_input): a replica's
#: listing row sorts before its batch rows.
STREAM_INFO, STREAM_BATCH = 0, 1
_STREAM_KEYS = ("broker", "topic", "partition", "kind", "info", "segment_base_offset", "position")


def _stream_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[tuple, int, object]]:
    """(replica key, kind, the listing row or a BatchFact) per row of the sorted stream, one
    Arrow batch in memory at a time."""
    for batch in batches:
        keys = [batch.column(n).to_pylist() for n in _STREAM_KEYS]
        facts = [batch.column(n).to_pylist() for n in BatchFact._fields]
        for (broker, topic, partition, kind, info, segment, position), values in zip(zip(*keys), zip(*facts)):
            # a batch with its place (the offset-order rules check it against its segment)
            yield (broker, topic, partition), kind, info if kind == STREAM_INFO else (BatchFact(*values), segment,
                                                                                      position)


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
        for row in replica_rows(info, (placed for _, _, placed in rows), placed=True):
            out.append(row)
            if len(out) >= _FLUSH_ROWS:
                yield _flush(out, REPLICA_OUT)
    if out:
        yield _flush(out, REPLICA_OUT)


def coordinator_step(records: pa.Table) -> pa.Table:
    """applyInArrow body, grouped by coordinator partition (the chosen replica's txn_log rows):
    pipeline.coordinator over them in pipeline.TXN_LOG_ORDER."""
    freeze_worker_heap()
    rows = sorted(records.to_pylist(), key=itemgetter(*pipeline.TXN_LOG_ORDER))
    return pa.Table.from_batches([R.to_batch(pipeline.coordinator(rows), R.COORDINATOR_STATE)])


def metadata_step(as_of_ms: int):
    """A mapInArrow body over the chosen `__cluster_metadata` replica (one REPLICA_INFO row):
    pipeline.metadata."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        for batch in batches:
            for info in batch.to_pylist():
                yield R.to_tagged_batch(pipeline.metadata(info, as_of_ms), METADATA_OUT)
    return run


#: Order of the partition step's rows within a partition (scan.py sorts them so): the states
#: and open transactions, few, before the closed spans, which come in
#: pipeline.CLOSED_SPAN_ORDER.
PARTITION_ROW_ORDER = ("state", "open_txn", "span")


def partition_stream(index: Broadcast, *, as_of_ms: int, max_timeout_ms: int,
                     coordinator: CoordinatorCopy, bootstrap: str, output: str, scan_id: str,
                     tables: Iterable[str] = tuple(PARTITION_TABLES.values()), max_prepare_ms: Optional[int] = None):
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
    and open transactions, never its closed transactions.

    The step's rows are the last of the scan: the task writes them into its own Parquet file
    of each of PARTITION_TABLES asked for (``tables``) under ``output``
    (logscan.scan.output.Parts) and hands Spark only what it wrote (WRITTEN rows), for the
    driver's commits."""
    kinds = {kind: table for kind, table in PARTITION_TABLES.items() if table in set(tables)}
    order = {kind: i for i, kind in enumerate(PARTITION_ROW_ORDER)}

    def assess(rows: Iterator[tuple], index) -> list[tuple[str, R.Row]]:
        states: list[R.Row] = []
        open_txns: list[R.Row] = []
        leader, first_span, last = None, None, -1
        for _, kind, state, txn, span, leader in rows:
            if order[kind] < last:
                raise ValueError(f"partition rows out of order: a {kind} row after {PARTITION_ROW_ORDER[last]} rows")
            last = order[kind]
            if kind == "state":
                states.append(state)
            elif kind == "open_txn":
                open_txns.append(txn)
            else:
                first_span = span
                break
        spans = () if first_span is None else spans_after(first_span, rows)
        if not states:
            for _ in spans:  # spans of no listed replica: nothing to assess
                pass
            return []
        return pipeline.assess(states, open_txns, spans, leader, index=index, as_of_ms=as_of_ms,
                               max_timeout_ms=max_timeout_ms, coordinator=coordinator, bootstrap=bootstrap, max_prepare_ms=max_prepare_ms)

    def spans_after(first: R.Row, rows: Iterator[tuple]) -> Iterator[R.Row]:
        yield first
        for _, kind, _, _, span, _ in rows:
            if kind != "span":
                raise ValueError(f"partition rows out of order: a {kind} row after span rows")
            yield span

    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple]:
        for batch in batches:
            cols = [batch.column(n).to_pylist() for n in ("topic", "partition", "record_type", "state",
                                                          "open_txn", "span", "leader")]
            for topic, partition, *rest in zip(*cols):
                yield ((topic, partition), *rest)

    def written(out: list[tuple[str, R.Row]], parts: Parts) -> None:
        for kind, table in kinds.items():
            rows = [row for k, row in out if k == kind]
            if rows:
                parts.add(table, R.to_batch(rows, R.TABLES[table]))
        out.clear()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        by_producer = index.value
        out: list[tuple[str, R.Row]] = []
        parts = Parts(output, scan_id, as_of_ms)
        try:
            for _, rows in groupby(rows_of(batches), key=itemgetter(0)):
                out.extend(assess(rows, by_producer))
                if len(out) >= _FLUSH_ROWS:
                    written(out, parts)
            written(out, parts)
        except BaseException:
            parts.abort()
            raise
        yield R.to_batch(parts.close(), WRITTEN)
    return run


#: The table each tagged row of the decode and the per-replica step is a row of, when the step
#: that made it is its last (a replica's partition_state row goes on to the partition step;
#: a split file's files rows are summed on the driver: pipeline.merge_split_files).
TABLE_OF = {"file": "files", "finding": "corruptions", "txn_log": "txn_log", "snapshot": "producer_snapshots",
            "producer": "producer_state", "span": "txn_spans", "batch": "batches", DAMAGED: "batches"}


def _kept_mask(batch: pa.RecordBatch, kept: frozenset) -> Optional[pa.Array]:
    """Which rows of a decode batch are kept: rows of a file read whole, and of the byte ranges
    of split files that replica.valid_ranges keeps (``kept``: (segment, range_index) pairs).
    None: every row."""
    if "ranges" not in batch.schema.names:
        return None
    split = pc.fill_null(pc.greater(batch.column("ranges"), 1), False)
    if not pc.any(split).as_py():
        return None
    pairs = zip(batch.column("segment").to_pylist(), batch.column("range_index").to_pylist(), split.to_pylist())
    return pa.array([not is_split or (seg, i) in kept for seg, i, is_split in pairs])


def write_rows(output: str, scan_id: str, as_of_ms: int, tables: Iterable[str], kept: frozenset = frozenset()):
    """mapInArrow body over tagged rows of the decode (DECODED, DECODED_FACTS) or of the
    per-replica step (REPLICA_OUT): the rows of each member whose table (TABLE_OF) is asked
    for (``tables``) and whose step is its last, of the kept byte ranges (``kept``, see
    _kept_mask), into one Parquet file per table of the task under ``output``
    (logscan.scan.output.Parts); then only what it wrote (WRITTEN rows) to Spark. A split
    file's files rows are left to the driver (pipeline.merge_split_files)."""
    wanted = {kind: table for kind, table in TABLE_OF.items() if table in set(tables)}

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        parts = Parts(output, scan_id, as_of_ms)
        try:
            for batch in batches:
                keep = _kept_mask(batch, kept)
                kinds = batch.column("record_type")
                for kind in pc.unique(kinds).to_pylist():
                    table = wanted.get(kind)
                    if table is None:
                        continue
                    mask = pc.equal(kinds, kind)
                    if kind == "file" and "ranges" in batch.schema.names:
                        mask = pc.and_(mask, pc.equal(batch.column("ranges"), 1))
                    elif keep is not None:
                        mask = pc.and_(mask, keep)
                    column = "batch" if kind == DAMAGED else kind
                    rows = batch.filter(mask).column(column)
                    parts.add(table, pa.RecordBatch.from_struct_array(rows))
        except BaseException:
            parts.abort()
            raise
        yield R.to_batch(parts.close(), WRITTEN)
    return run


_INTERNAL_STATE = ("topic", "partition", "broker", "log_end_offset", "checkpointed_high_watermark", "copy_gap")
#: The fields of a state and of a txn_log row tally reads.
TALLY_STATE = (*_INTERNAL_STATE, "max_timestamp")
TALLY_TXN_LOG = ("broker", "partition", "last_update_timestamp_ms")
#: What the driver needs of the decode's (or the per-replica step's) rows beyond the tables,
#: from one pass over them (tally), no shuffle: each member's row count; the byte ranges'
#: hand-offs; the partition_state columns of the internal topics' replicas
#: (coordinator.coordinator_copy and choose_replicas pick from them); the newest batch
#: timestamp of any replica; per coordinator replica and byte range, its newest record (the
#: scan's as_of, pipeline.as_of); the files rows of split files (pipeline.merge_split_files).
TALLY = R.tagged_schema({
    "count": pa.schema([pa.field("record_type", pa.string()), pa.field("rows", pa.int64())]),
    "range": RANGES,
    "internal": pa.schema([R.PARTITION_STATE.field(n) for n in _INTERNAL_STATE]),
    "newest_batch": pa.schema([pa.field("max_timestamp", pa.int64())]),
    "newest_record": pa.schema([pa.field("broker", pa.int32()), pa.field("partition", pa.int32()),
                                pa.field("segment", pa.string()), pa.field("range_index", pa.int32()),
                                pa.field("ranges", pa.int32()), pa.field("last_update_timestamp_ms", pa.int64())]),
    "split_file": pa.schema([*R.FILES, pa.field("range_index", pa.int32())]),
})


def tally(internal_topics: Iterable[str], ceiling_ms: int):
    """mapInArrow body: the TALLY rows of a task's tagged rows (DECODED, DECODED_FACTS or
    REPLICA_OUT), one Arrow batch at its end; coordinator records whose time is past
    ``ceiling_ms`` (pipeline.timestamp_ceiling) do not count as newest."""
    internal = set(internal_topics)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        counts: dict[str, int] = {}
        out: list[tuple[str, R.Row]] = []
        newest_batch: Optional[int] = None
        newest: dict[tuple, int] = {}
        for batch in batches:
            names = set(batch.schema.names)
            kinds = batch.column("record_type")
            for kind, n in zip(*pc.value_counts(kinds).flatten()):
                counts[kind.as_py()] = counts.get(kind.as_py(), 0) + n.as_py()
            for kind in ("range", "state", "txn_log", "file"):
                if kind not in names or (kind == "file" and "ranges" not in names):  # no byte ranges there
                    continue
                mask = pc.equal(kinds, kind)
                if kind == "file":
                    mask = pc.and_(mask, pc.greater(batch.column("ranges"), 1))
                picked = batch.filter(mask)
                if not picked.num_rows:
                    continue
                if kind == "range":
                    out.extend(("range", r) for r in picked.column("range").to_pylist())
                elif kind == "file":
                    out.extend(("split_file", {**r, "range_index": i}) for r, i in
                               zip(picked.column("file").to_pylist(), picked.column("range_index").to_pylist()))
                elif kind == "state":
                    states = picked.column("state")
                    top = pc.max(pc.struct_field(states, "max_timestamp")).as_py()
                    if top is not None and (newest_batch is None or top > newest_batch):
                        newest_batch = top
                    for r in states.to_pylist():
                        if r["topic"] in internal:
                            out.append(("internal", {c: r[c] for c in _INTERNAL_STATE}))
                else:
                    for r, seg, i, n in zip(picked.column("txn_log").to_pylist(), picked.column("segment").to_pylist(),
                                            picked.column("range_index").to_pylist(), picked.column("ranges").to_pylist()):
                        t = r["last_update_timestamp_ms"]
                        key = (r["broker"], r["partition"], seg, i, n)
                        if t is not None and t <= ceiling_ms and t > newest.get(key, t - 1):
                            newest[key] = t
        out.extend(("count", {"record_type": k, "rows": n}) for k, n in counts.items())
        if newest_batch is not None:
            out.append(("newest_batch", {"max_timestamp": newest_batch}))
        out.extend(("newest_record", {"broker": b, "partition": p, "segment": seg, "range_index": i, "ranges": n,
                                      "last_update_timestamp_ms": t}) for (b, p, seg, i, n), t in newest.items())
        yield R.to_tagged_batch(out, TALLY)
    return run
