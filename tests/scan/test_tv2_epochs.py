"""KIP-890 part 2 (transaction.version 2) epochs on the real `marker-epochs` clusters (Kafka 4.1.1,
fixtures/marker-epochs, and 4.4.0, fixtures/trimmed/marker-epochs-4.4 read from its restored copy;
tools/kafka/epochs.py): every test runs on both releases. A TV2 EndTxn ends a transaction with an epoch bump (data at e, markers
and the coordinator's records at e+1), and the verdicts on what is left open are held to
what the broker did, recorded live (truth.json scenario_notes, find-hanging, describe).

- `tv2_lost_marker`: the marker at e+1 lost to a partition the transaction wrote to without
  adding it: the coordinator is CompleteCommit at e+1 while the partition keeps data at e
  open. find-hanging lists it; logscan says coordinator_moved_on and plans its abort.
- `tv2_refused_marker`: the partition holds the producer at e+2 (a buggy client's batch), the
  coordinator's PrepareCommit and marker are at e+1: the leader refused the marker
  (InvalidProducerEpochException, logged by the coordinator as "permanently failed") and the
  coordinator stays PrepareCommit for good. find-hanging lists nothing (the record lists the
  partition); logscan says coordinator_stuck_preparing at once, at the recording time, not
  only past --max-prepare-ms, and never plans an abort of a decided transaction.
- `tv2_equal_marker`: the buggy batch at e+1, the very epoch of the marker: 4.4.0's leader
  refused it (PrepareCommit for good), 4.1.1's took it (CompleteCommit;
  fixtures/trimmed/marker-equal-4.1, a cluster of its own).
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging
from tests.killed_fixtures import TRIMMED_CLUSTERS

ROOTS = [Path(__file__).resolve().parents[2] / "fixtures" / "marker-epochs", TRIMMED_CLUSTERS["marker-epochs-4.4"]]


@pytest.fixture(params=ROOTS, ids=lambda p: p.name)
def cluster(request):
    root = request.param
    truth = json.loads((root / "truth" / "truth.json").read_text())
    return SimpleNamespace(root=root, truth=truth, lost=truth["scenario_notes"]["tv2_lost_marker"],
                           refused=truth["scenario_notes"]["tv2_refused_marker"],
                           scan=lambda **kw: scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"], **kw))


def test_both_releases_are_here():
    assert [json.loads((r / "truth" / "truth.json").read_text())["kafka_version"] for r in ROOTS] == ["4.1.1", "4.4.0"]


def _verdicts(result, topic: str, partition: int) -> set:
    return {(c["broker"], c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]
            if (c["topic"], c["partition"]) == (topic, partition)}


def test_the_cluster_ended_its_transactions_the_tv2_way(cluster):
    TRUTH, LOST, REFUSED = cluster.truth, cluster.lost, cluster.refused
    assert TRUTH["transaction_version"] == 2
    # EndTxn (version 5) answered the bumped epoch, and the coordinator holds it
    assert LOST["bumped"] == {"producer_id": LOST["producer"]["producer_id"],
                              "producer_epoch": LOST["producer"]["producer_epoch"] + 1}
    assert (LOST["describe"]["TransactionState"], int(LOST["describe"]["ProducerEpoch"])) == (
        "CompleteCommit", LOST["bumped"]["producer_epoch"])
    assert REFUSED["marker_epoch"] == REFUSED["producer"]["producer_epoch"] + 1 == REFUSED["ahead"]["producer_epoch"] - 1
    for row in (REFUSED["describe"], REFUSED["describe_later"]):
        assert (row["TransactionState"], row["TopicPartitions"], int(row["ProducerEpoch"])) == (
            "PrepareCommit", f"{REFUSED['topic']}-0", REFUSED["marker_epoch"])
    assert any("permanently failed" in line and "InvalidProducerEpochException" in line
               and f"producerEpoch={REFUSED['marker_epoch']}" in line for line in REFUSED["coordinator_log"])


def test_the_bumped_marker_closes_the_added_partition_and_the_coordinator_record_is_at_e_plus_1(cluster):
    LOST = cluster.lost
    result = cluster.scan(keep_batches=True)
    e = LOST["producer"]["producer_epoch"]
    pid = LOST["producer"]["producer_id"]
    batches = [(b["is_control"], b["producer_epoch"]) for b in result.tables["batches"]
               if (b["broker"], b["topic"], b["partition"]) == (0, LOST["topic"], 0) and b["producer_id"] == pid]
    assert batches == [(False, e), (True, e + 1)]
    states = {(r["broker"], r["producer_epoch"], r["current_txn_start_offset"]) for r in result.tables["producer_state"]
              if (r["topic"], r["partition"], r["producer_id"]) == (LOST["topic"], 0, pid)}
    assert states == {(b, e + 1, None) for b in range(3)}
    [record] = {(r["state"], r["producer_epoch"]) for r in result.tables["coordinator_state"]
                if r["transactional_id"] == LOST["transactional_id"]}
    assert record == ("CompleteCommit", e + 1)


def test_the_lost_marker_leaves_a_hang_at_e_next_to_a_record_at_e_plus_1(cluster):
    LOST = cluster.lost
    result = cluster.scan()
    hung = LOST["hanging"]
    assert _verdicts(result, hung["topic"], hung["partition"]) == {
        (b, hanging.COORDINATOR_MOVED_ON, True) for b in range(3)}
    # what find-hanging listed on every broker, live
    for found in LOST["find_hanging_at_creation"].values():
        rows = found["rows"]
        assert [(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["StartOffset"]))
                for r in rows] == [(hung["topic"], hung["partition"], hung["producer_id"], hung["producer_epoch"],
                                    hung["start_offset"])]
    [plan] = [p for p in result.tables["abort_plans"] if p["topic"] == hung["topic"]]
    assert (plan["partition"], plan["start_offset"], plan["producer_id"], plan["producer_epoch"]) == (
        hung["partition"], hung["start_offset"], hung["producer_id"], hung["producer_epoch"])


def test_a_marker_the_partition_refuses_is_stuck_at_once_and_never_aborted(cluster):
    TRUTH, REFUSED = cluster.truth, cluster.refused
    result = cluster.scan()
    assert _verdicts(result, REFUSED["topic"], 0) == {
        (b, hanging.COORDINATOR_STUCK_PREPARING, None) for b in range(3)}
    assert not [p for p in result.tables["abort_plans"] if p["topic"] == REFUSED["topic"]]
    assert all(r["rows"] == [] or all(x["Topic"] != REFUSED["topic"] for x in r["rows"])
               for r in REFUSED["find_hanging"].values())
    evidence = {c["evidence"] for c in result.tables["hanging_candidates"] if c["topic"] == REFUSED["topic"]}
    assert len(evidence) == 1
    [text] = evidence
    assert (f"at epoch {REFUSED['ahead']['producer_epoch']}, above the epoch of the coordinator's markers "
            f"({REFUSED['marker_epoch']})") in text and "never abort this partition by hand" in text
    # however young the record: the limit does not matter for a refused marker
    later = cluster.scan(max_prepare_ms=10 ** 12)
    assert _verdicts(later, REFUSED["topic"], 0) == _verdicts(result, REFUSED["topic"], 0)
    out = CliRunner().invoke(main, ["plan", str(cluster.root / "brokers"), "--as-of", str(TRUTH["recorded_at_ms"]),
                                    "--no-progress"])
    # exit 4: something hangs (tv2-lost/1, planned); nothing for the refused marker
    assert out.exit_code == 4 and "--topic tv2-lost" in out.output, out.output
    assert "--topic tv2-refused" not in out.output, out.output


def test_a_marker_equal_to_the_partitions_epoch_refused_by_4_4_is_never_aborted():
    """`tv2_equal_marker` on 4.4.0: a buggy client wrote epoch e+1 inside its transaction,
    the coordinator's TV2 PrepareCommit and COMMIT marker are at e+1 too, and 4.4.0's leader
    refused the marker (InvalidProducerEpochException, "permanently failed"): PrepareCommit for
    good. logscan keeps the age rule there (an equal epoch is also every TV1 transaction's normal
    PrepareCommit, whose markers 4.1.1 and 4.4.0 accept): markers_pending while the record is
    young, coordinator_stuck_preparing past --max-prepare-ms, and never an abort plan."""
    root = ROOTS[1]
    truth = json.loads((root / "truth" / "truth.json").read_text())
    equal = truth["scenario_notes"]["tv2_equal_marker"]
    assert equal["marker_epoch"] == equal["ahead"]["producer_epoch"] == equal["producer"]["producer_epoch"] + 1
    assert (equal["describe"]["TransactionState"], equal["describe"]["TopicPartitions"]) == (
        "PrepareCommit", f"{equal['topic']}-0")
    assert any("permanently failed" in line and "InvalidProducerEpochException" in line
               and f"producerEpoch={equal['marker_epoch']}" in line for line in equal["coordinator_log"])
    assert equal["end_offsets"]["last_stable_offset"] == equal["data"]["base_offset"]
    young = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    old = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"], max_prepare_ms=1000)
    for result, reason in ((young, hanging.MARKERS_PENDING), (old, hanging.COORDINATOR_STUCK_PREPARING)):
        assert {(c["reason"], c["producer_epoch"]) for c in result.tables["hanging_candidates"]
                if c["topic"] == equal["topic"]} == {(reason, equal["marker_epoch"])}
        assert not [p for p in result.tables["abort_plans"] if p["topic"] == equal["topic"]]


def test_a_marker_equal_to_the_partitions_epoch_is_taken_by_4_1_and_ends_the_transaction():
    """`tv2_equal_marker` on Kafka 4.1.1 (fixtures/trimmed/marker-equal-4.1): the same requests
    as on 4.4.0 (a buggy batch at e+1 inside the transaction, then a TV2 EndTxn whose
    PrepareCommit and COMMIT marker are at e+1), and 4.1.1's leader wrote the marker:
    CompleteCommit, the LSO at the high watermark, find-hanging empty, no coordinator line
    about the marker. So the age rule logscan keeps for an equal epoch (markers_pending while
    young: let the coordinator roll it forward) is what 4.1.1 does; on 4.4.0 it ends as
    coordinator_stuck_preparing past --max-prepare-ms (the test above), never an abort. The
    copy holds a finished transaction: no candidate, no plan, the span committed by the
    marker at e+1 on every replica."""
    root = TRIMMED_CLUSTERS["marker-equal-4.1"]
    truth = json.loads((root / "truth" / "truth.json").read_text())
    equal = truth["scenario_notes"]["tv2_equal_marker"]
    assert (truth["kafka_version"], truth["transaction_version"]) == ("4.1.1", 2)
    assert equal["marker_epoch"] == equal["ahead"]["producer_epoch"] == equal["producer"]["producer_epoch"] + 1
    assert (equal["describe"]["TransactionState"], equal["describe"]["TopicPartitions"]) == ("CompleteCommit", "")
    assert equal["coordinator_log"] == []
    offsets = equal["end_offsets"]
    assert offsets["last_stable_offset"] == offsets["high_watermark"] > equal["ahead"]["base_offset"]
    assert all(r["rows"] == [] for r in equal["find_hanging"].values())
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert not [c for c in result.tables["hanging_candidates"] if c["topic"] == equal["topic"]]
    assert not result.tables["abort_plans"]
    [part] = [p for p in truth["partitions"] if p["topic"] == equal["topic"]]
    spans = [s for s in result.tables["txn_spans"] if s["topic"] == equal["topic"]]
    assert sorted(s["broker"] for s in spans) == sorted(part["replicas"])
    for s in spans:
        assert (s["producer_id"], s["first_offset"], s["outcome"], s["end_marker_epoch"]) == (
            equal["producer"]["producer_id"], equal["data"]["base_offset"], "COMMIT", equal["marker_epoch"])
    states = [r for r in result.tables["partition_state"] if r["topic"] == equal["topic"]]
    assert {(r["last_stable_offset"], r["high_watermark"]) for r in states} == {
        (offsets["last_stable_offset"], offsets["high_watermark"])}
