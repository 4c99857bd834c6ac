"""The short text an operator reads after a scan: what was read, what is open, what hangs.

Both drivers print it: the local scan computes :class:`Figures` from its result, the Spark
job with aggregates over its tables (only the few rows shown are collected). Lists are cut
at ``MAX_ROWS``; the tables hold the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional, TextIO

from .local import ScanResult

#: Rows of each list printed; "... and N more" says what the tables hold besides.
MAX_ROWS = 50

LAGGING_COLUMNS = ("broker", "topic", "partition", "log_start_offset", "last_stable_offset", "high_watermark",
                   "log_end_offset", "lso_lag", "open_transactions")
CANDIDATE_COLUMNS = ("broker", "topic", "partition", "producer_id", "producer_epoch", "start_offset", "age_ms",
                     "hanging", "reason", "evidence")


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


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


#: The replicas the summary (and `logscan report`) counts as lagging: the LSO is behind the high
#: watermark, or a transaction is open (holding the LSO once more records follow). As SQL for
#: the readers of the tables, and as Python for the rows of a local scan.
LAGGING_SQL = "lso_lag > 0 OR open_transactions > 0"


def is_lagging(row: dict[str, Any]) -> bool:
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


def figures(result: ScanResult) -> Figures:
    from . import rows as R

    states = [R.state_row(r.state, r.max_timestamp, None, r.assessment) for r in result.replicas]
    lagging = sorted(({c: s[c] for c in LAGGING_COLUMNS} for s in states
                      if is_lagging(s)), key=lagging_order)
    candidates = sorted(({k: v for k, v in R.candidate_row(R.replica_key(c.broker, c.topic, c.partition), c.txn,
                                                           c.age_ms, c.verdict).items() if k in CANDIDATE_COLUMNS}
                         for c in result.candidates), key=candidate_order)
    reasons: dict[tuple[str, Optional[bool]], int] = {}
    for c in candidates:
        reasons[(c["reason"], c["hanging"])] = reasons.get((c["reason"], c["hanging"]), 0) + 1
    late = {(s["topic"], s["partition"]) for s in states if s["has_late_transaction"]}
    findings = sorted(result.findings, key=lambda f: (f.path, f.position, f.message))
    return Figures(
        as_of_ms=result.as_of_ms, replicas=len(states), partitions=len({(s["topic"], s["partition"]) for s in states}),
        brokers=len({s["broker"] for s in states}), segment_bytes=result.bytes_read, skipped=len(result.skipped),
        findings=len(findings), finding_lines=[f.line() for f in findings[:MAX_ROWS]],
        open_transactions=sum(s["open_transactions"] for s in states), late_partitions=len(late),
        lagging=len(lagging), lagging_rows=lagging[:MAX_ROWS], candidates=len(candidates),
        reasons=sorted(((r, h, n) for (r, h), n in reasons.items()), key=reasons_order),
        candidate_rows=candidates[:MAX_ROWS])


def _table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    for row in [header, *rows]:
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")


def _more(out: TextIO, total: int, shown: int) -> None:
    if total > shown:
        out.write(f"  ... and {total - shown} more\n")


_VERDICT = {True: "yes", False: "no", None: "unknown"}


def write_figures(fig: Figures, out: TextIO, *, max_transaction_timeout_ms: int) -> None:
    out.write(f"Scanned {fig.replicas} replicas of {fig.partitions} partitions on {fig.brokers} brokers "
              f"({fig.segment_bytes / 1e6:.1f} MB of segments), as of {iso_ms(fig.as_of_ms)}\n")
    if fig.skipped:
        out.write(f"Skipped {fig.skipped} superseded files or folders (use --include-superseded)\n")
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
        _table(out, ["broker", "partition", "producer_id", "epoch", "start_offset", "age_min", "hanging", "reason"],
               [[str(c["broker"]), f"{c['topic']}-{c['partition']}", str(c["producer_id"]), str(c["producer_epoch"]),
                 str(c["start_offset"]), str(c["age_ms"] // 60000), _VERDICT[c["hanging"]], c["reason"]]
                for c in fig.candidate_rows])
        _more(out, fig.candidates, len(fig.candidate_rows))
        out.write("\nEvidence:\n")
        for c in fig.candidate_rows:
            out.write(f"  {c['topic']}-{c['partition']} on broker {c['broker']}, producer {c['producer_id']}: "
                      f"{c['evidence']}\n")
    if fig.tables:
        out.write(f"\nTables: {fig.tables}\n")


def write_summary(result: ScanResult, out: TextIO, *, max_transaction_timeout_ms: int) -> None:
    write_figures(figures(result), out, max_transaction_timeout_ms=max_transaction_timeout_ms)
