"""The short text an operator reads after a scan: what was read, what is open, what hangs.

The last step of the scan (logscan.scan.pipeline): :func:`figures` reduces the rows of four
tables (partition_state, hanging_candidates, corruptions, files) in one pass, holding the
counts and the first MAX_ROWS of each list, never the tables; both executors call it, the
local one over its rows, the Spark job over its Delta tables' rows streamed to the driver.
The exit status and the order of the candidates printed are decided here too, once.
"""

from __future__ import annotations

import heapq
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import count
from typing import Any, Callable, Iterable, Optional, TextIO

from logscan.logdir.segment import Finding
from logscan.text import printable

#: Rows of each list printed; "... and N more" says what the tables hold besides.
MAX_ROWS = 50

LAGGING_COLUMNS = ("broker", "topic", "partition", "log_start_offset", "last_stable_offset", "high_watermark",
                   "log_end_offset", "lso_lag", "open_transactions")
CANDIDATE_COLUMNS = ("broker", "topic", "partition", "producer_id", "producer_epoch", "start_offset", "age_ms",
                     "hanging", "reason", "evidence")
#: What figures() reads of the partition_state and corruptions rows.
STATE_COLUMNS = (*LAGGING_COLUMNS, "has_late_transaction", "copy_gap", "log_fault")
FINDING_COLUMNS = ("file", "position", "reason", "message")


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


#: The range of epoch-ms times with a calendar date (years 1 to 9999).
_DATED = (-62_135_596_800_000, 253_402_300_799_999)


def iso_ms(ms: int) -> str:
    """An epoch-ms time as ISO-8601 UTC; the number itself when no calendar date is that far
    (a timestamp written in microseconds, int64 max)."""
    if _DATED[0] <= ms <= _DATED[1]:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    return f"{ms} ms since the epoch"


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


def finding_order(row: dict[str, Any]) -> tuple:
    return (row["file"], row["position"], row["message"])


def figures(*, as_of_ms: int, states: Iterable[dict[str, Any]], candidates: Iterable[dict[str, Any]],
            findings: Iterable[dict[str, Any]], files: Iterable[dict[str, Any]],
            tables: Optional[str] = None) -> Figures:
    """The figures of a scan from its rows (partition_state, hanging_candidates, corruptions,
    files: dicts with at least the columns used), in one pass over each."""
    replicas, open_transactions, incomplete, faulty = 0, 0, 0, 0
    partitions: set[tuple[str, int]] = set()
    brokers: set[int] = set()
    late: set[tuple[str, int]] = set()
    lagging = _First(MAX_ROWS, lagging_order)
    for s in states:
        replicas += 1
        partitions.add((s["topic"], s["partition"]))
        brokers.add(s["broker"])
        open_transactions += s["open_transactions"]
        incomplete += s["copy_gap"] is not None
        faulty += s["log_fault"] is not None
        if s["has_late_transaction"]:
            late.add((s["topic"], s["partition"]))
        if is_lagging(s):
            lagging.add({c: s[c] for c in LAGGING_COLUMNS})
    shown = _First(MAX_ROWS, candidate_order)
    reasons: dict[tuple[str, Optional[bool]], int] = {}
    for c in candidates:
        shown.add({k: c[k] for k in CANDIDATE_COLUMNS})
        reasons[(c["reason"], c["hanging"])] = reasons.get((c["reason"], c["hanging"]), 0) + 1
    damage = _First(MAX_ROWS, finding_order)
    for f in findings:
        damage.add(f)
    segment_bytes, skipped = 0, 0
    for f in files:
        if f["kind"] == "log_segment":
            segment_bytes += f["size"]
        elif f["kind"] == "skipped":
            skipped += 1
    return Figures(
        as_of_ms=as_of_ms, replicas=replicas, partitions=len(partitions), brokers=len(brokers),
        segment_bytes=segment_bytes, skipped=skipped, findings=damage.count,
        finding_lines=[Finding(f["file"], f["position"], f["reason"], f["message"]).line() for f in damage.items()],
        open_transactions=open_transactions, late_partitions=len(late), lagging=lagging.count,
        lagging_rows=lagging.items(), candidates=shown.count,
        reasons=sorted(((r, h, n) for (r, h), n in reasons.items()), key=reasons_order),
        candidate_rows=shown.items(), tables=tables, incomplete=incomplete, faulty=faulty)


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


def _table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    for row in [header, *rows]:
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")


def _more(out: TextIO, total: int, shown: int) -> None:
    if total > shown:
        out.write(f"  ... and {total - shown} more\n")


_VERDICT = {True: "yes", False: "no", None: "unknown"}


def copy_line(fig: Figures) -> str:
    """How complete and sound the copy is, in one line: the replicas whose copy is short of
    what their brokers' own checkpoints and snapshots name (partition_state.copy_gap), and those
    whose log breaks a rule Kafka's recovery enforces (partition_state.log_fault). Verdicts on
    such replicas are withheld (partition_not_in_copy, coordinator_not_in_copy, log_fault)."""
    if not fig.incomplete and not fig.faulty:
        return ("Copy: every replica holds what its broker's checkpoints and snapshots name, and every log keeps "
                "Kafka's offset order")
    parts = []
    if fig.incomplete:
        parts.append(f"{fig.incomplete} of {fig.replicas} replicas are incomplete (the broker's checkpoints or "
                     f"snapshots name offsets the copy lacks: 'incomplete' findings, partition_state.copy_gap)")
    if fig.faulty:
        parts.append(f"{fig.faulty} have a log Kafka's recovery would refuse (partition_state.log_fault)")
    return "Copy: " + "; ".join(parts) + "; no verdict rests on what they lack"


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


def write_figures(fig: Figures, out: TextIO, *, max_transaction_timeout_ms: int,
                  inputs: Optional[list[str]] = None) -> None:
    """The summary as text; with the scan's ``inputs``, the `logscan plan` command to run next
    when a transaction hangs (shell-quoted: a path is anybody's bytes)."""
    out.write(f"Scanned {fig.replicas} replicas of {fig.partitions} partitions on {fig.brokers} brokers "
              f"({fig.segment_bytes / 1e6:.1f} MB of segments), as of {iso_ms(fig.as_of_ms)}\n")
    out.write(copy_line(fig) + "\n")
    if fig.skipped:
        out.write(f"Skipped {fig.skipped} files or folders: superseded ones (--include-superseded reads them) "
                  f"or not Kafka's; the files table (kind 'skipped') gives each one's reason\n")
    out.write(f"Damage: {fig.findings} located findings\n")
    for line in fig.finding_lines[:20]:
        out.write("  " + line + "\n")
    _more(out, fig.findings, min(20, len(fig.finding_lines)))

    out.write(f"\nOpen transactions: {fig.open_transactions} over all replicas; partitions with a late "
              f"transaction (open longer than the max timeout + 5 min): {fig.late_partitions}\n")
    out.write(f"Partitions with open transactions or LSO lag: {fig.lagging} replicas\n")
    if fig.lagging_rows:
        _table(out, ["broker", "partition", "log_start", "LSO", "HW", "LEO", "lso_lag", "open_txns"],
               [[str(s["broker"]), f"{s['topic']}-{s['partition']}", str(s["log_start_offset"]),
                 str(s["last_stable_offset"]), str(s["high_watermark"]), str(s["log_end_offset"]),
                 str(s["lso_lag"]), str(s["open_transactions"])] for s in fig.lagging_rows])
        _more(out, fig.lagging, len(fig.lagging_rows))

    out.write(f"\nOpen transactions older than {max_transaction_timeout_ms // 60000} min "
              f"(find-hanging's rule), judged against __transaction_state: {fig.candidates}\n")
    if fig.reasons:
        out.write("  " + ", ".join(f"{reason} ({_VERDICT[h]}): {n}" for reason, h, n in fig.reasons) + "\n")
    if fig.candidate_rows:
        shown = _by_transaction(fig.candidate_rows)
        _table(out, ["brokers", "partition", "producer_id", "epoch", "start_offset", "age_min", "hanging", "reason"],
               [[",".join(map(str, c["brokers"])), f"{c['topic']}-{c['partition']}", str(c["producer_id"]),
                 str(c["producer_epoch"]), str(c["start_offset"]), str(c["age_ms"] // 60000), _VERDICT[c["hanging"]],
                 c["reason"]] for c in shown])
        _more(out, fig.candidates, len(fig.candidate_rows))
        out.write("\nEvidence:\n")
        for c in shown:
            brokers = ("broker " if len(c["brokers"]) == 1 else "brokers ") + ",".join(map(str, c["brokers"]))
            out.write(printable(f"  {c['topic']}-{c['partition']} on {brokers}, producer "
                                f"{c['producer_id']}: {c['evidence']}") + "\n")
    if inputs and any(hanging is True for _, hanging, _ in fig.reasons):
        out.write(f"\nNext: {shlex.join(['logscan', 'plan', *map(str, inputs)])} --bootstrap-server HOST:PORT "
                  f"prints the abort command of each hanging transaction, with what to check first\n")
    if fig.tables:
        out.write(f"\nTables: {fig.tables}\n")


def table_figures(tables: dict[str, list[dict[str, Any]]], as_of_ms: int) -> Figures:
    """figures() of a local scan's tables (logscan.scan.local.Scan.tables)."""
    return figures(as_of_ms=as_of_ms, states=tables["partition_state"], candidates=tables["hanging_candidates"],
                   findings=tables["corruptions"], files=tables["files"])
