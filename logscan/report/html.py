"""The report page: plain dicts in, one HTML string out (inline CSS, SVG and a few lines of
script for the copy buttons; nothing is fetched)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable, Optional

from logscan.logdir.naming import LEGAL_TOPIC_TEXT, is_legal_topic
from logscan.scan.summary import FOLLOWERS_TEXT, GROUP_KINDS, group_verdict

RED, GREEN, GREY, BLUE, AMBER, TEAL, INK = "#d62828", "#2e7d32", "#8d99ae", "#3a86ff", "#e9a23b", "#2a9d8f", "#1d2433"
OUTCOME_COLORS = {"COMMIT": GREEN, "ABORT": GREY, "OPEN": RED}
VERDICT = {True: ("hanging", RED), False: ("not hanging", TEAL), None: ("cannot tell", AMBER)}
RISK_COLORS = {"low": TEAL, "medium": AMBER, "high": RED}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f4f6f8;color:#1d2433}
header{background:#1d2433;color:#fff;padding:18px 28px 16px}
header h1{margin:0 0 8px;font-size:22px;font-weight:650}
header h1 small{font-weight:400;color:#b8c1d1;font-size:15px;margin-left:8px}
header dl{display:flex;flex-wrap:wrap;gap:4px 26px;margin:0;font-size:13px}
header dt{color:#8d99ae;display:inline}
header dd{display:inline;margin:0 0 0 6px;color:#e6e9ef;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;
 overflow-wrap:anywhere}
main{padding:18px 28px;max-width:1500px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);margin:0 0 18px;padding:14px 18px}
h2{font-size:17px;margin:0 0 10px}
h3{font-size:14px;margin:16px 0 6px}
.verdict{border-radius:8px;padding:12px 18px;margin:0 0 18px;font-size:15px;color:#fff}
.verdict b{font-size:17px}
.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:0 0 18px}
.kpi{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:10px 16px;min-width:128px}
.kpi b{display:block;font-size:24px}
.kpi.alert b{color:#d62828}
.kpi span{color:#5c677d;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e6e9ef;vertical-align:top}
td.text{overflow-wrap:anywhere}
tr.ev td{border-bottom:1px solid #e6e9ef;padding-top:0;white-space:normal}
tr.txn td{border-bottom:0}
.wide{overflow-x:auto}
th{color:#5c677d;font-weight:600}
th,td:first-child,td.num{white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;color:#fff;font-size:12px;white-space:nowrap}
.evidence{color:#5c677d;font-size:12px;overflow-wrap:anywhere}
.reason{display:block;margin-top:3px;font-size:12px}
.plan{border-left:4px solid #d62828;padding:8px 14px;margin:12px 0;background:#fbfbfc;border-radius:0 6px 6px 0}
.plan .cmd{position:relative}
.plan pre,.all pre{background:#1d2433;color:#e9f5db;padding:9px 84px 9px 12px;border-radius:6px;white-space:pre-wrap;
 word-break:normal;overflow-wrap:anywhere;margin:6px 0;font-size:12.5px}
.plan button,.all button{position:absolute;right:8px;top:7px;border:0;background:#3a86ff;color:#fff;border-radius:5px;
 padding:3px 12px;cursor:pointer;font-size:12px}
.all{position:relative;margin:4px 0 10px}
.all button{position:static;margin:0 0 4px}
.all summary{cursor:pointer;color:#5c677d;font-size:12px}
.all pre{padding-right:12px}
pre .w{white-space:nowrap}
.subset{background:#fff8e6;border-left:3px solid #e9a23b;padding:6px 10px;font-size:12.5px;color:#3c4556}
.subset code{overflow-wrap:anywhere}
svg{max-width:100%;height:auto}
.plan .older pre{background:#2b3445;color:#cfd6e3}
.plan ul{margin:2px 0 6px 18px;padding:0;color:#3c4556;font-size:12.5px}
.plan h4{margin:8px 0 2px;font-size:12px;color:#5c677d;text-transform:uppercase;letter-spacing:.04em}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.note{color:#5c677d;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#3c4556}
svg text.in{fill:#fff;font-weight:600}
footer{color:#8d99ae;font-size:12px;padding:0 28px 24px}
@media (max-width:900px){header,main{padding-left:12px;padding-right:12px}section{padding:12px}
 .kpi{min-width:96px}.kpi b{font-size:20px}footer{padding:0 12px 18px}}
"""

COPY_JS = """
function copyCmd(id,btn){const t=document.getElementById(id).textContent;
btn.dataset.label=btn.dataset.label||btn.textContent;
const done=()=>{btn.textContent='copied';setTimeout(()=>{btn.textContent=btn.dataset.label},1500)};
const fallback=()=>{const a=document.createElement('textarea');a.value=t;document.body.appendChild(a);a.select();
try{document.execCommand('copy');done()}catch(e){}a.remove()};
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(done,fallback)}else{fallback()}}
"""


def _iso(ms: Any) -> str:
    if ms is None or ms < 0:
        return "?"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _e(value: Any) -> str:
    return "" if value is None else escape(str(value))


def _name(row: dict) -> str:
    return f"{row['topic']}-{row['partition']}"


def _minutes(ms: Any) -> str:
    if ms is None:
        return "?"
    minutes = ms / 60000
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def _subset(data: dict, what: str, shown: int, total: Optional[int], query: str) -> str:
    """Says that ``shown`` of ``total`` are drawn (None: the first ``shown``, the page's limit;
    more may exist), and the `logscan sql` command listing all of them."""
    if total is not None and total <= shown:
        return ""
    command = data.get("queries", {}).get(query)
    drawn = f"{what} {shown} of {total}" if total is not None else f"the first {shown} {what}"
    return (f"<p class=subset>Drawn: {_e(drawn)}."
            + (f" All of them: <code>{_e(command)}</code>" if command else "") + "</p>")


def _transactions(candidates: list[dict]) -> dict[tuple, dict]:
    """One entry per transaction and verdict; the replicas that agree on it share the entry."""
    grouped: dict[tuple, dict] = {}
    for c in candidates:
        key = (c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"],
               c.get("reason"), c.get("hanging"))
        grouped.setdefault(key, {**c, "brokers": []})["brokers"].append(c["broker"])
    return grouped


def _verdict(data: dict) -> str:
    txns = _transactions(data["candidates"]).values()
    hanging = [t for t in txns if t.get("hanging") is True]
    unknown = [t for t in txns if t.get("hanging") is None]
    lagging = {(p["topic"], p["partition"]) for p in data["partitions"] if p["lso_lag"] > 0}
    if hanging:
        parts = {(t["topic"], t["partition"]) for t in hanging}
        text = (f"<b>{len(hanging)} hanging transaction{'s' if len(hanging) != 1 else ''}</b> "
                f"hold{'s' if len(hanging) == 1 else ''} back the last stable offset of {len(parts)} "
                f"partition{'s' if len(parts) != 1 else ''}: read_committed consumers there are stuck. "
                '<a href="#plans" style="color:#fff">The abort plans are below.</a>')
        color = RED
    elif unknown:
        text = (f"<b>{len(unknown)} open transaction{'s' if len(unknown) != 1 else ''} cannot be judged</b> "
                "from this copy (see the reasons below).")
        color = AMBER
    else:
        text = "<b>No hanging transaction.</b> " + (
            f"{len(lagging)} partitions have an LSO below the high watermark (transactions in flight)."
            if lagging else "Every last stable offset is at its high watermark.")
        color = GREEN
    return f'<div class=verdict style="background:{color}">{text}</div>'


def _kpis(data: dict) -> str:
    head, counts = data["head"], data["counts"]
    txns = _transactions(data["candidates"]).values()
    hanging = sum(1 for t in txns if t.get("hanging") is True)
    corruptions = counts.get("corruptions", 0)
    cards = [("brokers", head["brokers"], False), ("partitions", head["partitions"], False),
             ("replicas", head["replicas"], False), ("open transactions", head["open_transactions"] or 0, False),
             ("replicas with LSO lag", head["lagging_replicas"] or 0, bool(head["lagging_replicas"])),
             ("hanging transactions", hanging, hanging > 0), ("corruptions", corruptions, corruptions > 0)]
    if counts.get("followers"):
        cards.insert(5, ("lagging followers", counts["followers"], False))
    return '<div class="kpis">' + "".join(
        f'<div class="kpi{" alert" if alert else ""}"><b>{_e(v)}</b><span>{_e(k)}</span></div>'
        for k, v, alert in cards) + "</div>"


def _candidates(data: dict) -> str:
    if not data["candidates"]:
        return ("<section id=candidates><h2>Hanging transactions</h2><p>No open transaction is older than the "
                "maximum transaction timeout at the scan's as-of time.</p></section>")
    body = []
    for c in _transactions(data["candidates"]).values():
        label, color = VERDICT[c.get("hanging")]
        body.append(   # the evidence on a row of its own, the page's width: readable at 800 px
            f"<tr class=txn><td>{_e(_name(c))}</td><td class=num>{_e(', '.join(map(str, sorted(c['brokers']))))}</td>"
            f"<td class=num>{_e(c['producer_id'])}</td><td class=num>{_e(c['producer_epoch'])}</td>"
            f"<td class=num>{_e(c['start_offset'])}</td><td class=num>{_e(_minutes(c.get('age_ms')))}</td>"
            f'<td><span class="badge" style="background:{color}">{_e(label)}</span>'
            f"<code class=reason>{_e(c.get('reason'))}</code></td></tr>"
            f"<tr class=ev><td colspan=7><div class=evidence>{_e(c.get('evidence'))}</div></td></tr>")
    table = ("<div class=wide><table><tr><th>partition</th><th>brokers</th><th>producer id</th><th>epoch</th>"
             "<th>start offset</th><th>idle for</th><th>verdict and reason</th></tr>"
             + "".join(body) + "</table></div>")
    note = _subset(data, "the replicas' rows of", len(data["candidates"]),
                   data["counts"].get("hanging_candidates", len(data["candidates"])), "candidates")
    return f"<section id=candidates><h2>Hanging transactions</h2>{note}{table}</section>"


def _followers(data: dict) -> str:
    """The lagging followers (summary.figures' rows): a replica behind its partition's leader."""
    rows = data.get("followers") or []
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{_e(_name(f))}</td><td class=num>{_e(f['broker'])}</td>"
        f"<td class=num>{_e(f['leader'])}{'' if f['leader_in_copy'] else ' (furthest ahead)'}</td>"
        f"<td class=num>{_e(f['log_end_offset'])} / {_e(f['leader_log_end_offset'])}</td>"
        f"<td class=num>{_e(f['last_stable_offset'])} / {_e(f['leader_last_stable_offset'])}</td>"
        f"<td class=num>{_e(f['open_transactions'])} / {_e(f['leader_open_transactions'])}</td>"
        f"<td>{'incomplete copy' if f['incomplete'] else ''}</td></tr>" for f in rows)
    total = data["counts"].get("followers", len(rows))
    return ("<section id=followers><h2>Lagging followers</h2>"
            f"<p class=note>{_e(FOLLOWERS_TEXT[0].upper() + FOLLOWERS_TEXT[1:])}.</p>"
            + _subset(data, "lagging followers", len(rows), total, "followers")
            + "<div class=wide><table><tr><th>partition</th><th>follower</th><th>leader</th>"
              "<th>log end / leader's</th><th>LSO / leader's</th><th>open / leader's</th><th></th></tr>"
            + body + "</table></div></section>")


def _blast(data: dict) -> str:
    """The consumer groups open transactions hold back and the bytes LSOs keep on disk
    (summary.figures' rows of affected_groups and partition_impact)."""
    groups, held = data.get("groups") or [], data.get("held") or []
    if not groups and not held:
        return ""
    counts = data["counts"]
    out = ["<section id=blast><h2>What the open transactions hold back</h2>"]
    if groups:
        body = "".join(
            f"<tr><td>{_e(g['group_id'])}</td><td>{_e(_name(g))}</td><td>{_e(GROUP_KINDS.get(g['kind'], g['kind']))}"
            f"</td><td>{_e(g['held_topic'])}-{_e(g['held_partition'])}, producer {_e(g['producer_id'])}</td>"
            f'<td><span class="badge" style="background:{VERDICT[g.get("hanging")][1]}">'
            f"{_e(group_verdict(g, {k: v[0] for k, v in VERDICT.items()}))}</span>"
            f"<code class=reason>{_e(g.get('reason'))}</code></td>"
            f"<td class=num>{_e(g.get('lag_messages'))}</td><td class=num>{_e(_minutes(g.get('lag_ms')))}</td></tr>"
            for g in groups)
        out.append("<h3>Consumer groups</h3><p class=note>A pending transactional offset commit answers "
                   "UNSTABLE_OFFSET_COMMIT to read_committed consumers (the group cannot start); a committed offset "
                   "at the LSO reads nothing more until it moves.</p>"
                   + _subset(data, "groups' rows", len(groups), counts.get("groups", len(groups)), "groups")
                   + "<div class=wide><table><tr><th>group</th><th>partition</th><th>why</th><th>held by</th>"
                     "<th>verdict and reason</th><th>lag (messages)</th><th>for</th></tr>" + body + "</table></div>")
    if held:
        body = "".join(
            f"<tr><td>{_e(_name(p))}</td><td class=num>{_e(p['cleaner_held_bytes'] or '')}</td>"
            f"<td class=num>{_e(p['cleaner_held_segments'] or '')}</td><td class=num>{_e(p['tiering_held_bytes'] or '')}"
            f"</td><td class=num>{_e(p['tiering_held_segments'] or '')}</td><td class=num>{_e(p['replicas'])}</td>"
            f"<td class=num>{_e(p['held_bytes'])}</td></tr>" for p in held)
        out.append(f"<h3>Bytes held back: {_e(counts.get('held_bytes', 0))} B</h3><p class=note>Closed segments "
                   "from the one holding the LSO on: the log cleaner may not clean them on a compacted topic, tiered "
                   "storage may not upload them, until the LSO moves (per replica; the last column over all "
                   "replicas).</p>"
                   + _subset(data, "partitions", len(held), counts.get("held_partitions", len(held)), "held")
                   + "<div class=wide><table><tr><th>partition</th><th>cleaner held (B)</th><th>segments</th>"
                     "<th>tiering held (B)</th><th>segments</th><th>replicas</th><th>all replicas (B)</th></tr>"
                   + body + "</table></div>")
    return "".join(out) + "</section>"


def _list(items: Any) -> str:
    if not items:
        return ""
    if isinstance(items, str):
        items = [items]
    return "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _words(text: Any) -> str:
    """``text`` escaped, each run of non-blanks in a span that never wraps: a command breaks
    across lines at its spaces only (a browser breaks after any '-', inside --partition), and
    its textContent, what the copy buttons copy, is the text itself."""
    return "".join(f"<span class=w>{escape(part)}</span>" if not part.isspace() else escape(part)
                   for part in re.split(r"(\s+)", "" if text is None else str(text)) if part)


def _command(cmd_id: str, text: Any) -> str:
    """The command as text in a <pre> (escaped), and a button copying that text: what is
    copied is the shell-quoted command, never markup."""
    return (f"<div class=cmd><pre id={cmd_id}>{_words(text)}</pre>"
            f"<button type=button onclick=\"copyCmd('{cmd_id}',this)\">copy</button></div>")


def _plans(data: dict) -> str:
    plans = data["plans"]
    if plans is None and any(c.get("hanging") is True for c in data["candidates"]):
        return ("<section id=plans><h2>Abort plans</h2><p>These tables have no abort_plans table (an older scan): "
                "run the scan again with <code>logscan scan COPY --output DIR --bootstrap-server HOST:PORT</code>, "
                "or print the plans with <code>logscan plan COPY --bootstrap-server HOST:PORT</code>.</p></section>")
    if not plans:
        return ""
    out = ["<section id=plans><h2>Abort plans</h2><p class=note>logscan never connects to the cluster: run "
           "these yourself, after the checks, against a broker of the cluster (--bootstrap-server).</p>",
           _copy_all(plans)]
    if len(plans) >= data.get("limits", {}).get("rows", len(plans) + 1):
        out.append(_subset(data, "abort plans", len(plans), None, "plans"))
    for i, p in enumerate(plans):
        risk = p.get("risk")
        out.append(
            f"<div class=plan style='border-left-color:{RISK_COLORS.get(risk, RED)}'>"
            f"<b>{_e(_name(p))}</b> &middot; producer {_e(p.get('producer_id'))} epoch {_e(p.get('producer_epoch'))}"
            f" &middot; open since offset {_e(p.get('start_offset'))} &middot; <code>{_e(p.get('reason'))}</code>"
            + (f' &middot; risk <span class="badge" style="background:{RISK_COLORS.get(risk, RED)}">{_e(risk)}</span>'
               f" <span class=note>{_e(p.get('risk_detail'))}</span>" if risk else "")
            + _plan_body(f"cmd{i}", p) + "</div>")
    return "".join(out) + "</section>"


def _copy_all(plans: list[dict]) -> str:
    """One button copying every plan's command (each shell-quoted in the table, one per line),
    and the text it copies; plans offering no command (a topic Kafka could not have named)
    have none here either."""
    commands = [str(p["command"]) for p in plans if p.get("command") and is_legal_topic(str(p.get("topic")))]
    if not commands:
        return ""
    return (f"<div class=all><button type=button class=copyall onclick=\"copyCmd('cmdall',this)\">copy all "
            f"plans</button><details><summary>the {len(commands)} command{'s' if len(commands) != 1 else ''} it "
            f"copies, one per line</summary><pre id=cmdall>{_words(chr(10).join(commands))}</pre></details></div>")


def _plan_body(cmd_id: str, p: dict) -> str:
    # Tables written by an older logscan may hold a plan for a folder Kafka could not have
    # named (its topic unquoted in the commands): show no command to copy for it.
    if not is_legal_topic(str(p.get("topic"))):
        return (f"<p class=note>No command offered: the topic is not a name Kafka allows "
                f"({_e(LEGAL_TOPIC_TEXT)}), so Kafka did not write this folder.</p>")
    return (_command(cmd_id, p.get("command"))
            + (f"<div class=older><span class=note>brokers without --start-offset lookup (explicit form):</span>"
               + _command(f"{cmd_id}x", p.get("command_explicit")) + "</div>" if p.get("command_explicit") else "")
            + (f"<h4>check first</h4>{_list(p.get('preconditions'))}" if p.get("preconditions") else "")
            + (f"<h4>what it does</h4>{_list(p.get('effects'))}" if p.get("effects") else ""))


def _lag_chart(data: dict) -> str:
    parts = [p for p in data["partitions"] if p["lso_lag"] > 0]
    if not parts:
        return ("<section id=lag-section><h2>LSO lag per partition</h2><p>Every partition's last stable offset "
                "equals its high watermark: read_committed consumers can read everything.</p></section>")
    top = max(p["lso_lag"] for p in parts)
    label_w, bar_w, row_h = 150, 480, 24   # drawn at this size, scaled down to a narrower page
    height = row_h * len(parts) + 10
    rows = []
    for i, p in enumerate(parts):
        y = 5 + i * row_h
        w = max(2.0, bar_w * p["lso_lag"] / top)
        color = RED if p["open_transactions"] else BLUE
        rows.append(
            f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(_name(p))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" rx="3" fill="{color}">'
            f"<title>{_e(_name(p))} broker {p['broker']}: HW {p['high_watermark']}, LSO "
            f"{p['last_stable_offset']}, lag {p['lso_lag']}</title></rect>"
            f'<text x="{label_w + w + 6:.1f}" y="{y + 15}"><tspan font-weight="600">{p["lso_lag"]}</tspan> '
            f'(HW {p["high_watermark"]}, LSO {p["last_stable_offset"]}, {p["open_transactions"]} open)</text>')
    svg = (f'<svg id=lag width="{label_w + bar_w + 200}" height="{height}" '
           f'viewBox="0 0 {label_w + bar_w + 200} {height}" role="img" '
           f'aria-label="LSO lag per partition">{"".join(rows)}</svg>')
    legend = (f'<div class=legend><span><i style="background:{RED}"></i>an open transaction holds the LSO back</span>'
              f'<span><i style="background:{BLUE}"></i>lag without an open transaction at the log end</span></div>')
    note = ("<p class=note>Messages a read_committed consumer cannot read yet: high watermark minus last stable "
            "offset, from the partition's leader (else the replica furthest ahead).</p>")
    total = data["counts"].get("partitions_with_lag", len(parts))
    subset = _subset(data, "the partitions with the largest LSO lag,", len(parts), total, "partitions")
    return f"<section id=lag-section><h2>LSO lag per partition</h2>{note}{subset}{legend}{svg}</section>"


def _ticks(t0: int, t1: int, n: int = 6) -> Iterable[int]:
    step = max(1, (t1 - t0) // n)
    return range(t0, t1 + 1, step)


def _tick_label(t: int, span_ms: int) -> str:
    fmt = "%H:%M:%S" if span_ms < 600_000 else "%m-%d %H:%M"
    return datetime.fromtimestamp(t / 1000, timezone.utc).strftime(fmt)


def _timelines(data: dict) -> str:
    spans, parts = data["spans"], data["partitions"]
    as_of = data["head"]["as_of"]
    if not spans:
        return ("<section id=timeline-section><h2>Transaction timelines</h2><p>No transactions in the partitions "
                "shown.</p></section>")
    starts = [s["start_timestamp"] for s in spans if s["start_timestamp"] is not None and s["start_timestamp"] >= 0]
    t0 = min(starts) if starts else as_of - 1
    t1 = max([as_of] + [s["end_timestamp"] or 0 for s in spans])
    span_ms = max(1, t1 - t0)
    label_w, plot_w, row_h = 150, 620, 26   # drawn at this size, scaled down to a narrower page
    by_part: dict[tuple, list[dict]] = {}
    for s in spans:
        by_part.setdefault((s["topic"], s["partition"]), []).append(s)
    order = [(p["topic"], p["partition"]) for p in parts if (p["topic"], p["partition"]) in by_part]
    height = 30 + row_h * len(order)

    def x_of(t: int) -> float:
        return label_w + plot_w * (t - t0) / span_ms

    out = []
    for t in _ticks(t0, t1):
        out.append(f'<line x1="{x_of(t):.1f}" y1="18" x2="{x_of(t):.1f}" y2="{height}" stroke="#e6e9ef"/>'
                   f'<text x="{x_of(t):.1f}" y="12" text-anchor="middle">{_tick_label(t, span_ms)}</text>')
    for i, key in enumerate(order):
        y = 22 + i * row_h
        if i % 2 == 0:
            out.append(f'<rect x="0" y="{y}" width="{label_w + plot_w}" height="{row_h}" fill="#f7f8fa"/>')
        out.append(f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{_e(key[0])}-{key[1]}</text>')
        # Finished spans first, open ones on top of them.
        for s in sorted(by_part[key], key=lambda s: s["outcome"] == "OPEN"):
            is_open = s["outcome"] == "OPEN"
            start = s["start_timestamp"] if s["start_timestamp"] is not None and s["start_timestamp"] >= 0 else t0
            end = as_of if is_open or s["end_timestamp"] is None else s["end_timestamp"]
            x, w = x_of(start), max(3.0, plot_w * (end - start) / span_ms)
            title = (f"{_e(key[0])}-{key[1]} producer {s['producer_id']} epoch {s['producer_epoch']}: "
                     f"{s['outcome']}, offsets {s['first_offset']}..{_e(s['end_marker_offset'] or '')} from "
                     f"{_iso(s['start_timestamp'])} to {_iso(s['end_timestamp']) if not is_open else 'now (open)'}")
            out.append(f'<rect class="span {s["outcome"].lower()}" x="{x:.1f}" y="{y + (3 if is_open else 7)}" '
                       f'width="{w:.1f}" height="{row_h - (6 if is_open else 14)}" rx="2" '
                       f'fill="{OUTCOME_COLORS.get(s["outcome"], GREY)}"'
                       + (' stroke="#6a040f" stroke-width="1.5"' if is_open else ' fill-opacity="0.85"')
                       + f"><title>{title}</title></rect>")
            if is_open and w > 160:
                out.append(f'<text class=in x="{x + 8:.1f}" y="{y + 17}">producer {s["producer_id"]} &#183; open '
                           f'since offset {s["first_offset"]} &#183; {_minutes(as_of - start)}</text>')
    out.append(f'<line x1="{x_of(as_of):.1f}" y1="18" x2="{x_of(as_of):.1f}" y2="{height}" stroke="{INK}" '
               f'stroke-width="2" stroke-dasharray="6 3"><title>as of {_iso(as_of)}</title></line>')
    legend = ('<div class=legend>' + "".join(f'<span><i style="background:{c}"></i>{o.lower()}</span>'
                                            for o, c in OUTCOME_COLORS.items())
              + f"<span>dashed line: as of {_e(_iso(as_of))}</span></div>")
    svg = (f'<svg id=timeline width="{label_w + plot_w + 40}" height="{height}" '
           f'viewBox="0 0 {label_w + plot_w + 40} {height}" role="img" '
           f'aria-label="transaction spans per partition">{"".join(out)}</svg>')
    note = ("<p class=note>Each bar is one transaction on the partition (first batch to its COMMIT/ABORT marker, "
            "from the partition's leader, else the replica furthest ahead); an open one runs to the as-of "
            "time.</p>")
    limits = data.get("limits", {})
    subset = _subset(data, "the transactions of the partitions with the largest LSO lag:", len(parts),
                     data["head"]["partitions"], "spans")
    if not subset and len(spans) >= limits.get("spans", len(spans) + 1):
        subset = _subset(data, "transaction spans", len(spans), None, "spans")
    return f"<section id=timeline-section><h2>Transaction timelines</h2>{note}{subset}{legend}{svg}</section>"


def _corruptions(data: dict) -> str:
    rows = data["corruptions"]
    if not rows:
        return "<section id=corruptions><h2>Corruptions</h2><p>None: every file read cleanly.</p></section>"
    cols = [c for c in ("broker", "file", "position", "length", "reason", "message") if c in rows[0]]
    body = "".join("<tr>" + "".join(f"<td{' class=num' if c in ('broker', 'position', 'length') else ' class=text'}>"
                                    f"{_e(r.get(c))}</td>" for c in cols) + "</tr>" for r in rows)
    shown = len(rows)
    total = data["counts"].get("corruptions", shown)
    more = f"<p class=note>{total - shown} more: logscan sql over the corruptions table.</p>" if total > shown else ""
    return (f"<section id=corruptions><h2>Corruptions</h2><div class=wide><table><tr>"
            f"{''.join(f'<th>{c}</th>' for c in cols)}</tr>{body}</table></div>{more}</section>")


def render(data: dict) -> str:
    head = data["head"]
    meta = [("scan id", data["scan_id"]), ("as of", _iso(head["as_of"])), ("input", data.get("input") or "?"),
            ("tables", data["tables"])]
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<title>logscan report: {_e(data['scan_id'])}</title><style>{CSS}</style>"
            f"<script>{COPY_JS}</script></head><body>"
            "<header><h1>logscan report<small>Kafka transactions in a copied cluster</small></h1><dl>"
            + "".join(f"<div><dt>{k}</dt><dd>{_e(v)}</dd></div>" for k, v in meta)
            + "</dl></header><main>"
            + _verdict(data) + _kpis(data) + _candidates(data) + _blast(data) + _followers(data) + _lag_chart(data)
            + _timelines(data)
            + _plans(data) + _corruptions(data)
            + "</main><footer>Written by logscan report from the Delta tables above; a single file, nothing fetched."
              "</footer></body></html>\n")
