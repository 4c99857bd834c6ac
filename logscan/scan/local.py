"""The local executor: the steps of logscan.scan.pipeline run in one process, in order.

`logscan scan`, `logscan plan` and the tests run the scan this way; spark_jobs.scan runs the
same steps on Spark. This module only moves rows between the steps: it reads each replica
whole in log order (so every replica is replayed as its segments are read: its batches are
never held), keeps each table's rows, groups and sorts them as each step says, and runs the
partition step once per partition. It returns every table the Spark job writes, as rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Optional

from logscan.logdir.segment import Finding
from logscan.state.coordinator import CoordinatorCopy, choose_replicas, coordinator_copy

from . import pipeline
from . import rows as R
from .collector import collect_young, young_collections_only
from .listing import list_copy
from .pipeline import CLUSTER_METADATA_TOPIC, DEFAULT_BOOTSTRAP, DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, TRANSACTION_STATE_TOPIC

__all__ = ["Scan", "scan", "assess_partitions", "DEFAULT_BOOTSTRAP"]

#: The table each tagged row of the per-replica and decode steps belongs to.
TABLE_OF = {"state": "partition_state", "producer": "producer_state", "span": "txn_spans",
            "snapshot": "producer_snapshots", "file": "files", "finding": "corruptions", "txn_log": "txn_log"}

#: Called once per segment file the scan has read: (path, size in bytes).
OnFile = Callable[[str, int], None]


@dataclass(slots=True)
class Scan:
    """A scan's tables (every table of the Spark job, by name, as rows; ``batches`` only when
    asked for) and what the partition step needs to judge again at another time
    (assess_partitions): the open transactions, the leaders, what the copy holds of the
    coordinator."""

    tables: dict[str, list[R.Row]]
    as_of_ms: int
    open_txns: list[R.Row] = field(default_factory=list)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    coordinator: CoordinatorCopy = field(default_factory=CoordinatorCopy)

    @property
    def findings(self) -> list[Finding]:
        """The corruptions rows as findings (what a person reads: Finding.line)."""
        return [Finding(r["file"], r["position"], r["reason"], r["message"], r["length"])
                for r in self.tables["corruptions"]]

    @property
    def bytes_read(self) -> int:
        return sum(r["size"] for r in self.tables["files"] if r["kind"] == "log_segment")


def _rows(tables: dict[str, list[R.Row]], open_txns: list[R.Row], items: Iterable[tuple[str, R.Row]]) -> None:
    for kind, row in items:
        if kind == "open_txn":
            open_txns.append(row)
        else:
            tables[TABLE_OF[kind]].append(row)


@young_collections_only()
def scan(roots: list[Path], *, as_of_ms: Optional[int] = None,
         max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
         include_superseded: bool = False, follow_links: bool = False, keep_batches: bool = False,
         bootstrap: str = DEFAULT_BOOTSTRAP, on_file: Optional[OnFile] = None) -> Scan:
    """Scan a copy. ``keep_batches`` also keeps a row per batch (the ``batches`` table);
    ``on_file(path, size)`` is called as each segment file has been read (a progress bar);
    ``follow_links`` follows symbolic links out of the roots (listing.list_copy).
    Python's cyclic collector is paused while it runs (collector.young_collections_only)."""
    tables: dict[str, list[R.Row]] = {name: [] for name in R.TABLES}
    open_txns: list[R.Row] = []
    listing = list_copy(roots, include_superseded=include_superseded, follow_links=follow_links)
    tables["files"].extend(listing.files)
    tables["corruptions"].extend(R.finding_row(f, key) for key, f in listing.findings)
    infos: dict[tuple[int, str, int], R.Row] = {}
    for listed in listing.replicas:
        info = infos[(listed.replica.broker, listed.replica.topic, listed.replica.partition)] = (
            pipeline.replica_info(listed))
        replay = pipeline.Replay(info)
        for unit in pipeline.work_units(listed):
            for kind, item in pipeline.decode(unit, replay, headers=keep_batches):
                if kind not in pipeline.BATCH_KINDS:
                    _rows(tables, open_txns, [(kind, item)])
                elif keep_batches:
                    tables["batches"].append(R.batch_row(item[0], item[1], listed.key, unit["file"],
                                                         unit["segment_base_offset"]))
            if on_file is not None:
                on_file(unit["file"], unit["size"])
        _rows(tables, open_txns, replay.finish())
        collect_young()

    states = tables["partition_state"]
    chosen, coordinator = coordinator_copy(
        (s["partition"], s["broker"], s["log_end_offset"], s["checkpointed_high_watermark"], s["copy_gap"])
        for s in states if s["topic"] == TRANSACTION_STATE_TOPIC)
    loaded = [r for r in tables["txn_log"] if chosen.get(r["partition"]) == r["broker"]]
    by_partition: dict[int, list[R.Row]] = defaultdict(list)
    for r in sorted(loaded, key=itemgetter(*pipeline.TXN_LOG_ORDER)):
        by_partition[r["partition"]].append(r)
    tables["coordinator_state"] = pipeline.merge_coordinator(
        row for p in sorted(by_partition) for row in pipeline.coordinator(by_partition[p]))
    if as_of_ms is None:
        ceiling = pipeline.timestamp_ceiling()
        as_of_ms = pipeline.as_of(max((s["max_timestamp"] for s in states), default=None),
                                  max((r["last_update_timestamp_ms"] for r in loaded
                                       if r["last_update_timestamp_ms"] <= ceiling), default=None))

    leaders: dict[tuple[str, int], int] = {}
    counts: dict[str, int] = {}
    metadata = choose_replicas((s["partition"], s["broker"], s["log_end_offset"]) for s in states
                               if s["topic"] == CLUSTER_METADATA_TOPIC)
    if 0 in metadata:
        for kind, row in pipeline.metadata(infos[(metadata[0], CLUSTER_METADATA_TOPIC, 0)], as_of_ms):
            if kind == "leader":
                leaders[(row["topic"], row["partition"])] = row["leader"]
            elif kind == "topic":
                counts[row["topic"]] = row["partitions"]
            else:
                tables["corruptions"].append(row)
    result = Scan(tables, as_of_ms, open_txns, leaders, coordinator.counted(counts.get(TRANSACTION_STATE_TOPIC)))
    assessed = assess_partitions(result, as_of_ms=as_of_ms, max_timeout_ms=max_transaction_timeout_ms,
                                 bootstrap=bootstrap)
    tables.update(assessed)
    return result


def assess_partitions(result: Scan, *, as_of_ms: int, max_timeout_ms: int,
                      bootstrap: str = DEFAULT_BOOTSTRAP) -> dict[str, list[R.Row]]:
    """The partition step over every partition of ``result``: its partition_state,
    hanging_candidates and abort_plans tables (judged at ``as_of_ms`` with ``max_timeout_ms``;
    the scan itself runs it with its own)."""
    tables = result.tables
    index = pipeline.coordinator_index(tables["coordinator_state"])
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
    out: dict[str, list[R.Row]] = {"partition_state": [], "hanging_candidates": [], "abort_plans": []}
    table = {"state": "partition_state", "candidate": "hanging_candidates", "plan": "abort_plans"}
    for key in sorted(states):
        closed = sorted(spans.get(key, ()), key=itemgetter(*pipeline.CLOSED_SPAN_ORDER))
        for kind, row in pipeline.assess(states[key], txns.get(key, []), closed, result.leaders.get(key),
                                         index=index, as_of_ms=as_of_ms, max_timeout_ms=max_timeout_ms,
                                         coordinator=result.coordinator, bootstrap=bootstrap):
            out[table[kind]].append(row)
        collect_young()
    return out
