"""Committed offsets and the groups a hang holds back, from the copied files of the ``offsets``
fixture clusters alone (Kafka 4.1.1, fixtures/offsets, and 4.4.0 and 3.9.2,
fixtures/trimmed/offsets-4.4 and offsets-3.9 read from their restored copies: the same scenario), against what each release reported live before
the copy (truth.json: ``kafka-consumer-groups --describe --all-groups --offsets``,
describe-producers, find-hanging, the scenario's stable OffsetFetch). Nothing here is typed by
hand but the scenario's design."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from logscan.format.offsets import group_partition
from logscan.scan.consumer_offsets import CONSUMER_OFFSETS_TOPIC, replica_rows
from logscan.scan.listing import list_copy
from logscan.scan.local import assess_partitions, scan
from logscan.scan import rows as R
from logscan.scan.rows import to_batch
from logscan.state.offsets import (COMMITTED, OPEN, PENDING, READ_COMMITTED_STUCK, UNSTABLE_OFFSET_COMMIT,
                                   affected_groups, committed_offsets)
from tests.killed_fixtures import FIXTURE_CLUSTERS

#: The clusters that ran committed_offsets: 4.1.1, 3.9.2 and 4.4.0.
ROOTS = [c for c in FIXTURE_CLUSTERS if c.name in ("offsets", "offsets-3.9", "offsets-4.4")]


@dataclass(frozen=True)
class Offsets:
    """One offsets cluster: its folder, truth.json, the scenario's notes, the partitions Kafka
    described by (topic, partition), and how many __consumer_offsets partitions it has."""
    root: Path
    truth: dict
    notes: dict
    partitions: dict
    offsets_partitions: int

    @classmethod
    def of(cls, root: Path) -> "Offsets":
        truth = json.loads((root / "truth" / "truth.json").read_text())
        partitions = {(p["topic"], p["partition"]): p for p in truth["partitions"]}
        return cls(root, truth, truth["scenario_notes"]["committed_offsets"], partitions,
                   sum(1 for t, _ in partitions if t == CONSUMER_OFFSETS_TOPIC))


# a max transaction timeout (15 min) past the recording: the open transaction holding offs-txn's
# commit is then a find-hanging candidate
PAST_TIMEOUT_MS = 15 * 60_000 + 1


def read_replicas(replicas) -> tuple[dict[tuple[int, int], list[dict]], list]:
    """The rows of every ``__consumer_offsets`` replica by (broker, partition), with the
    findings: every replica, to hold each to Kafka (the scan reads the served one only)."""
    out, findings = {}, []
    for r in replicas:
        if r.topic == CONSUMER_OFFSETS_TOPIC:
            out[(r.broker, r.partition)] = list(replica_rows(r, findings))
    return out, findings


def test_each_release_ran_the_scenario():
    assert sorted(json.loads((r / "truth" / "truth.json").read_text())["kafka_version"] for r in ROOTS) == [
        "3.9.2", "4.1.1", "4.4.0"]


@pytest.fixture(scope="module", params=ROOTS, ids=[r.name for r in ROOTS])
def cluster(request) -> Offsets:
    return Offsets.of(request.param)


@pytest.fixture(scope="module")
def copy(cluster):
    listing = list_copy([cluster.root / "brokers"])
    rows, findings = read_replicas(r.replica for r in listing.replicas)
    assert [f.line() for f in findings] == []
    return rows


@pytest.fixture(scope="module")
def scanned(cluster):
    return scan([cluster.root / "brokers"], as_of_ms=cluster.truth["recorded_at_ms"])


def offsets_of(cluster: Offsets, copy, broker: int | None = None) -> list[dict]:
    """The offsets each __consumer_offsets partition serves, read from its leader's replica
    (or ``broker``'s), up to the high watermark Kafka reported."""
    out = []
    for (topic, partition), p in sorted(cluster.partitions.items()):
        if topic == CONSUMER_OFFSETS_TOPIC:
            rows = copy[(p["leader"] if broker is None else broker, partition)]
            out.extend(committed_offsets(rows, end_offset=p["high_watermark"]))
    return out


def test_the_committed_offsets_are_kafka_consumer_groups_describe_offsets(cluster, copy):
    want = sorted((r["GROUP"], r["TOPIC"], int(r["PARTITION"]), int(r["CURRENT-OFFSET"]))
                  for r in cluster.truth["consumer_groups"]["offsets"]["rows"])
    assert want  # recorded
    for broker in (None, *range(3)):  # every replica holds the same, the leader's first
        got = sorted((o["group_id"], o["topic"], o["partition"], o["committed_offset"])
                     for o in offsets_of(cluster, copy, broker) if o["state"] == COMMITTED)
        assert got == want, broker


def test_every_group_lives_in_its_own_partition_and_kafka_lists_each(cluster, copy):
    groups = {r["GROUP"] for r in cluster.truth["consumer_groups"]["state"]["rows"]}
    offsets = offsets_of(cluster, copy)
    assert {o["group_id"] for o in offsets} == groups
    for o in offsets:
        assert o["offsets_partition"] == group_partition(o["group_id"], cluster.offsets_partitions)


def test_the_open_transactions_commit_is_pending_with_the_producer_describe_producers_names(cluster, copy):
    notes = cluster.notes
    (pending,) = [o for o in offsets_of(cluster, copy) if o["state"] == PENDING]
    part = group_partition(notes["txn_group"], cluster.offsets_partitions)
    p = cluster.partitions[(CONSUMER_OFFSETS_TOPIC, part)]
    (open_producer,) = [r for r in p["producers"][str(p["leader"])]["rows"]
                        if r["CurrentTransactionStartOffset"] != "None"]
    assert (pending["group_id"], pending["topic"], pending["partition"], pending["committed_offset"]) == (
        notes["txn_group"], notes["topic"], 0, notes["txn_offsets"]["pending"])
    assert pending["producer_id"] == int(open_producer["ProducerId"])
    assert pending["producer_epoch"] == int(open_producer["ProducerEpoch"])
    # the pending commit is the transaction that holds the partition's LSO below its HW
    assert pending["record_offset"] >= p["last_stable_offset"] == int(open_producer["CurrentTransactionStartOffset"])
    # an aborted transactional commit never counts: kafka-consumer-groups shows the committed one
    assert notes["txn_offsets"]["aborted"] not in {o["committed_offset"] for o in offsets_of(cluster, copy)
                                                   if o["group_id"] == notes["txn_group"]}


def test_as_of_before_the_commit_marker_the_first_transactional_commit_is_pending(cluster, copy):
    notes = cluster.notes
    part = group_partition(notes["txn_group"], cluster.offsets_partitions)
    rows = copy[(cluster.partitions[(CONSUMER_OFFSETS_TOPIC, part)]["leader"], part)]
    (marker,) = [r for r in rows if r["kind"] == "marker" and r["control_type"] == "COMMIT"]
    before = [o for o in committed_offsets(rows, as_of_ms=marker["timestamp_ms"] - 1)
              if o["group_id"] == notes["txn_group"]]
    assert sorted((o["state"], o["partition"], o["committed_offset"]) for o in before) == [
        (PENDING, 0, notes["txn_offsets"]["committed"]), (PENDING, 1, notes["txn_offsets"]["committed"])]


def lag_of(cluster: Offsets, group: str, partition: int) -> int:
    notes = cluster.notes
    (row,) = [r for r in cluster.truth["consumer_groups"]["offsets"]["rows"]
              if (r["GROUP"], r["TOPIC"], int(r["PARTITION"])) == (group, notes["topic"], partition)]
    return int(row["LAG"])


def test_the_affected_groups_of_the_hang_and_of_the_open_transaction(cluster, copy, scanned):
    notes = cluster.notes
    t = scanned.tables
    rows = affected_groups(offsets_of(cluster, copy), t["partition_state"], t["hanging_candidates"], t["txn_spans"],
                           as_of_ms=scanned.as_of_ms)
    hang = notes["hanging"]
    lso = notes["data_offsets"]["0"]["last_stable_offset"]
    got = {(r["group_id"], r["partition"], r["kind"]): r for r in rows}
    stuck = {g for g, offs in notes["plain_commits"] if offs.get("0", -1) >= lso}
    # offs-plain committed 2 then 3 on partition 0: below the LSO, it is not stuck (yet)
    assert {g for g, _, kind in got if kind == READ_COMMITTED_STUCK} == stuck == {"offs-stuck", "offs-beyond"}
    for group in stuck:
        r = got[(group, 0, READ_COMMITTED_STUCK)]
        assert (r["producer_id"], r["producer_epoch"]) == (hang["producer_id"], hang["producer_epoch"])
        assert (r["hanging"], r["reason"]) == (True, "no_coordinator_record")
        assert (r["last_stable_offset"], r["high_watermark"]) == (lso, notes["data_offsets"]["0"]["high_watermark"])
        assert r["lag_messages"] == lag_of(cluster, group, 0)
        assert r["since_ms"] == hang["last_timestamp_ms"]
        assert r["lag_ms"] == scanned.as_of_ms - hang["last_timestamp_ms"]
    # the read_committed consumer's stable fetch: offs-txn's could not be answered, offs-stuck's was
    assert "error" in notes["stable_fetch"][notes["txn_group"]] and "offsets" in notes["stable_fetch"]["offs-stuck"]
    unstable = [r for r in rows if r["kind"] == UNSTABLE_OFFSET_COMMIT]
    assert [(r["group_id"], r["topic"], r["partition"]) for r in unstable] == [(notes["txn_group"], notes["topic"], 0)]
    (u,) = unstable
    assert (u["committed_offset"], u["pending_offset"]) == (notes["txn_offsets"]["committed"],
                                                            notes["txn_offsets"]["pending"])
    assert (u["held_topic"], u["held_partition"]) == (CONSUMER_OFFSETS_TOPIC,
                                                      group_partition(notes["txn_group"], cluster.offsets_partitions))
    # within its 15 minutes the coordinator's Ongoing transaction is no find-hanging candidate
    assert (u["reason"], u["hanging"]) == (OPEN, None)
    assert u["lag_messages"] == lag_of(cluster, notes["txn_group"], 0)


def test_past_the_timeout_the_pending_commit_is_held_by_a_transaction_the_coordinator_will_end(cluster, copy, scanned):
    notes = cluster.notes
    as_of = cluster.truth["recorded_at_ms"] + PAST_TIMEOUT_MS
    judged = assess_partitions(scanned, as_of_ms=as_of, max_timeout_ms=15 * 60_000)
    rows = affected_groups(offsets_of(cluster, copy), scanned.tables["partition_state"], judged["hanging_candidates"],
                           scanned.tables["txn_spans"], as_of_ms=as_of)
    (u,) = [r for r in rows if r["kind"] == UNSTABLE_OFFSET_COMMIT]
    assert (u["hanging"], u["reason"], u["transactional_id"]) == (False, "coordinator_ongoing",
                                                                  notes["transactional_id"])


def test_the_scan_step_loads_each_partition_from_its_leader_and_fills_both_tables(cluster, copy, scanned):
    t = scanned.tables
    offsets, affected = t["committed_offsets"], t["affected_groups"]
    assert offsets and affected
    assert not [f for f in t["corruptions"] if f["topic"] == CONSUMER_OFFSETS_TOPIC]
    leaders = {p: cluster.partitions[(CONSUMER_OFFSETS_TOPIC, p)]["leader"] for p in range(cluster.offsets_partitions)}
    assert {(o["offsets_partition"], o["broker"]) for o in offsets} <= set(leaders.items())
    assert sorted((o["group_id"], o["topic"], o["partition"], o["state"], o["committed_offset"]) for o in offsets) \
        == sorted((o["group_id"], o["topic"], o["partition"], o["state"], o["committed_offset"])
                  for o in offsets_of(cluster, copy))
    assert affected == affected_groups(offsets_of(cluster, copy), t["partition_state"], t["hanging_candidates"],
                                       t["txn_spans"], as_of_ms=scanned.as_of_ms)
    for rows, schema in ((offsets, R.COMMITTED_OFFSETS), (affected, R.AFFECTED_GROUPS)):
        assert set(rows[0]) == set(schema.names)
        assert to_batch(rows, schema).to_pylist() == [{n: r[n] for n in schema.names} for r in rows]


# --- every fixture cluster: the transactional offset commits its scenarios made ---------------------

ALL = [c for c in FIXTURE_CLUSTERS if c not in ROOTS]


@pytest.mark.parametrize("root", ALL, ids=[c.name for c in ALL])
def test_every_cluster_s_offsets_are_its_scenarios_commits(root):
    """txn_basic's sendOffsetsToTransaction (librdkafka) and java_tv2's (the Java client), on
    3.9.2, 4.1.1 and 4.4.0 files: committed once their COMMIT marker is there, nothing pending
    (no scenario but committed_offsets, tested above, leaves a transactional commit open), on
    every replica."""
    truth = json.loads((root / "truth" / "truth.json").read_text())
    notes = truth["scenario_notes"]
    want: dict[tuple[str, str, int], int] = {}
    if "txn_basic" in notes:
        for tp, value in notes["txn_basic"]["offsets_committed"].items():
            topic, _, partition = tp.rpartition("-")
            want[(notes["txn_basic"]["group_id"], topic, int(partition))] = value
    if "java_tv2" in notes:
        for partition in (0, 1):  # two committed transactions, offsets = transaction number + 1
            want[(notes["java_tv2"]["group_id"], notes["java_tv2"]["topic"], partition)] = 2
    listing = list_copy([root / "brokers"])
    rows, findings = read_replicas(r.replica for r in listing.replicas)
    assert [f.line() for f in findings] == []
    hw = {p["partition"]: p["high_watermark"] for p in truth["partitions"] if p["topic"] == CONSUMER_OFFSETS_TOPIC}
    for (broker, partition), read in rows.items():
        end = hw[partition] if str(broker) not in map(str, truth.get("stopped_brokers", ())) else None
        offsets = committed_offsets(read, end_offset=end)
        wanted = {k: v for k, v in want.items()
                  if group_partition(k[0], len(hw)) == partition}
        got = {(o["group_id"], o["topic"], o["partition"]): o["committed_offset"] for o in offsets}
        assert got == wanted, (root.name, broker, partition)
        assert all(o["state"] == COMMITTED and o["producer_id"] >= 0 for o in offsets)


# --- the scan's tables and summary (both executors: tests/spark/test_scan.py compares them) -------

def test_the_scans_committed_offsets_are_kafkas_and_loaded_from_each_leader(cluster, scanned):
    """The committed_offsets table of a scan (decode reads the commit records in its one walk of
    each __consumer_offsets replica): `kafka-consumer-groups --describe --offsets`' rows, the
    pending commit of the producer `describe-producers` lists open, each partition loaded from
    its leader."""
    notes = cluster.notes
    rows = scanned.tables["committed_offsets"]
    want = sorted((r["GROUP"], r["TOPIC"], int(r["PARTITION"]), int(r["CURRENT-OFFSET"]))
                  for r in cluster.truth["consumer_groups"]["offsets"]["rows"])
    assert sorted((o["group_id"], o["topic"], o["partition"], o["committed_offset"]) for o in rows
                  if o["state"] == COMMITTED) == want
    for o in rows:
        assert o["broker"] == cluster.partitions[(CONSUMER_OFFSETS_TOPIC, o["offsets_partition"])]["leader"]
    (pending,) = [o for o in rows if o["state"] == PENDING]
    p = cluster.partitions[(CONSUMER_OFFSETS_TOPIC, pending["offsets_partition"])]
    (open_producer,) = [r for r in p["producers"][str(p["leader"])]["rows"]
                        if r["CurrentTransactionStartOffset"] != "None"]
    assert (pending["group_id"], pending["committed_offset"], pending["producer_id"], pending["producer_epoch"]) == (
        notes["txn_group"], notes["txn_offsets"]["pending"], int(open_producer["ProducerId"]),
        int(open_producer["ProducerEpoch"]))
    assert to_batch(rows, R.COMMITTED_OFFSETS).num_rows == len(rows)


def test_the_scans_affected_groups_are_the_hangs_and_the_open_transactions(cluster, copy, scanned):
    notes = cluster.notes
    t = scanned.tables
    assert t["affected_groups"] == affected_groups(offsets_of(cluster, copy), t["partition_state"],
                                                   t["hanging_candidates"], t["txn_spans"], as_of_ms=scanned.as_of_ms)
    assert sorted((r["group_id"], r["kind"], r["lag_messages"]) for r in t["affected_groups"]) == [
        ("offs-beyond", READ_COMMITTED_STUCK, lag_of(cluster, "offs-beyond", 0)),
        ("offs-stuck", READ_COMMITTED_STUCK, lag_of(cluster, "offs-stuck", 0)),
        (notes["txn_group"], UNSTABLE_OFFSET_COMMIT, lag_of(cluster, notes["txn_group"], 0))]


def test_the_summary_names_the_groups_the_hang_blocks(cluster, scanned):
    """`logscan scan`'s summary: a row per group held back, the hanging transaction's verdict,
    the lag Kafka's kafka-consumer-groups printed."""
    notes = cluster.notes
    import io

    from logscan.scan.summary import table_figures, write_figures

    fig = table_figures(scanned.tables, scanned.as_of_ms)
    assert fig.groups == 3
    out = io.StringIO()
    write_figures(fig, out, max_transaction_timeout_ms=15 * 60_000, width=200)
    text = out.getvalue()
    section = text[text.index("Consumer groups held back by open transactions: 3"):]
    lines = {line.split()[0]: line for line in section.splitlines() if line.startswith("  offs-")}
    assert len(lines) == 3
    hang = notes["hanging"]
    for group in ("offs-stuck", "offs-beyond"):
        assert lines[group].split()[1:] == [
            f"{notes['topic']}-0", "at", "the", "LSO", f"{notes['topic']}-0", "producer", str(hang["producer_id"]),
            "yes", "no_coordinator_record", str(lag_of(cluster, group, 0)),
            str((scanned.as_of_ms - hang["last_timestamp_ms"]) // 60000)], lines[group]
    part = group_partition(notes["txn_group"], cluster.offsets_partitions)
    p = cluster.partitions[(CONSUMER_OFFSETS_TOPIC, part)]
    (open_producer,) = [r for r in p["producers"][str(p["leader"])]["rows"]
                        if r["CurrentTransactionStartOffset"] != "None"]
    assert lines[notes["txn_group"]].split()[1:10] == [
        f"{notes['topic']}-0", "pending", "commit", f"{CONSUMER_OFFSETS_TOPIC}-{part}", "producer",
        open_producer["ProducerId"], "open", "open", str(lag_of(cluster, notes["txn_group"], 0))]
    assert "offs-plain" not in section   # committed below the LSO: not held back
