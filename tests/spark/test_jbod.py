"""The Spark scan of a broker with two log dirs (JBOD) holding one partition twice, beside a
docker-compose copy's zookeeper/ and logs/ (issue 36 item 3): one replica per (broker, topic,
partition), the same tables as the local executor's (logscan.scan.local.scan), the folders
that are no log dirs skipped, and the 'duplicate' finding naming both folders, no crash.

Built from the real `hanging` cluster (tests/scan/copy_shapes.py): broker 1's partitions
split over two dirs, each with its own meta.properties (its own directory.id) and checkpoints,
then hang-0 put in both, the copy in the dir whose checkpoint does not list it cut short.
One Spark session for the module.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from pyspark.sql import functions as F  # noqa: E402

from logscan.scan import rows as R  # noqa: E402
from logscan.scan.listing import DUPLICATE  # noqa: E402
from logscan.scan.local import scan as local_scan  # noqa: E402
from spark_jobs import scan as spark_scan  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402
from tests.scan.copy_shapes import (HANGING_MOVED, add_compose_folders, copy_cluster,  # noqa: E402
                                    cut_after_first_batch, split_jbod)
from tests.scan.test_diverged import AS_OF as DIVERGED_AS_OF  # noqa: E402
from tests.scan.test_diverged import assert_withheld, two_histories_copy  # noqa: E402
from tests.scan.test_jbod_fixture import assert_the_forgotten_disk_withholds_hang_2, forgotten_disk_copy  # noqa: E402
from tests.scan.test_leader_absent import AS_OF as LEADERLESS_AS_OF  # noqa: E402
from tests.scan.test_leader_absent import REPLICA as LEADERLESS  # noqa: E402
from tests.scan.test_leader_absent import lone_follower_copy  # noqa: E402
from tests.scan.test_stale_coordinator import AS_OF as STALE_AS_OF  # noqa: E402
from tests.scan.test_stale_coordinator import LIVE  # noqa: E402
from tests.scan.test_stale_coordinator import stale_copy as stale_coordinator_copy  # noqa: E402
from tests.spark import assert_tables_equal, local_session, table  # noqa: E402

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging"
#: Every table but batches (a row per batch: not one the listing shapes).
COMPARED = [t for t in R.TABLES if t != "batches"]

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]


@pytest.fixture(scope="module")
def spark():
    with local_session("logscan-tests-jbod", 2) as session:
        yield session


def test_a_jbod_broker_with_a_partition_in_both_dirs(spark, tmp_path):
    as_of = json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"]
    copy = copy_cluster(HANGING, tmp_path)
    beside = add_compose_folders(copy)
    second = split_jbod(copy, "broker-1", "broker-1-disk2", HANGING_MOVED)
    stale = copy / "broker-1" / "hang-0"
    shutil.copytree(second / "hang-0", stale)
    cut_after_first_batch(stale)
    want = local_scan([copy], as_of_ms=as_of).tables
    output = str(tmp_path / "tables")

    scan_id, _ = spark_scan.run(spark, [copy], output, scan_id="jbod", as_of_ms=as_of)

    assert_tables_equal(spark, output, scan_id, want, COMPARED)
    states = table(spark, output, "partition_state", scan_id)
    assert states.groupBy("broker", "topic", "partition").count().where("count > 1").count() == 0
    assert states.select("broker").distinct().count() == 3
    (finding,) = table(spark, output, "corruptions", scan_id).where(F.col("reason") == DUPLICATE).collect()
    assert (finding.broker, finding.topic, finding.partition, finding.file) == (1, "hang", 0, str(stale))
    assert f"{second / 'hang-0'} and {stale}" in finding.message
    skipped = table(spark, output, "files", scan_id).where(F.col("broker").isNull())
    assert sorted((r.file, r.status) for r in skipped.collect()) == sorted((str(p), "skipped") for p in beside)


def test_a_forgotten_disk_withholds_the_abort(spark, tmp_path):
    """The Spark job on fixtures/jbod without node 0's second disk: the listing's dir_gap
    reaches the per-replica rules in the decode task and in the per-replica step alike (the
    rows of tests/scan/test_jbod_fixture.py's local scan)."""
    copy = forgotten_disk_copy(tmp_path)
    for replay_in_decode in (True, False):
        output = str(tmp_path / f"tables-{replay_in_decode}")
        spark_scan.run(spark, [copy], output, scan_id="cut", replay_in_decode=replay_in_decode)
        candidates, plans = ([r.asDict() for r in table(spark, output, t, "cut").collect()]
                             for t in ("hanging_candidates", "abort_plans"))
        assert_the_forgotten_disk_withholds_hang_2(candidates, plans)


def test_a_partition_without_its_last_leader_s_replica_gets_no_plan(spark, tmp_path):
    """The Spark job on the copy whose replica-0 is held by its cut follower alone
    (tests/scan/test_leader_absent.py): the last leader reaches the partition step through the
    metadata step's rows, and every table equals the local executor's, the follower's open
    transaction partition_not_in_copy with no plan."""
    copy = lone_follower_copy(tmp_path)
    want = local_scan([copy], as_of_ms=LEADERLESS_AS_OF).tables
    output = str(tmp_path / "tables")
    spark_scan.run(spark, [copy], output, scan_id="lone", as_of_ms=LEADERLESS_AS_OF)
    assert_tables_equal(spark, output, "lone", want, COMPARED)
    reasons = {r.reason for r in table(spark, output, "hanging_candidates", "lone")
               .where((F.col("topic") == LEADERLESS[0]) & (F.col("partition") == LEADERLESS[1])).collect()}
    assert reasons == {"partition_not_in_copy"}
    assert table(spark, output, "abort_plans", "lone").where(F.col("topic") == LEADERLESS[0]).count() == 0


def test_two_histories_withhold_the_partition_s_verdicts(spark, tmp_path):
    """The Spark job on the hanging cluster whose broker 1 (hang/2's last leader) holds hang-0's
    log as its hang-2 (tests/scan/test_diverged.py): the partition step sees the two histories
    from the closed spans Spark sorts by end-marker offset, as the local executor does, and
    every table equals the local one: hang/2's verdicts diverged, no plan."""
    copy = two_histories_copy(tmp_path)
    want = local_scan([copy], as_of_ms=DIVERGED_AS_OF).tables
    output = str(tmp_path / "tables")
    spark_scan.run(spark, [copy], output, scan_id="two", as_of_ms=DIVERGED_AS_OF)
    assert_tables_equal(spark, output, "two", want, COMPARED)
    assert_withheld({name: [r.asDict(recursive=True) for r in table(spark, output, name, "two").collect()]
                     for name in COMPARED}, 1)


def test_a_former_coordinator_s_unreplicated_tail_is_not_read(spark, tmp_path):
    """The Spark job on the hanging cluster whose `__transaction_state-0` follower holds a former
    leader's tail past the new leader epoch (tests/scan/test_stale_coordinator.py): the driver
    picks the replica to load by the leader epochs the decode tasks tally, as the local executor
    does, and every table equals the local one: hang-ongoing-0 live, no plan."""
    copy = stale_coordinator_copy(tmp_path, new_epoch=True)
    want = local_scan([copy], as_of_ms=STALE_AS_OF).tables
    output = str(tmp_path / "tables")
    spark_scan.run(spark, [copy], output, scan_id="stale", as_of_ms=STALE_AS_OF)
    assert_tables_equal(spark, output, "stale", want, COMPARED)
    on_live = (F.col("topic") == LIVE[0]) & (F.col("partition") == LIVE[1])
    assert {r.reason for r in table(spark, output, "hanging_candidates", "stale").where(on_live).collect()} == \
        {"coordinator_ongoing"}
    assert table(spark, output, "abort_plans", "stale").where(on_live).count() == 0
