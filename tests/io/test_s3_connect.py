"""A copy in S3 scanned under Spark Connect: the client's --storage-option values reach the
Connect server's Python workers (spark_jobs.source carries them to the decode's tasks), which
have no other way to get them (the server's executor environment is its own, and holds none).

A Connect server started here (tools/spark/connect.py, a JVM of its own, local[2]) with no
credential anywhere in its environment; the hanging cluster uploaded to a real S3 server
(SeaweedFS on loopback); `python -m spark_jobs.scan s3://... --output s3://... --remote sc://...
--storage-option ...` must give the tables the local executor gives from the local copy.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from logscan.scan import rows as R
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import local_form
from .test_s3_tables import AS_OF, HANGING, REPO, RUN_TIMEOUT_S, _env, _options, logscan, rows

pytest.importorskip("pyspark")
pytest.importorskip("grpc")   # pyspark[connect]

pytestmark = [pytest.mark.objectstore, pytest.mark.spark, pytest.mark.heavy]


@pytest.fixture(scope="module")
def s3(object_store):  # noqa: F811
    object_store.create_bucket("logscan-tables")
    object_store.upload(HANGING / "brokers", "logscan-connect", "hanging/brokers")
    with configured(object_store):
        yield object_store


@pytest.fixture(scope="module")
def server():
    from tools.spark.connect import connect_server

    with connect_server(cores=2) as running:
        yield running


def test_a_connect_servers_workers_read_an_s3_copy_with_the_clients_storage_options(s3, server, tmp_path):
    local = str(tmp_path / "local")
    out = logscan("scan", str(HANGING / "brokers"), "--output", local, "--executor", "local", "--tables", "all",
                  "--scan-id", "hanging", "--as-of", str(AS_OF), "--no-progress")
    assert out.returncode == 4, out.stderr
    copy_uri, out_uri = s3.uri("logscan-connect", "hanging/brokers"), s3.uri("logscan-tables", "connect")
    env = {k: v for k, v in _env().items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env["PYSPARK_PYTHON"] = sys.executable
    job = subprocess.run([sys.executable, "-m", "spark_jobs.scan", copy_uri, "--output", out_uri, "--remote",
                          server.url, "--scan-id", "hanging", "--as-of", str(AS_OF), "--tables", "all",
                          *_options(s3)], capture_output=True, text=True, cwd=REPO, env=env, timeout=RUN_TIMEOUT_S)
    assert job.returncode == 0, job.stderr[-4000:]
    assert s3.secret_key not in job.stdout + job.stderr
    assert s3.secret_key not in server.log.read_text(errors="replace")   # nor in the server's log
    for table in [*R.TABLES, R.SCANS_TABLE]:
        want = rows(local, table, "hanging")
        got = [local_form(r, copy_uri, str(HANGING / "brokers")) for r in rows(out_uri, table, "hanging")]
        assert got == want, (table, len(got), len(want))
        if table in ("files", "batches", "txn_spans", "partition_state", "scans"):
            assert want, table
