"""Rows as people and scripts read them: an aligned text table, JSON lines or CSV."""

from __future__ import annotations

import csv
import datetime as _dt
import decimal
import json
from typing import Any, Sequence, TextIO

from logscan.text import printable


def _plain(value: Any) -> Any:
    """JSON-able form of a Spark value (Row, date, Decimal, bytes, nested lists)."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    plain = _plain(value)
    return plain if isinstance(plain, str) else json.dumps(plain) if isinstance(plain, (dict, list)) else str(plain)


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        for row in rows:
            out.write(json.dumps({c: _plain(v) for c, v in zip(columns, row)}) + "\n")
        return
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else _cell(v) for v in row])
        return
    cells = [[printable(_cell(v)) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) and rows
               for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out.write(line(columns) + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write(line(r) + "\n")
    out.write(f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n")
