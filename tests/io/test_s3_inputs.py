"""Copies scanned where they live: every fixture cluster (real Kafka copies) uploaded to a real
S3 server (SeaweedFS on loopback) and scanned from its ``s3://`` URI with ``--output`` into the
store gives the tables the local copy gives, for both executors.

The local executor runs as `logscan scan` (a process configured by --storage-option); the Spark
job runs on local[2], whose Python workers read the copy with the options they get from the
session (spark_jobs.session.store_conf: $LOGSCAN_STORAGE_OPTIONS), nothing configured in them.
Rows are compared with each URI written as the local path it names. Also: spark_jobs/scan.py
run directly exits 5 on a store that refuses its --output, as `logscan scan` does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from logscan.logdir import store
from logscan.scan import rows as R
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import CLUSTERS, local_form
from .test_s3_tables import AS_OF, HANGING, RUN_TIMEOUT_S, _env, _options, logscan, rows

pytestmark = pytest.mark.objectstore

BUCKET = "logscan-copies"
NAMES = [c.parent.name for c in CLUSTERS]


@pytest.fixture(scope="module")
def s3(object_store):  # noqa: F811
    object_store.create_bucket("logscan-tables")
    for cluster in CLUSTERS:
        object_store.upload(cluster, BUCKET, f"{cluster.parent.name}/brokers")
    with configured(object_store):
        yield object_store


def _copy_uri(s3, name: str) -> str:
    return s3.uri(BUCKET, f"{name}/brokers")


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    """Each fixture cluster's local copy scanned by the local executor into one local folder
    (scan id: the cluster's name)."""
    where = str(tmp_path_factory.mktemp("local-tables"))
    for cluster in CLUSTERS:
        out = logscan("scan", str(cluster), "--output", where, "--executor", "local", "--tables", "all",
                      "--scan-id", cluster.parent.name, "--as-of", str(AS_OF), "--no-progress")
        assert out.returncode in (0, 1, 4), out.stderr
    return where


def _same_rows(local: str, uri: str, name: str, copy_uri: str, cluster) -> None:
    root = str(cluster)
    for table in [*R.TABLES, R.SCANS_TABLE]:
        want = rows(local, table, name)
        got = [local_form(r, copy_uri, root) for r in rows(uri, table, name)]
        assert got == want, (name, table, len(got), len(want))
        if table in ("files", "batches", "partition_state", "scans"):
            assert want, table


@pytest.mark.parametrize("cluster", CLUSTERS, ids=NAMES)
def test_logscan_scan_of_an_s3_copy_into_s3_gives_the_local_copys_tables(cluster, s3, local_tables):
    name = cluster.parent.name
    copy_uri, out_uri = _copy_uri(s3, name), s3.uri("logscan-tables", "local-executor")
    by_uri = logscan("scan", copy_uri, "--output", out_uri, "--executor", "local", "--tables", "all",
                     "--scan-id", name, "--as-of", str(AS_OF), "--no-progress", *_options(s3))
    assert by_uri.returncode in (0, 1, 4), by_uri.stderr
    assert s3.secret_key not in by_uri.stdout + by_uri.stderr
    assert f"into {out_uri}" in by_uri.stdout
    assert '"secret_key=$AWS_SECRET_ACCESS_KEY"' in by_uri.stdout
    if by_uri.returncode == 4:   # the plan command names the copy by its URI, with the options
        plan = next(line.strip() for line in by_uri.stdout.splitlines() if line.strip().startswith("logscan plan"))
        assert copy_uri in plan and f"--storage-option endpoint_override={s3.endpoint}" in plan, plan
    _same_rows(local_tables, out_uri, name, copy_uri, cluster.resolve())


@pytest.mark.spark
def test_the_spark_job_scans_s3_copies_into_s3_as_the_local_copies(s3, local_tables):
    """One local[2] session for every cluster; its workers have only $LOGSCAN_STORAGE_OPTIONS."""
    pytest.importorskip("pyspark")
    from spark_jobs import scan as spark_scan
    from tests.spark import local_session

    out_uri = s3.uri("logscan-tables", "spark")
    with local_session("logscan-s3-inputs", 2) as spark:
        env = spark.sparkContext.getConf().get(f"spark.executorEnv.{store.OPTIONS_ENV}")
        assert env is not None and s3.endpoint in env
        for cluster in CLUSTERS:
            name = cluster.parent.name
            got = spark_scan.run(spark, [_copy_uri(s3, name)], out_uri, scan_id=name, as_of_ms=AS_OF,
                                 tables=spark_scan.TABLES)
            assert got == (name, AS_OF)
    for cluster in CLUSTERS:
        name = cluster.parent.name
        _same_rows(local_tables, out_uri, name, _copy_uri(s3, name), cluster.resolve())


@pytest.mark.spark
def test_logscan_scan_with_spark_reads_an_s3_copy(s3, local_tables):
    """`logscan scan s3://... --output s3://...` with the default executor: the CLI's session
    hands the workers the --storage-option values."""
    copy_uri, out_uri = _copy_uri(s3, "hanging"), s3.uri("logscan-tables", "spark-cli")
    out = logscan("scan", copy_uri, "--output", out_uri, "--master", "local[2]", "--scan-id", "hanging",
                  "--as-of", str(AS_OF), "--no-progress", "--tables", "all", *_options(s3))
    assert out.returncode == 4, out.stderr
    assert s3.secret_key not in out.stdout + out.stderr
    _same_rows(local_tables, out_uri, "hanging", copy_uri, (HANGING / "brokers").resolve())


def test_a_copy_missing_from_the_store_is_one_sentence_before_anything_is_written(s3):
    out_uri = s3.uri("logscan-tables", "never")
    out = logscan("scan", s3.uri(BUCKET, "no-such-copy"), "--output", out_uri, "--executor", "local",
                  "--no-progress", *_options(s3))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "no-such-copy" in out.stderr
    from pyarrow import fs as pafs

    assert s3.filesystem.get_file_info("logscan-tables/never").type == pafs.FileType.NotFound


@pytest.mark.spark
def test_the_spark_job_run_directly_exits_5_when_the_output_store_refuses(s3, tmp_path):
    """Exit 5 (no answer: the store refused), one sentence, as `logscan scan --output` gives,
    before Spark starts."""
    wrong = [*_options(s3), "--storage-option", "secret_key=wrong"]
    out_uri = s3.uri("logscan-tables", "refused-job")
    job = subprocess.run([sys.executable, "-m", "spark_jobs.scan", str(HANGING / "brokers"), "--output", out_uri,
                          "--master", "local[1]", *wrong], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                         timeout=RUN_TIMEOUT_S)
    cli = logscan("scan", str(HANGING / "brokers"), "--output", out_uri, "--no-progress", *wrong)
    assert job.returncode == cli.returncode == 5, (job.stderr, cli.stderr)
    for out in (job, cli):
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "logscan-tables" in out.stderr and "SIGNATURE_DOES_NOT_MATCH" in out.stderr
    assert job.stderr.startswith("spark_jobs/scan.py: the --output store cannot be reached")
    assert list(tmp_path.iterdir()) == []   # no Spark was started here (no spark-warehouse, no logs)
