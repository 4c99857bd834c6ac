"""The Spark job on a real multi-process Spark, with nothing on a shared disk by accident: a
standalone cluster (a master and two workers, separate JVMs from pyspark's jars on loopback,
tools/spark/cluster.py), the copy uploaded to a real S3 store (SeaweedFS), the job submitted
with spark-submit reading the copy at s3a:// and writing its Delta tables at s3a://, the tables
read back from the store equal to the local scan's of the local copy, row for row.

The workers share the code with the driver (one interpreter and checkout, as nodes share an
image) and nothing else: their executors run in their own work folders, the storage options
reach their Python workers only through the session (spark.executorEnv), and every file the
tables name is in the store.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from logscan.logdir import store
from logscan.scan import rows as R
from tests.objectstore.conftest import object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import local_form
from .test_s3_tables import AS_OF, HANGING, REPO, RUN_TIMEOUT_S, _env, _options, logscan, rows

pytestmark = [pytest.mark.objectstore, pytest.mark.spark, pytest.mark.heavy]


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("pyspark")
    from tools.spark.cluster import standalone_cluster

    # PYTHONPATH: the executors' Python workers import this checkout (as the driver does)
    with standalone_cluster(workers=2, cores=1, memory="1g", env={"PYTHONPATH": str(REPO)}) as running:
        yield running


def test_the_job_on_a_standalone_cluster_reads_and_writes_the_store(object_store, cluster, tmp_path):  # noqa: F811
    s3 = object_store
    copy = s3.upload(HANGING / "brokers", "logscan-cluster", "copies/hanging/brokers").replace("s3://", "s3a://", 1)
    tables = "s3a://logscan-cluster/tables"
    local = tmp_path / "local-tables"
    assert logscan("scan", str(HANGING / "brokers"), "--output", str(local), "--executor", "local",
                   "--tables", "all", "--scan-id", "hanging", "--as-of", str(AS_OF), "--no-progress").returncode == 4

    jars = subprocess.run([sys.executable, "-m", "spark_jobs.session", "--jars"], capture_output=True, text=True,
                          cwd=REPO, env=_env(), check=True).stdout.strip()
    env = {**_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    submit = [str(REPO / ".venv" / "bin" / "spark-submit"), "--master", cluster.master,
              "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
              "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=768m",
              "--conf", "spark.cores.max=2", "--jars", jars,
              str(REPO / "spark_jobs" / "scan.py"), copy, "--output", tables, "--scan-id", "hanging",
              "--as-of", str(AS_OF), "--tables", "all", *_options(s3)]
    job = subprocess.run(submit, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=RUN_TIMEOUT_S * 2)
    assert job.returncode == 0, job.stderr[-4000:]
    assert "scan hanging into s3a://logscan-cluster/tables" in job.stdout
    assert s3.secret_key not in job.stdout

    # two executors ran, one on each worker, each in its own folder
    ran = cluster.executor_folders()
    assert len(ran) == 2 and {p.parents[1] for p in ran} == set(cluster.workers), ran
    # the tables in the store are the local scan's, their files named by the copy's URI
    root = str((HANGING / "brokers").resolve())
    store.configure(s3.storage_options)   # delta-rs reads them back with the same options
    try:
        uri_rows = {t: rows(tables.replace("s3a://", "s3://", 1), t, "hanging") for t in [*R.TABLES, R.SCANS_TABLE]}
    finally:
        store.configure()
    for table, got in uri_rows.items():
        want = rows(str(local), table, "hanging")
        assert [local_form(r, copy, root) for r in got] == want, (table, len(got), len(want))
    assert all(copy in r for r in uri_rows["files"]) and root not in "".join(uri_rows["files"])
    assert not list(tmp_path.glob("spark-warehouse")) and not os.path.exists(tmp_path / "metastore_db")
