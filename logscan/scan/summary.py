"""The short text an operator reads after a scan: what was read, what is open, what hangs."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TextIO

from .local import ScanResult


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


def _table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    for row in [header, *rows]:
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")


def write_summary(result: ScanResult, out: TextIO, *, max_transaction_timeout_ms: int) -> None:
    brokers = sorted({r.state.broker for r in result.replicas})
    partitions = {(r.state.topic, r.state.partition) for r in result.replicas}
    out.write(f"Scanned {len(result.replicas)} replicas of {len(partitions)} partitions on "
              f"{len(brokers)} brokers ({result.bytes_read / 1e6:.1f} MB of segments), "
              f"as of {iso_ms(result.as_of_ms)}\n")
    if result.skipped:
        out.write(f"Skipped {len(result.skipped)} superseded files or folders (use --include-superseded)\n")
    out.write(f"Damage: {len(result.findings)} located findings\n")
    for f in result.findings[:20]:
        out.write("  " + f.line() + "\n")

    lagging = sorted((r.state for r in result.replicas if r.state.lso_lag > 0 or r.state.open_transactions),
                     key=lambda s: (-s.lso_lag, s.topic, s.partition, s.broker))
    out.write(f"\nPartitions with open transactions or LSO lag: {len(lagging)} replicas\n")
    if lagging:
        _table(out, ["broker", "partition", "log_start", "LSO", "HW", "LEO", "lso_lag", "open_txns"],
               [[str(s.broker), f"{s.topic}-{s.partition}", str(s.log_start_offset), str(s.last_stable_offset),
                 str(s.high_watermark), str(s.log_end_offset), str(s.lso_lag), str(s.open_transactions)]
                for s in lagging])

    out.write(f"\nOpen transactions older than {max_transaction_timeout_ms // 60000} min "
              f"(find-hanging's rule), judged against __transaction_state: {len(result.candidates)}\n")
    if result.candidates:
        _table(out, ["broker", "partition", "producer_id", "epoch", "start_offset", "age_min", "hanging", "reason"],
               [[str(c.broker), f"{c.topic}-{c.partition}", str(c.txn.producer_id), str(c.txn.producer_epoch),
                 str(c.txn.start_offset), str(c.age_ms // 60000),
                 {True: "yes", False: "no", None: "unknown"}[c.verdict.hanging], c.verdict.reason]
                for c in result.candidates])
        out.write("\nEvidence:\n")
        for c in result.candidates:
            out.write(f"  {c.topic}-{c.partition} on broker {c.broker}, producer {c.txn.producer_id}: "
                      f"{c.verdict.evidence}\n")
