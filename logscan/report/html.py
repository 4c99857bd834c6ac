"""The report page: plain dicts in, one HTML string out."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable

OUTCOME_COLORS = {"COMMIT": "#2e7d32", "ABORT": "#8d99ae", "OPEN": "#d62828"}
REASON_COLORS = {True: "#d62828", False: "#2a9d8f", None: "#e9c46a"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f4f6f8;color:#1d2433}
header{background:#1d2433;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px}
header .meta{color:#b8c1d1;font-size:13px}
main{padding:18px 28px;max-width:1500px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);margin:0 0 18px;padding:14px 18px}
h2{font-size:17px;margin:0 0 10px}
.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:0 0 18px}
.kpi{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:10px 16px;min-width:130px}
.kpi b{display:block;font-size:24px}
.kpi.alert b{color:#d62828}
.kpi span{color:#5c677d;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e6e9ef;vertical-align:top}
th{color:#5c677d;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;color:#fff;font-size:12px;white-space:nowrap}
.evidence{color:#5c677d;font-size:12px;max-width:640px}
.plan{border-left:4px solid #d62828;padding:6px 12px;margin:10px 0;background:#fbfbfc}
.plan pre{background:#1d2433;color:#e9f5db;padding:8px 10px;border-radius:6px;overflow-x:auto;margin:6px 0}
.plan button{float:right;border:0;background:#3a86ff;color:#fff;border-radius:5px;padding:3px 10px;cursor:pointer}
.plan ul{margin:4px 0 4px 18px;padding:0;color:#3c4556;font-size:12.5px}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.note{color:#5c677d;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#3c4556}
"""

COPY_JS = """
function copyCmd(id){const t=document.getElementById(id).innerText;
navigator.clipboard&&navigator.clipboard.writeText(t);}
"""


def _iso(ms: Any) -> str:
    if ms is None or ms < 0:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _e(value: Any) -> str:
    return "" if value is None else escape(str(value))


def _name(row: dict) -> str:
    return f"{row['topic']}-{row['partition']}"


def _kpis(data: dict) -> str:
    head, counts = data["head"], data["counts"]
    hanging = sum(1 for c in data["candidates"] if c.get("hanging") is True)
    cards = [("brokers", head["brokers"], False), ("partitions", head["partitions"], False),
             ("replicas", head["replicas"], False), ("open transactions", head["open_transactions"] or 0, False),
             ("replicas with LSO lag", head["lagging_replicas"] or 0, bool(head["lagging_replicas"])),
             ("hanging (replica rows)", hanging, hanging > 0),
             ("corruptions", counts.get("corruptions", 0), counts.get("corruptions", 0) > 0)]
    return '<div class="kpis">' + "".join(
        f'<div class="kpi{" alert" if alert else ""}"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
        for k, v, alert in cards) + "</div>"


def _verdict(value: Any) -> str:
    return {True: "hanging", False: "not hanging", None: "undetermined"}[value]


def _candidates(data: dict) -> str:
    rows = data["candidates"]
    if not rows:
        return "<section><h2>Hanging transactions</h2><p>No open transaction is older than the maximum " \
               "transaction timeout at the scan's as-of time.</p></section>"
    # One line per transaction and verdict; the replicas that agree on it share the line.
    grouped: dict[tuple, dict] = {}
    for c in rows:
        key = (c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"],
               c.get("reason"), c.get("hanging"))
        held = grouped.setdefault(key, {**c, "brokers": []})
        held["brokers"].append(c["broker"])
    body = []
    for c in grouped.values():
        color = REASON_COLORS.get(c.get("hanging"), "#e9c46a")
        body.append(
            f"<tr><td>{_e(_name(c))}</td><td class=num>{_e(', '.join(map(str, sorted(c['brokers']))))}</td>"
            f"<td class=num>{_e(c['producer_id'])}</td><td class=num>{_e(c['producer_epoch'])}</td>"
            f"<td class=num>{_e(c['start_offset'])}</td><td class=num>{_e(round((c.get('age_ms') or 0) / 60000))}</td>"
            f'<td><span class="badge" style="background:{color}">{_e(_verdict(c.get("hanging")))}</span></td>'
            f"<td><code>{_e(c.get('reason'))}</code><div class=evidence>{_e(c.get('evidence'))}</div></td></tr>")
    table = ("<table><tr><th>partition</th><th>brokers</th><th>producer id</th><th>epoch</th>"
             "<th>start offset</th><th>age (min)</th><th>verdict</th><th>reason and evidence</th></tr>"
             + "".join(body) + "</table>")
    return f"<section id=candidates><h2>Hanging transactions</h2>{table}{_plans(data)}</section>"


def _list(items: Any) -> str:
    if not items:
        return ""
    if isinstance(items, str):
        items = [items]
    return "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _plans(data: dict) -> str:
    plans = data["plans"]
    if not plans:
        if any(c.get("hanging") is True for c in data["candidates"]):
            return ("<p class=note>This scan has no abort_plans table: "
                    "<code>logscan plan COPY --bootstrap-server HOST:PORT</code> prints the commands.</p>")
        return ""
    out = ["<h2 style='margin-top:16px'>Abort plans</h2>"]
    for i, p in enumerate(plans):
        cmd_id = f"cmd{i}"
        risk = p.get("risk")
        out.append(
            f"<div class=plan><button onclick=\"copyCmd('{cmd_id}')\">copy</button>"
            f"<b>{_e(_name(p))}</b> producer {_e(p.get('producer_id'))} epoch {_e(p.get('producer_epoch'))}, "
            f"open since offset {_e(p.get('start_offset'))}"
            + (f" &middot; risk <b>{_e(risk)}</b>" if risk else "")
            + f"<pre id={cmd_id}>{_e(p.get('command'))}</pre>"
            + (f"<div class=note>older brokers: <code>{_e(p.get('command_explicit'))}</code></div>"
               if p.get("command_explicit") else "")
            + _list(p.get("preconditions")) + _list(p.get("effects")) + "</div>")
    return "".join(out)


def _lag_chart(data: dict) -> str:
    parts = [p for p in data["partitions"] if p["lso_lag"] > 0]
    if not parts:
        return ("<section><h2>LSO lag per partition</h2><p>Every partition's last stable offset equals its "
                "high watermark: read_committed consumers can read everything.</p></section>")
    top = max(1, max(p["lso_lag"] for p in parts))
    label_w, bar_w, row_h = 190, 760, 22
    height = row_h * len(parts) + 10
    rows = []
    for i, p in enumerate(parts):
        y = 5 + i * row_h
        w = max(0.0, bar_w * p["lso_lag"] / top)
        color = "#d62828" if p["open_transactions"] else "#3a86ff"
        rows.append(
            f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end">{_e(_name(p))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" rx="3" fill="{color}">'
            f"<title>{_e(_name(p))} broker {p['broker']}: HW {p['high_watermark']}, LSO "
            f"{p['last_stable_offset']}, lag {p['lso_lag']}</title></rect>"
            f'<text x="{label_w + w + 6:.1f}" y="{y + 14}">{p["lso_lag"]} (HW {p["high_watermark"]}, '
            f'LSO {p["last_stable_offset"]}, open {p["open_transactions"]})</text>')
    svg = (f'<svg id=lag width="{label_w + bar_w + 260}" height="{height}" role="img" '
           f'aria-label="LSO lag per partition">{"".join(rows)}</svg>')
    note = (f"<p class=note>The {len(parts)} partitions with the largest LSO lag (high watermark minus last stable "
            f"offset, from the replica furthest ahead); red: an open transaction holds the LSO back.</p>")
    return f"<section><h2>LSO lag per partition</h2>{note}{svg}</section>"


def _ticks(t0: int, t1: int, n: int = 6) -> Iterable[int]:
    step = max(1, (t1 - t0) // n)
    return range(t0, t1 + 1, step)


def _timelines(data: dict) -> str:
    spans, parts = data["spans"], data["partitions"]
    as_of = data["head"]["as_of"]
    if not spans:
        return "<section><h2>Transaction timelines</h2><p>No transactions in the partitions shown.</p></section>"
    starts = [s["start_timestamp"] for s in spans if s["start_timestamp"] is not None and s["start_timestamp"] >= 0]
    t0 = min(starts) if starts else as_of - 1
    t1 = max([as_of] + [s["end_timestamp"] or 0 for s in spans])
    span_ms = max(1, t1 - t0)
    label_w, plot_w, row_h = 190, 900, 24
    by_part: dict[tuple, list[dict]] = {}
    for s in spans:
        by_part.setdefault((s["topic"], s["partition"]), []).append(s)
    order = [(p["topic"], p["partition"]) for p in parts if (p["topic"], p["partition"]) in by_part]
    height = 30 + row_h * len(order)
    out = []
    for t in _ticks(t0, t1):
        x = label_w + plot_w * (t - t0) / span_ms
        out.append(f'<line x1="{x:.1f}" y1="18" x2="{x:.1f}" y2="{height}" stroke="#e6e9ef"/>'
                   f'<text x="{x:.1f}" y="12" text-anchor="middle">'
                   f'{datetime.fromtimestamp(t / 1000, timezone.utc).strftime("%m-%d %H:%M")}</text>')
    x_now = label_w + plot_w * (as_of - t0) / span_ms
    out.append(f'<line x1="{x_now:.1f}" y1="18" x2="{x_now:.1f}" y2="{height}" stroke="#1d2433" '
               f'stroke-dasharray="4 3"><title>as of {_iso(as_of)}</title></line>')
    for i, key in enumerate(order):
        y = 22 + i * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(key[0])}-{key[1]}</text>'
                   f'<line x1="{label_w}" y1="{y + row_h / 2}" x2="{label_w + plot_w}" y2="{y + row_h / 2}" '
                   f'stroke="#f0f2f5"/>')
        for s in sorted(by_part[key], key=lambda s: s["outcome"] == "OPEN"):
            start = s["start_timestamp"] if s["start_timestamp"] is not None and s["start_timestamp"] >= 0 else t0
            end = s["end_timestamp"] if s["outcome"] != "OPEN" and s["end_timestamp"] is not None else as_of
            x = label_w + plot_w * (start - t0) / span_ms
            w = max(3.0, plot_w * (end - start) / span_ms)
            is_open = s["outcome"] == "OPEN"
            color = OUTCOME_COLORS.get(s["outcome"], "#6c757d")
            title = (f"{_e(key[0])}-{key[1]} producer {s['producer_id']} epoch {s['producer_epoch']}: "
                     f"{s['outcome']} offsets {s['first_offset']}..{_e(s['end_marker_offset'])} from "
                     f"{_iso(s['start_timestamp'])} to {_iso(s['end_timestamp'])}")
            out.append(f'<rect class="span {s["outcome"].lower()}" x="{x:.1f}" y="{y + (3 if is_open else 6)}" '
                       f'width="{w:.1f}" height="{row_h - (6 if is_open else 12)}" rx="2" fill="{color}"'
                       + (' stroke="#6a040f" stroke-width="1.5"' if is_open else ' fill-opacity="0.85"')
                       + f"><title>{title}</title></rect>")
    legend = ('<div class=legend>' + "".join(f'<span><i style="background:{c}"></i>{o}</span>'
                                            for o, c in OUTCOME_COLORS.items())
              + f"<span>dashed line: as of {_e(_iso(as_of))}</span></div>")
    svg = f'<svg id=timeline width="{label_w + plot_w + 60}" height="{height}" role="img">{"".join(out)}</svg>'
    return f"<section><h2>Transaction timelines</h2>{legend}{svg}</section>"


def _corruptions(data: dict) -> str:
    rows = data["corruptions"]
    if not rows:
        return "<section><h2>Corruptions</h2><p>None: every file read cleanly.</p></section>"
    cols = [c for c in ("broker", "file", "position", "length", "reason", "detail", "message") if c in rows[0]]
    body = "".join("<tr>" + "".join(f"<td>{_e(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    return (f"<section><h2>Corruptions</h2><table><tr>{''.join(f'<th>{c}</th>' for c in cols)}</tr>"
            f"{body}</table></section>")


def render(data: dict) -> str:
    head = data["head"]
    title = f"logscan report: scan {data['scan_id']}"
    meta = f"as of {_iso(head['as_of'])} &middot; tables {_e(data['tables'])}"
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{_e(title)}</title><style>{CSS}</style><script>{COPY_JS}</script></head><body>"
            f"<header><h1>{_e(title)}</h1><div class=meta>{meta}</div></header><main>"
            + _kpis(data) + _candidates(data) + _lag_chart(data) + _timelines(data) + _corruptions(data)
            + "</main></body></html>\n")
