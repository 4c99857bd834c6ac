"""Live tests: a real 3-node cluster from the pinned jars (marker ``kafka``; ~1 minute).

They check that the harness starts and stops a cluster, that a scenario re-run on a fresh
cluster gives Kafka's tools the same answers that were recorded into the committed fixtures
(offsets are deterministic for a fixed scenario), and that kafka-dump-log reproduces the
recorded dumps from the committed copies.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafka.conftest import FIXTURES, load_truth
from tools.kafka.cluster import Cluster, jars_present, libs_for, run_java_tool, wait_for
from tools.kafka.scenarios import SCENARIOS, ScenarioContext
from tools.kafka.truth import Recorder, parse_table

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not jars_present(), reason="Kafka jars absent: make kafka-jars")]

RECORDED = FIXTURES / "tv2"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("kafka") / "c", transaction_version=2)
    cluster.start()
    ctx = ScenarioContext(cluster)
    pids = [p.pid for p in cluster.procs.values()]
    try:
        for name in ("txn_basic", "txn_open"):
            SCENARIOS[name].fn(ctx)
        yield cluster, ctx
        # stop through the CLI (what `make kafka-down` runs): another process, pids from
        # cluster.json; then the in-process handle must find nothing left to stop
        cli = [sys.executable, "-m", "tools.kafka.cluster", "--workdir", str(cluster.workdir)]
        assert subprocess.run([*cli, "status"], capture_output=True).returncode == 0
        assert subprocess.run([*cli, "stop"], capture_output=True).returncode == 0
        assert [p.poll() is not None for p in cluster.procs.values()] == [True] * 3
    finally:
        cluster.stop(hard=True)
        ctx.keep_alive.clear()
    assert not any(cluster.running().values())
    assert not (cluster.workdir / "cluster.json").exists()
    assert pids and not [p for p in pids if Path(f"/proc/{p}").exists()]


def _describe_producers(cluster, topic, partition, broker=None):
    args = ["describe-producers", "--topic", topic, "--partition", partition]
    if broker is not None:
        args += ["--broker-id", broker]
    cp = cluster.run_tool("kafka-transactions", *args)
    assert cp.returncode == 0, cp.stderr
    return parse_table(cp.stdout)


def test_cluster_started_quickly_on_loopback(live):
    cluster, _ = live
    assert cluster.start_seconds < 60
    assert all(h.startswith("127.0.0.1:") for h in cluster.bootstrap.split(","))
    assert all(cluster.running().values()) and len(cluster.running()) == 3
    assert all((d / "meta.properties").exists() for d in cluster.log_dirs.values())


def test_live_offsets_and_producers_match_the_recorded_fixture(live, tmp_path):
    cluster, ctx = live
    recorded = load_truth(RECORDED)
    truth = Recorder(cluster, tmp_path).record(ctx.notes)
    for p in truth["partitions"]:
        if p["topic"] not in ("txn-a", "txn-b"):
            continue
        r = next(x for x in recorded["partitions"]
                 if (x["topic"], x["partition"]) == (p["topic"], p["partition"]))
        key = (p["topic"], p["partition"])
        assert (p["high_watermark"], p["last_stable_offset"]) == \
            (r["high_watermark"], r["last_stable_offset"]), key
        open_live = sorted(row["CurrentTransactionStartOffset"]
                           for rows in p["producers"].values() for row in rows["rows"])
        open_rec = sorted(row["CurrentTransactionStartOffset"]
                          for rows in r["producers"].values() for row in rows["rows"])
        assert open_live == open_rec, key
    assert {k: [row.keys() for row in v["rows"]] for k, v in truth["describe"].items()
            if k in ("txn-basic", "txn-open")} == \
        {k: [row.keys() for row in v["rows"]] for k, v in recorded["describe"].items()
         if k in ("txn-basic", "txn-open")}


def test_admin_abort_closes_the_open_transaction_without_the_coordinator(live):
    """kafka-transactions abort writes an ABORT marker straight to the leader: the partition's
    LSO jumps to the high watermark while the coordinator still calls the transaction Ongoing,
    and from then on find-hanging's rule sees nothing open on that partition."""
    cluster, _ = live
    (open_row,) = [r for r in _describe_producers(cluster, "txn-a", 2)
                   if r["CurrentTransactionStartOffset"] != "None"]
    cp = cluster.run_tool("kafka-transactions", "abort", "--topic", "txn-a", "--partition", 2,
                          "--start-offset", open_row["CurrentTransactionStartOffset"])
    assert cp.returncode == 0, cp.stderr
    wait_for(lambda: [_describe_producers(cluster, "txn-a", 2, b) for b in range(3)],
             lambda rows: all(r["CurrentTransactionStartOffset"] == "None" for rs in rows for r in rs),
             timeout=20, every=0.5, failure=lambda rows: f"replicas still show an open transaction: {rows}")
    cp = cluster.run_tool("kafka-transactions", "describe", "--transactional-id", "txn-open")
    (desc,) = parse_table(cp.stdout)
    assert desc["TransactionState"] == "Ongoing"
    assert "txn-a-2" in desc["TopicPartitions"].split(",")
    for b in range(3):
        cp = cluster.run_tool("kafka-transactions", "find-hanging", "--broker-id", b,
                              "--max-transaction-timeout", 0)
        assert cp.returncode == 0
        assert not [r for r in parse_table(cp.stdout) if r["Topic"] == "txn-a"]


@pytest.mark.parametrize("cluster", ["tv2", "kafka-3.9", "kafka-4.4"])
@pytest.mark.parametrize("rel", [
    "broker-0/txn-a-1/00000000000000000000.log",
    "broker-1/txn-a-1/00000000000000000000.txnindex",
])
def test_dump_log_reproduces_the_recorded_dump(cluster, rel):
    """The cluster's own release of kafka-dump-log (4.1.1, 3.9.2, 4.4.0), run now on the
    committed copy, prints the recorded dump."""
    root = FIXTURES / cluster
    brokers = root / "brokers"
    truth = load_truth(root)
    libs = libs_for(truth["kafka_version"])
    if not jars_present(libs, truth["kafka_version"]):
        pytest.skip(f"no Kafka {truth['kafka_version']} jars: make kafka-jars KAFKA_VERSION={truth['kafka_version']}")
    cp = run_java_tool("kafka-dump-log", *truth["dumps"][rel]["args"], "--files", brokers / rel, libs=libs)
    assert cp.returncode == truth["dumps"][rel]["exit_code"]
    got = cp.stdout.replace(str(brokers) + "/", "")
    assert got == (root / "truth" / "dump" / f"{rel}.txt").read_text()
