"""A scan's Delta tables written where the copy lives: a real S3 server (SeaweedFS on loopback,
the session's ``object_store``), by both executors, read back by `logscan sql` and `logscan
report` through delta-rs with the storage options.

The hanging cluster is scanned into ``s3://`` and into a local folder; the two outputs are
compared table by table (schemas and rows, read through delta-rs). A run killed before a
commit leaves that table at its previous version on the store; wrong credentials are one
sentence and an exit status, never a traceback, and no command printed carries the secret.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logscan.logdir import store
from logscan.scan import delta
from logscan.scan import rows as R
from logscan.scan.output import table_schema
from logscan.scan.tables import commit_order
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import FIXTURES

pytestmark = pytest.mark.objectstore

REPO = Path(__file__).resolve().parents[2]
HANGING = FIXTURES / "hanging"
AS_OF = json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"]
ALL = tuple(R.TABLES)
#: Generous bound for a loaded two-core machine: hitting it is a failure, not a timing.
RUN_TIMEOUT_S = 600


def _options(s3) -> list[str]:
    return [a for k, v in s3.storage_options.items() for a in ("--storage-option", f"{k}={v}")]


def _env() -> dict:
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true", "PYTHONPATH": str(REPO)}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        env.pop(name, None)  # the options alone must reach the store
    return env


def logscan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from logscan.cli import main; main()", *args],
                          capture_output=True, text=True, env=_env(), cwd=REPO, timeout=RUN_TIMEOUT_S)


def _table(where: str, name: str):
    from deltalake import DeltaTable

    if store.is_uri(where):
        return DeltaTable(f"{where}/{name}", storage_options=store.delta_options(where))
    return DeltaTable(f"{where}/{name}")


def rows(where: str, name: str, scan_id: str) -> list[str]:
    """The scan's rows of a table as sorted JSON lines (a duplicate or a missing row shows)."""
    t = _table(where, name).to_pyarrow_table(filters=[("scan_id", "=", scan_id)])
    drop = ["finished_ms", "finished_time", "inputs"] if name == R.SCANS_TABLE else []
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.drop_columns(drop).to_pylist())


def versions(where: str, names) -> dict[str, int]:
    return {n: _table(where, n).version() for n in names}


@pytest.fixture(scope="module")
def s3(object_store):  # noqa: F811
    object_store.create_bucket("logscan-tables")
    with configured(object_store):
        yield object_store


@pytest.fixture(scope="module")
def local_executor(s3, tmp_path_factory):
    """(local folder, s3:// URI): the hanging cluster scanned by the local executor into each."""
    local = str(tmp_path_factory.mktemp("local-tables"))
    uri = s3.uri("logscan-tables", "local-executor")
    for where in (local, uri):
        assert delta.write_tables([HANGING / "brokers"], where, scan_id="hanging", tables=ALL, as_of_ms=AS_OF) == AS_OF
    return local, uri


def _same_tables(local: str, uri: str) -> None:
    for name in [*ALL, R.SCANS_TABLE]:
        assert _table(uri, name).schema().to_json() == _table(local, name).schema().to_json(), name
        assert _table(uri, name).metadata().partition_columns == ["scan_id"]
        got, want = rows(uri, name, "hanging"), rows(local, name, "hanging")
        assert got == want, (name, len(got), len(want))
        if name in ("files", "batches", "txn_log", "txn_spans", "partition_state", "scans"):
            assert want, name


def test_the_local_executors_tables_in_s3_equal_its_local_ones(local_executor, s3):
    local, uri = local_executor
    _same_tables(local, uri)
    assert table_schema("txn_spans").names == _table(uri, "txn_spans").schema().to_arrow().names
    # the Parquet parts are on the store, under the table's scan_id partition
    from pyarrow import fs as pafs

    listed = s3.filesystem.get_file_info(pafs.FileSelector("logscan-tables/local-executor/txn_spans", recursive=True))
    assert any("/scan_id=hanging/part-" in i.path and i.path.endswith(".parquet") for i in listed)


@pytest.mark.spark
def test_the_spark_jobs_tables_in_s3_equal_the_local_ones(local_executor, s3):
    """The Spark job's Python workers get the storage options in their writers' closures (only
    the driver process has them configured)."""
    pytest.importorskip("pyspark")
    from spark_jobs import scan as spark_scan
    from tests.spark import local_session

    local, _ = local_executor
    uri = s3.uri("logscan-tables", "spark")
    with local_session("logscan-s3-output", 2) as spark:
        scan_id, as_of = spark_scan.run(spark, [HANGING / "brokers"], uri, scan_id="hanging", as_of_ms=AS_OF,
                                        tables=spark_scan.TABLES)
    assert (scan_id, as_of) == ("hanging", AS_OF)
    _same_tables(local, uri)


def test_logscan_scan_into_s3_prints_commands_with_the_options_but_never_the_secret(s3):
    uri = s3.uri("logscan-tables", "cli")
    out = logscan("scan", str(HANGING / "brokers"), "--output", uri, "--executor", "local", "--no-progress",
                  "--as-of", str(AS_OF), *_options(s3))
    assert out.returncode == 4, out.stderr
    assert s3.secret_key not in out.stdout + out.stderr
    sql = next(line.strip() for line in out.stdout.splitlines() if line.strip().startswith("logscan sql"))
    assert f"--storage-option endpoint_override={s3.endpoint}" in sql
    assert '--storage-option "secret_key=$AWS_SECRET_ACCESS_KEY"' in sql
    assert "$AWS_SECRET_ACCESS_KEY" in out.stdout.splitlines()[-1]
    # the printed command runs as printed once the secret is in the named variable
    env = {**_env(), "AWS_SECRET_ACCESS_KEY": s3.secret_key, "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"}
    ran = subprocess.run(["bash", "-c", sql], capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=RUN_TIMEOUT_S)
    assert ran.returncode == 0, ran.stderr
    assert "hang-" in ran.stdout


def test_sql_and_report_over_the_s3_tables_answer_as_over_the_local_ones(local_executor, s3, tmp_path):
    local, uri = local_executor
    for query in ("SELECT topic, partition, broker, lso_lag FROM partition_state ORDER BY ALL",
                  "SELECT * EXCLUDE (as_of) FROM hanging_candidates ORDER BY ALL", "SHOW TABLES",
                  "DESCRIBE txn_spans"):
        by_uri = logscan("sql", "--tables", uri, *_options(s3), "--format", "json", query)
        by_path = logscan("sql", "--tables", local, "--format", "json", query)
        assert by_uri.returncode == by_path.returncode == 0, by_uri.stderr
        assert by_uri.stdout == by_path.stdout and by_uri.stdout.strip(), query

    from logscan.report.data import load

    remote, here = load(uri, "hanging"), load(local, "hanging")
    for data in (remote, here):
        data.pop("tables")
        data.pop("queries")
    assert json.loads(json.dumps(remote, default=str)) == json.loads(json.dumps(here, default=str))
    page = tmp_path / "r.html"
    out = logscan("report", "--tables", uri, *_options(s3), "--out", str(page))
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert "hang-0" in html and s3.secret_key not in html


def test_wrong_credentials_are_one_located_sentence_and_an_exit_status(local_executor, s3, tmp_path):
    _, uri = local_executor
    wrong = [*_options(s3), "--storage-option", "secret_key=wrong"]
    for args, status in ((("sql", "--tables", uri, *wrong, "SELECT 1"), 3),
                         (("report", "--tables", uri, *wrong, "--out", str(tmp_path / "r.html")), 3),
                         (("scan", str(HANGING / "brokers"), "--output", s3.uri("logscan-tables", "refused"),
                           "--executor", "local", "--no-progress", *wrong), 5)):
        out = logscan(*args)
        assert out.returncode == status, (args[0], out.stderr)
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert uri.split("/")[2] in out.stderr and "SIGNATURE_DOES_NOT_MATCH" in out.stderr, out.stderr
    assert not (tmp_path / "r.html").exists()


# --- crash safety on the store ------------------------------------------------------------------

#: `logscan scan --output s3://... --executor local` stopped before LOGSCAN_TEST_STOP's commit
#: (its Parquet written to the store), where it touches LOGSCAN_TEST_HERE and waits.
_STOPPED = """
import os, sys, threading
from pathlib import Path
from logscan.scan import output
real = output.commit
def commit(out, table, scan_id, parts):
    if table == os.environ["LOGSCAN_TEST_STOP"]:
        assert parts
        Path(os.environ["LOGSCAN_TEST_HERE"]).touch()
        threading.Event().wait()
    return real(out, table, scan_id, parts)
output.commit = commit
from logscan.cli import main
main(sys.argv[1:])
"""


def test_a_scan_killed_before_a_commit_leaves_the_table_on_the_store_as_it_was(s3, tmp_path):
    uri = s3.uri("logscan-tables", "killed")
    args = ["scan", str(HANGING / "brokers"), "--output", uri, "--executor", "local", "--tables", "all",
            "--as-of", str(AS_OF), "--no-progress", *_options(s3)]
    assert logscan(*args, "--scan-id", "a").returncode == 4
    names = [*ALL, R.SCANS_TABLE]
    before = versions(uri, names)
    a_rows = {n: rows(uri, n, "a") for n in names}

    here = tmp_path / "here"
    proc = subprocess.Popen([sys.executable, "-c", _STOPPED, *args, "--scan-id", "b"], cwd=REPO,
                            env={**_env(), "LOGSCAN_TEST_STOP": "txn_spans", "LOGSCAN_TEST_HERE": str(here)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not here.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the scan never reached its stopping point"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    after = versions(uri, names)
    order = commit_order(ALL)
    stopped = order.index("txn_spans")
    for name in order[stopped:] + [R.SCANS_TABLE]:
        assert after[name] == before[name], name        # killed before its commit: as it was
        assert rows(uri, name, "b") == [], name
    for name in order[:stopped]:
        assert after[name] == before[name] + 1, name    # committed before the kill
        assert rows(uri, name, "b"), name
    for name in names:
        assert rows(uri, name, "a") == a_rows[name], name  # the other scan's rows stay
    # the killed table's Parquet is on the store, named by no version
    from pyarrow import fs as pafs

    parts = [i.path for i in s3.filesystem.get_file_info(
        pafs.FileSelector("logscan-tables/killed/txn_spans/scan_id=b", allow_not_found=True, recursive=True))]
    assert parts and not _table(uri, "txn_spans").to_pyarrow_table(filters=[("scan_id", "=", "b")]).num_rows

    rerun = logscan(*args, "--scan-id", "b")
    assert rerun.returncode == 4, rerun.stderr
    assert {n: rows(uri, n, "b") for n in names if n != R.SCANS_TABLE} == \
        {n: sorted(r.replace('"scan_id": "a"', '"scan_id": "b"') for r in a_rows[n]) for n in names
         if n != R.SCANS_TABLE}


@pytest.mark.spark
def test_the_spark_job_killed_before_a_commit_leaves_the_table_on_the_store_as_it_was(s3, tmp_path):
    """spark_jobs/scan.py with --storage-option, stopped at its fault point ``write:txn_spans``
    (the tables before it committed, txn_spans' Parquet written) and SIGKILLed there."""
    pytest.importorskip("pyspark")
    from spark_jobs import faults

    uri = s3.uri("logscan-tables", "spark-killed")
    assert logscan("scan", str(HANGING / "brokers"), "--output", uri, "--executor", "local", "--tables", "all",
                   "--as-of", str(AS_OF), "--no-progress", "--scan-id", "a", *_options(s3)).returncode == 4
    names = [*ALL, R.SCANS_TABLE]
    before = versions(uri, names)
    a_rows = {n: rows(uri, n, "a") for n in names}

    marker = tmp_path / "paused"
    env = {**_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           faults.PAUSE_AT: "write:txn_spans", faults.PAUSE_FILE: str(marker)}
    with open(tmp_path / "job.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "spark_jobs.scan", str(HANGING / "brokers"), "--output", uri,
                                 "--scan-id", "b", "--as-of", str(AS_OF), "--master", "local[2]", "--tables", "all",
                                 *_options(s3)],
                                cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while not marker.exists():
            assert proc.poll() is None, (tmp_path / "job.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the job never reached its stop"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    after = versions(uri, names)
    order = commit_order(ALL)
    stopped = order.index("txn_spans")
    for name in order[stopped:] + [R.SCANS_TABLE]:
        assert after[name] == before[name] and rows(uri, name, "b") == [], name
    for name in order[:stopped]:
        assert after[name] == before[name] + 1 and rows(uri, name, "b"), name
    for name in names:
        assert rows(uri, name, "a") == a_rows[name], name
