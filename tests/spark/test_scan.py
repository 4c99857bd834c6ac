"""The Spark scan against the single-process driver on the real-broker fixture clusters.

One implementation of the rules, two drivers: every table the Spark job writes to Delta must
hold exactly the rows of the local executor's tables (logscan.scan.local.scan). The
local driver itself is checked against Kafka's tools in tests/scan/test_local_vs_kafka.py.
One SparkSession for the module (a start costs seconds); each cluster is scanned once into a
shared output, one scan_id per cluster, with every table (--tables all); the other scans
write the default tables (every table but batches) unless they read batches.
"""

import gc
import io
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402

from logscan.scan import rows as R  # noqa: E402
from logscan.scan import summary as summary_text  # noqa: E402
from logscan.scan.local import scan as local_scan  # noqa: E402
from spark_jobs import scan as spark_scan  # noqa: E402
from spark_jobs import source, tasks  # noqa: E402
from logscan.scan.output import TAGS  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402
from tests.killed_fixtures import FIXTURE_CLUSTERS, KILLED_CLUSTERS, TRIMMED_CLUSTERS  # noqa: E402
from tests.spark import assert_tables_equal, local_session, table  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# with the SIGKILLed-broker clusters of 3.9.2 and 4.4.0 and the trimmed ones (marker epochs on
# 4.4.0, share groups on 4.1.1 and 4.4.0), restored (tests/killed_fixtures.py)
CLUSTERS = sorted(FIXTURE_CLUSTERS, key=lambda p: p.name)
ROOTS = {c.name: c for c in CLUSTERS}  # scan_id -> the cluster's folder
#: Tables a fixture cluster always has rows in.
NEVER_EMPTY = {"files", "batches", "txn_log", "coordinator_state", "producer_snapshots", "producer_state",
               "txn_spans", "partition_state", "partition_impact", "transactional_id_history"}
#: The share-group clusters' only producer is idempotent (fixtures/trimmed/README.md): no
#: transactional id, no coordinator record, no transaction.
TRANSACTIONAL = {"txn_log", "coordinator_state", "txn_spans", "transactional_id_history"}
WITHOUT_TRANSACTIONS = {name for name in TRIMMED_CLUSTERS if name.startswith("share-")}
#: What a cluster's hang holds back, by cluster: tables with rows, and partition_impact's held
#: bytes (tests/scan/test_offsets_fixture.py and tests/state/test_retention.py hold them to
#: Kafka's tools), so that the equality of those tables is not that of empty ones.
HELD_BACK = {"offsets": {"committed_offsets", "affected_groups"},
             "offsets-4.4": {"committed_offsets", "affected_groups"},
             "offsets-3.9": {"committed_offsets", "affected_groups"}, "retention": {"cleaner_held_bytes"},
             "tiered": {"tiering_held_bytes"}}

pytestmark = pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                reason="Delta jars missing: run `make delta-jars`")


@pytest.fixture(scope="module")
def spark():
    with local_session("logscan-tests", 2) as session:
        yield session


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    return str(tmp_path_factory.mktemp("delta"))


def _as_of(root: Path) -> int:
    return json.loads((root / "truth" / "truth.json").read_text())["recorded_at_ms"]


#: The restored clusters (killed brokers, trimmed files; 3.9.2, 4.1.1's share groups and 4.4.0)
#: are heavy: ~20 more tests each on the module's one session. fixtures/kafka-3.9 and kafka-4.4
#: keep every release in a run without them (-m "not heavy").
RESTORED = {c.name for c in [*KILLED_CLUSTERS, *TRIMMED_CLUSTERS.values()]}


@pytest.fixture(scope="module", params=[pytest.param(c, marks=pytest.mark.heavy) if c.name in RESTORED else c
                                        for c in CLUSTERS], ids=[c.name for c in CLUSTERS])
def cluster(request, spark, output):
    root = request.param
    as_of = _as_of(root)
    scan_id, as_of_ms = spark_scan.run(spark, [root / "brokers"], output, scan_id=root.name, as_of_ms=as_of,
                                       tables=spark_scan.TABLES)
    assert (scan_id, as_of_ms) == (root.name, as_of)
    result = local_scan([root / "brokers"], as_of_ms=as_of, keep_batches=True)
    return root.name, result, result.tables


@pytest.mark.parametrize("name", list(R.TABLES))
def test_tables_equal_the_local_driver(spark, output, cluster, name):
    scan_id, _, want = cluster
    if scan_id in WITHOUT_TRANSACTIONS and name in TRANSACTIONAL:
        assert not want[name], name
    elif name in NEVER_EMPTY:
        assert want[name], name
    held = HELD_BACK.get(scan_id, set())
    if name in held:
        assert want[name], name
    if name == "partition_impact":
        for column in held & set(R.PARTITION_IMPACT.names):
            assert any(r[column] for r in want[name]), column
    assert_tables_equal(spark, output, scan_id, want, [name])


def test_every_batch_and_segment_is_accounted_for(spark, output, cluster):
    scan_id, result, _ = cluster
    files = table(spark, output, "files", scan_id)
    segments = files.where("kind = 'log_segment'")
    assert segments.where("status != 'ok'").count() == 0
    # no damage: only what the copy lacks (the follower the harness cut after the copy)
    corruptions = table(spark, output, "corruptions", scan_id)
    assert sorted((r.file, r.reason) for r in corruptions.collect()) == sorted(
        (f.path, f.reason) for f in result.findings)
    assert {f.reason for f in result.findings} <= {"incomplete"}
    batches = table(spark, output, "batches", scan_id)
    assert batches.count() == segments.agg(F.sum("batches")).first()[0] > 0
    assert batches.where("NOT crc_valid OR magic != 2").count() == 0
    assert files.where("kind = 'producer_snapshot' AND status != 'ok'").count() == 0


def test_leaders_equal_kafka_topics_describe(spark, output, cluster):
    scan_id, _, _ = cluster
    truth = json.loads((ROOTS[scan_id] / "truth" / "truth.json").read_text())
    leaders = {(r.topic, r.partition): r.broker
               for r in table(spark, output, "partition_state", scan_id).where("is_leader").collect()}
    assert {(p["topic"], p["partition"]): p["leader"] for p in truth["partitions"]}.items() <= leaders.items()


def test_summary_is_the_local_summary_from_spark_aggregates(spark, output, cluster):
    scan_id, result, _ = cluster
    got = spark_scan.figures(output, scan_id, result.as_of_ms)
    assert got.tables == output
    got.tables = None
    assert got == summary_text.table_figures(result.tables, result.as_of_ms)
    text = spark_scan.summary(output, scan_id, result.as_of_ms, 1.0)
    local = io.StringIO()
    summary_text.write_figures(got, local, max_transaction_timeout_ms=900_000)
    assert local.getvalue().rstrip("\n") in text and f"Tables: {output}" in text


def test_every_column_is_commented_and_every_row_tagged(spark, output, cluster):
    scan_id, result, _ = cluster
    for name, schema in R.TABLES.items():
        df = spark.read.format("delta").load(f"{output}/{name}")
        comments = {f.name: f.metadata.get("comment") for f in df.schema.fields}
        assert list(comments) == schema.names + list(TAGS), name
        assert all(comments.values()), (name, comments)
        tags = df.where(F.col("scan_id") == scan_id).select(F.unix_millis("as_of").alias("ms")).distinct().collect()
        assert [t.ms for t in tags] in ([], [result.as_of_ms]), name


def test_rerun_split_into_byte_ranges_replaces_the_scan_with_the_same_rows(spark, output, cluster):
    """Re-running a scan into the same output adds a Delta version, keeps other scans, and
    gives the same rows, here with every segment larger than 256 bytes read as byte ranges
    by several tasks (ranges starting inside batches everywhere)."""
    scan_id, _, want = cluster
    if scan_id != CLUSTERS[-1].name:
        pytest.skip("one re-run is enough (of the last cluster, so other scans are in the tables)")
    root = ROOTS[scan_id]
    listing = spark_scan.list_inputs([root / "brokers"], split_bytes=256)
    assert sum(u["ranges"] > 1 for u in listing.units) > 50
    others = spark.read.format("delta").load(f"{output}/partition_state").where(F.col("scan_id") != scan_id).count()
    assert others > 0 or len(CLUSTERS) == 1
    version = spark.sql(f"DESCRIBE HISTORY delta.`{output}/partition_state`").agg(F.max("version")).first()[0]
    spark_scan.run(spark, [root / "brokers"], output, scan_id=scan_id, as_of_ms=_as_of(root), split_bytes=256,
                   tables=spark_scan.TABLES)
    assert_tables_equal(spark, output, scan_id, want)
    assert spark.sql(f"DESCRIBE HISTORY delta.`{output}/partition_state`").agg(
        F.max("version")).first()[0] == version + 1
    assert spark.read.format("delta").load(f"{output}/partition_state").where(
        F.col("scan_id") != scan_id).count() == others


@pytest.mark.parametrize("tables", ["all", "default"])
def test_the_per_replica_step_gives_the_tables_of_the_replay_in_decode(spark, tmp_path, tables):
    """A scan replays each replica in the decode task that reads it whole (all of them in a
    fixture cluster); the replicas it cannot (too large for one task, or split) go through the
    per-replica step's shuffle, which reads their batch rows, or without the batches table the
    decode's fact rows. Sending every replica through that step gives the same rows."""
    root = CLUSTERS[-1]
    listing = spark_scan.list_inputs([root / "brokers"])
    groups = spark_scan.plan_tasks(listing.units, 2, replicas=listing.replicas)
    assert sum(u.get("replica") is not None for g in groups for u in g) == len(listing.replicas)
    out = str(tmp_path / "delta")
    as_of = _as_of(root)
    names = spark_scan.TABLES if tables == "all" else spark_scan.DEFAULT_TABLES
    spark_scan.run(spark, [root / "brokers"], out, scan_id="stepped", as_of_ms=as_of, replay_in_decode=False,
                   tables=names)
    assert_tables_equal(spark, out, "stepped", local_scan([root / "brokers"], as_of_ms=as_of,
                                                          keep_batches=True).tables, names)
    assert (Path(out) / "batches").exists() is (tables == "all")


def _list_columns(schema, prefix=""):
    """The paths of a Spark schema's list columns, into its structs."""
    from pyspark.sql.types import ArrayType, StructType

    for f in schema.fields:
        if isinstance(f.dataType, ArrayType):
            yield prefix + f.name
        elif isinstance(f.dataType, StructType):
            yield from _list_columns(f.dataType, f"{prefix}{f.name}.")


def test_no_python_step_is_handed_a_list_column_null_in_most_rows(spark, tmp_path, monkeypatch):
    """Spark's Arrow writer for a Python step's input fills a list column's offsets of every
    row since its last non-null one after each row it adds: quadratic in a batch's rows where
    the list is mostly null, as in a tagged union's member holding a list (spark_jobs/tasks.py,
    before REPLICA_STREAM_IN). Every frame build_tables hands a mapInArrow or applyInArrow,
    with every replica through the per-replica step, has each list column non-null in at least
    half its rows."""
    inputs = []
    frame, grouped = type(spark.range(1)), type(spark.range(1).groupBy("id"))
    map_in_arrow, apply_in_arrow = frame.mapInArrow, grouped.applyInArrow

    def mapped(self, *args, **kw):
        inputs.append(("mapInArrow", getattr(args[0], "__name__", "?"), self))
        return map_in_arrow(self, *args, **kw)

    def applied(self, *args, **kw):
        inputs.append(("applyInArrow", getattr(args[0], "__name__", "?"), self._df))
        return apply_in_arrow(self, *args, **kw)

    monkeypatch.setattr(frame, "mapInArrow", mapped)
    monkeypatch.setattr(grouped, "applyInArrow", applied)
    root = FIXTURES / "tv2"   # the fixture with the most end markers: many span rows per partition
    frames = spark_scan.build_tables(spark, [root / "brokers"], str(tmp_path / "delta"), "lists",
                                     as_of_ms=_as_of(root), replay_in_decode=False)
    try:
        names = {name for _, name, _ in inputs}
        assert {"replica_stream", "coordinator_stream", "run"} <= names, names
        checked = 0
        for how, name, df in inputs:
            lists = list(_list_columns(df.schema))
            if not lists:
                continue
            counts = df.agg(F.count(F.lit(1)).alias("rows"),
                            *(F.sum(F.col(c).isNull().cast("int")).alias(str(i)) for i, c in enumerate(lists))).first()
            for i, c in enumerate(lists):
                assert (counts[str(i)] or 0) * 2 <= counts["rows"], \
                    f"{how}({name}): {c} null in {counts[str(i)]} of {counts['rows']} rows"
            checked += counts["rows"] > 0
        assert checked >= 2  # the coordinator's records, the metadata replica
    finally:
        for df in frames.persisted:
            df.unpersist()
        for b in frames.shared:
            b.destroy()


def test_the_default_tables_are_every_table_but_batches(spark, tmp_path):
    """Without --tables the job writes no batches table (its decode makes no batch row) and
    every other table equals the local driver's, here with the segments read as byte ranges
    (their replicas replayed by the per-replica step from the decode's fact rows)."""
    root = CLUSTERS[0]
    out = str(tmp_path / "delta")
    as_of = _as_of(root)
    spark_scan.run(spark, [root / "brokers"], out, scan_id="default", as_of_ms=as_of, split_bytes=256)
    assert sorted(p.name for p in Path(out).iterdir()) == sorted([*spark_scan.DEFAULT_TABLES, R.SCANS_TABLE])
    assert "batches" not in spark_scan.DEFAULT_TABLES and len(spark_scan.DEFAULT_TABLES) == len(R.TABLES) - 1
    # The last commit says the scan is whole: its tables and inputs (logscan.sql.delta.unfinished_scans).
    (done,) = table(spark, out, R.SCANS_TABLE, "default").collect()
    assert (done.tables, done.inputs) == (list(spark_scan.DEFAULT_TABLES), [str(root / "brokers")])
    assert_tables_equal(spark, out, "default", local_scan([root / "brokers"], as_of_ms=as_of).tables,
                        spark_scan.DEFAULT_TABLES)


def test_the_decode_is_the_python_data_source_a_partition_per_planned_task(spark, tmp_path):
    """The scan's decode is spark_jobs.source's Python Data Source: its physical plan scans
    it, with one partition per group plan_tasks makes, and each partition holds the rows of
    its own group's files."""
    root = CLUSTERS[-1]
    frames = spark_scan.build_tables(spark, [root / "brokers"], str(tmp_path / "delta"), "planned",
                                     as_of_ms=_as_of(root))
    try:
        decoded = frames.persisted[0]
        assert f"BatchScan {source.NAME}" in decoded._jdf.queryExecution().executedPlan().toString()
        listing = spark_scan.list_inputs([root / "brokers"])
        groups = spark_scan.plan_tasks(listing.units, spark.sparkContext.defaultParallelism,
                                       replicas=listing.replicas)
        assert len(groups) == decoded.rdd.getNumPartitions() == 2
        blobs = (decoded.where("record_type = 'blob' AND blob.table = 'files'")
                 .select(F.spark_partition_id().alias("task"), "blob.data").collect())
        placed = {(r.task, f["file"]) for r in blobs for b in tasks.blob_batches(r.data)
                  for f in b.to_pylist() if f["kind"] == "log_segment"}
        assert sorted(placed) == sorted((i, u["file"]) for i, g in enumerate(groups) for u in g)
        assert decoded.where("record_type = 'fact'").count() == 0  # all replayed
        assert decoded.where("record_type = 'blob' AND blob.table = 'batches'").count() == 0  # no batches table
    finally:
        for df in frames.persisted:
            df.unpersist()
        for b in frames.shared:
            b.destroy()


def test_each_table_is_written_in_as_many_files_as_its_rows_need(spark, tmp_path):
    """The decode has a partition per decode task; the tables' rows (its blobs) are written
    with a task (and a file per table) per WRITE_TASK_BYTES of blobs, so a fixture cluster's
    tables are one file each however many tasks decoded it: the one commit of each adds one
    file."""
    from deltalake import DeltaTable

    root = CLUSTERS[-1]
    listing = spark_scan.list_inputs([root / "brokers"])
    assert len(spark_scan.plan_tasks(listing.units, 2, replicas=listing.replicas)) >= 2
    out = str(tmp_path / "delta")
    spark_scan.run(spark, [root / "brokers"], out, scan_id="sized", as_of_ms=_as_of(root), tables=spark_scan.TABLES)
    for name in ("batches", "txn_log", "producer_state", "producer_snapshots", "txn_spans"):
        assert table(spark, out, name, "sized").count() > 0, name
        dt = DeltaTable(f"{out}/{name}")
        assert dt.version() == 0, name
        adds = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
        assert len(adds) == 1, (name, adds)


def test_a_worker_freezes_its_heap_as_a_task_starts(spark):
    # The steps' bodies call tasks.freeze_worker_heap, which freezes only in a Spark task:
    # a mapInArrow worker is one.
    def body(batches):
        tasks.freeze_worker_heap()
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"frozen": gc.get_freeze_count()}])

    assert spark.range(1).mapInArrow(body, "frozen long").first()["frozen"] > 10_000


def test_a_worker_loads_a_broadcast_once_for_its_tasks(spark):
    # tasks.partition_stream takes the coordinator's index as a Broadcast because a reused
    # Python worker loads it once and keeps it for its later tasks (a value in the closure is
    # unpickled by every task). PySpark's Broadcast keeps a loaded value in ``_value``.
    index = spark.sparkContext.broadcast({7: ["a match"]})

    def body(batches):
        loaded = "_value" in vars(index)
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"pid": os.getpid(), "loaded": loaded, "value": repr(index.value)}])

    rows = spark.range(0, 12, 1, 12).mapInArrow(body, "pid long, loaded boolean, value string").collect()
    index.destroy()
    assert {r.value for r in rows} == {"{7: ['a match']}"}
    tasks_of = {}
    for r in rows:
        tasks_of.setdefault(r.pid, []).append(r.loaded)
    assert len(rows) > len(tasks_of)  # workers were reused
    assert all(loaded.count(False) == 1 for loaded in tasks_of.values()), tasks_of


def _damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))


def test_a_corrupt_file_only_adds_corruptions(spark, tmp_path):
    """One broker's copy with one damaged segment: the findings name that file only, and every
    table equals the local driver's on the same damaged copy."""
    root = CLUSTERS[0]
    broker = sorted(p for p in (root / "brokers").iterdir() if p.is_dir())[0]
    copy = tmp_path / "brokers" / broker.name
    shutil.copytree(broker, copy)
    victim = max((p for p in copy.glob("*/*.log") if not p.parent.name.startswith("__")),
                 key=lambda p: p.stat().st_size)
    _damage(victim)
    out = str(tmp_path / "delta")
    as_of = _as_of(root)
    spark_scan.run(spark, [tmp_path / "brokers"], out, scan_id="damaged", as_of_ms=as_of)
    result = local_scan([tmp_path / "brokers"], as_of_ms=as_of)
    assert result.findings, "the damage went unnoticed by the local driver"
    corruptions = table(spark, out, "corruptions", "damaged")
    assert {r.file for r in corruptions.select("file").distinct().collect()} == {str(victim)}
    files = table(spark, out, "files", "damaged").where("kind = 'log_segment'")
    assert {r.file for r in files.where("status != 'ok'").collect()} == {str(victim)}
    assert files.count() == len(list(copy.glob("*/*.log")))
    assert_tables_equal(spark, out, "damaged", result.tables, spark_scan.DEFAULT_TABLES)


def test_a_batch_failing_its_crc_is_listed_but_never_replayed(spark, tmp_path):
    """A transactional batch whose producer id is damaged (so its CRC fails): both drivers
    list it in `batches` with crc_valid false and a `crc` corruption at its position, no
    producer of that damaged id appears, and every table still equals the local driver's;
    in Spark whether its replica is replayed in its decode task or by the per-replica step
    (the decode tells a damaged batch by its record_type: neither path filters on crc_valid)."""
    from logscan.format.batch import RecordBatch
    from logscan.format.logfile import walk_batches

    root = CLUSTERS[0]
    shutil.copytree(root / "brokers", tmp_path / "brokers")
    victim, batch = next((p, b) for p in sorted((tmp_path / "brokers").glob("*/*/*.log"))
                         if not p.parent.name.startswith("__")
                         for b in walk_batches(p.read_bytes()) if isinstance(b, RecordBatch)
                         and b.is_transactional and not b.is_control)
    data = bytearray(victim.read_bytes())
    data[batch.position + 50] ^= 0x40  # the low byte of ProducerId (header bytes 43..50)
    victim.write_bytes(bytes(data))
    phantom = batch.producer_id ^ 0x40
    out = str(tmp_path / "delta")
    as_of = _as_of(root)
    spark_scan.run(spark, [tmp_path / "brokers"], out, scan_id="crc", as_of_ms=as_of, tables=spark_scan.TABLES)
    result = local_scan([tmp_path / "brokers"], as_of_ms=as_of, keep_batches=True)
    assert [(f.path, f.position, f.reason) for f in result.findings
            if f.reason != "incomplete"] == [(str(victim), batch.position, "crc")]  # and the fixture's cut follower
    bad = table(spark, out, "batches", "crc").where("NOT crc_valid").collect()
    assert [(r.file, r.position, r.producer_id) for r in bad] == [(str(victim), batch.position, phantom)]
    assert table(spark, out, "producer_state", "crc").where(F.col("producer_id") == phantom).count() == 0
    assert all(r["producer_id"] != phantom for r in result.tables["producer_state"])
    assert_tables_equal(spark, out, "crc", result.tables)
    shuffled = str(tmp_path / "delta-shuffled")
    spark_scan.run(spark, [tmp_path / "brokers"], shuffled, scan_id="crc", as_of_ms=as_of, tables=spark_scan.TABLES,
                   replay_in_decode=False)
    assert table(spark, shuffled, "producer_state", "crc").where(F.col("producer_id") == phantom).count() == 0
    assert_tables_equal(spark, shuffled, "crc", result.tables)


def test_a_cut_coordinator_log_plans_no_abort_in_either_driver(spark, tmp_path):
    """__transaction_state-0 emptied under its checkpoint (tests/scan/test_incomplete_copy.py):
    the Spark job keeps the checkpointed high watermark and the gap, judges the transaction no
    coordinator record names `coordinator_not_in_copy`, plans no abort for it, and every table
    equals the local driver's."""
    from tests.scan.test_incomplete_copy import HANGING, _copy, _cut

    copy = _copy(tmp_path)
    _cut(copy, 0, 0)
    out = str(tmp_path / "delta")
    as_of = _as_of(HANGING)
    spark_scan.run(spark, [copy], out, scan_id="cut", as_of_ms=as_of)
    result = local_scan([copy], as_of_ms=as_of)
    assert_tables_equal(spark, out, "cut", result.tables, spark_scan.DEFAULT_TABLES)
    states = table(spark, out, "partition_state", "cut").where("topic = '__transaction_state' AND partition = 0")
    assert {(r.checkpointed_high_watermark, r.high_watermark, r.copy_gap is not None) for r in states.collect()} == {
        (2, 0, True)}
    hang0 = table(spark, out, "hanging_candidates", "cut").where("topic = 'hang' AND partition = 0").collect()
    assert hang0 and {(r.reason, r.hanging) for r in hang0} == {("coordinator_not_in_copy", None)}
    plans = table(spark, out, "abort_plans", "cut").collect()
    assert sorted({(r.topic, r.partition) for r in plans}) == [("hang", 1), ("hang", 2)]


def _batch_sizes(batches):
    for batch in batches:
        yield pa.RecordBatch.from_pydict({"rows": [batch.num_rows], "bytes": [batch.nbytes]})


def test_a_python_step_gets_blobs_in_batches_of_at_most_arrow_batch_bytes(spark):
    # What bounds a blob writer's input (tasks.write_blobs): rows of ~1 MiB values reach a
    # Python step in Arrow batches of ARROW_BATCH_BYTES and one row at most, not Spark's
    # default 64 MiB (all 40 rows here in one batch).
    from spark_jobs.session import ARROW_BATCH_BYTES

    blob = 1 << 20
    rows = spark.range(40, numPartitions=1).select(F.expr(f"cast(repeat('x', {blob}) as binary)").alias("data"))
    sizes = rows.mapInArrow(_batch_sizes, "rows long, bytes long").collect()
    assert sum(s["rows"] for s in sizes) == 40
    assert len(sizes) > 1
    assert max(s["bytes"] for s in sizes) <= ARROW_BATCH_BYTES + 2 * blob, sizes
