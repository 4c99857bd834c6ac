"""Every reason code of logscan.state.hanging, proven on files a real Kafka 4.1.1 broker wrote,
and each scenario's reasons on every release that ran it (kafka-3.9 and kafka-4.4: the three
genuinely hanging kinds and txn_open; killed-3.9 and killed-4.4: markers_pending, as restored
by tests/killed_fixtures.py); the plans equal find-hanging's lists on every fixture cluster.

Each case was made on a live cluster by tools/kafka (fixtures/README.md describes the
scenarios) and what Kafka's own tools said about it then is in truth.json: find-hanging's
rows per broker, describe and list of every transactional id, describe-producers of every
replica. logscan reads only the copied files (the single-process scan at the recorded time,
and the `logscan scan`/`logscan plan` commands) and must give the reason named here, call a
transaction hanging exactly when find-hanging listed it, and plan an abort for those only:
never for a transaction the coordinator has decided (PrepareCommit/PrepareAbort, the
``pending`` cluster), nor for one it still runs, nor when the copy cannot tell.

Nothing is typed by hand: producer ids, offsets and times come from truth.json, so the
fixtures can be rebuilt.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.summary import EXIT_HANGING
from logscan.scan.local import assess_partitions, scan
from logscan.state import hanging
from tests.killed_fixtures import CLUSTER_ROOTS, FIXTURE_CLUSTERS, markers_pending_notes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MAX_TIMEOUT_MS = hanging.DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
ALL_REASONS = {hanging.NO_COORDINATOR_RECORD, hanging.COORDINATOR_MOVED_ON,
               hanging.PARTITION_NOT_IN_TRANSACTION, hanging.MARKERS_PENDING,
               hanging.COORDINATOR_ONGOING, hanging.COORDINATOR_NOT_IN_COPY,
               hanging.REPLICAS_DISAGREE, hanging.COORDINATOR_STUCK_PREPARING}


def _root(cluster: str) -> Path:
    """fixtures/<cluster>, or a killed or trimmed cluster's restored copy."""
    return CLUSTER_ROOTS.get(cluster, FIXTURES / cluster)


def _truth(cluster: str) -> dict:
    path = _root(cluster) / "truth" / "truth.json"
    if not path.exists():
        pytest.skip(f"fixtures/{cluster} not built (make fixtures)")
    return json.loads(path.read_text())


_SCANS: dict[str, tuple[dict, object]] = {}


def _scanned(cluster: str):
    """(truth, scan of the copy at the time truth was recorded), once per cluster."""
    if cluster not in _SCANS:
        truth = _truth(cluster)
        _SCANS[cluster] = truth, scan([_root(cluster) / "brokers"], as_of_ms=truth["recorded_at_ms"])
    return _SCANS[cluster]


def _candidates(result, topic: str, partition: int, producer_id: int) -> dict[int, object]:
    """Broker -> the candidate for this transaction on that broker's replica."""
    found = {}
    for c in result.tables["hanging_candidates"]:
        if (c["topic"], c["partition"], c["producer_id"]) == (topic, partition, producer_id):
            assert c["broker"] not in found, c
            found[c["broker"]] = c
    return found


def _coordinator(result) -> dict[str, dict]:
    """Transactional id -> its coordinator_state row (the record the coordinator would load)."""
    return {r["transactional_id"]: r for r in result.tables["coordinator_state"]}


def _replicas(truth: dict, topic: str, partition: int) -> list[int]:
    return next(p["replicas"] for p in truth["partitions"]
                if (p["topic"], p["partition"]) == (topic, partition))


def _listed(truth: dict, txn: dict) -> dict[str, bool]:
    """find-hanging run name -> whether it listed this transaction (topic, partition,
    producer id, epoch, start offset)."""
    key = (txn["topic"], str(txn["partition"]), str(txn["producer_id"]),
           str(txn["producer_epoch"]), str(txn["start_offset"]))
    return {name: any((r["Topic"], r["Partition"], r["ProducerId"], r["ProducerEpoch"],
                       r["StartOffset"]) == key for r in run["rows"])
            for name, run in truth["find_hanging"].items()}


def _considered_by_find_hanging(truth: dict, txn: dict) -> None:
    """find-hanging's first filter saw this transaction: every live replica's
    describe-producers shows it open at its start offset, idle longer than 15 minutes."""
    part = next(p for p in truth["partitions"]
                if (p["topic"], p["partition"]) == (txn["topic"], txn["partition"]))
    assert part["producers"]
    for broker, run in part["producers"].items():
        row = next(r for r in run["rows"] if r["ProducerId"] == str(txn["producer_id"]))
        assert row["CurrentTransactionStartOffset"] == str(txn["start_offset"]), broker
        assert truth["recorded_at_ms"] - int(row["LastTimestamp"]) > MAX_TIMEOUT_MS, broker


def _plans(result) -> dict[tuple, object]:
    return {(p["topic"], p["partition"], p["producer_id"], p["start_offset"]): p for p in result.tables["abort_plans"]}


def _without(tmp_path: Path, cluster: str, pattern: str) -> Path:
    """A copy of the cluster's brokers without the folders matching ``pattern``."""
    copy = tmp_path / cluster / "brokers"
    shutil.copytree(_root(cluster) / "brokers", copy)
    removed = [d for d in copy.glob(pattern) if d.is_dir()]
    assert removed, pattern
    for d in removed:
        shutil.rmtree(d)
    return copy


# ---- genuinely hanging: the three reasons that mean "abort" ---------------------------

# The clusters that ran the hanging_txns scenario: Kafka 4.1.1 (TV2), 4.4.0 (TV2), 3.9.2 (TV0).
HANGING_TXNS_CLUSTERS = ("hanging", "kafka-4.4", "kafka-3.9")


@pytest.mark.parametrize("cluster", HANGING_TXNS_CLUSTERS)
@pytest.mark.parametrize("kind, reason, risk", [
    ("unknown_producer", hanging.NO_COORDINATOR_RECORD, "low"),
    ("never_added", hanging.PARTITION_NOT_IN_TRANSACTION, "medium"),
    ("missed_marker", hanging.COORDINATOR_MOVED_ON, "low"),
])
def test_hanging_kinds_get_their_reason_and_a_plan(kind, reason, risk, cluster):
    truth, result = _scanned(cluster)
    txn = next(t for t in truth["scenario_notes"]["hanging_txns"]["hanging"] if t["kind"] == kind)
    # Kafka listed it on every broker, with both max timeouts.
    assert all(_listed(truth, txn).values()), kind
    found = _candidates(result, txn["topic"], txn["partition"], txn["producer_id"])
    assert sorted(found) == sorted(_replicas(truth, txn["topic"], txn["partition"]))
    for c in found.values():
        assert (c["reason"], c["hanging"]) == (reason, True), c
        assert (c["producer_epoch"], c["start_offset"]) == (txn["producer_epoch"], txn["start_offset"])
        assert c["transactional_id"] == txn["transactional_id"]
    plan = _plans(result)[(txn["topic"], txn["partition"], txn["producer_id"], txn["start_offset"])]
    assert (plan["reason"], plan["risk"], plan["producer_epoch"]) == (reason, risk, txn["producer_epoch"])
    assert plan["command"].endswith(f"abort --topic {txn['topic']} --partition {txn['partition']} "
                                 f"--start-offset {txn['start_offset']}")


@pytest.mark.parametrize("cluster", HANGING_TXNS_CLUSTERS)
def test_coordinator_state_behind_each_hanging_kind_is_what_describe_showed(cluster):
    truth, result = _scanned(cluster)
    states = {"never_added": "Empty", "missed_marker": "CompleteCommit"}
    for txn in truth["scenario_notes"]["hanging_txns"]["hanging"]:
        if txn["transactional_id"] is None:
            # no transactional id owns an idempotent producer id
            assert txn["producer_id"] not in {int(r["ProducerId"]) for r in truth["transactions"]["rows"]}
            assert all(rec["producer_id"] != txn["producer_id"] for rec in _coordinator(result).values())
            continue
        (described,) = truth["describe"][txn["transactional_id"]]["rows"]
        assert described["TransactionState"] == states[txn["kind"]] == \
            _coordinator(result)[txn["transactional_id"]]["state"]


def test_ongoing_transaction_with_a_partition_never_added():
    """KIP-890's case: the coordinator is Ongoing and lists hang-ongoing-0; the same producer
    id and epoch also wrote to hang-ongoing-1. find-hanging listed only partition 1; logscan
    calls 1 partition_not_in_transaction (an abort) and 0 coordinator_ongoing (leave it)."""
    truth, result = _scanned("hanging")
    notes = truth["scenario_notes"]["ongoing_not_added"]
    hung, live = notes["hanging"], notes["not_hanging"]
    assert (hung["producer_id"], hung["producer_epoch"]) == (live["producer_id"], live["producer_epoch"])
    (described,) = truth["describe"][notes["transactional_id"]]["rows"]
    assert (described["TransactionState"], described["TopicPartitions"]) == (
        "Ongoing", f"{live['topic']}-{live['partition']}")
    rec = _coordinator(result)[notes["transactional_id"]]
    assert (rec["state"], rec["partitions"]) == ("Ongoing", [{"topic": live["topic"], "partition": live["partition"]}])

    for txn, reason, is_hanging in ((hung, hanging.PARTITION_NOT_IN_TRANSACTION, True),
                                    (live, hanging.COORDINATOR_ONGOING, False)):
        _considered_by_find_hanging(truth, txn)
        assert set(_listed(truth, txn).values()) == {is_hanging}
        found = _candidates(result, txn["topic"], txn["partition"], txn["producer_id"])
        assert sorted(found) == sorted(_replicas(truth, txn["topic"], txn["partition"]))
        for c in found.values():
            assert (c["reason"], c["hanging"]) == (reason, is_hanging), c
            assert c["start_offset"] == txn["start_offset"]
            assert "Ongoing" in c["evidence"]
    plans = _plans(result)
    assert plans[(hung["topic"], hung["partition"], hung["producer_id"], hung["start_offset"])]["risk"] == "medium"
    assert (live["topic"], live["partition"], live["producer_id"], live["start_offset"]) not in plans


# The clusters that ran txn_open: Kafka 4.1.1 (TV1, TV2), 4.4.0 (TV2), 3.9.2 (TV0).
TXN_OPEN_CLUSTERS = ("tv1", "tv2", "jbod", "kafka-4.4", "kafka-3.9")


@pytest.mark.parametrize("cluster", TXN_OPEN_CLUSTERS)
def test_still_open_transaction_past_the_timeout_is_coordinator_ongoing(cluster):
    """txn_open, seen from a time past the max transaction timeout (--as-of): a candidate
    by age, but the coordinator's Ongoing transaction lists the partition, so find-hanging's
    rule (the description's partitions contain it) says not hanging; so do logscan and its
    plan. Kafka agreed live: find-hanging with --max-transaction-timeout 0 saw it old enough
    and did not list it."""
    truth = _truth(cluster)
    notes = truth["scenario_notes"]["txn_open"]
    open_on = {tuple(tp) for tp in notes["open_on"]}
    for name, run in truth["find_hanging"].items():
        assert not {(r["Topic"], int(r["Partition"])) for r in run["rows"]} & open_on, name
    (described,) = truth["describe"][notes["transactional_id"]]["rows"]
    assert described["TransactionState"] == "Ongoing"
    as_of = truth["recorded_at_ms"] + MAX_TIMEOUT_MS
    result = scan([_root(cluster) / "brokers"], as_of_ms=as_of)
    mine = [c for c in result.tables["hanging_candidates"] if c["producer_id"] == int(described["ProducerId"])]
    assert {(c["topic"], c["partition"]) for c in mine} == open_on
    assert len(mine) == sum(len(_replicas(truth, *tp)) for tp in open_on)
    for c in mine:
        assert c["age_ms"] > MAX_TIMEOUT_MS
        assert (c["reason"], c["hanging"]) == (hanging.COORDINATOR_ONGOING, False)
    assert not [p for p in result.tables["abort_plans"] if (p["topic"], p["partition"]) in open_on]


# ---- decided transactions whose markers are stuck: never abort ------------------------

# The clusters that ran markers_pending, one node stopped before the coordinators' EndTxn:
# Kafka 4.1.1 (pending), and as killed_broker, the node SIGKILLed, 3.9.2 and 4.4.0.
PENDING_CLUSTERS = ("pending", "killed-3.9", "killed-4.4")


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_prepare_commit_and_prepare_abort_are_markers_pending_on_every_replica(cluster):
    truth, result = _scanned(cluster)
    notes = markers_pending_notes(truth)
    states = {"prepare_commit": "PrepareCommit", "prepare_abort": "PrepareAbort"}
    assert {t["kind"] for t in notes["open"]} == set(states)
    part = next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (notes["topic"], 0))
    # Live, the partition's LSO stayed at the first transaction's start offset.
    assert part["last_stable_offset"] == min(t["start_offset"] for t in notes["open"]) < part["high_watermark"]
    for txn in notes["open"]:
        tid = txn["transactional_id"]
        # What kafka-transactions showed live: the state, and this partition as the one
        # whose marker is still to be written.
        (listed,) = [r for r in truth["transactions"]["rows"] if r["TransactionalId"] == tid]
        (described,) = truth["describe"][tid]["rows"]
        assert listed["TransactionState"] == described["TransactionState"] == states[txn["kind"]]
        assert described["TopicPartitions"] == f"{txn['topic']}-{txn['partition']}"
        assert notes["describe"][tid]["TransactionState"] == states[txn["kind"]]
        # find-hanging saw it old enough and open, and did not list it.
        _considered_by_find_hanging(truth, txn)
        assert _listed(truth, txn) and not any(_listed(truth, txn).values())

        rec = _coordinator(result)[tid]
        assert rec["state"] == states[txn["kind"]]
        assert {"topic": txn["topic"], "partition": txn["partition"]} in rec["partitions"]
        found = _candidates(result, txn["topic"], txn["partition"], txn["producer_id"])
        # every replica, the stopped node's copy included
        assert sorted(found) == sorted(_replicas(truth, txn["topic"], txn["partition"]))
        for c in found.values():
            assert (c["reason"], c["hanging"]) == (hanging.MARKERS_PENDING, False), c
            assert states[txn["kind"]] in c["evidence"] and "roll forward" in c["evidence"]


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_prepare_abort_after_a_restart_carries_the_bumped_epoch(cluster):
    """The restarted producer's InitProducerId made the coordinator bump the epoch before
    aborting: its PrepareAbort record is one epoch above the data, and still
    markers_pending (the marker will carry the new epoch and end the old transaction)."""
    truth, result = _scanned(cluster)
    notes = markers_pending_notes(truth)
    txn = next(t for t in notes["open"] if t["kind"] == "prepare_abort")
    (described,) = truth["describe"][txn["transactional_id"]]["rows"]
    assert int(described["ProducerEpoch"]) == txn["producer_epoch"] + 1
    assert _coordinator(result)[txn["transactional_id"]]["producer_epoch"] == txn["producer_epoch"] + 1


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_no_abort_is_ever_planned_for_markers_pending(cluster):
    truth, result = _scanned(cluster)
    notes = markers_pending_notes(truth)
    assert result.tables["abort_plans"] == []
    # Not at any age either: a week later (the Prepare records older than the max timeout: the
    # coordinator may be stuck, tests/scan/test_stuck_preparing.py), or with a zero max timeout.
    later = scan([_root(cluster) / "brokers"], as_of_ms=truth["recorded_at_ms"] + 7 * 86_400_000)
    assert {c["reason"] for c in later.tables["hanging_candidates"]
            if c["topic"] == notes["topic"]} == {hanging.COORDINATOR_STUCK_PREPARING}
    assert later.tables["abort_plans"] == []
    zero = assess_partitions(result, as_of_ms=truth["recorded_at_ms"], max_timeout_ms=0)["hanging_candidates"]
    assert zero and not [c for c in zero if c["hanging"] is True]


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_cli_on_the_pending_cluster_reports_markers_pending_and_plans_nothing(cluster):
    as_of = str(_truth(cluster)["recorded_at_ms"])
    brokers = str(_root(cluster) / "brokers")
    scanned = CliRunner().invoke(main, ["scan", brokers, "--as-of", as_of, "--format", "json"])
    rows = [json.loads(line) for line in scanned.output.splitlines()]
    assert scanned.exit_code == 0, scanned.output  # nothing hanging, no damage
    assert hanging.MARKERS_PENDING in {r["reason"] for r in rows}
    assert not [r for r in rows if r["hanging"]]
    text = CliRunner().invoke(main, ["scan", brokers, "--as-of", as_of])
    assert "markers_pending" in text.output and "roll forward" in text.output
    for extra in ([], ["--max-transaction-timeout-ms", "0"]):
        planned = CliRunner().invoke(main, ["plan", brokers, "--as-of", as_of, *extra])
        assert (planned.exit_code, planned.output) == (0, ""), planned.output


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_stopped_follower_that_missed_both_markers_is_replicas_disagree(cluster):
    """The node stopped before EndTxn lacks the COMMIT and ABORT markers of pending-done/0
    that the two live replicas wrote; it is behind, so logscan says a lagging follower, not
    a hang. Kafka could not be asked on that node; on the live ones nothing was hanging."""
    truth, result = _scanned(cluster)
    notes = markers_pending_notes(truth)
    stopped = notes["stopped_broker"]
    assert truth["stopped_brokers"] == [stopped]
    assert truth["find_hanging"] and not any(
        name.startswith(f"broker-{stopped}.") or run["rows"] for name, run in truth["find_hanging"].items())
    done = notes["done_offsets"]
    assert done["last_stable_offset"] == done["high_watermark"]
    for txn in notes["open"]:
        found = _candidates(result, notes["done_topic"], 0, txn["producer_id"])
        assert sorted(found) == [stopped]
        c = found[stopped]
        assert (c["reason"], c["hanging"]) == (hanging.REPLICAS_DISAGREE, False)
        assert c["start_offset"] == notes["done"][txn["transactional_id"]]["base_offset"]
        marker = "COMMIT" if txn["kind"] == "prepare_commit" else "ABORT"
        for broker in _replicas(truth, notes["done_topic"], 0):
            if broker != stopped:
                assert f"broker {broker} has its {marker} marker" in c["evidence"]


# ---- the copy cannot tell -------------------------------------------------------------

@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_without_transaction_state_a_committing_transaction_is_undetermined(tmp_path, cluster):
    truth = _truth(cluster)
    copy = _without(tmp_path, cluster, "*/__transaction_state-*")
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    notes = markers_pending_notes(truth)
    assert _coordinator(result) == {}
    for txn in notes["open"]:
        found = _candidates(result, txn["topic"], txn["partition"], txn["producer_id"])
        assert sorted(found) == sorted(_replicas(truth, txn["topic"], txn["partition"]))
        for c in found.values():
            assert (c["reason"], c["hanging"]) == (hanging.COORDINATOR_NOT_IN_COPY, None)
    assert result.tables["abort_plans"] == []
    planned = CliRunner().invoke(main, ["plan", str(copy), "--as-of", str(truth["recorded_at_ms"])])
    assert (planned.exit_code, planned.output) == (0, "")


def test_without_transaction_state_the_hanging_ones_are_undetermined_too(tmp_path):
    truth = _truth("hanging")
    copy = _without(tmp_path, "hanging", "*/__transaction_state-*")
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    reasons = {(c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]}
    assert reasons == {(hanging.COORDINATOR_NOT_IN_COPY, None)}
    assert len(result.tables["hanging_candidates"]) == len(scan([FIXTURES / "hanging" / "brokers"],
                                              as_of_ms=truth["recorded_at_ms"]).tables["hanging_candidates"])
    scanned = CliRunner().invoke(main, ["scan", str(copy), "--as-of", str(truth["recorded_at_ms"])])
    # exit 1, not 0: the follower the harness cut after the copy is an incomplete replica
    assert scanned.exit_code == 1 and "coordinator_not_in_copy" in scanned.output
    assert "incomplete copy" in scanned.output


@pytest.mark.parametrize("cluster", PENDING_CLUSTERS)
def test_copy_lacking_only_the_last_transaction_state_partition_plans_no_abort(tmp_path, cluster):
    """prepare-commit's record is in __transaction_state-2, the last partition. Without that
    folder the copy cannot show its PrepareCommit; logscan must not take the silence for
    "no coordinator record" and plan an abort of a transaction the coordinator commits."""
    truth, full = _scanned(cluster)
    notes = markers_pending_notes(truth)
    rec = _coordinator(full)[notes["commit_id"]]
    last = max(r["partition"] for r in _coordinator(full).values())
    assert rec["partition"] == last == 2
    copy = _without(tmp_path, cluster, f"*/__transaction_state-{last}")
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    txn = next(t for t in notes["open"] if t["transactional_id"] == notes["commit_id"])
    for c in _candidates(result, txn["topic"], txn["partition"], txn["producer_id"]).values():
        assert c["hanging"] is not True, c
    assert result.tables["abort_plans"] == []


# ---- all of them ----------------------------------------------------------------------

def test_every_reason_code_is_shown_on_real_files(tmp_path):
    seen = set()
    for cluster in ("hanging", "pending"):
        truth, result = _scanned(cluster)
        seen |= {c["reason"] for c in result.tables["hanging_candidates"]}
        # the follower cut before its marker: visible once the max timeout is 0
        seen |= {c["reason"] for c in assess_partitions(result, as_of_ms=truth["recorded_at_ms"],
                                                        max_timeout_ms=0)["hanging_candidates"]}
    truth = _truth("hanging")
    seen |= {c["reason"] for c in scan([_without(tmp_path, "hanging", "*/__transaction_state-*")],
                                            as_of_ms=truth["recorded_at_ms"]).tables["hanging_candidates"]}
    assert seen == ALL_REASONS


@pytest.mark.parametrize("cluster", [c.name for c in FIXTURE_CLUSTERS])
def test_each_cluster_plans_exactly_what_find_hanging_listed(cluster):
    """On every cluster of every release: an abort planned for each transaction find-hanging
    listed on some broker (at either max timeout), and for no other; none where it listed none."""
    truth, result = _scanned(cluster)
    listed = {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"]))
              for run in truth["find_hanging"].values() for r in run["rows"]}
    assert truth["find_hanging"] and set(_plans(result)) == listed
    if cluster in HANGING_TXNS_CLUSTERS:
        assert listed
    out = CliRunner().invoke(main, ["plan", str(_root(cluster) / "brokers"), "--as-of",
                                    str(truth["recorded_at_ms"]), "--format", "json"])
    assert out.exit_code == (EXIT_HANGING if listed else 0), out.output
    assert {(p["topic"], p["partition"], p["producer_id"], p["start_offset"])
            for p in map(json.loads, out.output.splitlines())} == listed
