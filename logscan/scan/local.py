"""The local executor: the steps of logscan.scan.pipeline run in one process, in order.

`logscan scan`, `logscan plan`, `logscan scan --output DIR --executor local` and the tests run
the scan this way; spark_jobs.scan runs the same steps on Spark. This module only moves rows
between the steps. It reads each replica whole in log order (so every replica is replayed as
its segments are read: its batches are never held) and hands each row of a table, as it is
made, to where it goes: a :class:`TableSink` (logscan.scan.delta's Parquet parts of the Delta
tables; summary.SummarySink for `logscan scan` and `logscan plan`), and the lists of the result
for the tables asked to be kept (``keep``: the tests keep every table).

Memory is bounded by the copy's layout (replicas, files, producers, transactional ids), not by
its size: the rows a later step needs are spooled to a temporary folder (logscan.scan.spool)
rather than held. A replica's closed spans are spooled as its replay closes them, and read back
per partition in pipeline.CLOSED_SPAN_ORDER by merging the partition's replicas' runs (each in
log order, which is that order); the `__transaction_state` records are spooled per replica, and
the coordinator step streams those of the replica it loads; each replica's state row and open
transactions are spooled by partition, read back a partition at a time by the partition step.
What is held until the partition step: the internal topics' replicas' state rows, the
coordinator's last record per transactional id, the leaders, and per key of a spool where its
runs are; a replica's listing (its files) is let go once it is read.
For the steps after assess (the blast radius of a hang: :class:`_After`) the `__consumer_offsets`
replicas' commit rows and the log segments' files rows are spooled per replica as decode reads
them (the served replica's commits are loaded; partition_impact takes a replica's segments at a
time), the closed spans' spool and the `__transaction_state` records' serve them too (the
history step reads the loaded records and the served spans again, and puts them in its order on
disk: SpoolFolder.sorted), and what is held is small: a row per replica, per open span and
candidate, the topics' configs; the history holds, per transactional id, its tallies and
producer ids.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Protocol

from logscan.logdir.segment import Finding
from logscan.state.coordinator import CoordinatorCopy, ProducerIdIndex, ReplicaEnd, choose_replicas, coordinator_copy

from . import pipeline
from . import rows as R
from .collector import collect_young, young_collections_only
from .listing import list_copy
from .pipeline import CLUSTER_METADATA_TOPIC, CONSUMER_OFFSETS_TOPIC, DEFAULT_BOOTSTRAP, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, TRANSACTION_STATE_TOPIC
from .spool import Spool, SpoolFolder

__all__ = ["Scan", "scan", "assess_partitions", "TableSink", "ALL_TABLES", "SUMMARY_TABLES", "DEFAULT_BOOTSTRAP"]

#: Every table (``batches`` is kept only with ``keep_batches``).
ALL_TABLES = tuple(R.TABLES)
#: What `logscan scan` and `logscan plan` read of a scan: its summary's tables and the plans.
#: Their rows grow with the copy's layout (replicas, files, open transactions, damage found),
#: not with its size.
SUMMARY_TABLES = ("files", "corruptions", "partition_state", "hanging_candidates", "abort_plans",
                  "affected_groups", "partition_impact")

#: What a replica's closed spans are spooled with: what the partition step reads of them
#: (rows.closed_from_row) and their order (pipeline.CLOSED_SPAN_ORDER), and what the history
#: step reads of them (pipeline.HISTORY_SPAN_COLUMNS, with the replica's key).
CLOSED_SPANS = ("broker", "span_index", "producer_id", "first_offset", "end_marker_offset", "outcome", "duration_ms")

#: The tables assess_partitions reads of a scan (which then keeps its open transactions too).
_REASSESSED = frozenset({"partition_state", "txn_spans", "coordinator_state"})

#: Called once per segment file the scan has read: (path, size in bytes).
OnFile = Callable[[str, int], None]


class TableSink(Protocol):
    """Where the rows of some tables go as they are made (logscan.scan.delta.TableParts)."""

    tables: frozenset[str]

    def add(self, table: str, row: R.Row) -> None: ...


@dataclass(slots=True)
class Scan:
    """A scan's tables (by name, as rows: the tables asked to be kept, by default every table of
    the Spark job; ``batches`` only when asked for) and what the partition step needs to judge
    again at another time (assess_partitions, with every table kept): the open transactions, the
    leaders (pipeline.metadata's leader rows by (topic, partition)), what the copy holds of the
    coordinator."""

    tables: dict[str, list[R.Row]]
    as_of_ms: int
    open_txns: list[R.Row] = field(default_factory=list)
    leaders: dict[tuple[str, int], R.Row] = field(default_factory=dict)
    coordinator: CoordinatorCopy = field(default_factory=CoordinatorCopy)

    @property
    def findings(self) -> list[Finding]:
        """The corruptions rows as findings (what a person reads: Finding.line)."""
        return [Finding(r["file"], r["position"], r["reason"], r["message"], r["length"])
                for r in self.tables["corruptions"]]

    @property
    def bytes_read(self) -> int:
        return sum(r["size"] for r in self.tables["files"] if r["kind"] == "log_segment")


class _Tables:
    """Each table's rows as they are made: into the kept lists, to the sink, or nowhere."""

    def __init__(self, keep: Iterable[str], sink: Optional[TableSink]) -> None:
        self.kept: dict[str, list[R.Row]] = {t: [] for t in ALL_TABLES if t in set(keep)}
        self._sink = sink
        self._to_sink = frozenset(sink.tables) if sink is not None else frozenset()

    def wants(self, table: str) -> bool:
        return table in self.kept or table in self._to_sink

    def add(self, table: str, row: R.Row) -> None:
        rows = self.kept.get(table)
        if rows is not None:
            rows.append(row)
        if table in self._to_sink:
            self._sink.add(table, row)


def _replica(row: R.Row) -> tuple[int, str, int]:
    return row["broker"], row["topic"], row["partition"]


@young_collections_only()
def scan(roots: list[Path], *, as_of_ms: Optional[int] = None,
         max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, max_prepare_ms: Optional[int] = None,
         include_superseded: bool = False, follow_links: bool = False, keep_batches: bool = False,
         bootstrap: str = DEFAULT_BOOTSTRAP, on_file: Optional[OnFile] = None,
         keep: Iterable[str] = ALL_TABLES, sink: Optional[TableSink] = None, spool_dir: Optional[str] = None) -> Scan:
    """Scan a copy. ``keep``: the tables whose rows the result holds (default: every one;
    ``keep_batches`` also makes and keeps a row per batch, the ``batches`` table); ``sink``:
    takes every row of its tables as it is made (batch rows are made when it takes them);
    ``on_file(path, size)`` is called as each segment file has been read (a progress bar);
    ``follow_links`` follows symbolic links out of the roots (listing.list_copy); ``spool_dir``:
    where the spooled rows go (default: the system's temporary folder; removed at the end);
    ``max_prepare_ms``: a PrepareCommit/PrepareAbort record older than this is
    coordinator_stuck_preparing (None: ``max_transaction_timeout_ms``).
    Python's cyclic collector is paused while it runs (collector.young_collections_only)."""
    out = _Tables([t for t in keep if t != "batches" or keep_batches], sink)
    with_batches = out.wants("batches")
    # of each internal topic's partition, its replicas' state rows (the coordinator and metadata
    # steps pick a replica by them); every partition's go to a spool, as do the open transactions
    internal: dict[tuple[str, int], list[R.Row]] = defaultdict(list)
    newest_batch: list[int] = []
    # assess_partitions judges the scan again from its tables and these (a scan keeping them)
    open_txns: Optional[list[R.Row]] = [] if out.kept.keys() >= _REASSESSED else None
    # what the steps after assess read: small rows, per replica or open span, and spools
    after = _After(history=out.wants("transactional_id_history"))
    with SpoolFolder(spool_dir) as folder:
        closed = folder.spool("closed_spans", CLOSED_SPANS, order=itemgetter(*pipeline.CLOSED_SPAN_ORDER))
        txn_log = folder.spool("txn_log", R.TXN_LOG.names, order=itemgetter(*pipeline.TXN_LOG_ORDER))
        commits = folder.spool("offset_commits", R.OFFSET_COMMITS.names, order=itemgetter(*pipeline.OFFSETS_ORDER))
        segments = folder.spool("segments", pipeline.SEGMENT_COLUMNS)
        states = folder.spool("states", R.PARTITION_STATE.names)     # by partition, its replicas' rows
        txns = folder.spool("open_txns", R.OPEN_TXNS.names)          # by partition

        def route(kind: str, row: R.Row) -> None:
            if kind == "span":
                if row["end_marker_offset"] is not None:
                    closed.add(_replica(row), row)
                else:
                    after.open_spans.append({c: row[c] for c in pipeline.OPEN_SPAN_COLUMNS + ("duration_ms",)})
            elif kind == "offset_commit":
                commits.add((row["broker"], CONSUMER_OFFSETS_TOPIC, row["offsets_partition"]), row)
                return
            elif kind == "file" and row["kind"] == "log_segment":
                segments.add(_replica(row), row)
            elif kind == "txn_log":
                txn_log.add(_replica(row), row)
            elif kind == "state":
                states.add((row["topic"], row["partition"]), row)
                if row["topic"] in (TRANSACTION_STATE_TOPIC, CLUSTER_METADATA_TOPIC):
                    internal[(row["topic"], row["partition"])].append(row)
                if not newest_batch or row["max_timestamp"] > newest_batch[0]:
                    newest_batch[:] = [row["max_timestamp"]]
                return
            elif kind == "open_txn":
                txns.add((row["topic"], row["partition"]), row)
                if open_txns is not None:
                    open_txns.append(row)
                return
            out.add(pipeline.TABLE_OF[kind], row)

        listing = list_copy(roots, include_superseded=include_superseded, follow_links=follow_links)
        for row in listing.files:
            out.add("files", row)
        for key, f in listing.findings:
            out.add("corruptions", R.finding_row(f, key))
        replicas, listing = listing.replicas, None  # each replica's files are let go once it is read
        # The listing rows kept: the __cluster_metadata replicas' (the leaders are read from one).
        infos: dict[tuple[int, str, int], R.Row] = {}
        for i, listed in enumerate(replicas):
            replicas[i] = None
            info = pipeline.replica_info(listed)
            if info["cleaner_checkpoint"] is not None:
                after.cleaner_checkpoints[_replica(info)] = info["cleaner_checkpoint"]
            if listed.replica.topic == CLUSTER_METADATA_TOPIC:
                infos[(listed.replica.broker, listed.replica.topic, listed.replica.partition)] = info
            replay = pipeline.Replay(info)
            for unit in pipeline.work_units(listed):
                for kind, item in pipeline.decode(unit, replay, headers=with_batches):
                    if kind not in pipeline.BATCH_KINDS:
                        route(kind, item)
                    elif with_batches:
                        out.add("batches", R.batch_row(item[0], item[1], listed.key, unit["file"],
                                                       unit["segment_base_offset"]))
                if on_file is not None:
                    on_file(unit["file"], unit["size"])
            for kind, item in replay.finish():
                route(kind, item)
            collect_young()
        for spool in (closed, txn_log, commits, segments, states, txns):
            spool.close()

        chosen, coordinator = coordinator_copy(_internal(internal, TRANSACTION_STATE_TOPIC))
        coordinator_rows, index, newest_record = _coordinator(chosen, txn_log)
        for row in coordinator_rows:
            out.add("coordinator_state", row)
        if as_of_ms is None:
            as_of_ms = pipeline.as_of(newest_batch[0] if newest_batch else None, newest_record)
        told = _metadata(internal, infos, as_of_ms, out)
        coordinator = pipeline.told_coordinator(coordinator, told)
        leaders = {(row["topic"], row["partition"]): row for kind, row in told if kind == "leader"}
        after.configs = [row for kind, row in told if kind == "config"]

        def closed_spans(key: tuple[str, int], replicas: list[R.Row]) -> Iterator[R.Row]:
            return heapq.merge(*(closed.rows((s["broker"], *key)) for s in replicas),
                               key=itemgetter(*pipeline.CLOSED_SPAN_ORDER))

        for table, row in _assess(sorted(states.keys()), lambda key: list(states.rows(key)),
                                  lambda key: list(txns.rows(key)), closed_spans, leaders, index=index,
                                  as_of_ms=as_of_ms, max_timeout_ms=max_transaction_timeout_ms,
                                  max_prepare_ms=max_prepare_ms, coordinator=coordinator, bootstrap=bootstrap):
            out.add(table, row)
            after.assessed(table, row)
        for table, row in after.tables(commits, closed, segments, _loaded(chosen, txn_log), folder, as_of_ms):
            out.add(table, row)
    return Scan(out.kept, as_of_ms, open_txns or [], leaders, coordinator)


@dataclass(slots=True)
class _After:
    """What the steps after assess (pipeline.served, offsets, groups, impact, history) read, as
    the scan makes it, besides the spools: rows per replica, per open span, per candidate, per
    topic config."""

    states: list[R.Row] = field(default_factory=list)
    candidates: list[R.Row] = field(default_factory=list)
    open_spans: list[R.Row] = field(default_factory=list)
    cleaner_checkpoints: dict[tuple[int, str, int], int] = field(default_factory=dict)
    configs: list[R.Row] = field(default_factory=list)
    history: bool = True   # transactional_id_history asked for

    def assessed(self, table: str, row: R.Row) -> None:
        if table == "partition_state":
            self.states.append({c: row[c] for c in pipeline.SERVED_COLUMNS})
        elif table == "hanging_candidates":
            self.candidates.append(row)

    def tables(self, commits: Spool, closed: Spool, segments: Spool, records: Callable[[], Iterator[R.Row]],
               folder: SpoolFolder, as_of_ms: int) -> Iterator[tuple[str, R.Row]]:
        """(table, row) of committed_offsets, affected_groups, partition_impact and
        transactional_id_history: the served replica of each __consumer_offsets partition
        loaded from the commit rows decode spooled, each replica's impact from its spooled
        segments, of each partition its served replica's spans, and the coordinator's
        ``records()`` (read again from the spool), the history putting them in order on disk
        (folder.sorted)."""
        served = pipeline.served(self.states)
        keys = pipeline.served_replicas(served)
        open_spans = [s for s in self.open_spans if _replica(s) in keys]
        offsets: list[R.Row] = []
        for (topic, partition), state in sorted(served.items()):
            if topic == CONSUMER_OFFSETS_TOPIC:
                offsets.extend(pipeline.offsets(commits.rows((state["broker"], topic, partition)), state, as_of_ms))
        yield from (("committed_offsets", r) for r in offsets)
        yield from (("affected_groups", r)
                    for r in pipeline.groups(offsets, self.states, self.candidates, open_spans, as_of_ms))
        yield from (("partition_impact", r) for r in pipeline.impact(self.states, segments.rows,
                                                                     self.cleaner_checkpoints, self.configs, as_of_ms))

        def spans() -> Iterator[R.Row]:
            for broker, topic, partition in sorted(keys):
                for r in closed.rows((broker, topic, partition)):
                    yield {**r, "topic": topic, "partition": partition}
            yield from open_spans

        if self.history:
            yield from (("transactional_id_history", r)
                        for r in pipeline.history(records(), spans(), order=folder.sorted))


def _internal(states: dict[tuple[str, int], list[R.Row]], topic: str) -> list[ReplicaEnd]:
    """pipeline.replica_end of each replica of an internal topic: what coordinator_copy and
    choose_replicas pick replicas by."""
    return [pipeline.replica_end(s) for (t, _), ss in sorted(states.items()) if t == topic for s in ss]


def _loaded(chosen: dict[int, int], txn_log: Spool) -> Callable[[], Iterator[R.Row]]:
    """The records the coordinator step loads: of each coordinator partition, ascending, the
    txn_log rows of the replica ``chosen`` by coordinator_copy, in TXN_LOG_ORDER (a call reads
    them from the spool)."""
    def records() -> Iterator[R.Row]:
        for partition in sorted(chosen):
            yield from txn_log.rows((chosen[partition], TRANSACTION_STATE_TOPIC, partition))
    return records


def _coordinator(chosen: dict[int, int], txn_log: Spool) -> tuple[list[R.Row], ProducerIdIndex, Optional[int]]:
    """The coordinator_state rows and their index (pipeline.coordinator_view of each coordinator
    partition's records of the replica ``chosen`` by coordinator_copy, streamed from the spool
    through pipeline.coordinator) and the newest lastUpdateTimestamp of those records not past
    the scan's clock (pipeline.as_of)."""
    ceiling = pipeline.timestamp_ceiling()
    newest: list[int] = []

    def loaded(partition: int) -> Iterator[R.Row]:
        for r in txn_log.rows((chosen[partition], TRANSACTION_STATE_TOPIC, partition)):
            t = r["last_update_timestamp_ms"]
            if t <= ceiling and (not newest or t > newest[0]):
                newest[:] = [t]
            yield r

    per_partition = [row for p in sorted(chosen) for row in pipeline.coordinator(loaded(p))]
    view = pipeline.coordinator_view(per_partition)
    return [per_partition[i] for i in view.kept], view.index, (newest[0] if newest else None)


def _metadata(states: dict[tuple[str, int], list[R.Row]], infos: dict[tuple[int, str, int], R.Row], as_of_ms: int,
              out: _Tables) -> list[tuple[str, R.Row]]:
    """pipeline.metadata's leader and topic rows, of the `__cluster_metadata` replica that
    reaches furthest; its findings go to corruptions."""
    told: list[tuple[str, R.Row]] = []
    metadata = choose_replicas(_internal(states, CLUSTER_METADATA_TOPIC))
    if 0 in metadata:
        for kind, row in pipeline.metadata(infos[(metadata[0], CLUSTER_METADATA_TOPIC, 0)], as_of_ms):
            if kind == "finding":
                out.add("corruptions", row)
            else:
                told.append((kind, row))
    return told


def _assess(partitions: Iterable[tuple[str, int]], states: Callable[[tuple[str, int]], list[R.Row]],
            txns: Callable[[tuple[str, int]], list[R.Row]],
            closed: Callable[[tuple[str, int], list[R.Row]], Iterable[R.Row]], leaders: dict[tuple[str, int], R.Row],
            **judged) -> Iterator[tuple[str, R.Row]]:
    """The partition step over ``partitions`` (ascending): (table, row) of its partition_state,
    hanging_candidates and abort_plans rows. ``states(partition)``, ``txns(partition)``: its
    replicas' state and open_txn rows; ``closed(partition, its state rows)``: its closed spans
    in CLOSED_SPAN_ORDER; ``leaders``: pipeline.metadata's leader rows."""
    none: R.Row = {}
    for key in partitions:
        told = leaders.get(key, none)
        replicas = states(key)
        for kind, row in pipeline.assess(replicas, txns(key), closed(key, replicas), told.get("leader"),
                                         last_leader=told.get("last_leader"), **judged):
            yield pipeline.ASSESSED[kind], row
        collect_young()


def assess_partitions(result: Scan, *, as_of_ms: int, max_timeout_ms: int,
                      bootstrap: str = DEFAULT_BOOTSTRAP, max_prepare_ms: Optional[int] = None
                      ) -> dict[str, list[R.Row]]:
    """The partition step over every partition of ``result`` (a scan that kept every table):
    its partition_state, hanging_candidates and abort_plans tables (judged at ``as_of_ms`` with
    ``max_timeout_ms`` and ``max_prepare_ms``; the scan itself runs it with its own)."""
    tables = result.tables
    states: dict[tuple[str, int], list[R.Row]] = defaultdict(list)
    for s in tables["partition_state"]:
        states[(s["topic"], s["partition"])].append(s)
    txns: dict[tuple[str, int], list[R.Row]] = defaultdict(list)
    for t in result.open_txns:
        txns[(t["topic"], t["partition"])].append(t)
    spans: dict[tuple[str, int], list[R.Row]] = defaultdict(list)
    for s in tables["txn_spans"]:
        if s["end_marker_offset"] is not None:
            spans[(s["topic"], s["partition"])].append(s)
    out: dict[str, list[R.Row]] = {table: [] for table in pipeline.ASSESSED.values()}
    for table, row in _assess(sorted(states), states.__getitem__, lambda key: txns.get(key, []),
                              lambda key, _: sorted(spans.get(key, ()), key=itemgetter(*pipeline.CLOSED_SPAN_ORDER)),
                              result.leaders, index=pipeline.coordinator_view(tables["coordinator_state"]).index,
                              as_of_ms=as_of_ms, max_timeout_ms=max_timeout_ms, coordinator=result.coordinator,
                              bootstrap=bootstrap, max_prepare_ms=max_prepare_ms):
        out[table].append(row)
    return out
