"""The single-process scan against what the live Kafka cluster reported before the copy.

Ground truth is recorded by tools/kafka (fixtures/<cluster>/truth/truth.json); nothing here
is typed by hand. describe-producers per replica, the leader's read_committed end offset
(LSO) and find-hanging must all come out of the copied files alone.
"""

import json
from pathlib import Path

import pytest

from logscan.scan.local import find_candidates, scan
from logscan.state.producer_state import describe_producers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTERS = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))


def _none(text):
    return None if text in ("None", "") else int(text)


@pytest.fixture(scope="module", params=CLUSTERS, ids=[c.name for c in CLUSTERS])
def cluster(request):
    root = request.param
    truth = json.loads((root / "truth" / "truth.json").read_text())
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    replicas = {(r.state.broker, r.state.topic, r.state.partition): r for r in result.replicas}
    return truth, result, replicas


def test_the_fixture_clusters_exist():
    assert CLUSTERS, "no fixture cluster with truth/truth.json under fixtures/"


def test_no_damage_reported_on_real_broker_files(cluster):
    _, result, _ = cluster
    assert [f.line() for f in result.findings] == []


def _cut_replica(truth):
    """The follower copy the harness truncated after recording (truth: before the cut)."""
    cut = truth.get("post_copy", {}).get("replica_truncation")
    return None if cut is None else (cut["broker"], cut["topic"], cut["partition"])


def test_describe_producers_per_replica(cluster):
    truth, _, replicas = cluster
    compared = 0
    for part in truth["partitions"]:
        for broker, recorded in part["producers"].items():
            if recorded["exit_code"] != 0 or _cut_replica(truth) == (int(broker), part["topic"], part["partition"]):
                continue
            rep = replicas[(int(broker), part["topic"], part["partition"])]
            expected = sorted(
                (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
                 int(r["LastSequence"]), int(r["LastTimestamp"]), _none(r["CurrentTransactionStartOffset"]))
                for r in recorded["rows"])
            assert list(describe_producers(rep.producers)) == expected, (broker, part["topic"], part["partition"])
            compared += 1
    assert compared > 0


def test_leader_lso_and_high_watermark(cluster):
    truth, _, replicas = cluster
    for part in truth["partitions"]:
        rep = replicas[(part["leader"], part["topic"], part["partition"])].state
        got = (rep.log_start_offset, rep.high_watermark, rep.last_stable_offset)
        want = (part["log_start_offset"], part["high_watermark"], part["last_stable_offset"])
        assert got == want, (part["topic"], part["partition"])


def test_find_hanging_per_broker(cluster):
    truth, result, _ = cluster
    for name, recorded in truth["find_hanging"].items():
        broker = int(name.split(".")[0].split("-")[1])
        minutes = int(name.rsplit("-", 1)[1])
        expected = sorted((r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]),
                           int(r["StartOffset"])) for r in recorded["rows"])
        found = find_candidates(result.replicas, result.coordinator, truth["recorded_at_ms"],
                                minutes * 60_000, True)
        got = sorted((c.topic, c.partition, c.txn.producer_id, c.txn.producer_epoch, c.txn.start_offset)
                     for c in found if c.verdict.hanging and c.broker == broker)
        assert got == expected, name


def test_follower_cut_before_its_marker_is_a_replica_disagreement_not_a_hang(cluster):
    truth, result, _ = cluster
    cut = _cut_replica(truth)
    if cut is None:
        pytest.skip("this fixture cluster has no truncated follower")
    found = [c for c in find_candidates(result.replicas, result.coordinator, truth["recorded_at_ms"], 0, True)
             if (c.broker, c.topic, c.partition) == cut]
    assert found, "the open transaction left by the cut must be reported"
    for c in found:
        assert (c.verdict.reason, c.verdict.hanging) == ("replicas_disagree", False)
        assert f"marker at offset {truth['post_copy']['replica_truncation']['cut_offset']}" in c.verdict.evidence
