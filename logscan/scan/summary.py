"""The short text an operator reads after a scan: what was read, what is open, what hangs.

The last step of the scan (logscan.scan.pipeline): :func:`figures` reduces the rows of four
tables (partition_state, hanging_candidates, corruptions, files) in one pass, holding the
counts, the first MAX_ROWS of each list and one partition's rows, never the tables; both
executors call it, the local one over its rows, the Spark job over its Delta tables' rows
streamed to the driver (partition_state's and hanging_candidates' in STREAM_ORDER). The
exit status and the order of the candidates printed are decided here too, once.

:func:`write_figures` prints them (both executors): a row per partition, with the numbers of
the replica that speaks for it (its leader's, :func:`speaker`), the lagging followers, a row
per open transaction with its verdict once, and the next command; or a row per replica
(``per_replica``). Tables are drawn with rich to the terminal's width, never cutting a word.
"""

from __future__ import annotations

import heapq
import io
import os
import shlex
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import count, groupby
from typing import Any, Callable, Iterable, Iterator, Optional, TextIO

from logscan.logdir.segment import Finding
from logscan.state.hanging import DIVERGED
from logscan.text import printable

#: Rows of each list printed; "... and N more" says what the tables hold besides.
MAX_ROWS = 50

LAGGING_COLUMNS = ("broker", "topic", "partition", "log_start_offset", "last_stable_offset", "high_watermark",
                   "log_end_offset", "lso_lag", "open_transactions", "leader", "is_leader")
CANDIDATE_COLUMNS = ("broker", "topic", "partition", "producer_id", "producer_epoch", "start_offset", "age_ms",
                     "hanging", "reason", "evidence")
#: What figures() reads of the partition_state and corruptions rows.
STATE_COLUMNS = (*LAGGING_COLUMNS, "has_late_transaction", "copy_gap", "log_fault", "replicas_agree")
FINDING_COLUMNS = ("file", "position", "reason", "message")
#: What figures() reads of the affected_groups and partition_impact rows.
GROUP_COLUMNS = ("group_id", "topic", "partition", "kind", "committed_offset", "pending_offset", "producer_id",
                 "held_topic", "held_partition", "hanging", "reason", "lag_messages", "lag_ms")
IMPACT_COLUMNS = ("broker", "topic", "partition", "cleaner_held_bytes", "cleaner_held_segments",
                  "tiering_held_bytes", "tiering_held_segments")
#: The order figures() needs partition_state's and hanging_candidates' rows in: a partition's
#: rows together, partitions ascending (it reads one partition of each at a time).
STREAM_ORDER = ("topic", "partition")


@dataclass(slots=True)
class Figures:
    """What the summary says; every list in its printed order and at most MAX_ROWS long."""

    as_of_ms: int
    replicas: int
    partitions: int
    brokers: int
    segment_bytes: int
    skipped: int
    findings: int
    finding_lines: list[str] = field(default_factory=list)
    open_transactions: int = 0
    late_partitions: int = 0
    lagging: int = 0
    lagging_rows: list[dict[str, Any]] = field(default_factory=list)
    candidates: int = 0
    reasons: list[tuple[str, Optional[bool], int]] = field(default_factory=list)  # (reason, hanging, count)
    candidate_rows: list[dict[str, Any]] = field(default_factory=list)
    tables: Optional[str] = None  # where the Delta tables are, for the Spark job
    incomplete: int = 0   # replicas the copy holds short of what their brokers' files name (copy_gap)
    faulty: int = 0       # replicas whose log breaks a rule of Kafka's recovery (log_fault)
    # replicas the brokers' checkpoints or __cluster_metadata name on a copied log dir that lacks
    # them: of a partition the copy holds elsewhere (files kind 'missing'), of one it holds nowhere
    # ('not_copied')
    missing: int = 0
    not_copied: int = 0
    # The same, one row per partition (the leader's numbers) and per transaction (the verdict once)
    lagging_partitions: int = 0
    partition_rows: list[dict[str, Any]] = field(default_factory=list)
    followers: int = 0    # lagging followers: replicas whose log ends before their leader's
    follower_rows: list[dict[str, Any]] = field(default_factory=list)
    transactions: int = 0
    transaction_reasons: list[tuple[str, Optional[bool], int]] = field(default_factory=list)
    transaction_rows: list[dict[str, Any]] = field(default_factory=list)
    # The blast radius: the consumer groups open transactions hold back (affected_groups), and
    # per partition the bytes its LSO keeps from the log cleaner and from tiered storage
    # (partition_impact: the most any of its replicas holds, and over all of them)
    groups: int = 0
    group_rows: list[dict[str, Any]] = field(default_factory=list)
    held_partitions: int = 0
    held_bytes: int = 0
    held_rows: list[dict[str, Any]] = field(default_factory=list)


#: The range of epoch-ms times with a calendar date (years 1 to 9999).
_DATED = (-62_135_596_800_000, 253_402_300_799_999)


def iso_ms(ms: int) -> str:
    """An epoch-ms time as ISO-8601 UTC; the number itself when no calendar date is that far
    (a timestamp written in microseconds, int64 max)."""
    if _DATED[0] <= ms <= _DATED[1]:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    return f"{ms} ms since the epoch"


def json_candidate(row: dict[str, Any]) -> dict[str, Any]:
    """A hanging_candidates row as `logscan scan --format json` prints it: each time column as
    ISO-8601 UTC text made from its epoch-ms column (null where that is no instant), the same
    whichever executor made the row."""
    from . import rows as R

    times = R.time_columns(R.HANGING_CANDIDATES)
    return {k: (row[k] if k not in times else None if R.ms_time(row[times[k]]) is None else iso_ms(row[times[k]]))
            for k in R.HANGING_CANDIDATES.names if k in row}


def is_lagging(row: dict[str, Any]) -> bool:
    """The replicas the summary (and `logscan report`, through figures()) counts as lagging: the
    LSO is behind the high watermark, or a transaction is open (holding the LSO once more
    records follow)."""
    return row["lso_lag"] > 0 or row["open_transactions"] > 0


def lagging_order(row: dict[str, Any]) -> tuple:
    """Worst LSO lag first."""
    return (-row["lso_lag"], row["topic"], row["partition"], row["broker"])


def reasons_order(item: tuple[str, Optional[bool], int]) -> tuple:
    """Most frequent reason first."""
    reason, hanging, count = item
    return (-count, reason, {True: 0, None: 1, False: 2}[hanging])


def candidate_order(row: dict[str, Any]) -> tuple:
    """Hanging first, then cannot-tell, then not hanging."""
    return ({True: 0, None: 1, False: 2}[row["hanging"]], row["topic"], row["partition"], row["broker"],
            row["producer_id"], row["start_offset"])


class _First:
    """The first ``n`` items by ``key`` of a stream, and how many went by."""

    def __init__(self, n: int, key: Callable[[Any], tuple]) -> None:
        self._n, self._key, self._heap, self._seq = n, key, [], count()
        self.count = 0

    def add(self, item: Any) -> None:
        self.count += 1
        entry = (_Desc(self._key(item)), next(self._seq), item)
        if len(self._heap) < self._n:
            heapq.heappush(self._heap, entry)
        elif entry[0] > self._heap[0][0]:
            heapq.heapreplace(self._heap, entry)

    def items(self) -> list[Any]:
        return [item for _, _, item in sorted(self._heap, key=lambda e: (e[0].key, e[1]))]


class _Desc:
    """A key that sorts backwards: the heap's top is the worst of the items kept."""

    __slots__ = ("key",)

    def __init__(self, key: tuple) -> None:
        self.key = key

    def __lt__(self, other: "_Desc") -> bool:
        return self.key > other.key

    def __gt__(self, other: "_Desc") -> bool:
        return self.key < other.key


def group_order(row: dict[str, Any]) -> tuple:
    """Held by a hang first, then cannot-tell, then open; by group."""
    return ({True: 0, None: 1, False: 2}[row["hanging"]], row["group_id"], row["topic"], row["partition"],
            row["kind"])


def held_order(row: dict[str, Any]) -> tuple:
    """Most bytes held back first."""
    return (-row["held_bytes"], row["topic"], row["partition"])


def _add_held(out: dict[tuple[str, int], dict[str, Any]], r: dict[str, Any]) -> None:
    """One partition_impact row into ``out``: per partition whose LSO holds bytes back, the most
    any replica holds from the cleaner and from tiering, the replicas holding some, and the
    bytes over all of them (rows in any order; a partition holding nothing back is not kept)."""
    cleaner, tiering = r["cleaner_held_bytes"] or 0, r["tiering_held_bytes"] or 0
    if not cleaner and not tiering:
        return
    p = out.setdefault((r["topic"], r["partition"]), {
        "topic": r["topic"], "partition": r["partition"], "replicas": 0, "cleaner_held_bytes": 0,
        "cleaner_held_segments": 0, "tiering_held_bytes": 0, "tiering_held_segments": 0, "held_bytes": 0})
    p["replicas"] += 1
    p["held_bytes"] += max(cleaner, tiering)   # a segment held from both is one segment on disk
    for c in ("cleaner_held_bytes", "cleaner_held_segments", "tiering_held_bytes", "tiering_held_segments"):
        p[c] = max(p[c], r[c] or 0)

def finding_order(row: dict[str, Any]) -> tuple:
    return (row["file"], row["position"], row["message"])


def partition_order(row: dict[str, Any]) -> tuple:
    """Worst LSO lag of the partition's leader first."""
    return (-row["lso_lag"], row["topic"], row["partition"])


def transaction_order(row: dict[str, Any]) -> tuple:
    """Hanging first, then cannot-tell, then not hanging; a partition's transactions together."""
    return ({True: 0, None: 1, False: 2}[row["hanging"]], row["topic"], row["partition"], row["producer_id"],
            row["start_offset"])


def _grouped(rows: Iterable[dict[str, Any]], table: str) -> Iterator[tuple[tuple[str, int], list[dict[str, Any]]]]:
    """The rows of each partition, partitions ascending (the rows must come in STREAM_ORDER)."""
    last = None
    for key, group in groupby(rows, key=lambda r: (r["topic"], r["partition"])):
        if last is not None and key <= last:
            raise ValueError(f"{table} rows out of order: {key} after {last} (give them ordered by topic, partition)")
        last = key
        yield key, list(group)


def by_partition(states: Iterable[dict[str, Any]], candidates: Iterable[dict[str, Any]]
                 ) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(partition_state rows, hanging_candidates rows) of each partition, one partition at a
    time: a merge of the two streams, each in STREAM_ORDER."""
    s_groups, c_groups = _grouped(states, "partition_state"), _grouped(candidates, "hanging_candidates")
    s, c = next(s_groups, None), next(c_groups, None)
    while s is not None or c is not None:
        key = min(g[0] for g in (s, c) if g is not None)
        yield (s[1] if s is not None and s[0] == key else []), (c[1] if c is not None and c[0] == key else [])
        if s is not None and s[0] == key:
            s = next(s_groups, None)
        if c is not None and c[0] == key:
            c = next(c_groups, None)


def speaker(states: list[dict[str, Any]]) -> dict[str, Any]:
    """The replica whose numbers are the partition's: the leader's, else (the copy cannot tell
    the leader, or holds no replica of it) the one furthest ahead, ties the lowest broker."""
    for s in states:
        if s["is_leader"]:
            return s
    return min(states, key=lambda s: (-s["log_end_offset"], s["broker"]))


def _partition_row(states: list[dict[str, Any]], lead: dict[str, Any], behind: list[dict[str, Any]],
                   diverged: bool = False) -> dict[str, Any]:
    return {**{c: lead[c] for c in LAGGING_COLUMNS}, "replicas": len(states),
            "agree": all(s["replicas_agree"] is not False for s in states),
            "leader_in_copy": bool(lead["is_leader"]), "behind": [s["broker"] for s in behind], "diverged": diverged}


def _follower_row(follower: dict[str, Any], lead: dict[str, Any], diverged: bool = False) -> dict[str, Any]:
    return {"topic": follower["topic"], "partition": follower["partition"], "broker": follower["broker"],
            "diverged": diverged,
            "leader": lead["broker"], "leader_in_copy": bool(lead["is_leader"]),
            "log_end_offset": follower["log_end_offset"], "leader_log_end_offset": lead["log_end_offset"],
            "last_stable_offset": follower["last_stable_offset"],
            "leader_last_stable_offset": lead["last_stable_offset"],
            "open_transactions": follower["open_transactions"],
            "leader_open_transactions": lead["open_transactions"], "incomplete": follower["copy_gap"] is not None}


def _transaction_rows(candidates: list[dict[str, Any]], ahead: dict[int, tuple], leader: Optional[int]
                      ) -> Iterator[dict[str, Any]]:
    """One row per open transaction of a partition: the verdict of the replica that speaks for
    it (the leader's, else the one furthest ahead: ``ahead`` ranks the brokers), the brokers
    holding it open, and those that judge it otherwise (a lagging follower, a cut copy)."""
    by_txn: dict[tuple, list[dict[str, Any]]] = {}
    for c in candidates:
        by_txn.setdefault((c["producer_id"], c["producer_epoch"], c["start_offset"]), []).append(c)
    for rows in by_txn.values():
        rep = min(rows, key=lambda c: ahead.get(c["broker"], (1, 0, c["broker"])))
        yield {**{k: rep[k] for k in CANDIDATE_COLUMNS}, "leader": leader, "brokers": sorted(c["broker"] for c in rows),
               "differing": sorted(({k: c[k] for k in ("broker", "hanging", "reason", "evidence")} for c in rows
                                    if (c["hanging"], c["reason"]) != (rep["hanging"], rep["reason"])),
                                   key=lambda d: d["broker"])}


def figures(*, as_of_ms: int, states: Iterable[dict[str, Any]], candidates: Iterable[dict[str, Any]],
            findings: Iterable[dict[str, Any]], files: Iterable[dict[str, Any]],
            tables: Optional[str] = None, groups: Iterable[dict[str, Any]] = (),
            impact: Iterable[dict[str, Any]] = ()) -> Figures:
    """The figures of a scan from its rows (partition_state, hanging_candidates, corruptions,
    files, affected_groups (``groups``), partition_impact (``impact``): dicts with at least the
    columns used), in one pass over each; partition_state's and hanging_candidates' rows in
    STREAM_ORDER (one partition of each is held at a time), the others in any order (of
    partition_impact, only the partitions holding bytes back are held)."""
    tally = Tally()
    for part_states, part_candidates in by_partition(states, candidates):
        tally.partition(part_states, part_candidates)
    for f in findings:
        tally.finding(f)
    for f in files:
        tally.file(f)
    for g in groups:
        tally.group(g)
    for r in impact:
        tally.impact(r)
    return tally.figures(as_of_ms, tables)


class Tally:
    """What figures() keeps of the rows as they go by: counts, sums and the first MAX_ROWS of
    each list, never the rows (SummarySink feeds one as a scan makes its rows)."""

    def __init__(self) -> None:
        self.replicas = self.partitions = self.open_transactions = self.incomplete = self.faulty = self.late = 0
        self.brokers: set[int] = set()
        self.lagging = _First(MAX_ROWS, lagging_order)
        self.lagging_partitions = _First(MAX_ROWS, partition_order)
        self.followers = _First(MAX_ROWS, lambda f: (f["topic"], f["partition"], f["broker"]))
        self.shown = _First(MAX_ROWS, candidate_order)
        self.transactions = _First(MAX_ROWS, transaction_order)
        self.reasons: dict[tuple[str, Optional[bool]], int] = {}
        self.txn_reasons: dict[tuple[str, Optional[bool]], int] = {}
        self.damage = _First(MAX_ROWS, finding_order)
        self.segment_bytes = self.skipped = 0
        self.absent = {"missing": 0, "not_copied": 0}
        self.blocked = _First(MAX_ROWS, group_order)
        self.held: dict[tuple[str, int], dict[str, Any]] = {}

    def partition(self, part_states: list[dict[str, Any]], part_candidates: list[dict[str, Any]]) -> None:
        """One partition's partition_state and hanging_candidates rows."""
        ahead: dict[int, tuple] = {}
        leader = None
        # a verdict withheld for two histories (hanging.DIVERGED): no replica is merely behind
        diverged = any(c["reason"] == DIVERGED for c in part_candidates)
        if part_states:
            self.partitions += 1
            lead = speaker(part_states)
            behind = [s for s in part_states if s is not lead and s["log_end_offset"] < lead["log_end_offset"]]
            leader = lead["leader"]
            ahead = {s["broker"]: (s is not lead, -s["log_end_offset"], s["broker"]) for s in part_states}
            for s in part_states:
                self.replicas += 1
                self.brokers.add(s["broker"])
                self.open_transactions += s["open_transactions"]
                self.incomplete += s["copy_gap"] is not None
                self.faulty += s["log_fault"] is not None
                if is_lagging(s):
                    self.lagging.add({c: s[c] for c in LAGGING_COLUMNS})
            self.late += any(s["has_late_transaction"] for s in part_states)
            if any(is_lagging(s) for s in part_states):
                self.lagging_partitions.add(_partition_row(part_states, lead, behind, diverged))
            for s in behind:
                self.followers.add(_follower_row(s, lead, diverged))
        for c in part_candidates:
            self.shown.add({k: c[k] for k in CANDIDATE_COLUMNS})
            self.reasons[(c["reason"], c["hanging"])] = self.reasons.get((c["reason"], c["hanging"]), 0) + 1
        for t in _transaction_rows(part_candidates, ahead, leader):
            self.transactions.add(t)
            self.txn_reasons[(t["reason"], t["hanging"])] = self.txn_reasons.get((t["reason"], t["hanging"]), 0) + 1

    def finding(self, row: dict[str, Any]) -> None:
        """A corruptions row."""
        self.damage.add({c: row[c] for c in FINDING_COLUMNS})

    def file(self, row: dict[str, Any]) -> None:
        """A files row."""
        if row["kind"] == "log_segment":
            self.segment_bytes += row["size"]
        elif row["kind"] == "skipped":
            self.skipped += 1
        elif row["kind"] in self.absent:
            self.absent[row["kind"]] += 1

    def group(self, row: dict[str, Any]) -> None:
        """An affected_groups row."""
        self.blocked.add({c: row[c] for c in GROUP_COLUMNS})

    def impact(self, row: dict[str, Any]) -> None:
        """A partition_impact row."""
        _add_held(self.held, row)

    def figures(self, as_of_ms: int, tables: Optional[str] = None) -> Figures:
        lagging_partitions, followers, transactions = self.lagging_partitions, self.followers, self.transactions
        held_rows = _First(MAX_ROWS, held_order)
        for p in self.held.values():
            held_rows.add(p)
        return Figures(
            groups=self.blocked.count, group_rows=self.blocked.items(), held_partitions=held_rows.count,
            held_bytes=sum(p["held_bytes"] for p in self.held.values()), held_rows=held_rows.items(),
            as_of_ms=as_of_ms, replicas=self.replicas, partitions=self.partitions, brokers=len(self.brokers),
            segment_bytes=self.segment_bytes, skipped=self.skipped, findings=self.damage.count,
            missing=self.absent["missing"], not_copied=self.absent["not_copied"],
            finding_lines=[Finding(f["file"], f["position"], f["reason"], f["message"]).line()
                           for f in self.damage.items()],
            open_transactions=self.open_transactions, late_partitions=self.late, lagging=self.lagging.count,
            lagging_rows=self.lagging.items(), candidates=self.shown.count,
            reasons=sorted(((r, h, n) for (r, h), n in self.reasons.items()), key=reasons_order),
            candidate_rows=self.shown.items(), tables=tables, incomplete=self.incomplete, faulty=self.faulty,
            lagging_partitions=lagging_partitions.count, partition_rows=lagging_partitions.items(),
            followers=followers.count, follower_rows=followers.items(), transactions=transactions.count,
            transaction_reasons=sorted(((r, h, n) for (r, h), n in self.txn_reasons.items()), key=reasons_order),
            transaction_rows=transactions.items())


class SummarySink:
    """What `logscan scan` and `logscan plan` print, taken as the local scan makes the rows (a
    logscan.scan.local.TableSink): the figures tallied as the rows go by (a Tally), and the
    rows printed whole, the hanging candidates for ``--format json`` (``candidates``) and the
    abort plans (``plans``), spooled to ``folder`` (a logscan.scan.spool.SpoolFolder). Memory
    holds one partition's rows at a time, whatever the size of the copy (issue 33): the
    partition step makes a partition's partition_state, hanging_candidates and abort_plans
    rows together, partitions ascending."""

    def __init__(self, folder, *, candidates: bool = False, plans: bool = False) -> None:
        from . import rows as R

        self.tally = Tally()
        self.tables = frozenset(("files", "corruptions", "partition_state", "hanging_candidates", "abort_plans",
                                 "affected_groups", "partition_impact"))
        self._part: Optional[tuple[str, int]] = None
        self._states: list[dict[str, Any]] = []
        self._candidates: list[dict[str, Any]] = []
        self._planned: set[tuple] = set()
        #: (topic, partition, producer_id, start_offset) of the hanging transactions no plan was
        #: made for (plans.plan_abort refuses a topic name Kafka would refuse)
        self.withheld: list[tuple[str, int, int, int]] = []
        self._json = folder.spool("candidates", R.HANGING_CANDIDATES.names, order=candidate_order) \
            if candidates else None
        self._plans = folder.spool("plans", R.ABORT_PLANS.names) if plans else None

    def add(self, table: str, row: dict[str, Any]) -> None:
        if table == "files":
            self.tally.file(row)
        elif table == "corruptions":
            self.tally.finding(row)
        elif table == "affected_groups":
            self.tally.group(row)
        elif table == "partition_impact":
            self.tally.impact(row)
        else:
            part = (row["topic"], row["partition"])
            if part != self._part:
                self._end_partition()
                if self._part is not None and part < self._part:
                    raise ValueError(f"{table} rows out of order: {part} after {self._part}")
                self._part = part
            if table == "partition_state":
                self._states.append(row)
            elif table == "hanging_candidates":
                self._candidates.append({k: row[k] for k in (*CANDIDATE_COLUMNS, "hanging")})
                if self._json is not None:
                    self._json.add(({True: 0, None: 1, False: 2}[row["hanging"]], *part), row)
            else:
                self._planned.add((row["topic"], row["partition"], row["producer_id"], row["start_offset"]))
                if self._plans is not None:
                    self._plans.add(None, row)

    def _end_partition(self) -> None:
        if self._states or self._candidates:
            self.tally.partition(self._states, self._candidates)
        self.withheld.extend(sorted({(c["topic"], c["partition"], c["producer_id"], c["start_offset"])
                                     for c in self._candidates if c["hanging"] is True} - self._planned))
        self._states, self._candidates, self._planned = [], [], set()

    def close(self) -> None:
        """The scan is over: what follows reads."""
        self._end_partition()
        for spool in (self._json, self._plans):
            if spool is not None:
                spool.close()

    def figures(self, as_of_ms: int) -> Figures:
        return self.tally.figures(as_of_ms)

    def candidates(self) -> Iterator[dict[str, Any]]:
        """The hanging_candidates rows in candidate_order."""
        for key in sorted(self._json.keys()):
            yield from self._json.rows(key)

    def plans(self) -> Iterator[dict[str, Any]]:
        """The abort_plans rows as the scan made them."""
        for key in self._plans.keys():
            yield from self._plans.rows(key)


#: Exit statuses of `logscan scan` (either executor), `logscan plan` (EXIT_HANGING: plans printed),
#: and of a Spark scan that could not finish (EXIT_FAILED: no answer, unlike the others).
EXIT_DAMAGE = 1
EXIT_HANGING = 4
EXIT_FAILED = 5


def exit_status(fig: Figures) -> int:
    """4 when a transaction hangs, else 1 when something was found damaged or missing, else 0."""
    if any(hanging is True for _, hanging, _ in fig.reasons):
        return EXIT_HANGING
    return EXIT_DAMAGE if fig.findings else 0


#: Width of the text when it goes to neither a terminal nor a COLUMNS setting (a file, a pipe).
DEFAULT_WIDTH = 100
MIN_WIDTH = 40


def text_width(out: TextIO) -> int:
    """Columns to draw the text in: $COLUMNS, else the terminal's, else DEFAULT_WIDTH."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    try:
        if out.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(out.fileno()).columns)
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or detached stream
        pass
    return DEFAULT_WIDTH


def _table(out: TextIO, width: int, header: list[str], rows: list[list[str]], *, words: tuple[int, ...] = ()) -> None:
    """A table in ``width`` columns (rich), indented two. Cells wrap at spaces only: numbers
    and the columns in ``words`` (partition names, snake_case reasons) are never wrapped, and
    a table that cannot fit so is written a row per paragraph instead ("hang-0: LSO 0, ...").
    Cells are plain text (names from the copy through printable, never rich markup)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = [[printable(c) for c in r] for r in rows]
    whole = [i in words or all(r[i].lstrip("-").isdigit() for r in rows) for i in range(len(header))]
    # Each column as wide as its header and cells; else the headers wrap (at spaces), the
    # cells not: a column is as wide as its longest cell (word, in a column that may wrap).
    natural = [max(len(c) for c in [h, *(r[i] for r in rows)]) for i, h in enumerate(header)]
    narrow = [max(len(w) for w in [*h.split(), *(c for r in rows for c in ([r[i]] if whole[i] else r[i].split()))])
              for i, h in enumerate(header)]
    room = width - 2 - 2 * (len(header) - 1)
    widths = natural if sum(natural) <= room else narrow
    if sum(widths) > room:
        for r in rows:
            _para(out, width, f"{r[0]}: " + ", ".join(f"{h} {c}" for h, c in zip(header[1:], r[1:])),
                  indent="    ", first="  ")
        return
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="", expand=False)
    for i, h in enumerate(header):
        table.add_column(h, width=widths[i], justify="right" if whole[i] and i not in words else "left")
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    buf = io.StringIO()
    Console(file=buf, width=width - 2, color_system=None, markup=False, emoji=False, highlight=False,
            force_terminal=False, force_jupyter=False, legacy_windows=False).print(table)
    for line in buf.getvalue().splitlines():
        out.write(("  " + line).rstrip() + "\n")


def _para(out: TextIO, width: int, text: str, indent: str = "  ", first: str = "") -> None:
    """Prose wrapped at spaces to ``width`` (a word longer than a line stays whole), its first
    line indented ``first``, the others ``indent``."""
    out.write(textwrap.fill(printable(text), width=width, initial_indent=first, subsequent_indent=indent,
                            break_long_words=False, break_on_hyphens=False) + "\n")


def _more(out: TextIO, total: int, shown: int) -> None:
    if total > shown:
        out.write(f"  ... and {total - shown} more\n")


_VERDICT = {True: "yes", False: "no", None: "unknown"}


def _replicas(n: int) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


def _are(n: int) -> str:
    return "is" if n == 1 else "are"


def copy_line(fig: Figures) -> str:
    """How complete and sound the copy is, in one line: the replicas whose copy is short of
    what their brokers' own files name (checkpoints, snapshots, leader epochs, a batch cut in half:
    partition_state.copy_gap), and those
    whose log breaks a rule Kafka's recovery enforces (partition_state.log_fault). Verdicts on
    such replicas are withheld (partition_not_in_copy, coordinator_not_in_copy, log_fault)."""
    absent = []
    if fig.missing:
        absent.append(f"{_replicas(fig.missing)} of partitions it holds elsewhere {_are(fig.missing)} not in the copy, "
                      f"though their brokers' checkpoints or __cluster_metadata name them on a log dir it holds "
                      f"('incomplete' findings, files kind 'missing': copy them)")
    if fig.not_copied:
        absent.append(f"{_replicas(fig.not_copied)} of partitions it holds nowhere {_are(fig.not_copied)} named but not "
                      f"copied (files kind 'not_copied')")
    if not fig.incomplete and not fig.faulty:
        return ("Copy: every replica holds what its broker's checkpoints and snapshots name, and every log keeps "
                "Kafka's offset order" + "".join(f"; {a}" for a in absent))
    parts = []
    if fig.incomplete:
        parts.append(f"{fig.incomplete} of {fig.replicas} replicas are incomplete (the broker's own files name "
                     f"offsets the copy lacks: 'incomplete' findings, partition_state.copy_gap)")
    if fig.faulty:
        parts.append(f"{fig.faulty} have a log Kafka's recovery would refuse (partition_state.log_fault)")
    return "Copy: " + "; ".join(parts) + "; no verdict rests on what they lack" + "".join(f"; {a}" for a in absent)


def _by_transaction(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shown candidates with the replicas that judge one transaction alike on one line
    (``brokers``), in their order: a hanging partition's three replicas made three rows and
    three equal evidence sentences. A replica judged otherwise (a lagging follower) keeps its own."""
    lines: dict[tuple, dict[str, Any]] = {}
    for c in rows:
        key = (c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"], c["hanging"],
               c["reason"], c["evidence"])
        if key in lines:
            lines[key]["brokers"].append(c["broker"])
        else:
            lines[key] = {**c, "brokers": [c["broker"]]}
    return list(lines.values())


def _leader_cell(row: dict[str, Any]) -> str:
    """The leader's broker id; in parentheses the broker whose numbers stand in for it when the
    copy holds no replica of the leader or cannot tell which it is."""
    return str(row["leader"]) if row["leader_in_copy"] else f"({row['broker']})"


def _replicas_cell(row: dict[str, Any]) -> str:
    """Whether the partition's replicas agree, else those behind the leader."""
    if row["agree"]:
        return f"{row['replicas']} agree"
    if row.get("diverged"):
        return "two histories"
    return f"{','.join(map(str, row['behind']))} behind" if row["behind"] else "differ"


def _verdicts_text(row: dict[str, Any]) -> str:
    """Whose verdict a transaction's row is, and which replicas judge it alike."""
    whose = (f"leader {row['broker']}" if row["broker"] == row["leader"] else
             f"broker {row['broker']}, the furthest ahead" if len(row["brokers"]) > 1 else f"broker {row['broker']}")
    alike = [b for b in row["brokers"] if b not in {d["broker"] for d in row["differing"]}]
    if len(row["brokers"]) == 1:
        return whose
    return f"{whose}; brokers {','.join(map(str, alike))} agree"


def _follower_text(f: dict[str, Any]) -> str:
    leader = f"leader {f['leader']}" if f["leader_in_copy"] else f"broker {f['leader']}, the furthest ahead"
    opened = "" if f["open_transactions"] == f["leader_open_transactions"] else (
        f", open transactions {f['open_transactions']} against {f['leader_open_transactions']}")
    gap = "; its copy is incomplete too (partition_state.copy_gap)" if f["incomplete"] else ""
    if f.get("diverged"):
        gap += ("; but its log and the leader's hold two histories (diverged: partition_state.replica_differences' "
                "diverged_at), not a lag")
    return (f"{f['topic']}-{f['partition']} on broker {f['broker']} ({leader}): log end {f['log_end_offset']} "
            f"against {f['leader_log_end_offset']}, LSO {f['last_stable_offset']} against "
            f"{f['leader_last_stable_offset']}{opened}{gap}")


FOLLOWERS_TEXT = ("a follower whose log ends before its leader's was copied while it was still fetching, or is "
                  "falling behind: it fetches the rest from the leader and consumers read the leader, so the "
                  "partition's numbers and verdicts are the leader's, and a transaction open only on the follower "
                  "is not a hang (replicas_disagree)")


def write_figures(fig: Figures, out: TextIO, *, max_transaction_timeout_ms: int,
                  inputs: Optional[list[str]] = None, per_replica: bool = False,
                  width: Optional[int] = None) -> None:
    """The summary as text, ``width`` columns wide (default: text_width): one row per partition
    (its leader's numbers) and per open transaction (its verdict once), or with ``per_replica``
    one row per replica; with the scan's ``inputs``, the `logscan plan` command to run next when
    a transaction hangs (shell-quoted: a path is anybody's bytes)."""
    width = width or text_width(out)
    _para(out, width, f"Scanned {fig.replicas} replicas of {fig.partitions} partitions on {fig.brokers} brokers "
                      f"({fig.segment_bytes / 1e6:.1f} MB of segments), as of {iso_ms(fig.as_of_ms)}", indent="  ")
    _para(out, width, copy_line(fig), indent="  ")
    if fig.skipped:
        _para(out, width, f"Skipped {fig.skipped} files or folders: superseded ones (--include-superseded reads "
                          f"them) or not Kafka's; the files table (kind 'skipped') gives each one's reason",
              indent="  ")
    out.write(f"Damage: {fig.findings} located findings\n")
    for line in fig.finding_lines[:20]:   # a line each, as logscan dump writes them on stderr: grep finds them
        out.write("  " + line + "\n")
    _more(out, fig.findings, min(20, len(fig.finding_lines)))

    out.write("\n")
    _para(out, width, f"Open transactions: {fig.open_transactions} over all replicas; partitions with a late "
                      f"transaction (open longer than the max timeout + 5 min): {fig.late_partitions}", indent="  ")
    if per_replica:
        _lagging_replicas(out, width, fig)
    else:
        _lagging_partitions(out, width, fig)
    if fig.followers:
        out.write(f"\nLagging followers: {fig.followers}\n")
        _para(out, width, FOLLOWERS_TEXT[0].upper() + FOLLOWERS_TEXT[1:] + ".", first="  ")
        for f in fig.follower_rows[:20]:
            _para(out, width, _follower_text(f), indent="    ", first="  ")
        _more(out, fig.followers, min(20, len(fig.follower_rows)))

    head = (f"Open transactions older than {max_transaction_timeout_ms // 60000} min (find-hanging's rule), "
            f"judged against __transaction_state: ")
    if per_replica:
        _candidate_replicas(out, width, fig, head)
    else:
        _candidate_transactions(out, width, fig, head)
    _blast_radius(out, width, fig)
    if inputs and any(hanging is True for _, hanging, _ in fig.reasons):
        out.write("\nNext: the abort command of each hanging transaction, with what to check first:\n")
        from logscan.logdir.store import option_flags   # a URI's flags, never a secret's value

        out.write(f"  {shlex.join(['logscan', 'plan', *map(str, inputs)])}{option_flags(inputs)} "
                  f"--bootstrap-server HOST:PORT\n")
    if fig.tables:
        out.write(f"\nTables: {fig.tables}\n")


def _held_by(g: dict[str, Any]) -> str:
    return f"{g['held_topic']}-{g['held_partition']} producer {g['producer_id']}"


GROUP_KINDS = {"unstable_offset_commit": "pending commit", "read_committed_stuck": "at the LSO"}


def group_verdict(g: dict[str, Any], verdicts: dict = _VERDICT) -> str:
    """The verdict on the transaction holding a group back, in ``verdicts``' words; "open" for
    one within the max transaction timeout (affected_groups' reason 'open': no candidate yet)."""
    return "open" if g["reason"] == "open" else verdicts[g["hanging"]]


def _blast_radius(out: TextIO, width: int, fig: Figures) -> None:
    """The consumer groups open transactions hold back and the bytes their LSOs keep on disk."""
    if not fig.groups and not fig.held_partitions:
        return
    out.write("\n")
    if fig.groups:
        _para(out, width, f"Consumer groups held back by open transactions: {fig.groups} (affected_groups: a pending "
                          f"transactional commit answers UNSTABLE_OFFSET_COMMIT to read_committed consumers; a "
                          f"committed offset at the LSO reads nothing more until it moves)", indent="  ")
        _table(out, width, ["group", "partition", "why", "held by", "hanging", "reason", "lag msgs", "lag min"],
               [[g["group_id"], f"{g['topic']}-{g['partition']}", GROUP_KINDS.get(g["kind"], g["kind"]), _held_by(g),
                 group_verdict(g), g["reason"], "" if g["lag_messages"] is None else str(g["lag_messages"]),
                 "" if g["lag_ms"] is None else str(g["lag_ms"] // 60000)] for g in fig.group_rows],
               words=(0, 1, 5))
        _more(out, fig.groups, len(fig.group_rows))
    if fig.held_partitions:
        _para(out, width, f"Bytes held back by LSOs: {fig.held_bytes} B on the replicas of {fig.held_partitions} "
                          f"partition{'s' if fig.held_partitions != 1 else ''} "
                          f"(partition_impact: closed segments from the LSO's on, which the log cleaner may not "
                          f"clean on a compacted topic and tiered storage may not upload, until the LSO moves)",
              indent="  ")
        _table(out, width, ["partition", "cleaner held", "tiering held", "replicas", "all replicas"],
               [[f"{p['topic']}-{p['partition']}",
                 f"{p['cleaner_held_bytes']} B in {p['cleaner_held_segments']} segments" if p["cleaner_held_bytes"]
                 else "-",
                 f"{p['tiering_held_bytes']} B in {p['tiering_held_segments']} segments" if p["tiering_held_bytes"]
                 else "-", str(p["replicas"]), f"{p['held_bytes']} B"] for p in fig.held_rows], words=(0,))
        _more(out, fig.held_partitions, len(fig.held_rows))


def _lagging_partitions(out: TextIO, width: int, fig: Figures) -> None:
    _para(out, width, f"Partitions with open transactions or LSO lag: {fig.lagging_partitions} of {fig.partitions} "
                      f"(the leader's numbers; --per-replica shows every replica)", indent="  ")
    if not fig.partition_rows:
        return
    _table(out, width, ["partition", "leader", "log start", "LSO", "HW", "LEO", "LSO lag", "open txns", "replicas"],
           [[f"{p['topic']}-{p['partition']}", _leader_cell(p), str(p["log_start_offset"]),
             str(p["last_stable_offset"]), str(p["high_watermark"]), str(p["log_end_offset"]), str(p["lso_lag"]),
             str(p["open_transactions"]), _replicas_cell(p)] for p in fig.partition_rows], words=(0,))
    _more(out, fig.lagging_partitions, len(fig.partition_rows))
    if any(not p["leader_in_copy"] for p in fig.partition_rows):
        _para(out, width, "(N): the copy holds no replica of the leader, or cannot tell which it is; the numbers "
                          "are broker N's, the replica furthest ahead", first="  ")


def _lagging_replicas(out: TextIO, width: int, fig: Figures) -> None:
    _para(out, width, f"Partitions with open transactions or LSO lag: {fig.lagging} replicas", indent="  ")
    if not fig.lagging_rows:
        return
    _table(out, width, ["partition", "broker", "leader", "log start", "LSO", "HW", "LEO", "LSO lag", "open txns"],
           [[f"{s['topic']}-{s['partition']}", str(s["broker"]), _VERDICT[s["is_leader"]],
             str(s["log_start_offset"]), str(s["last_stable_offset"]), str(s["high_watermark"]),
             str(s["log_end_offset"]), str(s["lso_lag"]), str(s["open_transactions"])] for s in fig.lagging_rows],
           words=(0,))
    _more(out, fig.lagging, len(fig.lagging_rows))


def _reasons(out: TextIO, width: int, reasons: list[tuple[str, Optional[bool], int]]) -> None:
    if reasons:
        _para(out, width, ", ".join(f"{reason} ({_VERDICT[h]}): {n}" for reason, h, n in reasons), first="  ")


def _candidate_transactions(out: TextIO, width: int, fig: Figures, head: str) -> None:
    out.write("\n")
    _para(out, width, f"{head}{fig.transactions} ({fig.candidates} replica rows)", indent="  ")
    _reasons(out, width, fig.transaction_reasons)
    if not fig.transaction_rows:
        return
    _table(out, width, ["partition", "producer", "start offset", "age min", "hanging", "reason"],
           [[f"{t['topic']}-{t['partition']}", str(t["producer_id"]), str(t["start_offset"]),
             str(t["age_ms"] // 60000), _VERDICT[t["hanging"]], t["reason"]] for t in fig.transaction_rows],
           words=(0, 5))
    _more(out, fig.transactions, len(fig.transaction_rows))
    out.write("\nEvidence:\n")
    for t in fig.transaction_rows:
        _para(out, width, f"{t['topic']}-{t['partition']}, producer {t['producer_id']} epoch {t['producer_epoch']} "
                          f"from offset {t['start_offset']} ({_verdicts_text(t)}): {t['evidence']}",
              indent="    ", first="  ")
        for d in t["differing"]:
            _para(out, width, f"broker {d['broker']}: {d['reason']} ({_VERDICT[d['hanging']]}): {d['evidence']}",
                  indent="      ", first="    ")


def _candidate_replicas(out: TextIO, width: int, fig: Figures, head: str) -> None:
    out.write("\n")
    _para(out, width, f"{head}{fig.candidates}", indent="  ")
    _reasons(out, width, fig.reasons)
    if not fig.candidate_rows:
        return
    _table(out, width, ["partition", "broker", "producer", "epoch", "start offset", "age min", "hanging", "reason"],
           [[f"{c['topic']}-{c['partition']}", str(c["broker"]), str(c["producer_id"]), str(c["producer_epoch"]),
             str(c["start_offset"]), str(c["age_ms"] // 60000), _VERDICT[c["hanging"]], c["reason"]]
            for c in fig.candidate_rows], words=(0, 7))
    _more(out, fig.candidates, len(fig.candidate_rows))
    out.write("\nEvidence:\n")
    for c in _by_transaction(fig.candidate_rows):
        brokers = ("broker " if len(c["brokers"]) == 1 else "brokers ") + ",".join(map(str, c["brokers"]))
        _para(out, width, f"{c['topic']}-{c['partition']} on {brokers}, producer {c['producer_id']}: {c['evidence']}",
              indent="    ", first="  ")


def table_figures(tables: dict[str, list[dict[str, Any]]], as_of_ms: int) -> Figures:
    """figures() of a local scan's tables (logscan.scan.local.Scan.tables)."""
    def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(rows, key=lambda r: tuple(r[c] for c in STREAM_ORDER))

    return figures(as_of_ms=as_of_ms, states=ordered(tables["partition_state"]),
                   candidates=ordered(tables["hanging_candidates"]),
                   findings=tables["corruptions"], files=tables["files"],
                   groups=tables.get("affected_groups", ()), impact=tables.get("partition_impact", ()))
