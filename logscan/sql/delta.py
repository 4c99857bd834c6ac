"""A scan's Delta tables as delta-rs reads them: which tables, their newest version's files
(through the Delta log, never a listing of the folder, where removed files still lie), and
their schema as Spark describes it (Spark's type names, the column comments of the scan's
schemas)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

#: Delta's primitive type names (the log's schema JSON) -> Spark SQL's, as DESCRIBE prints them.
SPARK_TYPES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


class TablesError(Exception):
    """The --tables folder holds no Delta table (one sentence, with the fix)."""


def delta_tables(tables_dir: Path) -> dict[str, Path]:
    """View name -> table folder, for every child folder with a `_delta_log`."""
    if not tables_dir.is_dir():
        raise TablesError(f"{tables_dir}: no such folder; give the --output folder of a scan "
                          f"(e.g. `logscan scan COPY --output {shlex.quote(str(tables_dir))}`)")
    found = {p.name: p for p in sorted(tables_dir.iterdir()) if (p / "_delta_log").is_dir()}
    if not found:
        raise TablesError(f"{tables_dir}: no Delta tables in it (no <table>/_delta_log); run a scan with "
                          f"--output {shlex.quote(str(tables_dir))} first")
    return found


def open_table(path: Path):
    """The table at its newest version (deltalake.DeltaTable)."""
    from deltalake import DeltaTable

    return DeltaTable(str(path.resolve()))


def unfinished_scans(paths: dict[str, Path]) -> dict[str, list[str]]:
    """Scan ids the tables hold that the ``scans`` table does not name, each with the tables
    holding it: a Spark scan killed or failed mid-write (each table commits on its own, and the
    job commits a scan's ``scans`` row after all of them). Read from the tables' logs only
    (their scan_id partitions), no data file. Empty when there is no ``scans`` table (tables
    written before it existed: nothing to tell)."""
    if "scans" not in paths:
        return {}
    done = {p.get("scan_id") for p in open_table(paths["scans"]).partitions()}
    out: dict[str, list[str]] = {}
    for name, path in paths.items():
        if name == "scans":
            continue
        for part in open_table(path).partitions():
            if part.get("scan_id") not in done:
                out.setdefault(part.get("scan_id"), []).append(name)
    return out


def arrow_dataset(table):
    """The newest version's rows as a pyarrow dataset: the files Delta's log names, partition
    values as columns, column comments in the fields' metadata."""
    return table.to_pyarrow_dataset()


def spark_type(delta_type: Any) -> str:
    """Spark's name for a type of Delta's schema JSON (``long`` -> ``bigint``, nested types
    as ``array<int>``, ``map<string,bigint>``, ``struct<a:int,b:string>``)."""
    if isinstance(delta_type, str):
        return SPARK_TYPES.get(delta_type, delta_type)
    kind = delta_type["type"]
    if kind == "array":
        return f"array<{spark_type(delta_type['elementType'])}>"
    if kind == "map":
        return f"map<{spark_type(delta_type['keyType'])},{spark_type(delta_type['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{spark_type(f['type'])}" for f in delta_type["fields"]) + ">"
    raise ValueError(f"unknown Delta type {delta_type!r}")


def describe(table) -> list[tuple[str, str, Any]]:
    """(col_name, data_type, comment) per column, as Spark's DESCRIBE of the table's view."""
    fields = json.loads(table.schema().to_json())["fields"]
    return [(f["name"], spark_type(f["type"]), (f.get("metadata") or {}).get("comment")) for f in fields]
