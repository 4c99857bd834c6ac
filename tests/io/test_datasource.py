"""`spark.read.format("logscan")` (spark_jobs/datasource.py), registered by the session builder:
a copy's batches are the scan's batches table rows; with records=true each data record is what
kafka-dump-log --print-data-log printed for it on the real broker (the fixtures' recorded
dumps); a copy in a real S3 store (SeaweedFS) reads as the local copy."""

from __future__ import annotations

import json
import re

import pytest

from logscan.scan.local import scan
from tests.objectstore.conftest import object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import FIXTURES, local_form

pytestmark = pytest.mark.spark

CLUSTERS = [FIXTURES / "hanging" / "brokers", FIXTURES / "tv2" / "brokers"]
_RECORD = re.compile(r"^\| offset: (\d+) \w+: (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) "
                     r"headerKeys: \[(.*?)\](?: key: (.*?))? payload: (.*)$")


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from tests.spark import local_session

    with local_session("logscan-datasource", 2) as session:
        yield session


def _sorted(rows) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize("cluster", CLUSTERS, ids=[c.parent.name for c in CLUSTERS])
def test_the_batches_are_the_scans_batches_rows(spark, cluster):
    got = [r.asDict() for r in spark.read.format("logscan").load(str(cluster)).collect()]
    want = scan([str(cluster)], keep_batches=True).tables["batches"]
    # both through Arrow: a time column is microseconds in a scan's row, a datetime in Spark's
    assert len(want) > 100 and _sorted(_through_arrow(got)) == _sorted(_through_arrow(want))


def _through_arrow(rows: list[dict]) -> list[dict]:
    import pyarrow as pa

    from logscan.scan import rows as R

    return pa.Table.from_pylist(rows, schema=pa.schema([f.remove_metadata() for f in R.BATCHES])).to_pylist()


def _dumped(cluster) -> dict[str, list[tuple]]:
    """Recorded kafka-dump-log --print-data-log lines of each data topic's segment: (offset,
    timestamp, key size, value size, header keys, key, payload) per record, by file."""
    out = {}
    for golden in sorted((cluster.parent / "truth" / "dump").glob("broker-*/*/*.log.txt")):
        if golden.parent.name.startswith("__"):
            continue
        records = [m.groups() for m in map(_RECORD.match, golden.read_text().splitlines()) if m]
        if records:
            out[str(cluster / golden.relative_to(cluster.parent / "truth" / "dump"))[:-len(".txt")]] = records
    return out


@pytest.mark.parametrize("cluster", CLUSTERS, ids=[c.parent.name for c in CLUSTERS])
def test_records_are_what_kafka_dump_log_printed(spark, cluster):
    dumped = _dumped(cluster)
    assert len(dumped) >= 3
    rows = (spark.read.format("logscan").option("records", "true").load(str(cluster))
            .where("not is_control and not topic like '\\\\_\\\\_%'").orderBy("file", "offset").collect())
    assert not [r for r in rows if r["error"] is not None]
    got: dict[str, list[tuple]] = {}
    for r in rows:
        key, value = r["key"], r["value"]
        got.setdefault(r["file"], []).append((
            str(r["offset"]), str(r["timestamp"]), str(-1 if key is None else len(key)),
            str(-1 if value is None else len(value)), None,
            ",".join(h["key"] for h in r["headers"]), None if key is None else bytes(key).decode("utf-8", "replace"),
            "" if value is None else bytes(value).decode("utf-8", "replace")))
    for file, records in dumped.items():
        mine = [(o, t, ks, vs, hk, k, p) for o, t, ks, vs, _, hk, k, p in got[file]]
        theirs = [(o, t, ks, vs, hk.replace(" ", ""), k, p) for o, t, ks, vs, _, hk, k, p in records]
        assert mine == theirs, file


@pytest.mark.objectstore
def test_a_copy_in_the_store_reads_as_the_local_copy(spark, object_store):  # noqa: F811
    cluster = CLUSTERS[0]
    uri = object_store.upload(cluster, "logscan-datasource", "hanging/brokers").replace("s3://", "s3a://", 1)
    storage = {f"storage.{k}": v for k, v in object_store.storage_options.items()}
    for records in ("false", "true"):
        local = spark.read.format("logscan").option("records", records).load(str(cluster))
        remote = spark.read.format("logscan").option("records", records).options(**storage).load(uri)
        want = _sorted(r.asDict(recursive=True) for r in local.collect())
        got = _sorted(local_form(r.asDict(recursive=True), uri, str(cluster)) for r in remote.collect())
        assert len(got) > 100 and got == want, records
