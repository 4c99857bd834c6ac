"""Hard fixture scenarios: genuinely hanging transactions, transactions whose markers are
stuck, KIP-890 TV2 from the Java client, and a follower replica that missed an end marker.

Why these need their own module: none of them can come from a well-behaved client.

* Hanging transactions (KIP-664) are transactional data on a partition whose coordinator
  will never write the end marker there. Kafka 3.5+ prevents the classic cause (a produce to
  a partition never added to the transaction) with KIP-890 part 1's verification, so the
  ``hanging`` fixture cluster switches ``transaction.partition.verification.enable`` off and
  ``tools.kafka.rawclient`` writes the batch without AddPartitionsToTxn. Each batch carries a
  CreateTime one hour in the past: find-hanging's rule is ``now - lastTimestamp > 15 min``
  with lastTimestamp = the batch's max timestamp, so the hang is reported at once.
  Four kinds, one per reason logscan must give (issue 6):
    - ``unknown_producer``: an idempotent producer id (InitProducerId without a transactional
      id) writes a transactional batch; the coordinator has no record of the id at all;
    - ``never_added``: a real transactional id's producer id writes to a partition it never
      added; the coordinator state is Empty;
    - ``missed_marker``: the same, but the transaction also has a properly added partition and
      is then committed; the coordinator is CompleteCommit and wrote its marker only to the
      added partition, so the other one hangs behind a transaction that "already finished";
    - ``ongoing_not_added`` (KIP-890's case): the transaction is still Ongoing and lists one
      partition, while the same producer id and epoch also wrote to another it never added.
* Transactions the coordinator has decided but cannot finish (PrepareCommit/PrepareAbort,
  the ``pending`` cluster): their markers are blocked on a partition whose ISR fell below
  its ``min.insync.replicas`` because a node went down (:func:`create_pending_markers`).
  They look like hanging transactions on disk but are not: the coordinator retries until
  the partition is healthy and then completes them (tests/kafka/test_hanging_live.py).
* KIP-890 part 2 (transaction.version 2) is negotiated by the Java client of the same jars
  (librdkafka stays on TV1 rules): the coordinator bumps the epoch at EndTxn and the markers
  carry e+1 while the data carries e (``tools/kafka/java/TxnProducer.java``).
* A follower that missed a marker cannot be caught on the fly reliably, so it is made from
  the copy: the follower's ``.log`` is truncated right before the COMMIT marker batch
  (:func:`truncate_follower_before_marker`, run as a ``post_copy`` hook before the dumps),
  cutting real bytes only.

CLI::

    python -m tools.kafka.hanging build [--out fixtures] [--work .work/fixtures]
        # only the ``hanging`` cluster (``make fixtures`` builds it with the others); the
        # follower truncation runs as the scenario's ScenarioContext.post_copy hook
    python -m tools.kafka.hanging post-copy fixtures/hanging
        # the truncation alone, for a copy made without the hook (re-dumps the cut file)
"""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.kafka.cluster import REPO, Cluster, create_topic, libs_for, run_java_tool, wait_for
from tools.kafka.rawclient import CONCURRENT_TRANSACTIONS, RawClient
from tools.kafka.scenarios import (CLUSTERS, JBOD_CLUSTER, KAFKA_39_CLUSTER, KAFKA_44_CLUSTER, ClusterSpec,
                                   ScenarioContext, _wait_cleaned, scenario, send)
from tools.kafka.truth import _drop_slf4j_noise, parse_table

if __name__ == "__main__":
    # `python -m tools.kafka.hanging`: run the CLI of the importable module, whose import
    # registers the scenarios once (this __main__ copy must not register them again).
    from tools.kafka import hanging as _module
    sys.exit(_module.main())

HANGING_CLUSTER = "hanging"
# TV2 cluster with KIP-890 part 1 verification off: the only way a 4.1 broker accepts a
# transactional write to a partition the coordinator does not know about.
CLUSTERS.setdefault(HANGING_CLUSTER, ClusterSpec(
    transaction_version=2,
    broker_config={"transaction.partition.verification.enable": "false"}))

PENDING_CLUSTER = "pending"
# TV2, default broker settings (verification on): the stuck markers come from a well-behaved
# client and an unhealthy partition, nothing is switched off.
CLUSTERS.setdefault(PENDING_CLUSTER, ClusterSpec(transaction_version=2))

JAVA_DIR = Path(__file__).resolve().parent / "java"
HANG_AGE_MS = 3_600_000  # CreateTime one hour back: past find-hanging's default 15 minutes
HANG_TOPIC = "hang"
ONGOING_TOPIC = "hang-ongoing"
REPLICA_TOPIC = "replica"
JAVA_TOPIC = "java-txn"
PENDING_TOPIC = "pending"
PENDING_DONE_TOPIC = "pending-done"
# transaction.max.timeout.ms (default): the coordinator's timeout sweep leaves such a
# transaction Ongoing for 15 minutes after its first AddPartitionsToTxn, longer than a build.
MAX_TRANSACTION_TIMEOUT_MS = 900_000


@dataclass(frozen=True, slots=True)
class HangingTxn:
    """One open transaction written on purpose, keyed as find-hanging reports one (topic,
    partition, producer_id, producer_epoch, start_offset); ``kind`` says which case it is,
    hanging or not (``ongoing_added``, ``prepare_commit`` and ``prepare_abort`` are not)."""

    kind: str
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    last_timestamp_ms: int
    transactional_id: str | None
    leader: int


# ---- building blocks -------------------------------------------------------------------

def create_unknown_producer_hang(client: RawClient, topic: str, partition: int,
                                 timestamp_ms: int) -> HangingTxn:
    """Transactional batch from an idempotent producer id: no transactional id maps to it,
    so find-hanging's listTransactions(producer id) comes back empty."""
    producer = client.init_producer_id(None)
    b = client.produce_transactional("ghost-transactional-id", producer, topic, partition,
                                     [b"unknown-producer-0", b"unknown-producer-1"], timestamp_ms)
    return HangingTxn("unknown_producer", topic, partition, b.producer_id, b.producer_epoch,
                      b.base_offset, timestamp_ms, None, b.leader_id)


def create_never_added_hang(client: RawClient, transactional_id: str, topic: str,
                            partition: int, timestamp_ms: int) -> HangingTxn:
    """InitProducerId, then Produce with no AddPartitionsToTxn: the coordinator stays Empty."""
    producer = client.init_producer_id(transactional_id)
    b = client.produce_transactional(transactional_id, producer, topic, partition,
                                     [b"never-added-0", b"never-added-1", b"never-added-2"],
                                     timestamp_ms)
    return HangingTxn("never_added", topic, partition, b.producer_id, b.producer_epoch,
                      b.base_offset, timestamp_ms, transactional_id, b.leader_id)


def create_missed_marker_hang(client: RawClient, transactional_id: str, topic: str,
                              added_partition: int, hanging_partition: int,
                              timestamp_ms: int) -> tuple[HangingTxn, dict]:
    """A committed transaction whose coordinator never learnt one of its partitions: the
    COMMIT marker lands on ``added_partition`` only, the coordinator moves to CompleteCommit,
    and ``hanging_partition`` keeps the transaction open forever."""
    producer = client.init_producer_id(transactional_id)
    client.add_partitions_to_txn(transactional_id, producer, [(topic, added_partition)])
    committed = client.produce_transactional(transactional_id, producer, topic, added_partition,
                                             [b"committed-0"], timestamp_ms)
    hung = client.produce_transactional(transactional_id, producer, topic, hanging_partition,
                                        [b"missed-marker-0"], timestamp_ms, base_sequence=0)
    client.end_txn(transactional_id, producer, committed=True)
    return (HangingTxn("missed_marker", topic, hanging_partition, hung.producer_id,
                       hung.producer_epoch, hung.base_offset, timestamp_ms, transactional_id,
                       hung.leader_id),
            {"topic": topic, "partition": added_partition, "base_offset": committed.base_offset})


def create_ongoing_not_added_hang(client: RawClient, transactional_id: str, topic: str,
                                 added_partition: int, hanging_partition: int,
                                 timestamp_ms: int) -> tuple[HangingTxn, HangingTxn]:
    """KIP-890's case: an Ongoing transaction that added ``added_partition`` and wrote there,
    and also wrote to ``hanging_partition`` without adding it. The coordinator's transaction
    lists only the added partition, so its marker will never reach the other one.

    Returns (the hanging write, the legitimately open one)."""
    producer = client.init_producer_id(transactional_id, MAX_TRANSACTION_TIMEOUT_MS)
    client.add_partitions_to_txn(transactional_id, producer, [(topic, added_partition)])
    added = client.produce_transactional(transactional_id, producer, topic, added_partition,
                                         [b"ongoing-added-0", b"ongoing-added-1"], timestamp_ms)
    hung = client.produce_transactional(transactional_id, producer, topic, hanging_partition,
                                        [b"ongoing-not-added-0"], timestamp_ms)
    return tuple(HangingTxn(kind, b.topic, b.partition, b.producer_id, b.producer_epoch,
                            b.base_offset, timestamp_ms, transactional_id, b.leader_id)
                 for kind, b in (("ongoing_not_added", hung), ("ongoing_added", added)))


# ---- one node down: markers the coordinator cannot write --------------------------------

def stop_node(cluster: Cluster, node: int, hard: bool = False, timeout: float = 90) -> None:
    """Stop one node of a running cluster: SIGTERM (clean, controlled shutdown) or SIGKILL.

    The dead Popen stays in ``cluster.procs``, so ``running()`` reports the node down and
    ``stop()`` skips it."""
    proc = cluster.procs[node]
    proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
    proc.wait(timeout)


def start_node(cluster: Cluster, node: int, timeout: float = 120) -> None:
    """Start a stopped node again with its own config and log dir (log recovery if it was
    killed), and wait until the cluster lists every broker."""
    from tools.kafka.cluster import BROKER_JVM_OPTS, _java, _jmx_opts

    if cluster.running().get(node):
        raise RuntimeError(f"node {node} is running")
    d = cluster.node_dir(node)
    cmd = _java("kafka.Kafka", [d / "server.properties"],
                jvm_opts=[*BROKER_JVM_OPTS, *_jmx_opts(cluster.jmx_ports[node])],
                log4j=d / "log4j2.properties", libs=cluster.libs)
    with open(d / "stdout.log", "ab") as out:
        cluster.procs[node] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True)
    cluster._save_state()
    cluster.wait_ready(timeout)


def create_topic_on(cluster: Cluster, name: str, assignment: list[list[int]],
                    config: dict | None = None, timeout: float = 30) -> None:
    """Create a topic with an explicit replica assignment (first replica = leader) and wait
    until every partition is led by it with the full ISR."""
    from confluent_kafka.admin import NewTopic

    admin = cluster.admin()
    create_topic(admin, NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment,
                                 config={k: str(v) for k, v in (config or {}).items()}))

    def led(t) -> bool:
        return bool(t and t.error is None and len(t.partitions) == len(assignment) and all(
            t.partitions[p].leader == replicas[0] and sorted(t.partitions[p].isrs) == sorted(replicas)
            for p, replicas in enumerate(assignment)))

    wait_for(lambda: admin.list_topics(name, timeout=5).topics.get(name), led, timeout=timeout, every=0.2,
             failure=lambda _: f"topic {name} not led as assigned {assignment}")


def wait_isr(cluster: Cluster, topic: str, partition: int, isr: set[int],
             timeout: float = 60) -> list[int]:
    """Wait until the partition's ISR is ``isr``. A metadata request that times out is asked
    again until the deadline: right after a node is killed, the client may still be asking it
    (a CI run failed on one such 5 s timeout, 2026-11-24)."""
    from confluent_kafka import KafkaException

    def isrs() -> list[int]:
        return cluster.admin().list_topics(topic, timeout=5).topics[topic].partitions[partition].isrs

    return sorted(wait_for(isrs, lambda got: set(got) == isr, timeout=timeout, every=0.5, retry=(KafkaException,),
                           failure=lambda got: f"{topic}-{partition} ISR {got}, waited for {sorted(isr)}"))


def describe_transactions(cluster: Cluster, transactional_ids: list[str]) -> dict[str, dict]:
    """``kafka-transactions describe`` of each id (one JVM): {id: {"row": ..., "stdout": ...}}."""
    runs = cluster.run_tools([("kafka-transactions", ["describe", "--transactional-id", tid])
                              for tid in transactional_ids])
    out = {}
    for tid, cp in zip(transactional_ids, runs):
        if cp.returncode != 0:
            raise RuntimeError(f"describe {tid} failed: {_drop_slf4j_noise(cp.stderr)}")
        (row,) = parse_table(cp.stdout)
        out[tid] = {"row": row, "stdout": cp.stdout}
    return out


def wait_transaction_states(cluster: Cluster, want: dict[str, tuple[str, str]],
                            timeout: float = 60) -> dict[str, dict]:
    """Poll describe until each id shows (TransactionState, TopicPartitions) as in ``want``."""

    def states(described: dict[str, dict]) -> dict[str, tuple[str, str]]:
        return {tid: (d["row"]["TransactionState"], d["row"]["TopicPartitions"]) for tid, d in described.items()}

    return wait_for(lambda: describe_transactions(cluster, list(want)), lambda d: states(d) == want,
                    timeout=timeout, every=1,
                    failure=lambda d: f"transactions did not reach {want}: {states(d)}")


def create_pending_markers(cluster: Cluster, commit_id: str, abort_id: str, topic: str,
                           done_topic: str, timestamp_ms: int, hard: bool = False) -> dict:
    """Two transactions the coordinator has decided but cannot finish: PrepareCommit and
    PrepareAbort, their markers blocked on one partition by a node that went down.

    ``topic`` (1 partition, replication factor 3, ``min.insync.replicas=3``) and
    ``done_topic`` (1 partition, RF 3, the cluster's min ISR 2) are both written by
    ``commit_id`` and ``abort_id`` (AddPartitionsToTxn first: a well-behaved client). Then one
    node that is neither coordinator nor leader is stopped (``hard``: SIGKILL), the ISR of
    both partitions shrinks to two, ``commit_id`` sends EndTxn(commit) and ``abort_id`` a
    restarted producer's InitProducerId, which makes the coordinator bump the epoch and
    abort. Both coordinators write PrepareCommit/PrepareAbort to ``__transaction_state`` and
    their markers land on ``done_topic``; on ``topic`` every WriteTxnMarkers append fails
    with NOT_ENOUGH_REPLICAS (acks=all, ISR 2 < 3), a retriable error: the coordinator
    retries until the partition has three in-sync replicas again, and its state stays
    Prepare* (TransactionMarkerRequestCompletionHandler; the timeout sweep only aborts
    Ongoing transactions). ``describe`` lists only ``topic``'s partition as still pending.
    """
    nodes = list(range(cluster.nodes))
    with RawClient(cluster.bootstrap) as client:
        coordinators = {tid: client.find_transaction_coordinator(tid) for tid in (commit_id, abort_id)}
        stopped = next(n for n in reversed(nodes) if n not in coordinators.values())
        leader = coordinators[commit_id]
        other = next(n for n in nodes if n not in (leader, stopped))
        create_topic_on(cluster, topic, [[leader, other, stopped]], {"min.insync.replicas": 3})
        create_topic_on(cluster, done_topic, [[other, leader, stopped]])
        producers, txns, done = {}, [], {}
        for tid, kind in ((commit_id, "prepare_commit"), (abort_id, "prepare_abort")):
            producers[tid] = producer = client.init_producer_id(tid, MAX_TRANSACTION_TIMEOUT_MS)
            client.add_partitions_to_txn(tid, producer, [(topic, 0), (done_topic, 0)])
            b = client.produce_transactional(tid, producer, topic, 0,
                                             [f"{kind}-0".encode(), f"{kind}-1".encode()], timestamp_ms)
            d = client.produce_transactional(tid, producer, done_topic, 0, [f"{kind}-done".encode()],
                                             timestamp_ms)
            txns.append(HangingTxn(kind, topic, 0, b.producer_id, b.producer_epoch, b.base_offset,
                                   timestamp_ms, tid, b.leader_id))
            done[tid] = {"topic": done_topic, "partition": 0, "base_offset": d.base_offset}
    before = end_offsets(cluster, topic, 0)
    # What the node to stop holds, as its own describe-producers says right before it goes:
    # nothing reaches it afterwards, so this is the producer state its copy must give.
    held = {t: tool_rows(cluster, "describe-producers", "--topic", t,
                         "--partition", 0, "--broker-id", stopped)[0] for t in (topic, done_topic)}
    stop_node(cluster, stopped, hard=hard)
    isr = {t: wait_isr(cluster, t, 0, {leader, other}) for t in (topic, done_topic)}
    live = f"127.0.0.1:{cluster.broker_ports[leader]}"
    with RawClient(live) as client:
        client.end_txn(commit_id, producers[commit_id], committed=True)
        fence_error = client.init_producer_id_once(abort_id, MAX_TRANSACTION_TIMEOUT_MS)
    if fence_error != CONCURRENT_TRANSACTIONS:
        raise RuntimeError(f"InitProducerId({abort_id}) answered {fence_error}, expected "
                           f"CONCURRENT_TRANSACTIONS while the coordinator aborts")
    described = wait_transaction_states(cluster, {commit_id: ("PrepareCommit", f"{topic}-0"),
                                                  abort_id: ("PrepareAbort", f"{topic}-0")})
    done_offsets = wait_settled(cluster, done_topic, 0)
    blocked = end_offsets(cluster, topic, 0)
    if blocked != before or blocked["last_stable_offset"] != min(t.start_offset for t in txns):
        raise RuntimeError(f"{topic}-0 moved while its markers should be blocked: {before} -> {blocked}")
    listed, list_stdout = tool_rows(cluster, "list")
    return {"stopped_broker": stopped, "stop": "SIGKILL" if hard else "SIGTERM", "stopped_broker_producers": held,
            "leader": leader, "coordinators": coordinators,
            "min_insync_replicas": {topic: 3}, "isr_after_stop": isr,
            "open": [asdict(t) for t in txns], "done": done, "done_offsets": done_offsets,
            "blocked_offsets": blocked, "fence_error": fence_error,
            "describe": {tid: d["row"] for tid, d in described.items()},
            "describe_stdout": {tid: d["stdout"] for tid, d in described.items()},
            "list": [r for r in listed if r["TransactionalId"] in (commit_id, abort_id)],
            "list_stdout": list_stdout}


def tool_rows(cluster: Cluster, *args) -> tuple[list[dict[str, str]], str]:
    """Run kafka-transactions and return (parsed table, raw stdout); a failure raises."""
    cp = cluster.run_tool("kafka-transactions", *args, timeout=120)
    if cp.returncode != 0:
        raise RuntimeError(f"kafka-transactions {' '.join(map(str, args))} failed "
                           f"({cp.returncode}): {_drop_slf4j_noise(cp.stderr)}")
    return parse_table(cp.stdout), cp.stdout


def find_hanging(cluster: Cluster, broker_id: int) -> tuple[list[dict[str, str]], str]:
    return tool_rows(cluster, "find-hanging", "--broker-id", broker_id)


def matches(row: dict[str, str], txn: HangingTxn) -> bool:
    return (row.get("Topic"), row.get("Partition"), row.get("ProducerId"),
            row.get("ProducerEpoch"), row.get("StartOffset")) == (
        txn.topic, str(txn.partition), str(txn.producer_id), str(txn.producer_epoch),
        str(txn.start_offset))


def wait_until_found(cluster: Cluster, txns: list[HangingTxn], broker_id: int,
                     timeout: float = 60) -> tuple[list[dict[str, str]], str]:
    """Poll find-hanging on one broker until every transaction in ``txns`` is reported."""
    return wait_for(lambda: find_hanging(cluster, broker_id),
                    lambda found: all(any(matches(r, t) for r in found[0]) for t in txns), timeout=timeout, every=1,
                    failure=lambda found: f"find-hanging on broker {broker_id} never showed {txns}: {found[1]}")


def abort_hanging(cluster: Cluster, txn: HangingTxn) -> subprocess.CompletedProcess:
    """The command logscan plans: abort by start offset (the tool looks up pid/epoch itself)."""
    return cluster.run_tool("kafka-transactions", "abort", "--topic", txn.topic,
                            "--partition", txn.partition, "--start-offset", txn.start_offset,
                            timeout=120)


def end_offsets(cluster: Cluster, topic: str, partition: int) -> dict[str, int]:
    """High watermark (read_uncommitted latest) and LSO (read_committed latest)."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    admin, tp, out = cluster.admin(), TopicPartition(topic, partition), {}
    for label, iso in (("high_watermark", IsolationLevel.READ_UNCOMMITTED),
                       ("last_stable_offset", IsolationLevel.READ_COMMITTED)):
        fut = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=iso,
                                 request_timeout=30)[tp]
        out[label] = fut.result().offset
    return out


def settled(offsets: dict[str, int]) -> bool:
    """No transaction open on the partition (end_offsets: the LSO has reached the HW)."""
    return offsets["last_stable_offset"] == offsets["high_watermark"]


def run_txn_producer(cluster: Cluster, *args, timeout: float = 120) -> list[list[str]]:
    """Run tools/kafka/java/TxnProducer.java (single-file source launch) and return its
    tab-separated output lines."""
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
           "-cp", f"{cluster.libs}/*", str(JAVA_DIR / "TxnProducer.java"),
           "--bootstrap", cluster.bootstrap, *map(str, args)]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError(f"TxnProducer {' '.join(map(str, args))} failed ({cp.returncode}): "
                           f"{_drop_slf4j_noise(cp.stderr)[-3000:]}")
    return [line.split("\t") for line in cp.stdout.splitlines() if line.strip()]


# ---- scenarios -------------------------------------------------------------------------

@scenario("hanging_txns", clusters=(HANGING_CLUSTER, KAFKA_44_CLUSTER, KAFKA_39_CLUSTER, JBOD_CLUSTER))
def hanging_txns(ctx: ScenarioContext) -> None:
    """Topic ``hang`` (3 partitions, RF 3) on the ``hanging`` cluster (TV2, partition
    verification off) gets three GENUINELY hanging transactions written by the raw client
    (tools/kafka/rawclient.py), each batch with CreateTime one hour in the past: on ``hang``/0
    a transactional batch from an idempotent producer id the coordinator has no record of
    (``unknown_producer``); on ``hang``/1 a batch from ``hang-never-added``'s producer id,
    which never called AddPartitionsToTxn (coordinator state Empty, ``never_added``); on
    ``hang``/2 a batch from ``hang-missed-marker``, whose transaction added only ``hang``/0,
    wrote there too, and committed (coordinator CompleteCommit; COMMIT marker on ``hang``/0,
    none on ``hang``/2, ``missed_marker``). find-hanging on every broker was confirmed to
    list exactly these three before the copy; the notes hold their topic, partition,
    producer id, epoch and start offset."""
    ctx.create_topic(HANG_TOPIC, 3)
    old = int(time.time() * 1000) - HANG_AGE_MS
    with RawClient(ctx.cluster.bootstrap) as client:
        txns = [create_unknown_producer_hang(client, HANG_TOPIC, 0, old),
                create_never_added_hang(client, "hang-never-added", HANG_TOPIC, 1, old)]
        missed, committed = create_missed_marker_hang(client, "hang-missed-marker", HANG_TOPIC,
                                                      0, 2, old)
        txns.append(missed)
    confirmed = {}
    for broker in range(ctx.cluster.nodes):
        rows, raw = wait_until_found(ctx.cluster, txns, broker)
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    ctx.note("hanging_txns", topic=HANG_TOPIC, hanging=[asdict(t) for t in txns],
             committed_partition_of_missed_marker=committed,
             find_hanging_at_creation=confirmed)


@scenario("replica_missed_marker", clusters=(HANGING_CLUSTER,))
def replica_missed_marker(ctx: ScenarioContext) -> None:
    """Topic ``replica`` (1 partition, RF 3): ``replica-txn`` (librdkafka) commits one
    transaction of two batches, so leader and both followers hold data + COMMIT marker.
    After the copy, one follower's copy is truncated right before the marker batch
    (``python -m tools.kafka.hanging post-copy``): that replica shows the transaction
    still open while the leader and the other follower show it committed; truth.json's
    ``replica_truncation`` names the broker, partition, cut offset and byte position."""
    ctx.create_topic(REPLICA_TOPIC, 1)
    p = ctx.txn_producer("replica-txn")
    p.begin_transaction()
    send(p, REPLICA_TOPIC, 0, 2, "replica-b0")
    send(p, REPLICA_TOPIC, 0, 2, "replica-b1")
    p.commit_transaction(30)
    # the marker must be on every replica before the copy: wait for HW == LEO on all of them
    offsets = wait_settled(ctx.cluster, REPLICA_TOPIC, 0)
    md = ctx.cluster.admin().list_topics(REPLICA_TOPIC, timeout=10).topics[REPLICA_TOPIC]
    pm = md.partitions[0]
    follower = next(r for r in pm.replicas if r != pm.leader)
    ctx.note("replica_missed_marker", topic=REPLICA_TOPIC, partition=0,
             transactional_id="replica-txn", leader=pm.leader, replicas=list(pm.replicas),
             follower_to_truncate=follower, marker_offset=offsets["high_watermark"] - 1,
             **offsets)
    ctx.post_copy.append(_truncation_hook(ctx.notes["replica_missed_marker"]))


@scenario("java_tv2", clusters=("tv1", "tv2", KAFKA_44_CLUSTER, KAFKA_39_CLUSTER))
def java_tv2(ctx: ScenarioContext) -> None:
    """Topic ``java-txn`` (2 partitions) written by the Java client of the same jars
    (tools/kafka/java/TxnProducer.java): ``java-txn`` commits two transactions on both
    partitions, each with sendOffsetsToTransaction for group ``java-txn-group``, then a
    second run of the same id (InitProducerId again) aborts one; ``java-open`` leaves one
    transaction open on ``java-txn``/1 (timeout 15 min; the JVM halts). The Java client
    negotiates KIP-890 TV2 where the cluster allows it: on the ``tv2`` cluster each marker
    carries the data's epoch + 1 (data(e) ... marker(e+1), next data at e+1), on ``tv1``
    markers carry the data's epoch."""
    ctx.create_topic(JAVA_TOPIC, 2)
    runs = {
        "commit": run_txn_producer(ctx.cluster, "--transactional-id", "java-txn",
                                   "--topic", JAVA_TOPIC, "--partitions", "0,1",
                                   "--records", 2, "--transactions", 2, "--end", "commit",
                                   "--offsets-group", "java-txn-group"),
        "abort": run_txn_producer(ctx.cluster, "--transactional-id", "java-txn",
                                  "--topic", JAVA_TOPIC, "--partitions", "0,1",
                                  "--records", 2, "--transactions", 1, "--end", "abort"),
        "open": run_txn_producer(ctx.cluster, "--transactional-id", "java-open",
                                 "--topic", JAVA_TOPIC, "--partitions", "1",
                                 "--records", 2, "--transactions", 1, "--end", "open",
                                 "--timeout-ms", 900000),
    }
    ctx.note("java_tv2", topic=JAVA_TOPIC, group_id="java-txn-group",
             transactional_ids=["java-txn", "java-open"],
             expect_marker_epoch_bump=ctx.cluster.transaction_version >= 2,
             output={k: v for k, v in runs.items()})


COMPACTED_TV2_TOPIC = "compacted-tv2"
# Cleaner runs after the transactions: a marker's records go only once its transaction's data
# is gone (pass 1 removes the data, pass 2 sets the marker's delete horizon, pass 3 drops its
# record); one more for a pass that ran before the data's segment was closed.
COMPACTED_TV2_PASSES = 4


@scenario("compacted_tv2", clusters=(KAFKA_44_CLUSTER,))
def compacted_tv2(ctx: ScenarioContext) -> None:
    """Topic ``compacted-tv2`` (configured as ``compacted``) receives five rounds of keys
    k0..k4 from an idempotent producer, then the Java client (TV2) of ``txn-compact-tv2``
    commits one transaction and aborts a second on the same keys, then the log cleaner runs
    four more times (each after four more rounds, waited for via ``cleaner-offset-checkpoint``).
    With TV2 each marker bumps the epoch, so the producer's last entry is its ABORT marker
    and its data has no batch left to keep (Kafka's Cleaner keeps the last data batch of an
    active producer, or else its last marker): the committed data is compacted away, the
    aborted data removed, the COMMIT marker deleted once past its delete horizon, and the
    ABORT marker kept as an empty batch (``count: 0``). The producer state describe-producers
    reports for that producer is in the broker's memory and its snapshots, not in the log."""
    topic = COMPACTED_TV2_TOPIC
    ctx.create_topic(topic, 1, {"cleanup.policy": "compact", **ctx.small_segments(1024),
                                "min.cleanable.dirty.ratio": 0.01,
                                "min.compaction.lag.ms": 0, "delete.retention.ms": 100,
                                "segment.ms": 600000, "file.delete.delay.ms": 3600000})
    p = ctx.producer(**{"enable.idempotence": True})
    rounds = 0
    for _ in range(5):
        send(p, topic, 0, 5, f"round{rounds}-" + "v" * 30)
        rounds += 1
    txns = run_txn_producer(ctx.cluster, "--transactional-id", "txn-compact-tv2", "--topic", topic,
                            "--partitions", "0", "--records", 5, "--transactions", 2,
                            "--end", "commit", "--end-last", "abort")
    cleaned, passes = None, []
    for _ in range(COMPACTED_TV2_PASSES):
        time.sleep(0.5)  # past the delete horizon (delete.retention.ms) the last pass set
        for _ in range(4):
            send(p, topic, 0, 5, f"round{rounds}-" + "v" * 30)
            rounds += 1
        cleaned = _wait_cleaned(ctx.cluster, f"{topic}-0", timeout=90, after=cleaned)
        passes.append(dict(cleaned))
    ctx.note("compacted_tv2", topic=topic, transactional_id="txn-compact-tv2", rounds=rounds,
             cleaner_checkpoints=passes, output=txns)


@scenario("ongoing_not_added", clusters=(HANGING_CLUSTER,))
def ongoing_not_added(ctx: ScenarioContext) -> None:
    """Topic ``hang-ongoing`` (2 partitions, RF 3) on the ``hanging`` cluster: the raw client's
    ``hang-ongoing`` (transaction timeout 15 min, the maximum) calls AddPartitionsToTxn for
    ``hang-ongoing``/0 only, then writes transactional batches (CreateTime one hour back) to
    ``hang-ongoing``/0 and ``hang-ongoing``/1 under the same producer id and epoch, and never
    ends the transaction. The coordinator stays Ongoing with ``hang-ongoing-0`` as its only
    partition (KIP-890's case: a write to a partition never added): find-hanging on every
    broker was confirmed to list ``hang-ongoing``/1 (``ongoing_not_added``) and not
    ``hang-ongoing``/0 (``ongoing_added``), which the coordinator will end with the
    transaction."""
    ctx.create_topic(ONGOING_TOPIC, 2)
    old = int(time.time() * 1000) - HANG_AGE_MS
    with RawClient(ctx.cluster.bootstrap) as client:
        hung, added = create_ongoing_not_added_hang(client, "hang-ongoing", ONGOING_TOPIC, 0, 1, old)
    confirmed = {}
    for broker in range(ctx.cluster.nodes):
        rows, raw = wait_until_found(ctx.cluster, [hung], broker)
        if any(matches(r, added) for r in rows):
            raise RuntimeError(f"find-hanging on broker {broker} listed the added partition: {raw}")
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    described = describe_transactions(ctx.cluster, ["hang-ongoing"])["hang-ongoing"]
    ctx.note("ongoing_not_added", topic=ONGOING_TOPIC, transactional_id="hang-ongoing",
             hanging=asdict(hung), not_hanging=asdict(added), describe=described["row"],
             find_hanging_at_creation=confirmed)


@scenario("markers_pending", clusters=(PENDING_CLUSTER,))
def markers_pending(ctx: ScenarioContext) -> None:
    """The ``pending`` cluster (TV2, default settings): the raw client's ``prepare-commit`` and
    ``prepare-abort`` (AddPartitionsToTxn first, CreateTime one hour back, timeout 15 min)
    each write to ``pending``/0 (replication factor 3, ``min.insync.replicas=3``) and
    ``pending-done``/0. Then one node, neither coordinator nor leader, is killed (SIGKILL)
    and stays down until the copy, which takes its log dir as the crash left it (never
    restarted: no clean-shutdown producer snapshots nor ``.kafka_cleanshutdown``, its active
    segments' indexes still preallocated); right before the kill its own describe-producers of
    both partitions was recorded (the notes' ``stopped_broker_producers``). The ISR of every
    partition drops to the other two. ``prepare-commit`` sends EndTxn(commit); ``prepare-abort`` is restarted
    (InitProducerId answered CONCURRENT_TRANSACTIONS: the coordinator bumped the epoch and
    aborts). The coordinators write PrepareCommit/PrepareAbort, their markers land on
    ``pending-done``/0, and on ``pending``/0 every marker append fails with
    NOT_ENOUGH_REPLICAS, which the coordinator retries until the ISR is whole again: live,
    ``list``/``describe`` showed PrepareCommit and PrepareAbort with ``pending-0`` still
    pending, find-hanging listed nothing, and the LSO of ``pending``/0 stayed at the first
    transaction's start. Both are decided transactions, never to be aborted by hand.
    ``prepare-commit`` lives in ``__transaction_state-2``, the last partition, and
    ``prepare-abort`` in ``__transaction_state-0``. truth.json ``stopped_brokers`` names the
    stopped node: it was not asked for describe-producers, find-hanging or its log end
    offsets, and its copy lacks what was written after it stopped (the markers on
    ``pending-done``/0, the coordinator's Prepare records)."""
    old = int(time.time() * 1000) - HANG_AGE_MS
    ctx.note("markers_pending", commit_id="prepare-commit", abort_id="prepare-abort",
             topic=PENDING_TOPIC, done_topic=PENDING_DONE_TOPIC,
             **create_pending_markers(ctx.cluster, "prepare-commit", "prepare-abort",
                                      PENDING_TOPIC, PENDING_DONE_TOPIC, old, hard=True))


def wait_settled(cluster: Cluster, topic: str, partition: int,
                          timeout: float = 30) -> dict[str, int]:
    """Wait until LSO == HW (no open transaction, marker replicated to the ISR)."""
    return wait_for(lambda: end_offsets(cluster, topic, partition), settled, timeout=timeout, every=0.5,
                    failure=lambda offsets: f"{topic}-{partition} did not settle: {offsets}")


# ---- after the copy: a follower that missed the marker ---------------------------------

def truncate_follower_before_marker(cluster_out: Path, broker: int, topic: str, partition: int,
                                   marker_offset: int) -> dict:
    """Cut the copied follower's log right before its end-marker batch at ``marker_offset``.

    Only real bytes are removed (``truncate`` of the ``.log``). The files the broker wrote at
    clean shutdown are left as they were and recorded as stale: the producer snapshot named
    after the old log end offset (Kafka deletes snapshots above the log end offset when it
    loads the log), the checkpoints' recovery point / high watermark, and ``.index`` /
    ``.timeindex`` entries at or past the cut (at clean shutdown the broker appends the
    segment's max timestamp to the time index; when that is the marker's, the entry names
    the offset just cut off).
    """
    from logscan.format.batch import decode_batch_header
    from logscan.format.index import iter_offset_index, iter_time_index

    part_dir = Path(cluster_out) / "brokers" / f"broker-{broker}" / f"{topic}-{partition}"
    logs = sorted(part_dir.glob("*.log"))
    if len(logs) != 1:
        raise RuntimeError(f"expected one segment in {part_dir}, found {logs}")
    log = logs[0]
    data = log.read_bytes()
    pos, marker = 0, None
    while pos < len(data):
        batch, nxt = decode_batch_header(data, pos)
        if batch.is_control and batch.base_offset == marker_offset:
            marker = batch
            break
        pos = nxt
    if marker is None:
        raise RuntimeError(f"no control batch at offset {marker_offset} in {log}")
    if marker.next_position != len(data):
        raise RuntimeError("the marker is not the last batch; truncating would drop more")
    with open(log, "r+b") as f:
        f.truncate(marker.position)
    base_offset = int(log.stem)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    offset_past_cut = [{"offset": e.offset, "log_position": e.log_position}
                       for e in iter_offset_index(index.read_bytes(), base_offset)
                       if e.log_position >= marker.position] if index.exists() else []
    time_past_cut = [{"timestamp_ms": e.timestamp, "offset": e.offset}
                     for e in iter_time_index(timeindex.read_bytes(), base_offset)
                     if e.offset >= marker.base_offset] if timeindex.exists() else []
    return {
        "broker": broker, "topic": topic, "partition": partition,
        "file": str(log.relative_to(Path(cluster_out) / "brokers")),
        "cut_offset": marker.base_offset,
        "cut_position": marker.position,
        "original_size": len(data),
        "removed_bytes": len(data) - marker.position,
        "new_log_end_offset": marker.base_offset,
        "index_file_sizes": {p.name: p.stat().st_size for p in (index, timeindex) if p.exists()},
        "offset_index_entries_past_cut": offset_past_cut,
        "time_index_entries_past_cut": time_past_cut,
        "stale_snapshots": sorted(p.name for p in part_dir.glob("*.snapshot")
                                  if int(p.stem) > marker.base_offset),
        "untouched": ["*.snapshot", "*.index", "*.timeindex", "recovery-point-offset-checkpoint",
                      "replication-offset-checkpoint", "log-start-offset-checkpoint",
                      ".kafka_cleanshutdown"],
    }


def _truncation_hook(note: dict):
    """The ScenarioContext.post_copy callback; its name is the truth.json ``post_copy`` key."""
    def replica_truncation(cluster_out: Path) -> dict:
        return truncate_follower_before_marker(
            cluster_out, note["follower_to_truncate"], note["topic"], note["partition"],
            note["marker_offset"])
    return replica_truncation


def post_copy_existing(cluster_out: Path) -> dict:
    """Apply the truncation to a fixture built before the post_copy hook ran (or by hand):
    cut, re-dump the cut file with kafka-dump-log, record it in truth.json."""
    cluster_out = Path(cluster_out)
    truth_path = cluster_out / "truth" / "truth.json"
    truth = json.loads(truth_path.read_text())
    done = truth.get("post_copy", {}).get("replica_truncation")
    if done:  # already applied to this copy: never cut twice
        return done
    record = _truncation_hook(truth["scenario_notes"]["replica_missed_marker"])(cluster_out)
    brokers = cluster_out / "brokers"
    cp = run_java_tool("kafka-dump-log", "--deep-iteration", "--print-data-log",
                       "--files", brokers / record["file"], libs=libs_for(truth["kafka_version"]))
    dump = cluster_out / "truth" / "dump" / (record["file"] + ".txt")
    dump.write_text(cp.stdout.replace(str(brokers) + "/", ""))
    dump.with_name(dump.name.replace(".txt", ".stderr.txt")).write_text(
        _drop_slf4j_noise(cp.stderr).replace(str(brokers) + "/", ""))
    truth.setdefault("post_copy", {})["replica_truncation"] = record
    if record["file"] in truth.get("dumps", {}):
        truth["dumps"][record["file"]]["exit_code"] = cp.returncode
    truth_path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.hanging")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default=str(REPO / "fixtures"))
    b.add_argument("--work", default=str(REPO / ".work" / "fixtures"))
    pc = sub.add_parser("post-copy")
    pc.add_argument("cluster_out")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        from tools.kafka.fixtures import build_cluster
        truth = build_cluster(HANGING_CLUSTER, Path(a.out), Path(a.work))
        print(f"{HANGING_CLUSTER}: {len(truth['dumps'])} files dumped, timings {truth['timings']}")
        print(json.dumps(truth.get("post_copy", {}), indent=1))
    else:
        print(json.dumps(post_copy_existing(Path(a.cluster_out)), indent=1))
    return 0

