"""A scan's Delta tables as delta-rs reads them: which tables, their newest version's files
(through the Delta log, never a listing of the folder, where removed files still lie), and
their schema as Spark describes it (Spark's type names, the column comments of the scan's
schemas).

The tables are a local folder or a URI (``s3://bucket/tables``, ``gs://``, ``abfs://``,
``file://``): a URI's tables are found with one listing of its children through
logscan.logdir.store's filesystem, and opened by delta-rs with the same storage options
(store.delta_options); the rows then come as Arrow datasets from delta-rs either way (DuckDB
reads no file itself)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

#: Delta's primitive type names (the log's schema JSON) -> Spark SQL's, as DESCRIBE prints them.
SPARK_TYPES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


class TablesError(Exception):
    """The --tables folder holds no Delta table (one sentence, with the fix)."""


class TablesUnreadable(TablesError):
    """The store of a --tables URI refused or failed (credentials, endpoint, network): one
    sentence naming the URI and the store's answer."""


def delta_tables(tables_dir) -> dict[str, Any]:
    """View name -> table folder (a Path, or a URI's str), for every child folder with a
    `_delta_log`."""
    from logscan.logdir.store import is_uri

    if is_uri(str(tables_dir)):
        return _stored_tables(str(tables_dir).rstrip("/"))
    tables_dir = Path(tables_dir)
    if not tables_dir.is_dir():
        raise TablesError(f"{tables_dir}: no such folder; give the --output folder of a scan "
                          f"(e.g. `logscan scan COPY --output {shlex.quote(str(tables_dir))}`)")
    found = {p.name: p for p in sorted(tables_dir.iterdir()) if (p / "_delta_log").is_dir()}
    if not found:
        raise TablesError(f"{tables_dir}: no Delta tables in it (no <table>/_delta_log); run a scan with "
                          f"--output {shlex.quote(str(tables_dir))} first")
    return found


def warehouse_tables(database: str, warehouse) -> dict[str, Any]:
    """delta_tables of the catalog tables ``DATABASE.<table>`` a local catalog keeps under
    ``warehouse`` (a scan's ``--database NAME --warehouse DIR``): Spark's Hive catalog places a
    database's managed tables at ``DIR/<database>.db/<table>`` (the metastore lower-cases
    the name), the ``default`` database's at ``DIR/<table>``. Read there through their Delta
    logs, as a folder's tables are, with no JVM. TablesError (one sentence naming ``--engine
    spark``) when none are there (a database made with a LOCATION of its own)."""
    where = Path(warehouse) if database.lower() == "default" else Path(warehouse) / f"{database.lower()}.db"
    if where.is_dir():
        found = {p.name: p for p in sorted(where.iterdir()) if (p / "_delta_log").is_dir()}
        if found:
            return found
    raise TablesError(f"no catalog tables {database}.<table> at {where} (where the local catalog of --warehouse "
                      f"{shlex.quote(str(warehouse))} keeps them); if the database has a location of its own, "
                      "read them with --engine spark")


def _stored_tables(uri: str) -> dict[str, str]:
    """delta_tables of a URI: one recursive-free listing of its children and their
    ``_delta_log`` folders (an object store lists ``prefix/*/_delta_log/`` keys as folders)."""
    from pyarrow import fs as pafs

    from logscan.logdir import store

    try:
        st = store.store_of(uri)
        base = st.path(uri)
        children = store.retried(lambda: st.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)),
                                 f"listing {uri}")
        found = {}
        for child in sorted(children, key=lambda i: i.path):
            if child.type != pafs.FileType.Directory:
                continue
            log = store.retried(lambda: st.fs.get_file_info(f"{child.path}/_delta_log"), f"listing {uri}")
            if log.type == pafs.FileType.Directory:
                found[child.path.rstrip("/").rsplit("/", 1)[-1]] = st.uri(child.path.rstrip("/"))
    except OSError as e:
        raise TablesUnreadable(f"{uri}: the tables cannot be listed: {_store_error(e)}; check the --storage-option values "
                          "or the credentials in the environment") from None
    if not found:
        raise TablesError(f"{uri}: no Delta tables in it (no <table>/_delta_log); run a scan with "
                          f"--output {shlex.quote(uri)} first")
    return found


def open_table(path):
    """The table at its newest version (deltalake.DeltaTable); a URI's with the storage
    options of logscan.logdir.store. TablesError (one sentence) when the store refuses."""
    from deltalake import DeltaTable

    from logscan.logdir import store

    if store.is_uri(str(path)):
        uri = str(path)
        try:
            return DeltaTable(uri, storage_options=store.delta_options(uri))
        except OSError as e:
            raise TablesUnreadable(f"{uri}: the table cannot be read: {_store_error(e)}; check the --storage-option "
                              "values or the credentials in the environment") from None
    return DeltaTable(str(Path(path).resolve()))


def _store_error(error: BaseException) -> str:
    """delta-rs's error text in one line: its first line and the store's answer code, if any."""
    import re

    text = str(error)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    status = re.search(r"\b([45]\d\d) [A-Z][A-Za-z ]+", text)
    said = re.sub(r"\s*\(Request ID: [^)]*\)?", "", first.replace("Kernel error -> ", ""))
    if status:
        said += f" ({status.group(0).strip()}"
        said += f", {code.group(1)})" if code else ")"
    return " ".join(said.split())[:300]


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
