"""The Spark scan against the single-process driver on the real-broker fixture clusters.

One implementation of the rules, two drivers: every table the Spark job writes to Delta must
hold exactly the rows logscan.scan.local.scan computes, converted by logscan.scan.rows.
One SparkSession for the module (a start costs seconds); each cluster is scanned once into a
shared output, one scan_id per cluster.
"""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402
from pyspark.testing import assertDataFrameEqual  # noqa: E402

from logscan.scan import rows as R  # noqa: E402
from logscan.scan.local import scan as local_scan  # noqa: E402
from spark_jobs import scan as spark_scan  # noqa: E402
from spark_jobs.schemas import spark_schema  # noqa: E402
from spark_jobs.session import DELTA_LIBS, build_session  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTERS = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))

pytestmark = pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                reason="Delta jars missing: run `make delta-jars`")


@pytest.fixture(scope="module")
def spark():
    session = build_session("logscan-tests", master="local[2]", conf={
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    return str(tmp_path_factory.mktemp("delta"))


def _as_of(root: Path) -> int:
    return json.loads((root / "truth" / "truth.json").read_text())["recorded_at_ms"]


@pytest.fixture(scope="module", params=CLUSTERS, ids=[c.name for c in CLUSTERS])
def cluster(request, spark, output):
    root = request.param
    as_of = _as_of(root)
    scan_id, as_of_ms = spark_scan.run(spark, [root / "brokers"], output, scan_id=root.name, as_of_ms=as_of)
    assert (scan_id, as_of_ms) == (root.name, as_of)
    return root.name, local_scan([root / "brokers"], as_of_ms=as_of)


def table(spark, output, name, scan_id):
    return spark.read.format("delta").load(f"{output}/{name}").where(F.col("scan_id") == scan_id)


def expected(spark, rows, schema):
    return spark.createDataFrame([tuple(r[n] for n in schema.names) for r in rows], spark_schema(schema))


def local_rows(result):
    out = {"producer_state": [], "txn_spans": [], "partition_state": [], "hanging_candidates": []}
    for rep in result.replicas:
        key = R.replica_key(rep.state.broker, rep.state.topic, rep.state.partition)
        out["producer_state"].extend(R.producer_rows(rep.producers, key))
        out["txn_spans"].extend(R.span_rows(rep.spans, key))
        out["partition_state"].append(R.state_row(rep.state, rep.max_timestamp))
    for c in result.candidates:
        key = R.replica_key(c.broker, c.topic, c.partition)
        out["hanging_candidates"].append(R.candidate_row(key, c.txn, c.age_ms, c.verdict))
    return out


@pytest.mark.parametrize("name", ["producer_state", "txn_spans", "partition_state", "hanging_candidates"])
def test_tables_equal_the_local_driver(spark, output, cluster, name):
    scan_id, result = cluster
    schema = R.TABLES[name]
    want = expected(spark, local_rows(result)[name], schema)
    got = table(spark, output, name, scan_id).select(*schema.names)
    if name != "hanging_candidates":
        assert want.count() > 0
    assertDataFrameEqual(got, want)


def test_coordinator_state_equals_the_local_driver(spark, output, cluster):
    scan_id, result = cluster
    cols = [n for n in R.COORDINATOR_STATE.names if n not in ("broker", "topic")]
    rows = [{"partition": rec.coordinator_partition, **R.txn_record_row(rec)} for rec in result.coordinator.values()]
    schema = StructType([f for f in spark_schema(R.COORDINATOR_STATE).fields if f.name in cols])
    want = spark.createDataFrame([tuple(r[c] for c in cols) for r in rows], schema)
    assert want.count() > 0
    assertDataFrameEqual(table(spark, output, "coordinator_state", scan_id).select(*cols), want)


def test_every_batch_and_segment_is_accounted_for(spark, output, cluster):
    scan_id, result = cluster
    files = table(spark, output, "files", scan_id)
    segments = files.where("kind = 'log_segment'")
    assert segments.where("status != 'ok'").count() == 0
    assert table(spark, output, "corruptions", scan_id).count() == len(result.findings) == 0
    batches = table(spark, output, "batches", scan_id)
    assert batches.count() == segments.agg(F.sum("batches")).first()[0] > 0
    # Every replica's newest batch timestamp, as the local driver saw it.
    newest = {(r.broker, r.topic, r.partition): r.t for r in
              batches.groupBy("broker", "topic", "partition").agg(F.max("max_timestamp").alias("t")).collect()}
    assert newest == {(r.state.broker, r.state.topic, r.state.partition): r.max_timestamp
                      for r in result.replicas if r.max_timestamp >= 0}


def test_rows_carry_scan_id_and_comments(spark, output, cluster):
    scan_id, _ = cluster
    df = spark.read.format("delta").load(f"{output}/partition_state")
    comments = {f.name: f.metadata.get("comment") for f in df.schema.fields}
    assert all(comments.values()), comments
    assert set(R.PARTITION_STATE.names) | {"scan_id", "as_of"} == set(comments)
    assert df.where(F.col("scan_id") == scan_id).select("as_of").distinct().count() == 1


def test_rerun_is_idempotent_and_keeps_other_scans(spark, output, cluster):
    scan_id, _ = cluster
    if scan_id != CLUSTERS[-1].name:
        pytest.skip("one re-run is enough (of the last cluster, so other scans are in the tables)")
    root = FIXTURES / scan_id
    before = {t: sorted(table(spark, output, t, scan_id).drop("as_of").collect())
              for t in ("partition_state", "txn_spans")}
    others = spark.read.format("delta").load(f"{output}/partition_state").where(F.col("scan_id") != scan_id).count()
    assert others > 0 or len(CLUSTERS) == 1
    version = spark.sql(f"DESCRIBE HISTORY delta.`{output}/partition_state`").agg(F.max("version")).first()[0]
    spark_scan.run(spark, [root / "brokers"], output, scan_id=scan_id, as_of_ms=_as_of(root))
    after = {t: sorted(table(spark, output, t, scan_id).drop("as_of").collect()) for t in before}
    assert after == before
    assert spark.sql(f"DESCRIBE HISTORY delta.`{output}/partition_state`").agg(
        F.max("version")).first()[0] == version + 1
    assert spark.read.format("delta").load(f"{output}/partition_state").where(
        F.col("scan_id") != scan_id).count() == others


def _damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))


def test_a_corrupt_file_only_adds_corruptions(spark, tmp_path):
    """One broker's copy with one damaged segment: the findings name that file only, and the
    replica tables equal the local driver's on the same damaged copy."""
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
    assert corruptions.count() == len(result.findings)
    files = table(spark, out, "files", "damaged").where("kind = 'log_segment'")
    assert {r.file for r in files.where("status != 'ok'").collect()} == {str(victim)}
    assert files.count() == len(list(copy.glob("*/*.log")))
    rows = local_rows(result)
    for name in ("producer_state", "txn_spans", "partition_state"):
        schema = R.TABLES[name]
        assertDataFrameEqual(table(spark, out, name, "damaged").select(*schema.names),
                             expected(spark, rows[name], schema))
