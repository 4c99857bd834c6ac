"""The Python bodies of the Spark scan (spark_jobs.tasks), run without Spark on the Arrow
batches Spark would hand them: the per-replica stream cut anywhere, the partition stream in
the order scan.py sorts it, cut anywhere, and the decode's streamed walk."""

import gc
import json
import tempfile
from bisect import bisect_right
from operator import itemgetter
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from logscan.scan import local, pipeline, spool
from logscan.scan import rows as R
from logscan.scan.listing import list_copy
from logscan.scan.output import WRITTEN
from logscan.scan.replica import ReplicaRead, iter_segment, read_replica
from logscan.state import partition as P
from logscan.state.facts import BatchFact
from spark_jobs import tasks
from tests.scan.test_collector import _Cycle

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "fixtures" / "hanging" / "brokers"
CLUSTERS = sorted(p.parent.parent / "brokers" for p in (REPO / "fixtures").glob("*/truth/truth.json"))

#: What scan.replica_stream_input hands the step (the listing row as JSON text).
_STREAM = tasks.REPLICA_STREAM_IN
_INFO = pa.struct(list(tasks.REPLICA_INFO))


def _info_json(info):
    """A listing row as Spark's to_json gives it (its REPLICA_INFO columns, nulls kept)."""
    return json.dumps(pa.array([info], _INFO)[0].as_py())


def _lists(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or (
        pa.types.is_struct(t) and any(_lists(t.field(i).type) for i in range(t.num_fields)))


def test_the_unions_the_steps_read_hold_no_list():
    """The per-replica and partition steps' inputs are unions of kinds of rows, each kind's
    columns null in the others' rows: a list column there would be null in most rows, which
    costs Spark's Arrow writer time quadratic in a batch's rows (spark_jobs/tasks.py, before
    REPLICA_STREAM_IN)."""
    for schema in (tasks.REPLICA_STREAM_IN, tasks.PARTITION_IN):
        assert [f.name for f in schema if _lists(f.type)] == []
    assert "replica_differences" in tasks.ASSESSED_ONLY and set(tasks.ASSESSED_ONLY) < set(R.PARTITION_STATE.names)


def _listed(cluster=CLUSTER):
    listing = list_copy([cluster])
    out = []
    for listed in listing.replicas:
        out.append((pipeline.replica_info(listed), read_replica(listed.replica).facts))
    return sorted(out, key=lambda x: (x[0]["broker"], x[0]["topic"], x[0]["partition"]))


def _stream_rows(listed):
    """What scan.replica_stream_input hands the Python side: per replica its listing row, then its
    batch facts in log order."""
    rows = []
    for info, facts in listed:
        key = {k: info[k] for k in ("broker", "topic", "partition")}
        rows.append({**key, "kind": tasks.STREAM_INFO, "info": _info_json(info)})
        # each batch's segment: the last one based at or below it (the offset-order rules check the
        # batches of a segment against its base offset and the next one's)
        bases = [s["base_offset"] for s in info["segments"]]
        rows.extend({**key, "kind": tasks.STREAM_BATCH, "position": i, **f._asdict(),
                     "segment_base_offset": bases[max(bisect_right(bases, f.base_offset) - 1, 0)] if bases else 0}
                    for i, f in enumerate(facts))
    return rows


_WHOLE = (None, 0, 1)


def _expand_rows(batches) -> dict[str, list[tuple]]:
    """tasks.OUT batches by where their rows go, each row with its byte-range keys: a blob's
    rows under "table:<name>" (its table), a run's closed spans (with their topic and
    partition) under "span", a run's states under "state" (through Arrow, as _routed has
    them), the narrow and tally rows under their kind."""
    out: dict[str, list[tuple]] = {}
    for batch in batches:
        assert batch.schema.equals(tasks.OUT)
        for r in batch.to_pylist():
            kind, keys = r["record_type"], (r["segment"], r["range_index"], r["ranges"])
            if kind == "blob":
                rows = [x for b in tasks.blob_batches(r["blob"]["data"]) for x in b.to_pylist()]
                assert len(rows) == r["blob"]["rows"] > 0
                out.setdefault("table:" + r["blob"]["table"], []).extend((keys, x) for x in rows)
            elif kind == "span_run":
                run = r["span_run"]
                spans = [dict(zip(pipeline.CLOSED_SPAN_COLUMNS, v)) for v in spool.unpack(run["data"])]
                assert len(spans) == run["spans"] > 0
                assert {c: run[c] for c in pipeline.CLOSED_SPAN_ORDER} == {c: spans[0][c] for c in
                                                                          pipeline.CLOSED_SPAN_ORDER}
                assert sorted(spans, key=itemgetter(*pipeline.CLOSED_SPAN_ORDER)) == spans
                out.setdefault("span", []).extend((keys, {"topic": r["topic"], "partition": r["partition"], **x})
                                                  for x in spans)
            elif kind == "state_run":
                run = r["state_run"]
                states = [dict(zip(tasks.PARTITION_STATE_IN.names, v)) for v in spool.unpack(run["data"])]
                assert len(states) == run["states"] > 0
                assert {(s["topic"], s["partition"]) for s in states} == {(r["topic"], r["partition"])}
                out.setdefault("state", []).extend(
                    (keys, x) for x in pa.Table.from_pylist(states, schema=tasks.PARTITION_STATE_IN).to_pylist())
            else:
                out.setdefault(kind, []).append((keys, r[kind]))
    return out


def _expand(batches) -> dict[str, list[str]]:
    """_expand_rows, each row a repr, sorted: comparable as a whole."""
    return {k: sorted(map(repr, v)) for k, v in _expand_rows(batches).items()}


_NARROW = {"state": tasks.PARTITION_STATE_IN, "open_txn": R.OPEN_TXNS}
#: A closed span as _expand_rows gives it out of its run.
_CLOSED_SPAN = pa.schema([R.TXN_SPANS.field(n) for n in ("topic", "partition", *pipeline.CLOSED_SPAN_COLUMNS)])


def _routed(pairs, keys=_WHOLE) -> dict[str, list[str]]:
    """What tasks.OUT should hold of the (kind, row) pairs the pipeline makes (a unit's, with
    its byte-range ``keys``, or a replica's): each table's rows (pipeline.TABLE_OF; batch rows
    and DAMAGED ones in batches) under "table:<name>", the partition step's rows (state,
    open_txn, closed spans' keys) under their kind, a split file's files row and ranges under
    the tally's kinds; each as _expand writes it, normalized through Arrow."""
    by: dict[str, tuple[pa.Schema, list]] = {}

    def put(name, schema, row):
        by.setdefault(name, (schema, []))[1].append(row)

    for kind, row in pairs:
        if kind in pipeline.BATCH_KINDS:
            put("table:batches", R.BATCHES, row)
        elif kind == "range":
            put("range", tasks.RANGES, row)
        elif kind == "file" and keys != _WHOLE:
            put("split_file", tasks.TALLY_MEMBERS["split_file"], {**row, "range_index": keys[1]})
        elif kind in ("state", "open_txn"):
            put(kind, _NARROW[kind], row)
        else:
            if kind == "span" and row["end_marker_offset"] is not None:
                put("span", _CLOSED_SPAN, row)
            table = pipeline.TABLE_OF[kind]
            put("table:" + table, R.row_schema(table), row)
    return {name: sorted(repr((keys, x)) for x in pa.Table.from_pylist(rows, schema=schema).to_pylist())
            for name, (schema, rows) in by.items()}


def _merged(*parts: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in parts:
        for k, v in p.items():
            out.setdefault(k, []).extend(v)
    return {k: sorted(v) for k, v in out.items()}


_TALLY_ONLY = ("internal", "newest_batch", "newest_record")


def _tables_and_steps(expanded):
    """An _expand result without the tally rows computed from the others (internal states,
    newest times): those are checked on their own."""
    return {k: v for k, v in expanded.items() if k not in _TALLY_ONLY}


@pytest.mark.parametrize("chunk", [1, 2, 7, 10_000])
def test_replica_stream_equals_one_call_per_replica(chunk):
    listed = _listed()
    assert any(not facts for _, facts in listed)  # replicas with no batches are in the stream too
    if chunk < 10:  # and replicas whose batches are cut across Arrow batches
        assert any(len(facts) > chunk for _, facts in listed)
    stream = pa.Table.from_pylist(_stream_rows(listed), schema=_STREAM).to_batches(max_chunksize=chunk)
    got = _expand(tasks.replica_stream(iter(stream)))
    assert _tables_and_steps(got) == _merged(*(_routed(pipeline.replica_rows(info, facts)) for info, facts in listed))
    assert len(got["state"]) == len(listed)  # one state row per replica, also the empty ones
    assert {k for k in got if k.startswith("table:")} >= {"table:producer_state", "table:txn_spans", "table:files"}


def test_states_leave_packed_a_partition_at_a_time():
    # A task's states cross Spark as one row per partition (tasks.STATE_RUN), not one per
    # replica: the replicas of a partition replayed by one task share a row.
    listed = _listed()
    stream = pa.Table.from_pylist(_stream_rows(listed), schema=_STREAM).to_batches()
    kinds = [k for b in tasks.replica_stream(iter(stream)) for k in b.column("record_type").to_pylist()]
    partitions = {(info["topic"], info["partition"]) for info, _ in listed}
    assert len(partitions) < len(listed)   # partitions of several replicas
    assert "state" not in kinds and kinds.count("state_run") == len(partitions)


@pytest.mark.parametrize("flush", [1, 2, 20_000])
def test_replica_stream_flushes_rows_as_they_are_made(monkeypatch, flush):
    # A closed span's keys leave as its marker closes it: with a small flush, Arrow batches come
    # out while the replica's batches are still being read, never more than _FLUSH_ROWS narrow
    # rows each; the tables' rows leave as blobs.
    monkeypatch.setattr(tasks, "_FLUSH_ROWS", flush)
    listed = [max(_listed(REPO / "fixtures" / "tv2" / "brokers"),  # the replica with the most end markers
                  key=lambda x: sum(f.is_control and f.producer_id >= 0 for f in x[1]))]
    stream = pa.Table.from_pylist(_stream_rows(listed), schema=_STREAM).to_batches(max_chunksize=1)
    fed = []

    def counted():
        for b in stream:
            fed.append(b)
            yield b

    out = tasks.replica_stream(counted())
    first = next(out)
    read_then = len(fed)
    rest = list(out)
    if flush < 3:  # the replica has 3 end markers
        assert read_then < len(stream)  # the first rows came out before the replica was read
        assert first.column("record_type").to_pylist()[0] == "span_run"
    narrow = [b for b in [first, *rest] if "blob" not in b.column("record_type").to_pylist()
              and not set(b.column("record_type").to_pylist()) & {*tasks.TALLY_MEMBERS}]
    assert narrow and all(b.num_rows <= flush for b in narrow)
    assert _tables_and_steps(_expand([first, *rest])) == _routed(pipeline.replica_rows(*listed[0]))


def test_blobs_are_handed_over_once_they_hold_blob_bytes(monkeypatch):
    # A task's blobs leave as soon as they hold BLOB_BYTES of Arrow, not only at its end, and
    # their rows are the same whatever the size.
    listed = _listed(REPO / "fixtures" / "tv2" / "brokers")
    stream = pa.Table.from_pylist(_stream_rows(listed), schema=_STREAM).to_batches(max_chunksize=7)
    whole = list(tasks.replica_stream(iter(stream)))
    monkeypatch.setattr(tasks, "_FLUSH_ROWS", 2)
    monkeypatch.setattr(tasks, "BLOB_BYTES", 1)
    small = list(tasks.replica_stream(iter(stream)))

    def blobs(batches):   # the table of each blob row
        return [b["table"] for batch in batches for b in batch.column("blob").to_pylist() if b]

    assert len(blobs(whole)) == len(set(blobs(whole))) < len(blobs(small))   # one blob a table at the end
    assert _expand(small) == _expand(whole)


def test_replica_stream_refuses_batches_of_an_unlisted_replica():
    info, facts = next((i, f) for i, f in _listed() if f)
    rows = [r for r in _stream_rows([(info, facts)]) if r["kind"] == tasks.STREAM_BATCH]
    with pytest.raises(ValueError, match="unlisted replica"):
        list(tasks.replica_stream(iter(pa.Table.from_pylist(rows, schema=_STREAM).to_batches())))


def test_the_decode_walk_is_lazy():
    segment = max(CLUSTER.glob("*/*/*.log"), key=lambda p: p.stat().st_size)
    read = ReplicaRead()
    walk = iter_segment(str(segment), 0, is_txn_log=False, out=read, headers=True)
    next(walk)
    assert read.batches == 1  # one batch read, not the segment
    rest = sum(1 for _ in walk)
    assert read.batches == rest + 1 > 1


def _unit_keys(u):
    return (u["file"], u["range_index"], u["ranges"]) if u["ranges"] > 1 else _WHOLE


def _unit_rows(u, batches=True):
    """What the decode of one unit (no replay) gives, routed as tasks.OUT holds it."""
    key = R.replica_key(u["broker"], u["topic"], u["partition"])
    pairs = [(kind, R.batch_row(*item, key, u["file"], u["segment_base_offset"]) if kind in pipeline.BATCH_KINDS
              else item) for kind, item in pipeline.decode(u, headers=batches)]
    return _routed(pairs, _unit_keys(u))


@pytest.mark.parametrize("flush", [3, 20_000])
def test_decode_units_gives_the_rows_of_each_unit(monkeypatch, flush):
    # Batch rows are built column-wise, the rest row by row, many units to a blob: the blobs'
    # rows must be each unit's rows as the local driver's row builders make them, a split
    # file's byte ranges each in blobs of their own (their keys), kept or not as a whole.
    from spark_jobs.scan import list_inputs, plan_tasks

    monkeypatch.setattr(tasks, "_FLUSH_ROWS", flush)
    units = [u for group in plan_tasks(list_inputs([CLUSTER], split_bytes=4096).units, 2) for u in group]
    assert any(u["ranges"] > 1 for u in units)
    got = _expand(tasks.decode_units(iter(units)))
    assert len(got["table:batches"]) > 100
    want = _merged(*(_unit_rows(u) for u in units))
    assert _tables_and_steps({k: v for k, v in got.items() if k != "fact"}) == want
    # no replica is replayed here: every batch's fact goes to the per-replica step too
    assert len(got["fact"]) == len(got["table:batches"])


def _decoded(units, batches=True):
    return _expand(tasks.decode_units(iter(units), batches=batches))


@pytest.mark.parametrize("flush", [3, 20_000])
def test_decode_units_replays_the_replicas_it_reads_whole(monkeypatch, flush):
    # A replica whose units carry its listing row is replayed by the decode task: its rows are
    # the per-replica step's for that replica (replica_rows over its checksum-valid batches),
    # whatever the flushes, and the segments' own rows are those of a decode that replays
    # nothing, no fact among them.
    from spark_jobs.scan import list_inputs, plan_tasks

    monkeypatch.setattr(tasks, "_FLUSH_ROWS", flush)
    cluster = REPO / "fixtures" / "tv2" / "brokers"
    listing = list_inputs([cluster])
    units = [u for group in plan_tasks(listing.units, 2, replicas=listing.replicas) for u in group]
    assert sum(u["replica"] is not None for u in units if "replica" in u) == len(listing.replicas)
    assert any(len(info["segments"]) > 1 for info in listing.replicas)
    got = _decoded(units)
    assert "fact" not in got
    want = _merged(*(_unit_rows(u) for u in units),
                   *(_routed(pipeline.replica_rows(info, facts)) for info, facts in _listed(cluster)))
    assert _tables_and_steps(got) == want
    assert {"state", "span", "table:producer_state", "table:txn_spans", "table:producer_snapshots",
            "table:files"} <= set(got)


def _mixed_units():
    """Planned units of the hanging cluster where some replicas are replayed by their task and
    others (a segment split into byte ranges) are not."""
    from spark_jobs.scan import list_inputs, plan_tasks

    listing = list_inputs([CLUSTER], split_bytes=4096)
    units = [u for group in plan_tasks(listing.units, 2, replicas=listing.replicas) for u in group]
    replayed = {(u["broker"], u["topic"], u["partition"]) for u in units if u.get("replica")}
    assert replayed and any((u["broker"], u["topic"], u["partition"]) not in replayed for u in units)
    return units, replayed


@pytest.mark.parametrize("flush", [3, 20_000])
def test_without_batches_the_decode_makes_no_batch_row(monkeypatch, flush):
    # The batches table not asked for: no batch struct is built; a replayed replica's batches
    # leave nothing, another's leave their facts (the per-replica step's input), equal to the
    # batch rows' columns of the same batches; every other row is as with batch rows.
    units, replayed = _mixed_units()
    monkeypatch.setattr(tasks, "_FLUSH_ROWS", flush)
    with_batches = list(tasks.decode_units(iter(units)))

    def no_batch_rows(*args):
        raise AssertionError("a batch struct was built")

    monkeypatch.setattr(R, "batch_struct", no_batch_rows)
    without = list(tasks.decode_units(iter(units), batches=False))
    w, wo = _expand(with_batches), _expand(without)
    assert "table:batches" not in wo and "fact" in wo
    assert {k: v for k, v in wo.items() if k != "fact"} == {k: v for k, v in w.items()
                                                             if k not in ("fact", "table:batches")}
    assert wo["fact"] == w["fact"]
    names = tasks.FACTS.names

    def place(keys, row):
        return repr((keys, [row[n] for n in names])), (row["broker"], row["topic"], row["partition"])

    batch_rows = _expand_rows(with_batches)["table:batches"]
    assert all(row["crc_valid"] for _, row in batch_rows)  # a healthy copy
    want = sorted(p for p, replica in (place(*r) for r in batch_rows) if replica not in replayed)
    got = [place(*r) for r in _expand_rows(without)["fact"]]
    assert want and sorted(p for p, _ in got) == want
    assert not [p for p, replica in got if replica in replayed]


def test_the_source_plans_a_partition_per_group_and_ships_no_plan_to_tasks():
    # spark_jobs.source without Spark: the planner's partitions are the planned groups, the
    # reader a task gets carries no plan, and it reads its group as tasks.decode_units does.
    import pickle

    from pyspark import cloudpickle

    from spark_jobs import source
    from spark_jobs.scan import list_inputs, plan_tasks

    listing = list_inputs([REPO / "fixtures" / "tv2" / "brokers"], split_bytes=4096)
    groups = plan_tasks(listing.units, 3, replicas=listing.replicas)
    assert len(groups) == 3
    plan = source.encode_plan(groups)
    data_source = source.DecodeSource({"plan": plan, "batches": "false"})
    assert data_source.schema() == tasks_schema()
    reader = data_source.reader(data_source.schema())
    assert "plan" not in data_source.options  # the source Spark ships to the tasks
    partitions = reader.partitions()
    assert [source.decode_group(p.value) for p in partitions] == groups
    shipped = cloudpickle.dumps(reader)
    assert plan.encode() not in shipped and len(shipped) == len(cloudpickle.dumps(source.DecodeReader("", batches=False)))
    task_reader = pickle.loads(shipped)
    assert task_reader._plan is None
    for p in partitions:
        assert _expand(task_reader.read(p)) == _decoded(source.decode_group(p.value), batches=False)
    assert list(task_reader.read(type(partitions[0])(None))) == []  # Spark's partition for no group


def test_a_group_is_decoded_as_given():
    """The task gets back the units encode_group was given, whatever their keys and values (a
    replica's listing row on some units only, paths in URIs, lists, nested rows)."""
    from spark_jobs import source

    folder = "/copy/broker-1/orders-0"
    listing = {"broker": 1, "topic": "orders", "partition": 0, "path": folder,
               "segments": [{"base_offset": b, "file": f"{folder}/{b:020d}.log"} for b in (0, 50)],
               "snapshots": [], "indexes": None, "txn_indexes": [{"base_offset": 0, "file": "no-folder.txnindex"}],
               "hw_checkpoint": 7, "dir_gap": None, "cleaner_checkpoint": None}
    group = [{"broker": 1, "topic": "orders", "partition": 0, "file": listing["segments"][i]["file"], "size": 10,
              **({"replica": listing} if i == 0 else {}), "task": 0} for i in (0, 1)]
    group += [{"broker": 2, "topic": "t", "partition": 3, "file": "s3://bucket/copy/broker-2/t-3/00000000000000000000.log",
               "size": 5, "task": 0, "extra": [1, 2], "nested": {"path": "x/y", "file": None}},
              {"broker": 2, "topic": "t", "partition": 3, "file": None, "size": 0, "task": 0, "extra": []}]
    value = source.encode_group(group)
    assert source.decode_group(value) == group
    assert all(source.decode_group(source.encode_group(g)) == g for g in ([], [{}], [{}, {"a": 1}], [{"file": 1}]))


def test_the_source_carries_the_clients_storage_options_to_its_tasks():
    # A Spark Connect server's workers get no environment from the client: the options travel
    # with the source (not as plain text) to each task, which reads its stores with them.
    import pickle

    from pyspark import cloudpickle

    from logscan.logdir import store
    from spark_jobs import source
    from spark_jobs.scan import list_inputs, plan_tasks

    listing = list_inputs([REPO / "fixtures" / "tv2" / "brokers"], split_bytes=1 << 30)
    groups = plan_tasks(listing.units, 1, replicas=listing.replicas)
    options = {"endpoint_override": "127.0.0.1:9", "scheme": "http", "secret_key": "not-in-plain-text"}
    value = source.encode_storage(options)
    assert "not-in-plain-text" not in value and source._STORAGE.endswith("secret")   # Spark redacts the key
    data_source = source.DecodeSource({"plan": source.encode_plan(groups), "batches": "false",
                                       source._STORAGE: value})
    reader = data_source.reader(data_source.schema())
    assert source._STORAGE not in data_source.options
    (partition,) = reader.partitions()
    task_reader = pickle.loads(cloudpickle.dumps(reader))
    assert task_reader.storage == options
    store.configure()
    try:
        assert _expand(task_reader.read(partition)) == _decoded(source.decode_group(partition.value), batches=False)
        assert store.options() == options   # the task's stores are made with them
    finally:
        store.configure()
    # without options nothing is configured in the task (the worker's own stand)
    plain = source.DecodeSource({"plan": source.encode_plan(groups), "batches": "false"})
    assert pickle.loads(cloudpickle.dumps(plain.reader(plain.schema()))).storage == {}


def tasks_schema():
    from spark_jobs.schemas import spark_schema

    return spark_schema(tasks.OUT)


def test_a_decode_task_refuses_a_replica_whose_segments_come_out_of_order():
    from spark_jobs.scan import list_inputs

    listing = list_inputs([REPO / "fixtures" / "tv2" / "brokers"])
    info = next(r for r in listing.replicas if len(r["segments"]) > 1)
    own = [u for u in listing.units if (u["broker"], u["topic"], u["partition"]) == (
        info["broker"], info["topic"], info["partition"])]
    with pytest.raises(ValueError, match="not the listed"):
        _decoded([{**own[-1], "replica": info}, *own[:-1]])
    with pytest.raises(ValueError, match="not the listed"):  # a segment missing
        _decoded([{**own[0], "replica": info}, *own[2:]])


def _decode_input():
    from spark_jobs.scan import list_inputs

    return list_inputs([CLUSTER]).units


def _replica_input():
    return pa.Table.from_pylist(_stream_rows(_listed()), schema=_STREAM).to_batches(max_chunksize=7)


@pytest.mark.parametrize("was_enabled", [True, False])
@pytest.mark.parametrize("step, maker, make_input", [("decode_units", "decode", _decode_input),
                                                     ("replica_stream", "replica_rows", _replica_input)])
def test_a_step_pauses_the_collector_and_frees_cycles_at_each_flush(monkeypatch, was_enabled, step, maker,
                                                                     make_input):
    # The decode and the replica step run with Python's cyclic collector paused and collect the
    # young generations themselves at each flush: a cycle left while a flush's rows were made
    # (one per row here) is gone once that flush's batch is handed out (batch rows and the
    # others' flushes alike), and the collector is left as it was found.
    monkeypatch.setattr(tasks, "_FLUSH_ROWS", 3)
    monkeypatch.setattr(tasks, "BLOB_BYTES", 1)   # every table's flush hands a blob over
    cycles = []
    real = getattr(tasks, maker)

    def leaving_cycles(*args, **kw):
        for item in real(*args, **kw):
            _Cycle(cycles)
            yield item

    monkeypatch.setattr(tasks, maker, leaving_cycles)
    work = make_input()
    (gc.enable if was_enabled else gc.disable)()
    try:
        flushes = 0
        for batch in getattr(tasks, step)(iter(work)):
            assert not gc.isenabled()
            flushes += 1
            assert all(ref() is None for ref in cycles), "a cycle outlived its flush"
        assert flushes > 10 and len(cycles) > flushes and gc.isenabled() is was_enabled
    finally:
        gc.enable()


@pytest.mark.parametrize("in_task", [True, False])
@pytest.mark.parametrize("step, make_input", [("decode_units", _decode_input), ("replica_stream", _replica_input)])
def test_a_step_in_a_spark_task_freezes_the_heap_it_starts_with(monkeypatch, in_task, step, make_input):
    # PySpark's daemon runs a full collection after every task of a reused worker: a step
    # moves the objects alive as its task starts to the permanent generation, which that
    # collection skips. Outside a Spark task (here, the tests) nothing is frozen.
    from pyspark import TaskContext

    if in_task:
        monkeypatch.setattr(TaskContext, "_taskContext", object.__new__(TaskContext))
    work = make_input()
    marker = [[]]
    gc.unfreeze()
    try:
        for _ in getattr(tasks, step)(iter(work)):
            pass
        assert (gc.get_freeze_count() > 0) is in_task
        assert all(o is not marker for o in gc.get_objects()) is in_task, "the marker's freezing"
    finally:
        gc.unfreeze()


# --- the partition step ------------------------------------------------------------------

_PARTITION_IN = tasks.PARTITION_IN


def _partition_case(cluster, run=10_000, change=lambda span: span):
    """The partition step's input as scan.build_tables makes it (the replica step's runs of
    states and of closed spans, TaskOutput's with ``run`` rows at most, and its open-transaction
    rows, each with the partition's leader, sorted as there) and the local driver's result for the
    same copy. ``change``: applied to each closed span before it joins its run."""
    result = local.scan([cluster])
    rows = []
    out = tasks.TaskOutput(ceiling_ms=pipeline.timestamp_ceiling(), flush_rows=run)

    def told(r):
        leaders = result.leaders.get((r["topic"], r["partition"]), {})
        return {"leader": leaders.get("leader"), "last_leader": leaders.get("last_leader")}

    for info, facts in _listed(cluster):
        for kind, row in pipeline.replica_rows(info, facts):
            if kind == "open_txn":
                rows.append({"record_type": kind, "topic": row["topic"], "partition": row["partition"], kind: row,
                             **told(row)})
            elif kind == "state":
                out.add(kind, row)
            elif kind == "span" and row["end_marker_offset"] is not None:
                out.add(kind, change(dict(row)))
    for batch in out.finish():
        rows.extend({**r, **told(r)} for r in batch.to_pylist() if r["record_type"] in ("state_run", "span_run"))
    order = {k: i for i, k in enumerate(tasks.PARTITION_ROW_ORDER)}

    def key(r):
        first = r.get("span_run") or {}
        return (r["topic"], r["partition"], order[r["record_type"]],
                *((v is not None, v) for v in (first.get(c) for c in pipeline.CLOSED_SPAN_ORDER)))

    return result, sorted(rows, key=key)


def _closed_spans(rows):
    """The closed spans of a partition case's span_run rows, with their topic and partition."""
    return [{"topic": r["topic"], "partition": r["partition"], **dict(zip(pipeline.CLOSED_SPAN_COLUMNS, v))}
            for r in rows if r["record_type"] == "span_run" for v in spool.unpack(r["span_run"]["data"])]


def _partition_out(result, rows, chunk):
    """The partition step's rows as (record_type, row) dicts, read back from the Parquet files
    it wrote (the WRITTEN rows it hands Spark name them)."""
    # The Spark job passes a Broadcast of the index; in process, its .value will do.
    index = SimpleNamespace(value=pipeline.coordinator_view(result.tables["coordinator_state"]).index)
    with tempfile.TemporaryDirectory() as output:
        step = tasks.partition_stream(index,
                                      as_of_ms=result.as_of_ms,
                                      max_timeout_ms=pipeline.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                                      coordinator=result.coordinator,
                                      bootstrap=local.DEFAULT_BOOTSTRAP, output=output, scan_id="t")
        stream = pa.Table.from_pylist(rows, schema=_PARTITION_IN).to_batches(max_chunksize=chunk)
        written = pa.Table.from_batches(list(step(iter(stream))), schema=WRITTEN).to_pylist()
        kinds = {table: kind for kind, table in pipeline.ASSESSED.items()}
        out = []
        for w in written:
            for row in pq.read_table(f"{output}/{w['table']}/{w['path']}").drop_columns(["as_of"]).to_pylist():
                out.append({"record_type": kinds[w["table"]], kinds[w["table"]]: row})
        assert sum(w["rows"] for w in written) == len(out)
        return out


@pytest.fixture(scope="module", params=CLUSTERS, ids=[c.parent.name for c in CLUSTERS])
def partition_case(request):
    return _partition_case(request.param)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 10_000])
def test_partition_stream_equals_the_local_driver(partition_case, chunk):
    result, rows = partition_case
    got = _partition_out(result, rows, chunk)
    want = result.tables
    for kind, table in (("state", "partition_state"), ("candidate", "hanging_candidates"), ("plan", "abort_plans")):
        # the local rows through Arrow, as their Parquet holds them (a time column: microseconds -> datetime)
        local = pa.Table.from_pylist(want[table], schema=R.TABLES[table]).to_pylist()
        assert sorted(repr(sorted(r[kind].items())) for r in got if r["record_type"] == kind) == \
            sorted(repr(sorted(r.items())) for r in local), table


@pytest.mark.parametrize("run", [1, 2])
def test_partition_stream_merges_runs_of_any_size(run):
    # Runs of a few spans each: every partition's runs from its replicas interleaved, merged
    # back into the order the local driver compares them in, whatever the Arrow batches.
    cluster = REPO / "fixtures" / "tv2" / "brokers"
    result, rows = _partition_case(cluster, run=run)
    whole = _partition_case(cluster)[1]
    assert len(rows) > len(whole) and _closed_spans(rows) != _closed_spans(whole)   # interleaved
    assert sorted(map(repr, _closed_spans(rows))) == sorted(map(repr, _closed_spans(whole)))
    for chunk in (1, 7, 10_000):
        got = _partition_out(result, rows, chunk)
        local = pa.Table.from_pylist(result.tables["partition_state"], schema=R.PARTITION_STATE).to_pylist()
        assert sorted(repr(sorted(r["state"].items())) for r in got if r["record_type"] == "state") == \
            sorted(repr(sorted(r.items())) for r in local)


@pytest.mark.parametrize("chunk", [1, 2, 3, 10_000])
def test_partition_stream_names_a_marker_one_replica_holds_differently(chunk):
    # One replica's COMMIT marker turned into an ABORT: its row and its peers' must name it,
    # whichever Arrow batches and runs the partition's spans fall in.
    cluster = REPO / "fixtures" / "tv2" / "brokers"
    spans = [s for s in _closed_spans(_partition_case(cluster)[1]) if s["outcome"] == "COMMIT"]
    changed = {**spans[len(spans) // 2], "outcome": "ABORT"}
    at = itemgetter("topic", "partition", "broker", "end_marker_offset")

    def change(span):
        return {**span, "outcome": "ABORT"} if at(span) == at(changed) else span

    result, rows = _partition_case(cluster, run=2, change=change)
    assert sum(r["record_type"] == "span_run" and (r["topic"], r["partition"]) == (changed["topic"], changed["partition"])
               for r in rows) > 3  # the partition's runs cross Arrow batches at the small sizes
    assert changed in _closed_spans(rows)
    states = [r["state"] for r in _partition_out(result, rows, chunk)
              if r["record_type"] == "state" and (r["state"]["topic"], r["state"]["partition"])
              == (changed["topic"], changed["partition"])]
    assert len(states) > 1
    marker = (f"ABORT at {changed['end_marker_offset']} (producer {changed['producer_id']}, "
              f"from {changed['first_offset']})")
    commit = marker.replace("ABORT", "COMMIT", 1)
    for st in states:
        assert st["replicas_agree"] is False
        if st["broker"] == changed["broker"]:
            for peer in states:
                if peer is not st:
                    assert (f"vs broker {peer['broker']}: end markers here only: {marker}; "
                            f"end markers there only: {commit}") in _differences_text(st)
        else:
            assert (f"vs broker {changed['broker']}: end markers here only: {commit}; "
                    f"end markers there only: {marker}") in _differences_text(st)


def _differences_text(state: dict) -> str:
    return P.replica_differences_text(P.Difference(**d) for d in state["replica_differences"])


def test_partition_stream_refuses_rows_out_of_order():
    result, rows = _partition_case(REPO / "fixtures" / "tv2" / "brokers", run=1)
    runs = [(r["topic"], r["partition"]) for r in rows if r["record_type"] == "span_run"]
    key = max(set(runs), key=runs.count)  # the partition with the most closed spans
    first_run = next(i for i, r in enumerate(rows)
                     if r["record_type"] == "span_run" and (r["topic"], r["partition"]) == key)
    state = next(i for i, r in enumerate(rows)
                 if r["record_type"] == "state_run" and (r["topic"], r["partition"]) == key)
    moved = rows[:state] + rows[state + 1:first_run] + [rows[first_run], rows[state]] + rows[first_run + 1:]
    with pytest.raises(ValueError, match="out of order"):
        _partition_out(result, moved, 10_000)
    runs = [i for i, r in enumerate(rows) if r["record_type"] == "span_run" and (r["topic"], r["partition"]) == key]
    swapped = list(rows)
    swapped[runs[0]], swapped[runs[-1]] = swapped[runs[-1]], swapped[runs[0]]
    assert rows[runs[0]]["span_run"]["end_marker_offset"] < rows[runs[-1]]["span_run"]["end_marker_offset"]
    with pytest.raises(ValueError, match="out of order"):
        _partition_out(result, swapped, 10_000)


def _transactions_copy(root: Path, transactions: int, producers: int = 4) -> Path:
    """A one-replica copy of ``transactions`` committed transactions of ``producers``
    transactional producers in turn (a one-record data batch and its commit marker each),
    written by the encoder: a replica whose spans outnumber every buffer of a task."""
    from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch

    folder = root / "brokers" / "broker-0" / "orders-0"
    folder.mkdir(parents=True)
    sequences = [0] * producers
    offset, t0 = 0, 1_700_000_000_000
    with open(folder / "00000000000000000000.log", "wb") as log:
        for i in range(transactions):
            p = i % producers
            log.write(encode_batch([Rec(b"k", b"v" * 40, (), t0 + i)], base_offset=offset, transactional=True,
                                   producer_id=1000 + p, producer_epoch=0, base_sequence=sequences[p]))
            log.write(end_txn_marker_batch(commit=True, coordinator_epoch=0, base_offset=offset + 1,
                                           producer_id=1000 + p, producer_epoch=0, timestamp=t0 + i))
            sequences[p] += 1
            offset += 2
    return root / "brokers"


#: The Arrow pools _replica_stream_peak measured with, alive as long as the process.
_POOLS: list = []


def _replica_stream_peak(cluster: Path) -> tuple[int, int]:
    """(spans, peak bytes) of the per-replica step over the replica of ``cluster``: Python's
    (tracemalloc) plus Arrow's (a pool of its own), its input made as the step reads it."""
    import tracemalloc

    (info, facts), = _listed(cluster)
    key = {k: info[k] for k in ("broker", "topic", "partition")}

    def stream():
        yield pa.RecordBatch.from_pylist([{**key, "kind": tasks.STREAM_INFO, "info": _info_json(info)}], schema=_STREAM)
        for start in range(0, len(facts), 1024):
            yield pa.RecordBatch.from_pylist(
                [{**key, "kind": tasks.STREAM_BATCH, "position": start + i, "segment_base_offset": 0, **f._asdict()}
                 for i, f in enumerate(facts[start:start + 1024])], schema=_STREAM)

    was = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(was)
    _POOLS.append(pool)   # kept: Arrow frees a buffer made here into it, whenever that is
    pa.set_memory_pool(pool)
    tracemalloc.start()
    try:
        spans = 0
        for batch in tasks.replica_stream(stream()):
            spans += sum(r["spans"] for r in batch.column("span_run").to_pylist() if r)
        return spans, tracemalloc.get_traced_memory()[1] + pool.max_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(was)


def test_the_replica_step_memory_does_not_grow_with_the_replica(monkeypatch, tmp_path):
    # Memory bounded by design: what the per-replica step holds (its pending rows, runs and
    # blobs, each capped, and the replica's producer state and open spans) does not grow with
    # the replica's batches or transactions. Its buffers are made small here, so both replicas
    # fill them: then a replica 4x larger peaks at the same memory, within where its flushes
    # fall (~70 KiB either way; a replica 8x larger peaked lower than this one 4x larger),
    # where holding as little as ~40 B a transaction would add ~240 KiB.
    # (Against make bench's 1 GiB and 3 GiB segments, the 8 MiB blobs of the spans were held
    # twice at each flush and not filled by the smaller one: ~20 MiB that read as growth.)
    monkeypatch.setattr(tasks, "_FLUSH_ROWS", 256)
    monkeypatch.setattr(tasks, "BLOB_BYTES", 64 << 10)
    small_copy = _transactions_copy(tmp_path / "small", 2000)
    _replica_stream_peak(small_copy)   # what a first call makes once (caches, interned values)
    small, small_peak = _replica_stream_peak(small_copy)
    large, large_peak = _replica_stream_peak(_transactions_copy(tmp_path / "large", 8000))
    assert (small, large) == (2000, 8000)
    assert large_peak - small_peak < 128 << 10, (small_peak, large_peak)


def _txn_log_batches(partitions: dict[int, int], ids: int = 3, rows: int = 512) -> Iterator[pa.RecordBatch]:
    """TXN_LOG batches of coordinator partitions (partition -> records), each partition's in log
    order and clustered, as scan.py hands them to coordinator_stream: ``ids`` transactional ids
    a partition, each record an id's next state; made as they are read."""
    from logscan.state.coordinator import TxnLogRecord

    states = ("Ongoing", "PrepareCommit", "CompleteCommit")

    def rows_of(partition: int, count: int) -> Iterator[dict]:
        for offset in range(count):
            tid = f"t-{partition}-{offset % ids}"
            rec = TxnLogRecord(partition, offset, tid, states[(offset // ids) % 3], producer_id=partition * 100 + offset % ids,
                               producer_epoch=offset // ids, transaction_timeout_ms=60_000,
                               partitions=(("orders", offset % 4),), last_update_timestamp_ms=1_700_000_000_000 + offset,
                               start_timestamp_ms=1_700_000_000_000, coordinator_epoch=0)
            yield {"broker": 1, "topic": "__transaction_state", "partition": partition,
                   "file": f"/copy/broker-1/__transaction_state-{partition}/{(offset // 1000) * 1000:020d}.log",
                   "position": 100 * (offset % 1000), **R.txn_record_row(rec)}

    chunk: list[dict] = []
    for partition, count in partitions.items():
        for row in rows_of(partition, count):
            chunk.append(row)
            if len(chunk) == rows:
                yield R.to_batch(chunk, R.TXN_LOG)
                chunk = []
    if chunk:
        yield R.to_batch(chunk, R.TXN_LOG)


def test_the_coordinator_step_loads_each_partition_of_its_stream():
    # Several coordinator partitions in one task's stream, one straddling batches: each loaded
    # alone, as pipeline.coordinator loads it (the last record of each transactional id).
    partitions = {0: 7, 3: 1300, 5: 1}
    got = [r for b in tasks.coordinator_stream(_txn_log_batches(partitions)) for r in b.to_pylist()]
    want = []
    for p in partitions:
        rows = [r for b in _txn_log_batches({p: partitions[p]}) for r in b.to_pylist()]
        want += R.to_batch(pipeline.coordinator(rows), R.COORDINATOR_STATE).to_pylist()
    assert got == want
    assert {(r["partition"], r["transactional_id"]) for r in got} == {
        (p, f"t-{p}-{i}") for p, n in partitions.items() for i in range(min(3, n))}
    last = {(r["partition"], r["transactional_id"]): r["offset"] for r in got}
    assert last[(3, "t-3-0")] == 1299 and last[(3, "t-3-2")] == 1298


def test_the_coordinator_step_refuses_records_out_of_log_order():
    batches = list(_txn_log_batches({2: 40}, rows=16))
    swapped = [batches[1], batches[0], *batches[2:]]
    with pytest.raises(ValueError, match="out of order"):
        list(tasks.coordinator_stream(iter(swapped)))


def _coordinator_stream_peak(records: int) -> int:
    """Peak bytes (Python's, tracemalloc, plus Arrow's own pool) of the coordinator step over
    one coordinator partition of ``records`` records of 3 transactional ids."""
    import tracemalloc

    was = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(was)
    _POOLS.append(pool)
    pa.set_memory_pool(pool)
    tracemalloc.start()
    try:
        out = [b.num_rows for b in tasks.coordinator_stream(_txn_log_batches({1: records}))]
        assert out == [3]
        return tracemalloc.get_traced_memory()[1] + pool.max_memory()
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(was)


def test_the_coordinator_step_memory_does_not_grow_with_the_partition():
    # Memory bounded by design: the step holds a coordinator partition's last record per
    # transactional id and one input batch, not the partition's records. As an applyInArrow
    # group it held them all, as Arrow and as a dict per row: 3.5 MB for 2,000 records here,
    # 28 MB for 16,000; streamed, 1.60-1.71 MB for 2,000 to 32,000 (the spread is the
    # collector's and the pool's timing, not a size per record).
    _coordinator_stream_peak(2_000)   # what a first call makes once
    small, large = _coordinator_stream_peak(2_000), _coordinator_stream_peak(16_000)
    assert large - small < 512 << 10, (small, large)
