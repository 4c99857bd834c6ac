"""`logscan diff`: what changed between two scans of the same cluster, read from the Delta
tables both were written into (in this process: DuckDB over delta-rs, as `logscan report`).

Two things are compared, each on the partition's own terms:

- **transactions** that hang in either scan, one per (topic, partition, producer id, start
  offset) whatever the replicas: *new* (hanging in B, not in A), *still hanging* (in both,
  with its age in each), *resolved* (hanging in A; in B its span ends with a COMMIT or ABORT
  marker, or B judges it not hanging), and *undetermined* (hanging in A; B cannot tell, no
  longer lists it among the candidates, or lacks the partition). A transaction's status in a
  scan is its verdict in ``hanging_candidates`` (hanging if any replica's verdict is, as the
  abort plan is made from the replica that says so), else its span's outcome in
  ``txn_spans`` (the replica furthest along: a closed span over an open one);
- **partitions**: high watermark, last stable offset, LSO lag and open transactions of each
  partition in A and in B (its leader's replica, else the one furthest ahead, as the summary
  and the report take it), with the LSO's and the high watermark's movement. A partition whose
  LSO did not move while its high watermark did is *stuck*: what a hang looks like from
  outside.

``compare`` is the rule, over plain rows; ``load`` reads them; ``render_text``,
``render_markdown`` and ``as_json`` print the result.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Optional

from logscan.sql.delta import TablesError, unfinished_scans
from logscan.sql.embedded import EmbeddedEngine
from logscan.text import printable

from . import markdown as md
from .html import _iso, _minutes

#: partition_state columns the diff reads per partition.
PARTITION_COLUMNS = ("topic", "partition", "broker", "high_watermark", "last_stable_offset", "lso_lag",
                     "open_transactions")
#: The order of the kinds of change, as printed.
KINDS = ("new", "still_hanging", "resolved", "undetermined")
#: Rows of the partition table printed as text or Markdown (JSON has them all).
MAX_PRINTED = 100


class DiffError(ValueError):
    """The scans cannot be compared (no such scan, an unfinished one): one sentence, with the fix."""


@dataclass(frozen=True)
class Status:
    """A transaction as one scan saw it."""

    state: str                       # hanging, not_hanging, cannot_tell, open, COMMIT, ABORT, absent
    reason: Optional[str] = None     # the candidate's reason, when it is a candidate
    age_ms: Optional[int] = None     # the candidate's age at the scan's as-of time
    end_marker_offset: Optional[int] = None
    brokers: tuple[int, ...] = ()    # the replicas holding what ``state`` rests on

    def describe(self) -> str:
        if self.state in ("hanging", "not_hanging", "cannot_tell"):
            return f"{self.state.replace('_', ' ')} ({self.reason}, idle {_minutes(self.age_ms)})"
        if self.state in ("COMMIT", "ABORT"):
            return f"{self.state} marker at offset {self.end_marker_offset}"
        return {"open": "open, younger than the max transaction timeout",
                "absent": "not in this scan"}.get(self.state, self.state)


@dataclass(frozen=True)
class TxnChange:
    kind: str
    topic: str
    partition: int
    producer_id: int
    start_offset: int
    a: Status
    b: Status


@dataclass(frozen=True)
class PartitionChange:
    topic: str
    partition: int
    a: Optional[dict[str, Any]]   # PARTITION_COLUMNS of the speaking replica; None: not in that scan
    b: Optional[dict[str, Any]]

    def moved(self, column: str) -> Optional[int]:
        return None if self.a is None or self.b is None else self.b[column] - self.a[column]

    @property
    def stuck(self) -> bool:
        """The LSO did not move while the high watermark did, and is still behind it."""
        return (self.b is not None and self.b["lso_lag"] > 0 and self.moved("last_stable_offset") == 0
                and (self.moved("high_watermark") or 0) > 0)

    @property
    def changed(self) -> bool:
        return (self.a is None or self.b is None or any(self.moved(c) for c in
                                                         ("high_watermark", "last_stable_offset",
                                                          "open_transactions")))


@dataclass
class Diff:
    scan_a: dict[str, Any]
    scan_b: dict[str, Any]
    transactions: list[TxnChange] = field(default_factory=list)
    partitions: list[PartitionChange] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[TxnChange]:
        return [t for t in self.transactions if t.kind == kind]

    @property
    def hanging_in_b(self) -> bool:
        return any(t.b.state == "hanging" for t in self.transactions)


# -- the rule, over plain rows --------------------------------------------------------------------

TxnKey = tuple[str, int, int, int]   # topic, partition, producer_id, start_offset


def statuses(candidates: Iterable[dict[str, Any]], spans: Iterable[dict[str, Any]]) -> dict[TxnKey, Status]:
    """Each transaction's status in one scan, the first that holds of: a replica's verdict is
    hanging (the abort plan is made from it); a replica's span ends with a marker (where the
    partition goes: a follower still open is behind); a replica cannot tell; a replica judges
    it not hanging; a replica has it open (younger than the max transaction timeout). A
    transaction in neither table has no key (absent)."""
    verdicts: dict[TxnKey, list[dict[str, Any]]] = {}
    for c in candidates:
        verdicts.setdefault((c["topic"], c["partition"], c["producer_id"], c["start_offset"]), []).append(c)
    spanned: dict[TxnKey, list[dict[str, Any]]] = {}
    for s in spans:
        spanned.setdefault((s["topic"], s["partition"], s["producer_id"], s["first_offset"]), []).append(s)

    def judged(rows: list[dict[str, Any]], verdict: Optional[bool], state: str) -> Optional[Status]:
        said = [r for r in rows if r["hanging"] is verdict]
        if not said:
            return None
        first = min(said, key=lambda r: r["broker"])
        return Status(state, first["reason"], max(r["age_ms"] for r in said),
                      brokers=tuple(sorted(r["broker"] for r in said)))

    def ended(rows: list[dict[str, Any]]) -> Optional[Status]:
        closed = [s for s in rows if s["outcome"] != "OPEN"]
        if not closed:
            return None
        first = min(closed, key=lambda s: s["broker"])
        return Status(first["outcome"], end_marker_offset=first["end_marker_offset"],
                      brokers=tuple(sorted(s["broker"] for s in closed)))

    out: dict[TxnKey, Status] = {}
    for key in set(verdicts) | set(spanned):
        rows, span_rows = verdicts.get(key, []), spanned.get(key, [])
        out[key] = (judged(rows, True, "hanging") or ended(span_rows) or judged(rows, None, "cannot_tell")
                    or judged(rows, False, "not_hanging")
                    or Status("open", brokers=tuple(sorted(s["broker"] for s in span_rows))))
    return out


def kind_of(a: Status, b: Status) -> Optional[str]:
    """new, still_hanging, resolved or undetermined; None when the transaction hangs in neither."""
    if b.state == "hanging":
        return "still_hanging" if a.state == "hanging" else "new"
    if a.state != "hanging":
        return None
    return "resolved" if b.state in ("COMMIT", "ABORT", "not_hanging") else "undetermined"


def compare(a: dict[TxnKey, Status], b: dict[TxnKey, Status]) -> list[TxnChange]:
    """The transactions hanging in either scan, with their kind of change, in KINDS' order then
    by partition."""
    absent = Status("absent")
    changes = []
    for key in set(a) | set(b):
        sa, sb = a.get(key, absent), b.get(key, absent)
        kind = kind_of(sa, sb)
        if kind is not None:
            changes.append(TxnChange(kind, *key, sa, sb))
    return sorted(changes, key=lambda t: (KINDS.index(t.kind), t.topic, t.partition, t.producer_id, t.start_offset))


def compare_partitions(a: Iterable[dict[str, Any]], b: Iterable[dict[str, Any]]) -> list[PartitionChange]:
    """Every partition of either scan (one speaking row each), the stuck ones first, then by
    B's LSO lag, largest first."""
    rows_a = {(r["topic"], r["partition"]): r for r in a}
    rows_b = {(r["topic"], r["partition"]): r for r in b}
    out = [PartitionChange(*key, rows_a.get(key), rows_b.get(key)) for key in set(rows_a) | set(rows_b)]
    return sorted(out, key=lambda p: (not p.stuck, -((p.b or {}).get("lso_lag") or 0), p.topic, p.partition))


# -- reading the tables ---------------------------------------------------------------------------

def load(tables_dir, scan_a: str, scan_b: str, *, where: Optional[str] = None) -> Diff:
    """The diff of two scans written into the Delta tables at ``tables_dir`` (a folder or URI,
    or the tables found: name -> folder, as a catalog's), named ``where`` in messages."""
    engine = EmbeddedEngine(tables_dir)
    try:
        return _load(engine, where or str(tables_dir), scan_a, scan_b)
    finally:
        engine.close()


def _load(engine: EmbeddedEngine, tables_dir, scan_a: str, scan_b: str) -> Diff:
    if "partition_state" not in engine.paths:
        raise TablesError(f"{tables_dir}: no partition_state table; give the --output folder of a scan")
    unfinished = unfinished_scans(engine.paths)
    heads = {}
    for scan_id in (scan_a, scan_b):
        if scan_id in unfinished:
            raise DiffError(f"scan {scan_id!r} did not finish (killed or failed while its tables were written); "
                            "run it again (it replaces its own rows) before comparing")
        head = engine.query("SELECT epoch_ms(max(as_of)) AS as_of, count(*) AS replicas FROM partition_state "
                            "WHERE scan_id = ?", [scan_id], tables=["partition_state"])[0]
        if head["as_of"] is None:
            known = [r["scan_id"] for r in engine.query("SELECT DISTINCT scan_id FROM partition_state ORDER BY 1",
                                                        tables=["partition_state"])]
            raise DiffError(f"{tables_dir}: no scan {scan_id!r}; the tables hold "
                            + (", ".join(repr(k) for k in known) or "no scan"))
        inputs = None
        if "scans" in engine.paths:
            found = engine.query("SELECT inputs FROM scans WHERE scan_id = ?", [scan_id], tables=["scans"])
            inputs = found[0]["inputs"] if found else None
        heads[scan_id] = {"scan_id": scan_id, "as_of": head["as_of"], "replicas": head["replicas"], "inputs": inputs}

    def rows(table: str, sql: str, scan_id: str) -> list[dict[str, Any]]:
        if table not in engine.paths:
            return []
        return engine.query(f"WITH t AS (SELECT * FROM {table} WHERE scan_id = ?) {sql}", [scan_id], tables=[table])

    def scan_spans(scan_id: str, keys: list[TxnKey]) -> list[dict[str, Any]]:
        if not keys or "txn_spans" not in engine.paths:
            return []
        wanted = ", ".join("(?, ?, ?, ?)" for _ in keys)
        return engine.query(
            f"SELECT topic, partition, broker, producer_id, first_offset, outcome, end_marker_offset "
            f"FROM txn_spans SEMI JOIN (VALUES {wanted}) AS w(topic, partition, producer_id, first_offset) "
            f"USING (topic, partition, producer_id, first_offset) WHERE scan_id = ?",
            [*[v for key in keys for v in key], scan_id], tables=["txn_spans"])

    candidates = {scan_id: rows("hanging_candidates", "SELECT topic, partition, broker, producer_id, start_offset, "
                                "age_ms, hanging, reason FROM t", scan_id) for scan_id in (scan_a, scan_b)}
    # Only the transactions hanging in either scan are compared: their spans say what became of them.
    wanted = sorted({k for c in candidates.values() for k, v in statuses(c, []).items() if v.state == "hanging"})
    full = {scan_id: statuses(candidates[scan_id], scan_spans(scan_id, wanted)) for scan_id in (scan_a, scan_b)}
    speakers = f"""SELECT {', '.join(PARTITION_COLUMNS)} FROM t
        QUALIFY row_number() OVER (PARTITION BY topic, partition
                                   ORDER BY is_leader IS TRUE DESC, log_end_offset DESC, broker) = 1"""
    return Diff(heads[scan_a], heads[scan_b], compare(full[scan_a], full[scan_b]),
                compare_partitions(rows("partition_state", speakers, scan_a),
                                   rows("partition_state", speakers, scan_b)))


# -- printing -------------------------------------------------------------------------------------

TITLES = {"new": "New hanging transactions", "still_hanging": "Still hanging",
          "resolved": "Resolved", "undetermined": "Hanging in A, no verdict in B"}


def _scan_line(label: str, head: dict[str, Any]) -> str:
    inputs = ", ".join(head["inputs"]) if head.get("inputs") else "?"
    return f"{label}: scan {head['scan_id']!r} as of {_iso(head['as_of'])}, {head['replicas']} replicas, input {inputs}"


def _order_note(diff: Diff) -> Optional[str]:
    if diff.scan_a["as_of"] > diff.scan_b["as_of"]:
        return "note: A's as-of time is after B's; the diff reads A as the earlier state, as given"
    return None


def _partition_cells(p: PartitionChange) -> list[str]:
    def side(r: Optional[dict[str, Any]]) -> list[str]:
        return ["-"] * 3 if r is None else [str(r["high_watermark"]), str(r["last_stable_offset"]), str(r["lso_lag"])]

    lso, hw = p.moved("last_stable_offset"), p.moved("high_watermark")
    note = ("LSO stuck while the high watermark moved" if p.stuck else "only in A" if p.b is None
            else "only in B" if p.a is None else "")
    return [f"{p.topic}-{p.partition}", *side(p.a), *side(p.b),
            "" if lso is None else f"{lso:+d}", "" if hw is None else f"{hw:+d}", note]


PARTITION_HEADER = ["partition", "HW A", "LSO A", "lag A", "HW B", "LSO B", "lag B", "LSO moved", "HW moved", ""]


def _shown_partitions(diff: Diff) -> list[PartitionChange]:
    return [p for p in diff.partitions if p.changed or ((p.a or {}).get("lso_lag") or 0) > 0
            or ((p.b or {}).get("lso_lag") or 0) > 0]


def render_text(diff: Diff) -> str:
    from logscan.render import render_rows
    import io

    out = [_scan_line("A", diff.scan_a), _scan_line("B", diff.scan_b)]
    if note := _order_note(diff):
        out.append(note)
    counts = ", ".join(f"{len(diff.of_kind(k))} {k.replace('_', ' ')}" for k in KINDS)
    out.append(f"Transactions: {counts}")
    for kind in KINDS:
        changes = diff.of_kind(kind)
        if not changes:
            continue
        out.append(f"\n{TITLES[kind]}:")
        for t in changes:
            out.append(f"  {t.topic}-{t.partition} producer {t.producer_id} open since offset {t.start_offset}: "
                       f"A {t.a.describe()}; B {t.b.describe()}")
    shown = _shown_partitions(diff)
    stuck = sum(p.stuck for p in diff.partitions)
    out.append(f"\nPartitions: {len(diff.partitions)}, {sum(p.changed for p in diff.partitions)} changed, "
               f"{stuck} with the LSO stuck while the high watermark moved")
    if shown:
        buf = io.StringIO()
        render_rows(PARTITION_HEADER, [_partition_cells(p) for p in shown[:MAX_PRINTED]], "text", buf)
        out.append(buf.getvalue().rstrip("\n"))
        if len(shown) > MAX_PRINTED:
            out.append(f"({len(shown) - MAX_PRINTED} more: --format json lists every partition)")
    return "\n".join(printable(line) for line in "\n".join(out).split("\n")) + "\n"


def render_markdown(diff: Diff) -> str:
    out = ["# logscan diff\n",
           "".join(f"- {text}\n" for text in (md.text(_scan_line("A", diff.scan_a)), md.text(_scan_line("B", diff.scan_b)),
                                               md.text(_order_note(diff)) if _order_note(diff) else None) if text)]
    out.append(md.table(["change", "transactions"], [[md.text(TITLES[k]), str(len(diff.of_kind(k)))] for k in KINDS],
                        right=(1,)))
    for kind in KINDS:
        changes = diff.of_kind(kind)
        if changes:
            out.append(f"## {md.text(TITLES[kind])}\n\n" + md.table(
                ["partition", "producer id", "start offset", "in A", "in B"],
                [[md.text(f"{t.topic}-{t.partition}"), md.text(t.producer_id), md.text(t.start_offset),
                  md.text(t.a.describe()), md.text(t.b.describe())] for t in changes], right=(1, 2)))
    shown = _shown_partitions(diff)
    out.append("## Partitions\n\nHigh watermark, last stable offset and LSO lag of each partition whose numbers "
               "changed or whose LSO is behind, from its leader (else the replica furthest ahead).\n\n"
               + (md.table(PARTITION_HEADER, [[md.text(c) for c in _partition_cells(p)] for p in shown[:MAX_PRINTED]],
                           right=range(1, 9)) if shown else "None.\n")
               + (f"\n{len(shown) - MAX_PRINTED} more: `--format json` lists every partition.\n"
                  if len(shown) > MAX_PRINTED else ""))
    return "\n".join(out)


def as_json(diff: Diff) -> str:
    """One JSON object: both scans, every transaction change, every partition (with its moves)."""
    return json.dumps({
        "scan_a": diff.scan_a, "scan_b": diff.scan_b,
        "transactions": [asdict(t) for t in diff.transactions],
        "partitions": [{"topic": p.topic, "partition": p.partition, "a": p.a, "b": p.b,
                        "lso_moved": p.moved("last_stable_offset"), "high_watermark_moved": p.moved("high_watermark"),
                        "stuck": p.stuck} for p in diff.partitions],
    })
