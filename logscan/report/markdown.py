"""`logscan report --format md`: the report as Markdown for a ticket (GitHub/GitLab/Jira's
Markdown: pipe tables, fenced code), from the same dicts ``logscan.report.data.load`` reads.

What is on the page is what the HTML page says first: the verdict, the figures, the hanging
transactions with their reasons and evidence, the lagging followers, the partitions whose LSO
is held back, the abort plans (each command in a fenced block, as printed by `logscan plan`)
and the corruptions; where only part is shown, the `logscan sql` command listing all.

Everything from the copy (topic names, file names, evidence) is anybody's bytes: it is made
printable (logscan.text.printable) and escaped for Markdown, in a table cell its pipes too,
and a fenced block's fence is longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Sequence

from logscan.logdir.naming import is_legal_topic
from logscan.scan.summary import FOLLOWERS_TEXT, GROUP_KINDS, group_verdict
from logscan.text import printable

from .html import VERDICT, _iso, _minutes, _transactions

#: Characters Markdown reads as markup anywhere in a line (CommonMark's inlines: emphasis,
#: code, links, HTML and entities; GFM's tables and strikethrough), and what makes a line's
#: start a block (a heading, a list item, a quote, a setext underline).
_MARKUP = re.compile(r"([\\`*_\[\]<>|~&])")
_LINE_START = re.compile(r"^([-+#=>]|\d+[.)])")


def text(value: Any) -> str:
    """``value`` as Markdown text that shows as itself wherever it is put: printable (so on one
    line), markup characters escaped."""
    if value is None:
        return ""
    return _LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1],
                           _MARKUP.sub(r"\\\1", printable(str(value))))


def code(value: Any) -> str:
    """``value`` as an inline code span (a fence of more backticks than any run in it), pipes
    escaped (GFM splits a table row at a pipe even inside a code span)."""
    body = printable("" if value is None else str(value)).replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def block(lines: Iterable[Any], info: str = "") -> str:
    """A fenced code block holding ``lines`` as they are (printable): what is copied from it is
    the text itself, e.g. a shell-quoted command."""
    body = "\n".join(printable(str(line)) for line in lines)
    fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence}{info}\n{body}\n{fence}\n"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[int] = ()) -> str:
    """A pipe table; cells are Markdown already (text() or code()); columns in ``right`` are
    right-aligned (numbers)."""
    rule = ["---:" if i in right else "---" for i in range(len(header))]
    lines = [header, rule, *rows]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)


def _subset(data: dict, what: str, shown: int, total: Optional[int], query: str) -> str:
    if total is not None and total <= shown:
        return ""
    command = data.get("queries", {}).get(query)
    drawn = f"{what} {shown} of {total}" if total is not None else f"the first {shown} {what}"
    return (f"Shown: {text(drawn)}." + (" All of them:\n\n" + block([command], "sh") if command else "\n")
            + "\n")


def _verdict(data: dict) -> str:
    txns = _transactions(data["candidates"]).values()
    hanging = [t for t in txns if t.get("hanging") is True]
    unknown = [t for t in txns if t.get("hanging") is None]
    if hanging:
        parts = {(t["topic"], t["partition"]) for t in hanging}
        return (f"**{len(hanging)} hanging transaction{'s' if len(hanging) != 1 else ''}** "
                f"hold{'s' if len(hanging) == 1 else ''} back the last stable offset of {len(parts)} "
                f"partition{'s' if len(parts) != 1 else ''}: read_committed consumers there are stuck. "
                "The abort plans are below.\n")
    if unknown:
        return (f"**{len(unknown)} open transaction{'s' if len(unknown) != 1 else ''} cannot be judged** "
                "from this copy (see the reasons below).\n")
    lagging = [p for p in data["partitions"] if p["lso_lag"] > 0]
    return "**No hanging transaction.** " + (
        f"{len(lagging)} partitions have an LSO below the high watermark (transactions in flight).\n"
        if lagging else "Every last stable offset is at its high watermark.\n")


def _figures(data: dict) -> str:
    head, counts = data["head"], data["counts"]
    hanging = sum(1 for t in _transactions(data["candidates"]).values() if t.get("hanging") is True)
    figures = [("brokers", head["brokers"]), ("partitions", head["partitions"]), ("replicas", head["replicas"]),
               ("open transactions", head["open_transactions"] or 0),
               ("replicas with LSO lag", head["lagging_replicas"] or 0)]
    if counts.get("followers"):
        figures.append(("lagging followers", counts["followers"]))
    figures += [("hanging transactions", hanging), ("corruptions", counts.get("corruptions", 0))]
    return table(["figure", "count"], [[text(k), text(v)] for k, v in figures], right=(1,))


def _candidates(data: dict) -> str:
    out = ["## Hanging transactions\n\n"]
    if not data["candidates"]:
        return out[0] + "No open transaction is older than the maximum transaction timeout at the scan's as-of time.\n"
    rows = []
    for c in _transactions(data["candidates"]).values():
        rows.append([text(f"{c['topic']}-{c['partition']}"), text(", ".join(map(str, sorted(c["brokers"])))),
                     text(c["producer_id"]), text(c["producer_epoch"]), text(c["start_offset"]),
                     text(_minutes(c.get("age_ms"))), text(VERDICT[c.get("hanging")][0]), code(c.get("reason")),
                     text(c.get("evidence"))])
    out.append(_subset(data, "the replicas' rows of", len(data["candidates"]),
                       data["counts"].get("hanging_candidates", len(data["candidates"])), "candidates"))
    out.append(table(["partition", "brokers", "producer id", "epoch", "start offset", "idle for", "verdict",
                      "reason", "evidence"], rows, right=(2, 3, 4)))
    return "".join(out)


def _followers(data: dict) -> str:
    rows = data.get("followers") or []
    if not rows:
        return ""
    body = [[text(f"{f['topic']}-{f['partition']}"), text(f["broker"]),
             text(f"{f['leader']}" + ("" if f["leader_in_copy"] else " (furthest ahead)")),
             text(f"{f['log_end_offset']} / {f['leader_log_end_offset']}"),
             text(f"{f['last_stable_offset']} / {f['leader_last_stable_offset']}"),
             text(f"{f['open_transactions']} / {f['leader_open_transactions']}"),
             text("incomplete copy" if f["incomplete"] else "")] for f in rows]
    return ("## Lagging followers\n\n" + text(FOLLOWERS_TEXT[0].upper() + FOLLOWERS_TEXT[1:]) + ".\n\n"
            + _subset(data, "lagging followers", len(rows), data["counts"].get("followers", len(rows)), "followers")
            + table(["partition", "follower", "leader", "log end / leader's", "LSO / leader's", "open / leader's", ""],
                    body, right=(1,)))


def _blast(data: dict) -> str:
    """The consumer groups open transactions hold back and the bytes LSOs keep on disk."""
    groups, held = data.get("groups") or [], data.get("held") or []
    if not groups and not held:
        return ""
    counts = data["counts"]
    out = ["## What the open transactions hold back\n\n"]
    if groups:
        out.append("Consumer groups: a pending transactional offset commit answers UNSTABLE_OFFSET_COMMIT to "
                   "read_committed consumers (the group cannot start); a committed offset at the LSO reads nothing "
                   "more until it moves.\n\n")
        out.append(_subset(data, "groups' rows", len(groups), counts.get("groups", len(groups)), "groups"))
        out.append(table(["group", "partition", "why", "held by", "verdict", "reason", "lag (messages)", "for"],
                         [[text(g["group_id"]), text(f"{g['topic']}-{g['partition']}"),
                           text(GROUP_KINDS.get(g["kind"], g["kind"])),
                           text(f"{g['held_topic']}-{g['held_partition']}, producer {g['producer_id']}"),
                           text(group_verdict(g, {k: v[0] for k, v in VERDICT.items()})), code(g.get("reason")),
                           text(g.get("lag_messages")),
                           text(_minutes(g.get("lag_ms")))] for g in groups], right=(6, 7)))
        out.append("\n")
    if held:
        out.append(f"Bytes held back: **{text(counts.get('held_bytes', 0))} B**: closed segments from the one "
                   "holding the LSO on, which the log cleaner may not clean on a compacted topic and tiered storage "
                   "may not upload, until the LSO moves (per replica; the last column over all replicas).\n\n")
        out.append(_subset(data, "partitions", len(held), counts.get("held_partitions", len(held)), "held"))
        out.append(table(["partition", "cleaner held (B)", "segments", "tiering held (B)", "segments", "replicas",
                          "all replicas (B)"],
                         [[text(f"{p['topic']}-{p['partition']}"), text(p["cleaner_held_bytes"] or ""),
                           text(p["cleaner_held_segments"] or ""), text(p["tiering_held_bytes"] or ""),
                           text(p["tiering_held_segments"] or ""), text(p["replicas"]), text(p["held_bytes"])]
                          for p in held], right=(1, 2, 3, 4, 5, 6)))
    return "".join(out)


def _lag(data: dict) -> str:
    parts = [p for p in data["partitions"] if p["lso_lag"] > 0]
    out = ["## LSO lag per partition\n\n"]
    if not parts:
        return out[0] + ("Every partition's last stable offset equals its high watermark: read_committed consumers "
                         "can read everything.\n")
    out.append("Messages a read_committed consumer cannot read yet: high watermark minus last stable offset, from "
               "the partition's leader (else the replica furthest ahead).\n\n")
    out.append(_subset(data, "the partitions with the largest LSO lag,", len(parts),
                       data["counts"].get("partitions_with_lag", len(parts)), "partitions"))
    out.append(table(["partition", "broker", "high watermark", "LSO", "LSO lag", "open transactions"],
                     [[text(f"{p['topic']}-{p['partition']}"), text(p["broker"]), text(p["high_watermark"]),
                       text(p["last_stable_offset"]), text(p["lso_lag"]), text(p["open_transactions"])]
                      for p in parts], right=(1, 2, 3, 4, 5)))
    return "".join(out)


def _plans(data: dict) -> str:
    plans = data["plans"]
    if plans is None and any(c.get("hanging") is True for c in data["candidates"]):
        return ("## Abort plans\n\nThese tables have no abort_plans table (an older scan): print the plans with\n\n"
                + block(["logscan plan COPY --bootstrap-server HOST:PORT"], "sh"))
    if not plans:
        return ""
    out = ["## Abort plans\n\nlogscan never connects to the cluster: run these yourself, after the checks, against "
           "a broker of the cluster (`--bootstrap-server`).\n\n"]
    if len(plans) >= data.get("limits", {}).get("rows", len(plans) + 1):
        out.append(_subset(data, "abort plans", len(plans), None, "plans"))
    for p in plans:
        out.append(f"### {text(p['topic'])}-{text(p['partition'])}: producer {text(p.get('producer_id'))} epoch "
                   f"{text(p.get('producer_epoch'))}, open since offset {text(p.get('start_offset'))}\n\n"
                   f"Reason {code(p.get('reason'))}" + (f", risk **{text(p.get('risk'))}**: "
                                                         f"{text(p.get('risk_detail'))}" if p.get("risk") else "")
                   + ".\n\n")
        if not is_legal_topic(str(p.get("topic"))):   # as the page: no command for a folder Kafka did not write
            out.append("No command offered: the topic is not a name Kafka allows, so Kafka did not write this "
                       "folder.\n\n")
            continue
        out.append(block([p.get("command")], "sh"))
        if p.get("command_explicit"):
            out.append("\nBrokers without `--start-offset` lookup (explicit form):\n\n"
                       + block([p.get("command_explicit")], "sh"))
        for title, items in (("Check first", p.get("preconditions")), ("What it does", p.get("effects"))):
            if items:
                items = [items] if isinstance(items, str) else items
                out.append(f"\n{title}:\n\n" + "".join(f"- {text(i)}\n" for i in items))
        out.append("\n")
    return "".join(out)


def _corruptions(data: dict) -> str:
    rows = data["corruptions"]
    if not rows:
        return "## Corruptions\n\nNone: every file read cleanly.\n"
    cols = [c for c in ("broker", "file", "position", "length", "reason", "message") if c in rows[0]]
    total = data["counts"].get("corruptions", len(rows))
    more = (f"\n{total - len(rows)} more: logscan sql over the corruptions table.\n" if total > len(rows) else "")
    return ("## Corruptions\n\n"
            + table(cols, [[code(r.get(c)) if c == "file" else text(r.get(c)) for c in cols] for r in rows],
                    right=[i for i, c in enumerate(cols) if c in ("broker", "position", "length")]) + more)


def render_markdown(data: dict) -> str:
    """The report of ``data`` (logscan.report.data.load's dict) as one Markdown document."""
    head = data["head"]
    meta = [("scan id", code(data["scan_id"])), ("as of", text(_iso(head["as_of"]))),
            ("input", code(data.get("input") or "?")), ("tables", code(data["tables"]))]
    sections = ["# logscan report\n\n" + "".join(f"- {k}: {v}\n" for k, v in meta), _verdict(data), _figures(data),
                _candidates(data), _blast(data), _followers(data), _lag(data), _plans(data), _corruptions(data),
                "_Written by logscan report from the Delta tables above._\n"]
    return "\n".join(s for s in sections if s)
