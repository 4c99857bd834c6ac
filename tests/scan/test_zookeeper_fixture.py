"""A ZooKeeper-era copy (issue 36 item 4): fixtures/zookeeper/zookeeper-3.9, three Kafka 3.9.2
brokers in ZooKeeper mode with one ZooKeeper server from the same release's jars
(tools/kafka/zookeeper.py), running the basic, open, timed-out and three genuinely hanging
transactions; truth recorded live with 3.9.2's tools. The copy holds no __cluster_metadata
(the controller's state was in ZooKeeper) and meta.properties of version 0: the scan must give
describe-producers, the offsets and find-hanging of that release from the files alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logscan.format.checkpoint import parse_meta_properties
from logscan.scan.local import scan
from logscan.scan.replica import leader_epochs
from logscan.scan.listing import list_copy

from .test_local_vs_kafka import _candidates, _described, _none

ZK = Path(__file__).resolve().parents[2] / "fixtures" / "zookeeper" / "zookeeper-3.9"


@pytest.fixture(scope="module")
def scanned():
    truth = json.loads((ZK / "truth" / "truth.json").read_text())
    return truth, scan([ZK / "brokers"], as_of_ms=truth["recorded_at_ms"])


def test_the_copy_is_a_zookeeper_era_one(scanned):
    truth, _ = scanned
    assert truth["kafka_version"] == "3.9.2" and truth["transaction_version"] == 0
    for broker in sorted((ZK / "brokers").iterdir()):
        meta = parse_meta_properties((broker / "meta.properties").read_bytes())
        assert (meta.version, meta.directory_id) == (0, None) and broker.name == f"broker-{meta.node_id}"
        assert not (broker / "__cluster_metadata-0").exists()
        assert not (broker / "bootstrap.checkpoint").exists()


def test_no_finding_on_the_real_files(scanned):
    _, result = scanned
    assert [f.line() for f in result.findings] == []
    assert {s["copy_gap"] for s in result.tables["partition_state"]} == {None}


def test_describe_producers_per_replica(scanned):
    truth, result = scanned
    compared = 0
    for part in truth["partitions"]:
        for broker, recorded in part["producers"].items():
            assert recorded["exit_code"] == 0
            expected = sorted(
                (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
                 int(r["LastSequence"]), int(r["LastTimestamp"]), _none(r["CurrentTransactionStartOffset"]))
                for r in recorded["rows"])
            assert _described(result, int(broker), part["topic"], part["partition"]) == expected, (broker, part)
            compared += 1
    assert compared == 3 * len(truth["partitions"])


def test_offsets_of_every_replica_equal_list_offsets(scanned):
    """Every replica (a clean stop: they agree) against ListOffsets of the live leader."""
    truth, result = scanned
    states = {(s["broker"], s["topic"], s["partition"]): s for s in result.tables["partition_state"]}
    for part in truth["partitions"]:
        want = (part["log_start_offset"], part["high_watermark"], part["last_stable_offset"])
        for broker in part["replicas"]:
            s = states[(broker, part["topic"], part["partition"])]
            assert (s["log_start_offset"], s["high_watermark"], s["last_stable_offset"]) == want, part


def test_find_hanging_per_broker(scanned):
    """find-hanging of 3.9.2 on each broker, at the max timeouts it was asked with; with no
    __cluster_metadata the coordinator's partition count comes from the copy (0..2, all here)."""
    truth, result = scanned
    assert sum(len(r["rows"]) for r in truth["find_hanging"].values()) > 0
    for name, recorded in truth["find_hanging"].items():
        broker = int(name.split(".")[0].split("-")[1])
        minutes = int(name.rsplit("-", 1)[1])
        expected = sorted((r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]),
                           int(r["StartOffset"])) for r in recorded["rows"])
        got = sorted((c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"])
                     for c in _candidates(result, truth["recorded_at_ms"], minutes * 60_000)
                     if c["hanging"] and c["broker"] == broker)
        assert got == expected, name
    planned = {(p["topic"], p["partition"], p["producer_id"]) for p in result.tables["abort_plans"]}
    assert planned == {(h["topic"], h["partition"], h["producer_id"])
                       for h in truth["scenario_notes"]["hanging_txns"]["hanging"]}


def test_leaders_come_from_the_leader_epoch_checkpoints(scanned):
    """No __cluster_metadata: each partition's leader is the replica whose leader-epoch-checkpoint
    holds the highest epoch (a leader writes its epoch at election, followers when data of it
    reaches them). After the clean stop that is the last broker to stop, not the leader
    kafka-topics described while the cluster ran."""
    _, result = scanned
    listing = list_copy([ZK / "brokers"])
    latest = {(r.replica.broker, r.replica.topic, r.replica.partition):
              max((e.epoch for e in leader_epochs(r.replica, [])), default=None) for r in listing.replicas}
    led = 0
    for s in result.tables["partition_state"]:
        epochs = [e for (_, t, p), e in latest.items() if (t, p) == (s["topic"], s["partition"]) and e is not None]
        if not epochs:  # an empty partition (no batch, no epoch written): nothing tells
            assert (s["leader"], s["leader_source"]) == (None, None), s
            continue
        assert s["leader_source"] == "leader_epoch_checkpoint", s
        if epochs.count(max(epochs)) == 1:
            assert latest[(s["leader"], s["topic"], s["partition"])] == max(epochs), s
            led += 1
        else:
            assert s["leader"] is None, s
    assert led > 0
