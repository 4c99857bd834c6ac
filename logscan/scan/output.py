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

Where: ``output`` is a local folder (written with os.*, as always) or a URI (``s3://``, ``gs://``,
``abfs://``, ``hdfs://``, ``file://``): the Parquet then goes through the pyarrow filesystem of
logscan.logdir.store (the storage options of --storage-option, as for reading a copy), the
commits through delta-rs with the same options in its spelling (store.delta_options). A
writer in another process (a Spark task) gets them in its closure: an :class:`Output` is the
output's text carrying its storage options, pickled with them.

A column a newer logscan adds is merged into a table an older one wrote (its earlier scans read
null there); a column the table has that this logscan does not write is kept (null in these
rows). A column whose type changed is refused (TableError) rather than rewritten.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import Iterable, Optional, Union

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

#: Rows a table's writer gathers before writing them as one Parquet row group, at most
#: ROW_GROUP_ROWS of them or ROW_GROUP_BYTES of Arrow data, whichever comes first: the rows come
#: in Arrow batches of a few thousand (tasks flush at 4096), and a row group per batch would
#: make the batches table's files mostly row-group footers; the bytes keep what a writer holds
#: the same whatever the table's size (65,536 txn_log rows were ~20 MiB held, issue 33).
ROW_GROUP_ROWS = 1 << 16
ROW_GROUP_BYTES = 2 << 20


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


class Output(str):
    """An output folder or URI (the str) with the storage options (``storage_options``) its
    writers and commits reach the store with; a str, so it goes wherever an output did, and
    into a Spark task's closure with its options. Never printed with them (they may hold a
    secret): str() and repr() are the URI's."""

    storage_options: dict

    def __new__(cls, location: str, storage_options=None):
        self = super().__new__(cls, location)
        self.storage_options = dict(storage_options or {})
        return self

    def __reduce__(self):
        return (Output, (str(self), self.storage_options))

    def __repr__(self) -> str:
        return f"Output({str(self)!r})"


def _given(output: str):
    """The storage options ``output`` carries (None: the ones configured in this process)."""
    return output.storage_options if isinstance(output, Output) else None


def is_remote(output: str) -> bool:
    from logscan.logdir.store import is_uri

    return is_uri(str(output))


def delta_options(output: str) -> Optional[dict]:
    """delta-rs's storage options for the tables under ``output`` (None for a local folder)."""
    if not is_remote(output):
        return None
    from logscan.logdir import store

    return store.delta_options(str(output), _given(output))


@dataclass
class _Open:
    """One table's file being written: its writer, the rows gathered for its next row group."""

    path: str
    writer: pq.ParquetWriter
    pending: list[pa.RecordBatch]
    pending_rows: int = 0
    pending_bytes: int = 0
    rows: int = 0
    sink: object = None   # the store's output stream, for a URI output


class Parts:
    """Writes rows of any tables into one new Parquet file per table (opened at its first rows)
    under ``output``'s table folders; close() says what it wrote (WRITTEN rows)."""

    def __init__(self, output: str, scan_id: str, as_of_ms: int) -> None:
        self.output = output
        self._store = None
        if is_remote(output):
            from logscan.logdir import store

            self._store = store.store_with(str(output), _given(output))
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
        f.pending_bytes += batch.nbytes
        if f.pending_rows >= ROW_GROUP_ROWS or f.pending_bytes >= ROW_GROUP_BYTES:
            self._write(f)

    def _start(self, table: str) -> _Open:
        relative = f"{self.folder}/part-{uuid.uuid4()}.snappy.parquet"
        path = f"{table_uri(self.output, table)}/{relative}"
        if self._store is not None:   # a URI: a stream of the store (object stores need no folders)
            fs_path = self._store.path(path)
            if self._store.prefix.startswith(("file:", "hdfs:", "viewfs:")):
                self._store.fs.create_dir(fs_path.rsplit("/", 1)[0], recursive=True)
            sink = self._store.fs.open_output_stream(fs_path)
            return _Open(relative, pq.ParquetWriter(sink, file_schema(table), compression="snappy"), [], sink=sink)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _Open(relative, pq.ParquetWriter(path, file_schema(table), compression="snappy"), [])

    @staticmethod
    def _write(f: _Open) -> None:
        if f.pending:
            f.writer.write_table(pa.Table.from_batches(f.pending), row_group_size=max(f.pending_rows, 1))
            f.rows += f.pending_rows
            f.pending, f.pending_rows, f.pending_bytes = [], 0, 0

    def close(self) -> list[R.Row]:
        """Writes what is gathered, closes every file; a WRITTEN row per file."""
        out = []
        for table, f in self._open.items():
            self._write(f)
            f.writer.close()
            path = f"{table_uri(self.output, table)}/{f.path}"
            if f.sink is not None:
                f.sink.close()   # the object is put (or its multipart upload completed) here
                info = self._store.fs.get_file_info(self._store.path(path))
                mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else int(time.time() * 1000)
                size = info.size
            else:
                st = os.stat(path)
                size, mtime = st.st_size, int(st.st_mtime * 1000)
            out.append({"table": table, "path": f.path, "size": size, "rows": f.rows, "modification_time": mtime})
        self._open.clear()
        return out

    def abort(self) -> None:
        """Closes every file without reporting it (a task that failed: its files belong to no
        version)."""
        for f in self._open.values():
            try:
                f.writer.close()
                if f.sink is not None:
                    f.sink.close()
            except Exception:  # noqa: BLE001 - already failing; the file is an orphan either way
                pass
        self._open.clear()


def write_rows(output: str, scan_id: str, as_of_ms: int, table: str,
               rows: Union[Iterable[R.Row], pa.Table]) -> list[R.Row]:
    """A table's rows made in this process (dicts, or an Arrow table of its columns), written
    as one file: its WRITTEN rows."""
    parts = Parts(output, scan_id, as_of_ms)
    for batch in rows.to_batches() if isinstance(rows, pa.Table) else [R.to_batch(list(rows), _columns(table))]:
        parts.add(table, batch)
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
    options = delta_options(output)
    adds = [_add(scan_id, p) for p in parts]
    try:
        dt = DeltaTable(uri, storage_options=options)
    except TableNotFoundError:
        try:
            create_table_with_add_actions(uri, merged_schema(table, None), adds, mode="error",
                                          partition_by=[PARTITION_COLUMN], storage_options=options)
            return
        except Exception as e:  # noqa: BLE001 - another writer may have created it first
            try:
                dt = DeltaTable(uri, storage_options=options)
            except TableNotFoundError:
                raise e from None
    if not adds and not any(p.get(PARTITION_COLUMN) == scan_id for p in dt.partitions()):
        return   # nothing to add, nothing of this scan to remove: no version
    current = json.loads(dt.schema().to_json())["fields"]
    dt.create_write_transaction(adds, mode="overwrite", schema=merged_schema(table, current),
                                partition_by=[PARTITION_COLUMN],
                                partition_filters=[(PARTITION_COLUMN, "=", scan_id)])


def written_tables(output: str) -> list[str]:
    """The Delta tables under ``output`` (folder or URI), by name."""
    from logscan.sql.delta import TablesError, delta_tables

    try:
        return list(delta_tables(output))
    except TablesError:
        return []


def where_lines(output: str) -> str:
    """What a scan into ``output`` prints last: its tables, and the `logscan sql` and `logscan
    report` commands over them, shell-quoted, with the --storage-option flags a URI needs
    (store.option_flags: a secret's value never printed, read from its environment variable,
    which a last line names)."""
    import shlex

    from logscan.logdir import store

    where = shlex.quote(str(output)) + store.option_flags([str(output)], _given(output))
    text = (f"  {', '.join(written_tables(output))} (Delta tables, one folder each)\n"
            f"  logscan sql --tables {where} 'SELECT * FROM abort_plans'\n"
            f"  logscan report --tables {where} --out report.html\n")
    secrets = store.secret_variables(_given(output)) if is_remote(output) else []
    if secrets:
        text += f"  (the secret options are read from {', '.join('$' + s for s in secrets)}: set them first)\n"
    return text


def failure(error: BaseException) -> str:
    """A failed write's error in one line (delta-rs's run to many, with the store's XML): its
    type, first line and the store's answer (status, code), without terminal escapes."""
    import re

    from logscan.text import printable

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = re.sub(r"\s*\(Request ID: [^)]*\)?", "", (lines[0] if lines else "").replace("Kernel error -> ", ""))
    status = re.search(r"\b([45]\d\d) ([A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)*)", text)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    if status and status.group(0) not in first:
        first += f" ({status.group(0)}{', ' + code.group(1) if code else ''})"
    return printable(f"{type(error).__name__}: {' '.join(first.split())}")[:400]


#: URI schemes that name the same store (Hadoop's s3a/s3n and s3; gcs and gs; abfss and abfs).
_SAME_STORE = {"s3a": "s3", "s3n": "s3", "gcs": "gs", "abfss": "abfs", "az": "abfs"}


def _place(location) -> tuple[str, tuple[str, ...]]:
    """Where a folder or URI is, comparably: (store, path parts). A local path and a file://
    URI are the same place (resolved); s3a://b/x and s3://b/x/ too."""
    from pathlib import Path

    from logscan.logdir.store import is_uri

    text = str(location)
    if is_uri(text):
        scheme, _, rest = text.partition("://")
        scheme = scheme.lower()
        if scheme != "file":
            return _SAME_STORE.get(scheme, scheme), tuple(p for p in rest.split("/") if p)
        text = rest[rest.index("/"):] if "/" in rest else "/"
    return "", Path(text).resolve().parts


def inside(output, root) -> bool:
    """Whether ``output`` is ``root`` or lies under it (folders or URIs, compared as places)."""
    (out_store, out), (root_store, at) = _place(output), _place(root)
    return out_store == root_store and out[:len(at)] == at


def probe(output: str) -> None:
    """Before a scan into a URI: one request that the store answers only with working
    credentials and endpoint (a listing of the output's prefix), so a refusal is said at once,
    not after the whole scan. OSError (one line: store.retried's, naming the URI) when it fails."""
    if not is_remote(output):
        return
    from pyarrow import fs as pafs

    from logscan.logdir import store

    st = store.store_with(str(output), _given(output))
    base = st.path(str(output).rstrip("/"))
    store.retried(lambda: st.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)),
                  f"listing the --output {output}")
