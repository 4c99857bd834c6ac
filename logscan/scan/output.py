"""A scan's tables as Delta tables: Parquet written where the rows are made, one commit per table.

    parts = Parts(output, scan_id, as_of_ms)     # where rows are made: a Spark task, a process
    parts.add("txn_spans", batch)                 # Arrow rows of rows.TABLES["txn_spans"]
    written = parts.close()                       # WRITTEN rows: the Parquet files it wrote
    commit(output, "txn_spans", scan_id, written) # once, where every table's files are known

The layout is the one Spark's Delta writer gave these tables: ``DIR/<table>/`` partitioned by
``scan_id`` (``scan_id=<id>/part-<uuid>.parquet``, the id in the Delta log, not in the files),
every row tagged with the scan's ``as_of`` (TAGS), every column carrying its comment from
logscan.scan.rows. Spark SQL, delta-rs and DuckDB read them alike.

Crash safety: a Parquet file is only a file until its table's commit names it. Each commit
(deltalake's create_write_transaction, mode overwrite, partition filter ``scan_id = <id>``)
replaces exactly this scan's rows of one table in one new version, as Spark's
``replaceWhere`` did: a job killed before a table's commit leaves that table at its previous
version (its written files belong to no version: Delta's VACUUM deletes them), re-running the
same scan replaces its own rows, other scans' rows stay. A commit that would add and remove
nothing makes no version, as Spark's Delta does not. Two writers of one table are ordered by
Delta's log (a commit is a new numbered file, put if absent); a table's first commit creates it.

A column a newer logscan adds is merged into a table an older one wrote (its earlier scans read
null there); a column the table has that this logscan does not write is kept (null in these
rows). A column whose type changed is refused (TableError) rather than rewritten.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from . import rows as R

PARTITION_COLUMN = "scan_id"
TAGS = {
    "scan_id": "id of the scan that wrote the row (default: derived from the input roots)",
    "as_of": "the scan's 'now' (UTC): --as-of, else the newest timestamp in the copy",
}
AS_OF_TYPE = pa.timestamp("us", tz="UTC")

#: What a writer reports of each file it wrote: what the table's commit adds.
WRITTEN = pa.schema([
    pa.field("table", pa.string()), pa.field("path", pa.string()), pa.field("size", pa.int64()),
    pa.field("rows", pa.int64()), pa.field("modification_time", pa.int64()),
])

#: Rows a table's writer gathers before writing them as one Parquet row group: the rows come
#: in Arrow batches of a few thousand (tasks flush at 4096), and a row group per batch would
#: make the batches table's files mostly row-group footers.
ROW_GROUP_ROWS = 1 << 16


class TableError(Exception):
    """A table cannot take this scan's rows (one sentence, naming the table and the fix)."""


def _columns(table: str) -> pa.Schema:
    return R.SCANS if table == R.SCANS_TABLE else R.TABLES[table]


def file_schema(table: str) -> pa.Schema:
    """The columns of a Parquet file of ``table``: its rows.py columns, then ``as_of``."""
    return _columns(table).append(pa.field("as_of", AS_OF_TYPE, metadata={"comment": TAGS["as_of"]}))


def table_schema(table: str) -> pa.Schema:
    """The Delta schema of ``table`` as this logscan writes it: its rows.py columns, then the
    partition column ``scan_id`` and ``as_of`` (the order Spark's writer gave them); every
    field with its comment."""
    return (_columns(table).append(pa.field(PARTITION_COLUMN, pa.string(), metadata={"comment": TAGS[PARTITION_COLUMN]}))
            .append(file_schema(table).field("as_of")))


def table_uri(output: str, table: str) -> str:
    return f"{output.rstrip('/')}/{table}"


@dataclass
class _Open:
    """One table's file being written: its writer, the rows gathered for its next row group."""

    path: str
    writer: pq.ParquetWriter
    pending: list[pa.RecordBatch]
    pending_rows: int = 0
    rows: int = 0


class Parts:
    """Writes rows of any tables into one new Parquet file per table (opened at its first rows)
    under ``output``'s table folders; close() says what it wrote (WRITTEN rows)."""

    def __init__(self, output: str, scan_id: str, as_of_ms: int) -> None:
        self.output = output
        self.folder = f"{PARTITION_COLUMN}={scan_id}"
        self._as_of = pa.scalar(as_of_ms * 1000, AS_OF_TYPE)
        self._open: dict[str, _Open] = {}

    def add(self, table: str, batch: pa.RecordBatch) -> None:
        """Rows of ``table``: a batch of its rows.py columns (in that order)."""
        if not batch.num_rows:
            return
        columns = _columns(table)
        if not batch.schema.equals(columns):   # an engine's own Arrow types (Spark's list item names)
            batch = batch.cast(columns)
        f = self._open.get(table)
        if f is None:
            f = self._open[table] = self._start(table)
        f.pending.append(batch.append_column("as_of", pa.repeat(self._as_of, batch.num_rows)))
        f.pending_rows += batch.num_rows
        if f.pending_rows >= ROW_GROUP_ROWS:
            self._write(f)

    def _start(self, table: str) -> _Open:
        relative = f"{self.folder}/part-{uuid.uuid4()}.snappy.parquet"
        path = f"{table_uri(self.output, table)}/{relative}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _Open(relative, pq.ParquetWriter(path, file_schema(table), compression="snappy"), [])

    @staticmethod
    def _write(f: _Open) -> None:
        if f.pending:
            f.writer.write_table(pa.Table.from_batches(f.pending), row_group_size=max(f.pending_rows, 1))
            f.rows += f.pending_rows
            f.pending, f.pending_rows = [], 0

    def close(self) -> list[R.Row]:
        """Writes what is gathered, closes every file; a WRITTEN row per file."""
        out = []
        for table, f in self._open.items():
            self._write(f)
            f.writer.close()
            st = os.stat(f"{table_uri(self.output, table)}/{f.path}")
            out.append({"table": table, "path": f.path, "size": st.st_size, "rows": f.rows,
                        "modification_time": int(st.st_mtime * 1000)})
        self._open.clear()
        return out

    def abort(self) -> None:
        """Closes every file without reporting it (a task that failed: its files belong to no
        version)."""
        for f in self._open.values():
            try:
                f.writer.close()
            except Exception:  # noqa: BLE001 - already failing; the file is an orphan either way
                pass
        self._open.clear()


def write_rows(output: str, scan_id: str, as_of_ms: int, table: str, rows: Iterable[R.Row]) -> list[R.Row]:
    """A table's rows made in this process (dicts), written as one file: its WRITTEN rows."""
    parts = Parts(output, scan_id, as_of_ms)
    parts.add(table, R.to_batch(list(rows), _columns(table)))
    return parts.close()


def _delta_fields(schema: pa.Schema) -> list[dict]:
    from deltalake import Schema

    return json.loads(Schema.from_arrow(schema).to_json())["fields"]


def merged_schema(table: str, current: Optional[list[dict]]):
    """The Delta schema to commit ``table`` with (deltalake.Schema): the table's own fields in
    their order, this logscan's new ones after them (``current``: the table's Delta fields,
    None for a new table). Raises TableError for a column whose type differs."""
    from deltalake import Schema

    ours = _delta_fields(table_schema(table))
    if current is None:
        return Schema.from_json(json.dumps({"type": "struct", "fields": ours}))
    by_name = {f["name"]: f for f in ours}
    fields = []
    for f in current:
        mine = by_name.pop(f["name"], None)
        if mine is not None and mine["type"] != f["type"]:
            raise TableError(f"table {table}: column {f['name']} is {json.dumps(f['type'])} in the table, this "
                             f"logscan writes {json.dumps(mine['type'])}; give another --output folder")
        fields.append(f if mine is None else {**f, "metadata": mine.get("metadata", f.get("metadata", {}))})
    fields.extend(by_name.values())
    return Schema.from_json(json.dumps({"type": "struct", "fields": fields}))


def _add(scan_id: str, part: R.Row):
    from deltalake.transaction import AddAction

    return AddAction(part["path"], part["size"], {PARTITION_COLUMN: scan_id}, part["modification_time"], True,
                     json.dumps({"numRecords": part["rows"]}))


def commit(output: str, table: str, scan_id: str, parts: list[R.Row]) -> None:
    """One Delta commit replacing ``scan_id``'s rows of ``table`` with ``parts`` (WRITTEN rows:
    files already in the table's folder), creating the table on first use."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError
    from deltalake.transaction import create_table_with_add_actions

    uri = table_uri(output, table)
    adds = [_add(scan_id, p) for p in parts]
    try:
        dt = DeltaTable(uri)
    except TableNotFoundError:
        try:
            create_table_with_add_actions(uri, merged_schema(table, None), adds, mode="error",
                                          partition_by=[PARTITION_COLUMN])
            return
        except Exception as e:  # noqa: BLE001 - another writer may have created it first
            try:
                dt = DeltaTable(uri)
            except TableNotFoundError:
                raise e from None
    if not adds and not any(p.get(PARTITION_COLUMN) == scan_id for p in dt.partitions()):
        return   # nothing to add, nothing of this scan to remove: no version
    current = json.loads(dt.schema().to_json())["fields"]
    dt.create_write_transaction(adds, mode="overwrite", schema=merged_schema(table, current),
                                partition_by=[PARTITION_COLUMN],
                                partition_filters=[(PARTITION_COLUMN, "=", scan_id)])
