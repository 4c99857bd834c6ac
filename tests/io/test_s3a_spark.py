"""Spark reads a scan's Delta tables in the store through Hadoop's S3A (hadoop-aws and the AWS SDK
bundle `make s3a-jars` fetches): `logscan sql --engine spark --tables s3a://...` (the
--storage-option values as spark.hadoop.fs.s3a.* settings) and docs/spark.md's spark-sql line
(credentials from the environment) answer as the embedded engine does over the same tables, on
a real S3 server (SeaweedFS on loopback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from logscan.logdir import store
from logscan.scan import delta
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)

from .test_s3_tables import ALL, AS_OF, HANGING, REPO, RUN_TIMEOUT_S, _env, _options, logscan

pytestmark = [pytest.mark.objectstore, pytest.mark.spark]

QUERIES = ("SELECT topic, partition, broker, lso_lag FROM partition_state ORDER BY ALL",
           "SELECT broker, topic, partition, producer_id, reason FROM hanging_candidates WHERE hanging ORDER BY ALL",
           "SELECT outcome, count(*) AS spans FROM txn_spans GROUP BY outcome ORDER BY outcome")


def _s3a_jars_or_skip() -> list[str]:
    from spark_jobs.session import s3a_jars

    try:
        return s3a_jars()
    except FileNotFoundError as e:
        pytest.skip(str(e))


def test_hadoop_aws_is_the_hadoop_release_pyspark_ships():
    import pyspark

    jars = _s3a_jars_or_skip()
    shipped = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")]
    (version,) = [re.fullmatch(r"hadoop-client-api-(.+)\.jar", n).group(1) for n in shipped]
    assert f"hadoop-aws-{version}.jar" in [Path(j).name for j in jars]
    assert any(Path(j).name.startswith("bundle-") for j in jars)   # the AWS SDK v2 S3A is built on


def test_hadoop_options_are_pyarrows_in_s3as_spelling():
    given = {"endpoint_override": "127.0.0.1:9000", "scheme": "http", "access_key": "AK", "secret_key": "s",
             "region": "eu-west-1", "AWS_S3_LOCKING_PROVIDER": "dynamodb"}
    assert store.hadoop_options(given) == {
        "fs.s3a.endpoint": "http://127.0.0.1:9000", "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "s",
        "fs.s3a.endpoint.region": "eu-west-1"}
    assert store.hadoop_options({}) == {}


@pytest.fixture(scope="module")
def tables(object_store):  # noqa: F811
    """The hanging cluster's tables written into the store by the local executor: (store, URI)."""
    _s3a_jars_or_skip()
    object_store.create_bucket("logscan-s3a")
    uri = object_store.uri("logscan-s3a", "tables")
    with configured(object_store):
        delta.write_tables([HANGING / "brokers"], uri, scan_id="hanging", tables=ALL, as_of_ms=AS_OF)
    return object_store, uri


def _embedded(s3, uri: str, query: str) -> list:
    out = logscan("sql", "--tables", uri, *_options(s3), "--format", "json", query)
    assert out.returncode == 0, out.stderr
    answer = [json.loads(line) for line in out.stdout.splitlines()]
    assert answer, query
    return answer


def test_a_sessions_settings_reach_the_store_by_s3a_for_s3_and_s3a_uris():
    """What spark_jobs.session.store_conf gives a session: the workers' options always, S3A's
    settings (and s3:// read by S3A) for s3:// and s3a:// URIs only. No JVM."""
    from spark_jobs.session import store_conf

    given = {"endpoint_override": "127.0.0.1:9000", "scheme": "http", "access_key": "AK", "secret_key": "s"}
    store.configure(given)
    try:
        workers = {f"spark.executorEnv.{store.OPTIONS_ENV}": json.dumps(given, sort_keys=True)}
        assert store_conf(["gs://b/t", "/local"]) == workers
        for uri in ("s3://b/t", "s3a://b/t"):
            conf = store_conf([uri])
            assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
            assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
            assert conf["spark.hadoop.fs.s3a.secret.key"] == "s" and conf.items() >= workers.items()
    finally:
        store.configure()
    assert store_conf(["s3a://b/t"]) == {"spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}


def test_logscan_sql_with_spark_reads_the_tables_in_the_store(tables):
    s3, uri = tables
    at = uri.replace("s3://", "s3a://", 1)
    piped = "\n".join(q + ";" for q in QUERIES)
    out = subprocess.run([os.fspath(REPO / ".venv" / "bin" / "python"), "-c", "from logscan.cli import main; main()",
                          "sql", "--engine", "spark", "--master", "local[1]", "--tables", at, *_options(s3),
                          "--format", "json"], input=piped, capture_output=True, text=True, env=_env(), cwd=REPO,
                         timeout=RUN_TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-3000:]
    assert s3.secret_key not in out.stdout + out.stderr
    want = [row for q in QUERIES for row in _embedded(s3, uri, q)]
    assert [json.loads(line) for line in out.stdout.splitlines()] == want


def _documented_spark_sql() -> str:
    """docs/spark.md's spark-sql command for tables in the store (the block after its export
    and TABLES lines, which the test sets itself)."""
    text = (REPO / "docs" / "spark.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "--jars --s3a" in b and "spark-sql" in b)
    lines = block.splitlines()
    assert lines[0].startswith("export AWS_ACCESS_KEY_ID=") and lines[1].startswith("TABLES=")
    return "\n".join(lines[2:])


def test_the_documented_spark_sql_line_reads_the_tables_in_the_store(tables):
    s3, uri = tables
    env = {**_env(), "AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
           "AWS_REGION": s3.region, "TABLES": uri.replace("s3://", "s3a://", 1), "ENDPOINT": s3.endpoint_url}
    out = subprocess.run(["bash", "-c", _documented_spark_sql()], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=RUN_TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-3000:]
    got = [line.split("\t") for line in out.stdout.splitlines() if line.strip()]
    want = [[str(r[k]) for k in ("topic", "partition", "broker", "lso_lag")] for r in _embedded(s3, uri, QUERIES[0])]
    assert got == want
