"""The Spark job as a Spark Connect client: no SparkContext, RDD, broadcast or JVM handle on its path.

A Spark Connect server runs as a JVM of its own (tools/spark/connect.py: pyspark's jars,
local[2], loopback), and the job reaches it as a client three ways: ``python -m
spark_jobs.scan --remote sc://...`` (from the repository, the input named by a relative path:
the server's tasks run in a folder of their own), ``spark-submit --remote sc://...
spark_jobs/scan.py`` and ``logscan scan --output DIR --remote 'local[2]'`` (a Connect server
pyspark starts in the client's process). Each writes every table of the hanging fixture
cluster, read back through delta-rs and compared row for row with the local executor's.

The clients run as processes of their own: a Connect session marks its process as Spark
Connect's for good (pyspark's SPARK_CONNECT_MODE_ENABLED), which would turn the classic
sessions of the other Spark tests into Connect ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from logscan.scan import rows as R
from spark_jobs.session import DELTA_LIBS

pytest.importorskip("pyspark")
pytest.importorskip("grpc")   # pyspark[connect]

pytestmark = [pytest.mark.spark, pytest.mark.heavy,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"
AS_OF = json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"]
#: Generous bound for a loaded two-core machine: hitting it is a failure, not a timing.
RUN_TIMEOUT_S = 900


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update({"PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable})
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=_env(), timeout=RUN_TIMEOUT_S)


def logscan(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-c", "from logscan.cli import main; main()", *args], cwd)


def rows(where: str, name: str, scan_id: str) -> list[str]:
    """The scan's rows of a table as sorted JSON lines (a duplicate or a missing row shows)."""
    from deltalake import DeltaTable

    t = DeltaTable(f"{where}/{name}").to_pyarrow_table(filters=[("scan_id", "=", scan_id)])
    drop = ["finished_ms", "finished_time", "inputs"] if name == R.SCANS_TABLE else []
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.drop_columns(drop).to_pylist())


def assert_same_tables(got: str, want: str, scan_id: str = "hanging") -> None:
    for table in [*R.TABLES, R.SCANS_TABLE]:
        expected = rows(want, table, scan_id)
        assert rows(got, table, scan_id) == expected, table
        if table in ("files", "txn_spans", "partition_state", "hanging_candidates", "abort_plans", "scans"):
            assert expected, table


SCAN = ["--scan-id", "hanging", "--as-of", str(AS_OF), "--tables", "all"]


@pytest.fixture(scope="module")
def server():
    from tools.spark.connect import connect_server

    with connect_server(cores=2) as running:
        yield running


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory) -> str:
    """The local executor's tables of the hanging cluster (scan id ``hanging``)."""
    where = str(tmp_path_factory.mktemp("local-tables"))
    out = logscan("scan", str(HANGING / "brokers"), "--output", where, "--executor", "local", *SCAN,
                  "--no-progress")
    assert out.returncode == 4, out.stderr
    return where


def test_logscan_scan_remote_local_starts_its_own_connect_server(local_tables, tmp_path):
    out = tmp_path / "tables"
    job = logscan("scan", str(HANGING / "brokers"), "--output", str(out), "--remote", "local[2]", *SCAN,
                  "--no-progress", cwd=tmp_path)
    assert job.returncode == 4, job.stderr[-4000:]
    assert f"into {out}" in job.stdout
    assert_same_tables(str(out), local_tables)


def test_the_job_on_a_connect_server_writes_the_local_executors_tables(server, local_tables, tmp_path):
    out = tmp_path / "tables"
    job = _run([sys.executable, "-m", "spark_jobs.scan", "fixtures/hanging/brokers", "--output", str(out),
                "--remote", server.url, *SCAN], REPO)
    assert job.returncode == 0, job.stderr[-4000:]
    assert f"scan hanging into {out}" in job.stdout
    assert_same_tables(str(out), local_tables)


def test_spark_submit_remote_runs_the_job_as_a_connect_client(server, local_tables, tmp_path):
    out = tmp_path / "tables"
    job = _run([str(Path(sys.executable).parent / "spark-submit"), "--remote", server.url,
                str(REPO / "spark_jobs" / "scan.py"), str(HANGING / "brokers"), "--output", str(out), *SCAN], tmp_path)
    assert job.returncode == 0, job.stderr[-4000:]
    assert_same_tables(str(out), local_tables)


PROBE = """
import json, os, sys
from pyspark.sql import functions as F
from spark_jobs import scan, session, shared

spark = session.build_session("probe", remote=sys.argv[1])
index = scan.for_tasks(spark, {7: ["a match"]})

def body(batches):
    from spark_jobs import shared as here
    loaded = index.key in here._values
    for _ in batches:
        pass
    yield __import__("pyarrow").RecordBatch.from_pylist([{"pid": os.getpid(), "loaded": loaded,
                                                         "value": repr(index.value)}])

got = spark.range(0, 12, 1, 12).mapInArrow(body, "pid long, loaded boolean, value string").collect()
print(json.dumps({"connect": session.is_connect(spark), "shared": type(index).__name__,
                  "parallelism": session.default_parallelism(spark),
                  "rows": [r.asDict() for r in got]}))
spark.stop()
"""


def test_on_connect_the_tasks_share_a_value_loaded_once_per_worker_and_the_cores_are_the_servers(server):
    probe = _run([sys.executable, "-c", PROBE, server.url], REPO)
    assert probe.returncode == 0, probe.stderr[-4000:]
    answer = json.loads(probe.stdout.strip().splitlines()[-1])
    assert (answer["connect"], answer["shared"], answer["parallelism"]) == (True, "Shared", 2)
    assert {r["value"] for r in answer["rows"]} == {"{7: ['a match']}"}
    tasks_of: dict[int, list[bool]] = {}
    for r in answer["rows"]:
        tasks_of.setdefault(r["pid"], []).append(r["loaded"])
    assert len(answer["rows"]) > len(tasks_of)   # workers were reused
    assert all(loaded.count(False) == 1 for loaded in tasks_of.values()), tasks_of
