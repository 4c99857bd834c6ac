"""The real JBOD cluster (fixtures/jbod, issue 36 item 5): three Kafka 4.1.1 nodes with two
``log.dirs`` each, recorded by the harness (tools/kafka: ClusterSpec.log_dirs), every node's
second dir copied to ``brokers/broker-<id>-disk2``. Kafka placed the partitions, wrote each
dir's meta.properties (its own directory.id) and checkpoints; ``kafka-log-dirs --describe``
(truth.json ``log_dirs``) names the dir of every replica. The scan against Kafka's own answers
(describe-producers, offsets, find-hanging) is tests/scan/test_local_vs_kafka.py, run on
every fixture cluster; here: the dirs are one broker each, read with their own checkpoints,
and copies an operator makes of such a broker.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from logscan.format.checkpoint import parse_meta_properties
from logscan.scan.listing import list_copy
from logscan.scan.local import scan
from logscan.scan.replica import TRANSACTION_STATE_TOPIC, ReplicaRead, analyse_replica, read_segment
from logscan.state import hanging

from .copy_shapes import add_compose_folders

JBOD = Path(__file__).resolve().parents[2] / "fixtures" / "jbod"


def _truth() -> dict:
    return json.loads((JBOD / "truth" / "truth.json").read_text())


def _copied_dir(log_dir: str, node: int) -> str:
    """kafka-log-dirs' (absolute, live) log dir as the fixture's copy of it."""
    copied = _truth()["copied_log_dirs"][str(node)]
    (rel,) = [c for c in copied if Path(log_dir).name == ("data" if c.endswith(f"broker-{node}")
                                                           else "data-" + c.rsplit("disk", 1)[1])]
    return rel


def _facts(replica) -> list:
    read = ReplicaRead()
    for _, path in replica.segments:
        read_segment(str(path), replica.partition, is_txn_log=replica.topic == TRANSACTION_STATE_TOPIC, out=read)
    return read.facts


def _verdicts(result) -> set[tuple[str, int, str, object]]:
    return {(c["topic"], c["partition"], c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]}


def test_each_replica_is_read_from_the_dir_kafka_names_with_that_dir_s_checkpoints():
    truth = _truth()
    where = {(b["broker"], p["partition"]): _copied_dir(d["logDir"], b["broker"])
             for b in truth["log_dirs"]["brokers"] for d in b["logDirs"] for p in d["partitions"]}
    assert {rel.endswith("-disk2") for rel in where.values()} == {True, False}  # both dirs hold replicas
    listing = list_copy([JBOD / "brokers"])
    assert sorted({b.broker for b in listing.brokers}) == [0, 1, 2] and len(listing.brokers) == 6
    assert listing.findings == []
    listed = {(r.replica.broker, f"{r.replica.topic}-{r.replica.partition}"): r for r in listing.replicas
              if r.replica.topic != "__cluster_metadata"}
    assert {k: str(r.replica.path.parent.relative_to(JBOD)) for k, r in listed.items()} == where
    hw = {(p["topic"], p["partition"]): p["high_watermark"] for p in truth["partitions"]}
    for (broker, _), r in listed.items():
        # a clean stop: every replica in sync, each dir's checkpoints at the log end
        expected = hw[(r.replica.topic, r.replica.partition)]
        assert (r.hw_checkpoint or 0, r.recovery_point_checkpoint, r.log_start_checkpoint) == (
            expected, expected, None), (broker, r.replica.path)


def test_the_whole_copy_is_complete_and_judged_as_find_hanging():
    truth = _truth()
    result = scan([JBOD / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert result.findings == []
    assert {s["copy_gap"] for s in result.tables["partition_state"]} == {None}
    assert {(t, p) for t, p, _, h in _verdicts(result) if h} == {
        (h["topic"], h["partition"]) for h in truth["scenario_notes"]["hanging_txns"]["hanging"]}


def test_a_copy_of_one_log_dir_of_a_broker(tmp_path):
    """Broker 0's first log dir only (its second disk forgotten, beside a docker-compose
    copy's zookeeper/ and logs/): two of the three coordinator partitions are not in the copy.
    The transaction whose producer no coordinator record names may be known there:
    coordinator_not_in_copy, no plan. hang-1's coordinator partition (2) is in the copy, but
    from a follower only: every partition's last leader is node 2 (the last node stopped), whose
    copy of __transaction_state-2 may hold newer records, so hang-1 is coordinator_not_in_copy
    too (tests/scan/test_leader_absent.py)."""
    truth = _truth()
    copy = tmp_path / "copy"
    shutil.copytree(JBOD / "brokers" / "broker-0", copy / "broker-0")
    beside = add_compose_folders(copy)
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    (finding,) = result.findings  # the forgotten disk (test_a_forgotten_second_disk)
    assert (finding.reason, Path(finding.path).parent.name) == ("incomplete", "__cluster_metadata-0")
    assert {r["file"] for r in result.tables["files"] if r["status"] == "skipped"} >= set(map(str, beside))
    assert {result.leaders[(t, p)]["last_leader"] for t, p in [("hang", 1), (TRANSACTION_STATE_TOPIC, 2)]} == {2}
    assert _verdicts(result) == {("hang", 0, hanging.COORDINATOR_NOT_IN_COPY, None),
                                 ("hang", 1, hanging.COORDINATOR_NOT_IN_COPY, None)}
    (hang1,) = [c for c in result.tables["hanging_candidates"] if (c["topic"], c["partition"]) == ("hang", 1)]
    assert "is Empty at epoch 0" in hang1["evidence"] and "last leader, broker 2" in hang1["evidence"]
    assert result.tables["abort_plans"] == []


def test_a_coordinator_partition_cut_on_the_second_disk(tmp_path):
    """Broker 0's copy of __transaction_state-1 (on its second disk) emptied: the gap comes
    from that dir's own checkpoints, and the coordinator's view from a whole replica on
    another broker, so every verdict stands."""
    truth = _truth()
    copy = tmp_path / "brokers"
    shutil.copytree(JBOD / "brokers", copy)
    (log,) = (copy / "broker-0-disk2" / "__transaction_state-1").glob("*.log")
    assert log.stat().st_size > 0
    log.write_bytes(b"")
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    (finding,) = result.findings
    assert (finding.reason, finding.path) == ("incomplete", str(log.parent))
    assert "replication-offset-checkpoint has high watermark" in finding.message
    assert "recovery-point-offset-checkpoint has recovery point" in finding.message
    whole = scan([JBOD / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert _verdicts(result) == _verdicts(whole)


def _disk2_partitions(node: int) -> set[tuple[str, int]]:
    """kafka-log-dirs' partitions of node's second log dir."""
    truth = _truth()
    (broker,) = [b for b in truth["log_dirs"]["brokers"] if b["broker"] == node]
    return {tuple(p["partition"].rsplit("-", 1)) for d in broker["logDirs"]
            if _copied_dir(d["logDir"], node).endswith("-disk2") for p in d["partitions"]}


def test_a_forgotten_second_disk(tmp_path):
    """Every log dir but broker 0's second (its disk2 forgotten, as an operator copying one
    entry of log.dirs does): __cluster_metadata registers node 0's two directory ids and
    places each replica on one, so the copy is known to lack one of node 0's dirs. One
    'incomplete' finding, at the record that registers the dir, naming the partitions
    kafka-log-dirs listed in that dir; every replica the copy holds of them (on nodes 1 and 2)
    carries a dir_gap, the others none."""
    copy = tmp_path / "brokers"
    for d in sorted((JBOD / "brokers").iterdir()):
        if d.name != "broker-0-disk2":
            shutil.copytree(d, copy / d.name)
    listing = list_copy([copy])
    (entry,) = listing.findings
    key, finding = entry
    forgotten = parse_meta_properties((JBOD / "brokers" / "broker-0-disk2" / "meta.properties").read_bytes())
    kept = parse_meta_properties((copy / "broker-0" / "meta.properties").read_bytes())
    assert (key["broker"], finding.reason) == (0, "incomplete")
    assert Path(finding.path).parent.name == "__cluster_metadata-0" and finding.position >= 0
    assert f"node 0's log dir {forgotten.directory_id} is not in the copy" in finding.message
    assert f"({kept.directory_id}) only" in finding.message and "RegisterBrokerRecord at offset" in finding.message
    on_disk2 = {(t, int(p)) for t, p in _disk2_partitions(0)}
    assert len(on_disk2) == 7 and f"Kafka placed {len(on_disk2)} of node 0's replicas there" in finding.message
    for t, p in on_disk2:
        assert f"{t}-{p}" in finding.message
    gapped = {(r.replica.topic, r.replica.partition) for r in listing.replicas if r.dir_gap is not None}
    assert gapped == on_disk2
    assert {r.replica.broker for r in listing.replicas if r.dir_gap is not None} == {1, 2}
    # the same dirs with node 0's second disk: nothing lacking
    shutil.copytree(JBOD / "brokers" / "broker-0-disk2", copy / "broker-0-disk2")
    assert list_copy([copy]).findings == []


def test_a_dir_gap_withholds_the_verdicts_of_the_replicas_it_names(tmp_path):
    """The per-replica step with the listing's dir_gap (the forgotten disk above): broker 1's
    real hang-2 replica, whole in the copy, holds the missed-marker transaction open; its
    copy_gap names node 0's replica on the forgotten disk, so the hanging verdict is
    partition_not_in_copy (no plan), and broker 1's __transaction_state-0 tells
    coordinator_copy that a record may be missing."""
    copy = tmp_path / "brokers"
    for d in sorted((JBOD / "brokers").iterdir()):
        if d.name != "broker-0-disk2":
            shutil.copytree(d, copy / d.name)
    listing = list_copy([copy])
    chosen = {(r.replica.broker, r.replica.topic, r.replica.partition): r for r in listing.replicas}
    analysed = {}
    for key in ((1, "hang", 2), (1, "__transaction_state", 0), (1, "hang", 1)):
        listed = chosen[key]
        analysed[key] = analyse_replica(listed.replica, iter(_facts(listed.replica)), hw_checkpoint=listed.hw_checkpoint,
                                        log_start_checkpoint=listed.log_start_checkpoint,
                                        recovery_point_checkpoint=listed.recovery_point_checkpoint,
                                        dir_gap=listed.dir_gap)
    hang2 = analysed[(1, "hang", 2)]
    assert hang2.state.copy_gap == chosen[(1, "hang", 2)].dir_gap and "log dir" in hang2.state.copy_gap
    assert hang2.findings == []  # the listing's finding locates it, once
    assert len(hang2.view().open_txns) == 1  # the missed-marker transaction, open on every replica
    verdict = hanging.Verdict(hanging.COORDINATOR_MOVED_ON, True, "the coordinator completed it")
    assert hanging.with_copy(verdict, hang2.state.copy_gap).reason == hanging.PARTITION_NOT_IN_COPY
    assert analysed[(1, "__transaction_state", 0)].state.copy_gap is not None
    assert analysed[(1, "hang", 1)].state.copy_gap is None  # hang-1 is on node 0's first disk


def test_the_spark_job_s_listing_gives_the_forgotten_disk_s_finding(tmp_path):
    """The Spark job lists the copy with the same listing (spark_jobs.scan.list_inputs): its
    corruptions rows hold the same 'incomplete' finding, at the same record."""
    from spark_jobs.scan import list_inputs

    copy = tmp_path / "brokers"
    for d in sorted((JBOD / "brokers").iterdir()):
        if d.name != "broker-0-disk2":
            shutil.copytree(d, copy / d.name)
    (key, finding), = list_copy([copy]).findings
    (row,) = list_inputs([copy]).findings
    assert (row["broker"], row["file"], row["position"], row["reason"], row["message"]) == (
        key["broker"], finding.path, finding.position, "incomplete", finding.message)



def forgotten_disk_copy(tmp_path: Path) -> Path:
    """fixtures/jbod copied without node 0's second log dir (broker-0-disk2)."""
    copy = tmp_path / "brokers"
    for d in sorted((JBOD / "brokers").iterdir()):
        if d.name != "broker-0-disk2":
            shutil.copytree(d, copy / d.name)
    return copy


def assert_the_forgotten_disk_withholds_hang_2(candidates: list[dict], plans: list[dict]) -> None:
    """hang-2 (a replica on the forgotten disk, its missed-marker transaction open on every
    replica copied) is partition_not_in_copy, with no abort plan."""
    hang2 = [c for c in candidates if (c["topic"], c["partition"]) == ("hang", 2)]
    assert hang2 and {c["reason"] for c in hang2} == {hanging.PARTITION_NOT_IN_COPY}
    assert not [p for p in plans if (p["topic"], p["partition"]) == ("hang", 2)]


def test_a_forgotten_disk_withholds_the_abort_in_the_scan(tmp_path):
    """The whole scan of the copy without node 0's second disk: the listing's dir_gap reaches
    the per-replica step, so hang-2 gets no plan where the whole copy plans one
    (test_the_whole_copy_is_complete_and_judged_as_find_hanging). The Spark job's:
    tests/spark/test_jbod.py."""
    whole = scan([JBOD / "brokers"]).tables
    assert [p for p in whole["abort_plans"] if (p["topic"], p["partition"]) == ("hang", 2)]
    tables = scan([forgotten_disk_copy(tmp_path)]).tables
    assert_the_forgotten_disk_withholds_hang_2(tables["hanging_candidates"], tables["abort_plans"])
