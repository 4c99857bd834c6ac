"""The single-process scan against what the live Kafka cluster reported before the copy.

Ground truth is recorded by tools/kafka (fixtures/<cluster>/truth/truth.json); nothing here
is typed by hand. describe-producers per replica, the leader's read_committed end offset
(LSO) and find-hanging must all come out of the copied files alone. The SIGKILLed-broker
clusters of Kafka 3.9.2 and 4.4.0 (fixtures/killed) and fixtures/trimmed's clusters are held to
the same, read from their restored copies (tests/killed_fixtures.py).
"""

import json
import re
from pathlib import Path

import pytest

from logscan.scan.local import assess_partitions, scan
from logscan.state.snapshots import CLEANED_PRODUCER
from tests.killed_fixtures import FIXTURE_CLUSTERS as CLUSTERS


def _none(text):
    return None if text in ("None", "") else int(text)


@pytest.fixture(scope="module", params=CLUSTERS, ids=[c.name for c in CLUSTERS])
def cluster(request):
    root = request.param
    truth = json.loads((root / "truth" / "truth.json").read_text())
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    replicas = {(r["broker"], r["topic"], r["partition"]): r for r in result.tables["partition_state"]}
    return truth, result, replicas


_DESCRIBE = ("producer_id", "producer_epoch", "coordinator_epoch", "last_sequence", "last_timestamp",
             "current_txn_start_offset")


def _described(result, broker: int, topic: str, partition: int) -> list[tuple]:
    """The replica's producer_state rows as kafka-transactions describe-producers lists them."""
    return sorted(tuple(r[c] for c in _DESCRIBE) for r in result.tables["producer_state"]
                  if (r["broker"], r["topic"], r["partition"]) == (broker, topic, partition))


def _candidates(result, as_of_ms: int, max_timeout_ms: int) -> list[dict]:
    """find-hanging at another max timeout than the scan's."""
    return assess_partitions(result, as_of_ms=as_of_ms, max_timeout_ms=max_timeout_ms)["hanging_candidates"]


def test_the_fixture_clusters_exist():
    assert CLUSTERS, "no fixture cluster with truth/truth.json under fixtures/"


def test_no_damage_reported_on_real_broker_files(cluster):
    """Nothing but the cut the harness made after the copy: that follower's log now ends below
    the high watermark its broker checkpointed and below its producer snapshot (issue 36)."""
    truth, result, _ = cluster
    cut = truth.get("post_copy", {}).get("replica_truncation")
    if cut is None:
        assert [f.line() for f in result.findings] == []
        return
    [finding] = result.findings
    assert finding.path.endswith("/" + str(Path(cut["file"]).parent)) and finding.reason == "incomplete"
    snapshot = int(cut["stale_snapshots"][0].split(".")[0])
    assert f"ends at {cut['new_log_end_offset']}" in finding.message
    assert f"producer snapshot at offset {snapshot}" in finding.message


def _cut_replica(truth):
    """The follower copy the harness truncated after recording (truth: before the cut)."""
    cut = truth.get("post_copy", {}).get("replica_truncation")
    return None if cut is None else (cut["broker"], cut["topic"], cut["partition"])


def test_describe_producers_per_replica(cluster):
    truth, result, _ = cluster
    compared = 0
    for part in truth["partitions"]:
        for broker, recorded in part["producers"].items():
            if recorded["exit_code"] != 0 or _cut_replica(truth) == (int(broker), part["topic"], part["partition"]):
                continue
            expected = sorted(
                (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
                 int(r["LastSequence"]), int(r["LastTimestamp"]), _none(r["CurrentTransactionStartOffset"]))
                for r in recorded["rows"])
            got = _described(result, int(broker), part["topic"], part["partition"])
            assert got == expected, (broker, part["topic"], part["partition"])
            compared += 1
    assert compared > 0


def test_leader_lso_and_high_watermark(cluster):
    truth, _, replicas = cluster
    for part in truth["partitions"]:
        rep = replicas[(part["leader"], part["topic"], part["partition"])]
        got = (rep["log_start_offset"], rep["high_watermark"], rep["last_stable_offset"])
        want = (part["log_start_offset"], part["high_watermark"], part["last_stable_offset"])
        assert got == want, (part["topic"], part["partition"])


def test_find_hanging_per_broker(cluster):
    truth, result, _ = cluster
    for name, recorded in truth["find_hanging"].items():
        broker = int(name.split(".")[0].split("-")[1])
        minutes = int(name.rsplit("-", 1)[1])
        expected = sorted((r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]),
                           int(r["StartOffset"])) for r in recorded["rows"])
        found = _candidates(result, truth["recorded_at_ms"], minutes * 60_000)
        got = sorted((c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"])
                     for c in found if c["hanging"] and c["broker"] == broker)
        assert got == expected, name


def test_follower_cut_before_its_marker_is_a_replica_disagreement_not_a_hang(cluster):
    truth, result, _ = cluster
    cut = _cut_replica(truth)
    if cut is None:
        pytest.skip("this fixture cluster has no truncated follower")
    found = [c for c in _candidates(result, truth["recorded_at_ms"], 0)
             if (c["broker"], c["topic"], c["partition"]) == cut]
    assert found, "the open transaction left by the cut must be reported"
    for c in found:
        assert (c["reason"], c["hanging"]) == ("replicas_disagree", False)
        assert f"marker at offset {truth['post_copy']['replica_truncation']['cut_offset']}" in c["evidence"]


# --- the scan's table rows against Kafka's own tools -------------------------------------------

_FIELD = re.compile(r"(\w+): (\S+)")


def _fields(line: str) -> dict[str, str]:
    return dict(_FIELD.findall(line))


def _optional_long(text: str):
    return None if text == "OptionalLong.empty" else int(text[len("OptionalLong["):-1])


@pytest.fixture(scope="module")
def rows(cluster):
    truth, _, _ = cluster
    root = next(c for c in CLUSTERS if c.name == truth["cluster_name"])
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"], keep_batches=True)
    return root, result.tables


def _cut_file(truth):
    cut = truth.get("post_copy", {}).get("replica_truncation")
    return None if cut is None else cut["file"]


def test_batches_equal_kafka_dump_log(cluster, rows):
    """Every batch line kafka-dump-log printed for every copied segment, field by field."""
    truth, _, _ = cluster
    root, t = rows
    by_file: dict[str, list[dict]] = {}
    for r in t["batches"]:
        by_file.setdefault(str(Path(r["file"]).relative_to(root / "brokers")), []).append(r)
    compared = 0
    for dump in sorted((root / "truth" / "dump").glob("*/*/*.log.txt")):
        rel = str(dump.relative_to(root / "truth" / "dump"))[:-len(".txt")]
        if rel == _cut_file(truth):
            continue  # dumped before the harness cut it
        want = []
        for line in dump.read_text().splitlines():
            if not line.startswith("baseOffset:"):
                continue
            f = _fields(line)
            ts_type = "LogAppendTime" if "LogAppendTime" in f else "CreateTime"
            want.append((int(f["baseOffset"]), int(f["lastOffset"]), int(f["count"]), int(f["baseSequence"]),
                         int(f["lastSequence"]), int(f["producerId"]), int(f["producerEpoch"]),
                         int(f["partitionLeaderEpoch"]), f["isTransactional"] == "true", f["isControl"] == "true",
                         _optional_long(f["deleteHorizonMs"]), int(f["position"]), ts_type, int(f[ts_type]),
                         int(f["size"]), int(f["magic"]), f["compresscodec"], int(f["crc"]), f["isvalid"] == "true"))
        got = [(r["base_offset"], r["last_offset"], r["records_count"], r["base_sequence"], r["last_sequence"],
                r["producer_id"], r["producer_epoch"], r["partition_leader_epoch"], r["is_transactional"],
                r["is_control"], r["delete_horizon_ms"], r["position"], r["timestamp_type"], r["max_timestamp"],
                r["size_in_bytes"], r["magic"], r["compression_type"], r["crc"], r["crc_valid"])
               for r in sorted(by_file.get(rel, []), key=lambda r: r["position"])]
        assert got == want, rel
        compared += len(want)
    assert compared > 0


def test_producer_snapshots_equal_kafka_dump_log(rows):
    root, t = rows
    by_file: dict[str, list[dict]] = {}
    for r in t["producer_snapshots"]:
        by_file.setdefault(str(Path(r["file"]).relative_to(root / "brokers")), []).append(r)
    compared = 0
    for dump in sorted((root / "truth" / "dump").glob("*/*/*.snapshot.txt")):
        rel = str(dump.relative_to(root / "truth" / "dump"))[:-len(".txt")]
        want = []
        for line in dump.read_text().splitlines():
            if not line.startswith("producerId:"):
                continue
            f = _fields(line)
            batch = "lastOffset" in f
            want.append((int(f["producerId"]), int(f["producerEpoch"]), int(f["coordinatorEpoch"]),
                         _optional_long(f["currentTxnFirstOffset"]), int(f["lastTimestamp"]),
                         int(f["firstSequence"]) if batch else -1, int(f["lastSequence"]) if batch else None,
                         int(f["lastOffset"]) if batch else -1, int(f["offsetDelta"]) if batch else None))
        got = [(r["producer_id"], r["producer_epoch"], r["coordinator_epoch"], r["current_txn_first_offset"],
                r["last_timestamp"], r["first_sequence"], r["last_sequence"] if r["last_offset"] >= 0 else None,
                r["last_offset"], r["offset_delta"] if r["last_offset"] >= 0 else None)
               for r in sorted(by_file.get(rel, []), key=lambda r: r["position"])]
        assert got == want, rel
        compared += len(want)
    assert compared > 0


def test_leader_equals_kafka_topics_describe(cluster, rows):
    """partition_state.leader and is_leader, from __cluster_metadata up to the recording time,
    against the leader kafka-topics --describe reported then."""
    truth, _, _ = cluster
    _, t = rows
    states = {(r["topic"], r["partition"], r["broker"]): r for r in t["partition_state"]}
    for part in truth["partitions"]:
        for broker in part["replicas"]:
            row = states[(part["topic"], part["partition"], broker)]
            assert (row["leader"], row["leader_source"], row["is_leader"]) == (
                part["leader"], "cluster_metadata", broker == part["leader"]), (part["topic"], part["partition"])


def test_newest_snapshot_agrees_with_the_rebuilt_state_except_on_the_cut_follower(cluster, rows):
    """...and for producers the cleaner left only emptied control batches of (compacted_tv2):
    there the log cannot rebuild what the snapshot holds, and the reported row is the
    snapshot's, as the broker loads it."""
    truth, _, _ = cluster
    _, t = rows
    cut = _cut_replica(truth)
    cleaned = [r for r in t["producer_state"]
               if r["snapshot_agrees"] is False and CLEANED_PRODUCER in r["snapshot_difference"]]
    disagree = {(r["broker"], r["topic"], r["partition"]) for r in t["producer_state"]
                if r["snapshot_agrees"] is False and r not in cleaned}
    assert disagree == ({cut} if cut else set())
    assert any(r["snapshot_agrees"] for r in t["producer_state"])
    assert bool(cleaned) == ("compacted_tv2" in truth["scenarios"])
    for r in cleaned:
        assert [r[f] for f in _DESCRIBE[1:]] == [r[f"snapshot_{f}"] for f in _DESCRIBE[1:]], r


def test_replicas_disagree_only_with_a_lagging_copy(cluster, rows):
    """Replicas of a partition agree, but for the follower the harness cut and the node it
    stopped before the copy (truth: replica_truncation, stopped_brokers): a replica that
    disagrees is one of those or names only those. __cluster_metadata is left out: the nodes
    stopped one after the other, and each node's metadata log ends where that node stopped."""
    truth, _, _ = cluster
    _, t = rows
    cut = _cut_replica(truth)
    lagging = set(truth.get("stopped_brokers", [])) | ({cut[0]} if cut else set())
    states = [r for r in t["partition_state"] if r["topic"] != "__cluster_metadata"]
    for r in states:
        if r["replicas_agree"]:
            assert r["replica_differences"] == []
            continue
        named = {d["other_broker"] for d in r["replica_differences"]}
        assert r["broker"] in lagging or named <= lagging, r
    if cut is not None:
        row = next(r for r in states if (r["broker"], r["topic"], r["partition"]) == cut)
        assert not row["replicas_agree"]
        assert {"log_end_offset", "open_here_only"} <= {d["field"] for d in row["replica_differences"]}
    if lagging:
        assert any(not r["replicas_agree"] for r in states)
    else:
        assert all(r["replicas_agree"] for r in states)
