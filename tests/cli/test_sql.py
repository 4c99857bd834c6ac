"""`logscan sql` over the Delta tables of a Spark scan of the fixture cluster.

The README's example queries are run exactly as written on the embedded engine (DuckDB over
delta-rs, no JVM), their answers checked against truth.json, and compared, statement by
statement and table by table, with Spark SQL's rows and column comments for the same
statements. Everything but a query is refused, and leaves the tables and the disk as they
were."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan import rows as R
from logscan.sql.embedded import EmbeddedEngine
from logscan.sql.statements import check_read_only, is_query, split, statements

from .conftest import REPO, plans, truth as _truth

pytest.importorskip("pyspark")
from spark_jobs.session import DELTA_LIBS  # noqa: E402

needs_delta_jars = pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                      reason="Delta jars missing: run `make delta-jars`")
# The fixture tables are written by the Spark job, so every test on them needs the jars.
pytestmark = [needs_delta_jars]


def _readme_block() -> str:
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- logscan-sql-examples.*?-->\s*```sql\n(.*?)```", text, re.S)
    assert block, "README lost its logscan sql examples"
    return block.group(1)


def _readme_queries() -> list[str]:
    return list(statements(_readme_block().splitlines()))


def _sql(tables: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["sql", "--tables", str(tables), *args], input=input)


def test_readme_queries_answer_from_the_fixture_tables(tables):
    queries = _readme_queries()
    assert len(queries) == 3
    truth = _truth()
    answers = []
    for q in queries:
        res = _sql(tables, "--format", "json", "--", q)   # "--": the query starts with a comment
        assert res.exit_code == 0, (q, res.output)
        answers.append([json.loads(line) for line in res.stdout.splitlines()])
    lag, candidates, history = answers
    # Every partition the leader reports with an LSO below its HW shows up with that lag.
    for part in truth["partitions"]:
        lag_leader = part["high_watermark"] - part["last_stable_offset"]
        if lag_leader > 0:
            assert {"topic": part["topic"], "partition": part["partition"], "broker": part["leader"],
                    "lso_lag": lag_leader} .items() <= next(
                r for r in lag if (r["topic"], r["partition"], r["broker"]) ==
                (part["topic"], part["partition"], part["leader"])).items()
    # The hanging transactions find-hanging listed live, once each, with `logscan plan`'s command.
    live = {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"]))
            for name, rec in truth["find_hanging"].items() for r in rec["rows"]}
    txns = [(r["topic"], r["partition"], r["producer_id"], r["start_offset"]) for r in candidates]
    assert len(txns) == len(set(txns)) and set(txns) >= live
    assert all(r["reason"] for r in candidates)
    assert sorted(r["command"] for r in candidates) == sorted(p["command"] for p in plans())
    assert all(r["replicas"] == [0, 1, 2] and r["idle_min"] >= 15 for r in candidates)
    # The oldest hanging producer's spans: all OPEN, on the partition it hangs on.
    pid = min(r["producer_id"] for r in candidates)
    hung = {(r["topic"], r["partition"]) for r in candidates if r["producer_id"] == pid}
    assert history and {(r["topic"], r["partition"]) for r in history if r["outcome"] == "OPEN"} == hung


def test_piped_readme_examples_print_what_one_by_one_runs_print(tables):
    piped = _sql(tables, input=_readme_block())
    assert piped.exit_code == 0, piped.output
    one_by_one = "".join(_sql(tables, "--", q).stdout for q in _readme_queries())
    assert piped.stdout == one_by_one and one_by_one.count(" rows)") == 3


def test_text_and_csv_output(tables):
    q = "SELECT topic, partition, broker, lso_lag FROM partition_state WHERE topic = 'hang' ORDER BY partition, broker"
    text = _sql(tables, q)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["topic", "partition", "broker", "lso_lag"]
    assert lines[-1] == "(9 rows)"
    rows = list(csv.reader(io.StringIO(_sql(tables, q, "--format", "csv").stdout)))
    assert rows[0] == ["topic", "partition", "broker", "lso_lag"] and len(rows) == 10


def test_describe_shows_each_columns_comment_from_the_delta_schema(tables):
    res = _sql(tables, "DESCRIBE partition_state", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = {r["col_name"]: r for r in map(json.loads, res.stdout.splitlines())}
    assert rows["lso_lag"] == {"col_name": "lso_lag", "data_type": "bigint",
                               "comment": "high_watermark - last_stable_offset (LastStableOffsetLag)"}
    assert rows["as_of"]["data_type"] == "timestamp" and all(r["comment"] for r in rows.values())


def test_event_times_are_utc_timestamps_beside_their_epoch_ms(tables):
    res = _sql(tables, "--format", "json", "SELECT max_timestamp, max_time, oldest_txn_last_timestamp, "
               "oldest_txn_last_time FROM partition_state")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows and any(r["oldest_txn_last_timestamp"] == -1 for r in rows)
    for r in rows:
        for ms, time in (("max_timestamp", "max_time"), ("oldest_txn_last_timestamp", "oldest_txn_last_time")):
            expected = (None if r[ms] < 0 else
                        datetime.fromtimestamp(r[ms] // 1000, timezone.utc).replace(
                            microsecond=r[ms] % 1000 * 1000, tzinfo=None).isoformat())
            assert r[time] == expected, r
    described = {r["col_name"]: r for r in map(json.loads, _sql(tables, "DESCRIBE txn_spans", "--format",
                                                                 "json").stdout.splitlines())}
    assert described["start_time"]["data_type"] == "timestamp"
    assert described["start_time"]["comment"].startswith("start_timestamp as a UTC timestamp")
    assert described["start_timestamp"]["data_type"] == "bigint"


def _docs_differences_query() -> str:
    text = (REPO / "docs" / "spark.md").read_text()
    return re.search(r"```sql\n(-- how far each replica is from each other.*?)```", text, re.S).group(1)


def test_replica_differences_are_structs_the_docs_query_unnests(tables):
    """docs/spark.md's query over replica_differences, as written: the fixture cluster's
    lagging follower (truth: post_copy.replica_truncation) against the other replicas, by field."""
    res = _sql(tables, "--format", "json", "--", _docs_differences_query())
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows and all(r["value"] != r["other_value"] and r["broker"] != r["other_broker"] for r in rows)
    cut = _truth()["post_copy"]["replica_truncation"]
    behind = [r for r in rows if (r["topic"], r["partition"], r["broker"]) == (cut["topic"], cut["partition"],
                                                                             cut["broker"])]
    assert {r["field"] for r in behind} >= {"log_end_offset"}
    assert all(r["value"] < r["other_value"] for r in behind if r["field"] == "log_end_offset")
    text = _sql(tables, "--format", "json", "SELECT replicas_agree, replica_differences FROM partition_state")
    for r in map(json.loads, text.stdout.splitlines()):
        assert (r["replica_differences"] == []) == r["replicas_agree"]
        assert all(d["text"] for d in r["replica_differences"])


def test_prompt_reads_statements_until_quit(tables):
    script = "SELECT count(*) AS n\n FROM files;\nSELECT 'a;b' AS s;\n\\q\nSELECT 1;\n"
    res = _sql(tables, "--format", "json", input=script)
    assert res.exit_code == 0, res.output
    out = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == 2 and out[0]["n"] > 0 and out[1] == {"s": "a;b"}


def test_a_failed_statement_among_piped_ones_exits_1(tables):
    res = _sql(tables, "--format", "json", input="SELECT nope FROM files;\nSELECT 1 AS one;\n")
    assert res.exit_code == 1 and json.loads(res.stdout) == {"one": 1}
    assert "nope" in res.stderr


def test_errors_are_one_sentence(tables, tmp_path):
    bad = _sql(tables, "SELECT no_such_column FROM partition_state")
    assert bad.exit_code == 1
    assert "no_such_column" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    empty = CliRunner().invoke(main, ["sql", "--tables", str(tmp_path), "SELECT 1"])
    assert empty.exit_code == 2 and "no Delta tables" in empty.output and "--output" in empty.output
    missing = CliRunner().invoke(main, ["sql", "--tables", str(tmp_path / "nope"), "SELECT 1"])
    assert missing.exit_code == 2 and "no such folder" in missing.output


def test_ctrl_c_at_the_prompt_exits_130_without_a_traceback(tables):
    terminal, prompt_side = pty.openpty()   # a person at the prompt: stdin is a terminal
    try:
        proc = subprocess.Popen([sys.executable, "-m", "logscan.cli", "sql", "--tables", str(tables)],
                                stdin=prompt_side, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr.readline().startswith("tables: ")   # waiting for a statement now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        os.close(terminal)
        os.close(prompt_side)
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_piped_statements_print_no_prompt_banner(tables):
    proc = subprocess.run([sys.executable, "-m", "logscan.cli", "sql", "--tables", str(tables)],
                          input="SELECT 1 AS one;\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "one" in proc.stdout
    assert proc.stderr == "", proc.stderr


# --- the statement splitter and the read-only check --------------------------------------------

def test_statement_splitting_keeps_comments_out_of_the_next_statement():
    assert list(statements(["select 1; select ';'", "as x;", "select", "2"])) == [
        "select 1", "select ';'\nas x", "select\n2"]
    assert list(statements(["\\q", "select 1;"])) == []
    assert list(statements(["-- first", "SELECT 1; -- after ;", "/* a; b */", "SELECT 2;", "-- the end"])) == [
        "-- first\nSELECT 1", "/* a; b */\nSELECT 2"]
    assert list(statements(["SELECT 'a;", "b';"])) == ["SELECT 'a;\nb'"]   # a ';' in a string spans lines
    assert split("SELECT 1; -- x\nSELECT 2; /* y */") == ["SELECT 1", "SELECT 2"]   # after a ;: its own line


QUERIES = ["SELECT 1", "WITH x AS (SELECT 1) SELECT * FROM x", "VALUES (1)", "(SELECT 1) UNION (SELECT 2)",
           "SHOW TABLES", "DESCRIBE partition_state", "DESC TABLE files", "EXPLAIN SELECT 1",
           "-- note\nSELECT 1"]
WRITES = {
    "insert": "INSERT INTO partition_state SELECT * FROM partition_state",
    "insert_directory": "INSERT OVERWRITE DIRECTORY '{out}' SELECT * FROM partition_state",
    "delete": "DELETE FROM partition_state",
    "update": "UPDATE partition_state SET lso_lag = 0",
    "merge": "MERGE INTO partition_state t USING partition_state s ON t.broker = s.broker WHEN MATCHED THEN DELETE",
    "create": "CREATE TABLE copied AS SELECT * FROM partition_state",
    "drop": "DROP TABLE partition_state",
    "copy": "COPY partition_state TO '{out}'",
    "attach": "ATTACH '{out}' AS other",
    "set": "SET enable_external_access = true",
    "pragma": "PRAGMA enable_profiling",
    "install": "INSTALL delta",
    "load": "LOAD delta",
    "call": "CALL pragma_version()",
    "with_insert": "WITH x AS (SELECT 1) INSERT INTO partition_state SELECT * FROM x",
    "explain_insert": "EXPLAIN INSERT INTO partition_state SELECT * FROM partition_state",
}


@pytest.mark.parametrize("statement", QUERIES)
def test_queries_are_read_only(statement):
    assert is_query(statement)
    check_read_only(statement)


def _table_state(tables: Path) -> dict[str, tuple]:
    """Every file under the tables, with its size and modification time."""
    return {str(p.relative_to(tables)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in tables.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_are_refused_and_change_nothing(tables, tmp_path, name):
    out = tmp_path / "written"
    statement = WRITES[name].format(out=out)
    assert not is_query(statement)
    before = _table_state(tables)
    rows_before = _sql(tables, "SELECT count(*) AS n FROM partition_state", "--format", "json").stdout
    res = _sql(tables, statement)
    assert res.exit_code == 1 and "read-only" in res.stderr, res.output
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert _table_state(tables) == before and not out.exists() and list(tmp_path.iterdir()) == []
    assert _sql(tables, "SELECT count(*) AS n FROM partition_state", "--format", "json").stdout == rows_before


@pytest.mark.parametrize("query", ["SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM read_text('/etc/hostname')",
                                   "SELECT * FROM glob('/etc/*')"])
def test_a_query_cannot_read_other_files(tables, query):
    assert is_query(query)   # the read-only check lets it through: the engine itself refuses
    res = _sql(tables, query)
    assert res.exit_code == 1 and "disabled by configuration" in res.stderr and "root:" not in res.stdout


def test_the_engine_refuses_files_even_past_the_check(tables, tmp_path):
    engine = EmbeddedEngine(tables)
    try:
        from logscan.sql import QueryError

        for statement in (f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'", f"ATTACH '{tmp_path / 'x.db'}'",
                          "SET enable_external_access = true", "INSTALL delta"):
            with pytest.raises(QueryError):
                engine.run(statement, limit=10)
    finally:
        engine.close()
    assert list(tmp_path.iterdir()) == []


def test_allow_writes_needs_the_spark_engine(tables):
    res = _sql(tables, "--allow-writes", "SELECT 1")
    assert res.exit_code == 2 and "--engine spark" in res.output


# --- the same statements through Spark SQL -----------------------------------------------------

@pytest.fixture(scope="module")
def spark_engine(tables, tmp_path_factory):
    """One Spark session for the module (the CLI's --engine spark runs reuse it)."""
    from spark_jobs.sql import SparkEngine

    engine = SparkEngine(tables, master="local[2]")
    yield engine
    engine.spark.stop()
    engine.close()


def _plain(value):
    """A Spark Row as a dict, recursively, so rows of both engines compare as values."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _both(spark_engine, tables, statement, limit=100_000):
    embedded = EmbeddedEngine(tables)
    try:
        mine = embedded.run(statement, limit=limit)
    finally:
        embedded.close()
    theirs = spark_engine.run(statement, limit=limit)
    return mine, theirs


@pytest.mark.spark
@pytest.mark.parametrize("index", range(3))
def test_readme_queries_give_spark_sqls_rows(spark_engine, tables, index):
    mine, theirs = _both(spark_engine, tables, _readme_queries()[index])
    assert mine.columns == theirs.columns
    assert [_plain(r) for r in mine.rows] == [_plain(r) for r in theirs.rows] and mine.rows


#: Every table the fixture scan wrote (all of them, batches too) and the scans table.
TABLES = sorted({*R.TABLES, R.SCANS_TABLE})


@pytest.mark.spark
@pytest.mark.parametrize("table", TABLES)
def test_each_table_gives_spark_sqls_rows_and_comments(spark_engine, tables, table):
    mine, theirs = _both(spark_engine, tables, f"DESCRIBE {table}")
    assert mine == theirs and all(comment for _, _, comment in mine.rows)
    mine, theirs = _both(spark_engine, tables, f"SELECT * FROM {table}")
    assert mine.columns == theirs.columns
    assert sorted(map(repr, map(_plain, mine.rows))) == sorted(map(repr, map(_plain, theirs.rows)))


@pytest.mark.spark
def test_show_tables_matches_spark_and_leaves_no_warehouse(spark_engine, tables):
    user_dir = Path(spark_engine.spark._jvm.java.lang.System.getProperty("user.dir"))
    had = (user_dir / "spark-warehouse").exists()
    mine, theirs = _both(spark_engine, tables, "SHOW TABLES")
    assert mine == theirs and [r[1] for r in mine.rows] == TABLES
    assert had or not (user_dir / "spark-warehouse").exists()
    assert not (Path.cwd() / "spark-warehouse").exists() or had


@pytest.mark.spark
def test_spark_engine_is_read_only_too_unless_allowed(spark_engine, tables, tmp_path):
    out = tmp_path / "dir"
    before = _table_state(tables)
    res = _sql(tables, "--engine", "spark", f"INSERT OVERWRITE DIRECTORY '{out}' SELECT 1")
    assert res.exit_code == 1 and "read-only" in res.stderr and not out.exists()
    files = _sql(tables, "--engine", "spark", f"SELECT * FROM csv.`{REPO / 'README.md'}`")
    assert files.exit_code == 1 and len(files.stderr.strip().splitlines()) == 1
    assert _table_state(tables) == before
    allowed = _sql(tables, "--engine", "spark", "--allow-writes", f"INSERT OVERWRITE DIRECTORY '{out}' USING csv "
                   "SELECT 1 AS one")
    assert allowed.exit_code == 0, allowed.output
    assert out.is_dir() and _table_state(tables) == before
