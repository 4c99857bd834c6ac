"""KIP-890 part 2 (transaction.version 2) epochs on real files: a marker lost and a marker refused.

With TV2 the coordinator ends every transaction with an epoch bump: EndTxn (version 5+, what a
TV2 client sends; the raw client's ``END_TXN_TV2_VERSION``) makes it write PrepareCommit /
PrepareAbort at epoch e+1 for data written at e, the markers carry e+1, and the producer goes
on at e+1. What an open transaction at e means next to a coordinator record at e+1 is then a
question for the broker's code, asked here of a real 4.1.1 cluster (``marker-epochs``, TV2,
``transaction.partition.verification.enable=false`` so the raw client can write what a buggy
client would):

* ``tv2_lost_marker``: a TV2 EndTxn whose marker is lost to a partition the transaction wrote
  to without adding it (the coordinator's record does not list it): the marker at e+1 lands on
  the added partition, CompleteCommit at e+1, and the other partition keeps data at e open for
  good (find-hanging lists it).
* ``tv2_refused_marker``: the partition holds the producer at a higher epoch than the
  coordinator's marker (a buggy client wrote a batch at e+2 inside the transaction), so the
  partition leader refuses the marker at e+1 (ProducerAppendInfo.checkProducerEpoch:
  INVALID_PRODUCER_EPOCH) and the coordinator stops sending it for good
  (TransactionMarkerRequestCompletionHandler: "permanently failed ... cancel sending any more
  transaction markers"): PrepareCommit forever, which ``describe`` shows live.
"""
from __future__ import annotations

import time
from dataclasses import asdict

from tools.kafka.hanging import (HANG_AGE_MS, MAX_TRANSACTION_TIMEOUT_MS, HangingTxn, describe_transactions,
                                 end_offsets, find_hanging, wait_settled, wait_transaction_states,
                                 wait_until_found)
from tools.kafka.rawclient import END_TXN_TV2_VERSION, ProducerIdAndEpoch, RawClient
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario

EPOCHS_CLUSTER = "marker-epochs"
CLUSTERS.setdefault(EPOCHS_CLUSTER, ClusterSpec(
    transaction_version=2, broker_config={"transaction.partition.verification.enable": "false"}))
LOST_TOPIC = "tv2-lost"
REFUSED_TOPIC = "tv2-refused"
EQUAL_TOPIC = "tv2-equal"
# How long the refused marker is watched: the coordinator retries a retriable marker error at
# once (its send thread), so a PrepareCommit still there after this has stopped for good.
REFUSED_WATCH_S = 10


@scenario("tv2_lost_marker", clusters=(EPOCHS_CLUSTER,))
def tv2_lost_marker(ctx: ScenarioContext) -> None:
    """Topic ``tv2-lost`` (2 partitions): the raw client's ``tv2-lost`` (AddPartitionsToTxn for
    ``tv2-lost``/0 only, CreateTime one hour back) writes transactional data at epoch e to
    ``tv2-lost``/0 and ``tv2-lost``/1, then ends it with a TV2 EndTxn(commit) (version 5): the
    coordinator bumps the epoch, its PrepareCommit and CompleteCommit records carry e+1, the
    COMMIT marker at e+1 lands on ``tv2-lost``/0 only (data(e) ... marker(e+1)), and
    ``tv2-lost``/1 keeps the data at e open for good: find-hanging on every broker was
    confirmed to list it (the notes' ``hanging``, ``bumped`` the producer id and epoch EndTxn
    answered)."""
    cluster = ctx.cluster
    ctx.create_topic(LOST_TOPIC, 2)
    old = int(time.time() * 1000) - HANG_AGE_MS
    tid = "tv2-lost"
    with RawClient(cluster.bootstrap) as client:
        producer = client.init_producer_id(tid, MAX_TRANSACTION_TIMEOUT_MS)
        client.add_partitions_to_txn(tid, producer, [(LOST_TOPIC, 0)])
        added = client.produce_transactional(tid, producer, LOST_TOPIC, 0, [b"tv2-lost-0", b"tv2-lost-1"], old)
        lost = client.produce_transactional(tid, producer, LOST_TOPIC, 1, [b"tv2-lost-not-added"], old)
        bumped = client.end_txn(tid, producer, committed=True, version=END_TXN_TV2_VERSION)
    if bumped is None or bumped.producer_epoch != producer.producer_epoch + 1:
        raise RuntimeError(f"TV2 EndTxn answered {bumped}, expected epoch {producer.producer_epoch + 1}")
    settled = wait_settled(cluster, LOST_TOPIC, 0)
    hung = HangingTxn("missed_marker", LOST_TOPIC, 1, lost.producer_id, lost.producer_epoch, lost.base_offset,
                      old, tid, lost.leader_id)
    confirmed = {}
    for broker in range(cluster.nodes):
        rows, raw = wait_until_found(cluster, [hung], broker)
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    ctx.note("tv2_lost_marker", topic=LOST_TOPIC, transactional_id=tid, producer=asdict(producer),
             bumped=asdict(bumped), committed={"topic": LOST_TOPIC, "partition": 0, "base_offset": added.base_offset,
                                               "end_offsets": settled},
             hanging=asdict(hung), describe=describe_transactions(cluster, [tid])[tid]["row"],
             find_hanging_at_creation=confirmed)


@scenario("tv2_refused_marker", clusters=(EPOCHS_CLUSTER,))
def tv2_refused_marker(ctx: ScenarioContext) -> None:
    """Topic ``tv2-refused`` (1 partition): the raw client's ``tv2-refused`` (AddPartitionsToTxn
    for ``tv2-refused``/0, CreateTime one hour back) writes transactional data at epoch e, then,
    as a buggy client would, a transactional batch of the same producer id at epoch e+2
    (sequence 0), then a TV2 EndTxn(commit). The coordinator writes PrepareCommit at e+1 and
    sends the COMMIT marker at e+1, which the partition refuses (its producer is at e+2:
    INVALID_PRODUCER_EPOCH); the coordinator cancels the markers for good
    (TransactionMarkerRequestCompletionHandler) and stays PrepareCommit: ``describe`` showed
    PrepareCommit with ``tv2-refused-0`` still pending, unchanged after 10 s (the notes'
    ``describe`` and ``describe_later``), its broker logged the marker as "permanently failed
    with error InvalidProducerEpochException ... cancel sending any more transaction markers"
    (the notes' ``coordinator_log``), and the LSO of ``tv2-refused``/0 stayed at the
    transaction's start. find-hanging (the notes' ``find_hanging``) lists nothing there: the
    coordinator's PrepareCommit lists the partition."""
    cluster = ctx.cluster
    tid = "tv2-refused"
    producer, data, buggy, bumped = _commit_after_a_batch_ahead(ctx, REFUSED_TOPIC, tid, 2)
    want = {tid: ("PrepareCommit", f"{REFUSED_TOPIC}-0")}
    described = wait_transaction_states(cluster, want)
    time.sleep(REFUSED_WATCH_S)
    later = wait_transaction_states(cluster, want, timeout=5)
    offsets = end_offsets(cluster, REFUSED_TOPIC, 0)
    if offsets["last_stable_offset"] != data.base_offset:
        raise RuntimeError(f"{REFUSED_TOPIC}-0 LSO moved: {offsets}, transaction started at {data.base_offset}")
    found = {str(b): dict(zip(("rows", "stdout"), find_hanging(cluster, b))) for b in range(cluster.nodes)}
    refusals = _broker_log_lines(cluster, f"Sending {tid}'s transaction marker")
    if not any("permanently failed" in line and "InvalidProducerEpochException" in line for line in refusals):
        raise RuntimeError(f"no coordinator logged the refused marker of {tid}: {refusals}")
    ctx.note("tv2_refused_marker", topic=REFUSED_TOPIC, partition=0, transactional_id=tid,
             producer=asdict(producer), bumped=asdict(bumped) if bumped else None,
             data={"base_offset": data.base_offset, "producer_epoch": data.producer_epoch},
             ahead={"base_offset": buggy.base_offset, "producer_epoch": buggy.producer_epoch},
             marker_epoch=producer.producer_epoch + 1, end_offsets=offsets,
             describe=described[tid]["row"], describe_later=later[tid]["row"], find_hanging=found,
             coordinator_log=refusals)


def _commit_after_a_batch_ahead(ctx: ScenarioContext, topic: str, tid: str, ahead_by: int):
    """``topic`` (1 partition) made; ``tid``'s transaction there, two records at its epoch e
    (CreateTime an hour back), then a buggy client's batch inside it at e + ``ahead_by``, then
    a TV2 EndTxn(commit): (producer, data, buggy batch, bumped producer)."""
    ctx.create_topic(topic, 1)
    old = int(time.time() * 1000) - HANG_AGE_MS
    with RawClient(ctx.cluster.bootstrap) as client:
        producer = client.init_producer_id(tid, MAX_TRANSACTION_TIMEOUT_MS)
        client.add_partitions_to_txn(tid, producer, [(topic, 0)])
        data = client.produce_transactional(tid, producer, topic, 0, [f"{tid}-0".encode(), f"{tid}-1".encode()], old)
        ahead = ProducerIdAndEpoch(producer.producer_id, producer.producer_epoch + ahead_by)
        buggy = client.produce_transactional(tid, ahead, topic, 0, [f"{tid}-ahead".encode()], old)
        bumped = client.end_txn(tid, producer, committed=True, version=END_TXN_TV2_VERSION)
    return producer, data, buggy, bumped


def _broker_log_lines(cluster, needle: str) -> list[str]:
    """The lines of every node's server.log holding ``needle``, timestamp cut off (the
    coordinator's own word on what became of a marker)."""
    lines = []
    for node in range(cluster.nodes):
        log = cluster.node_dir(node) / "server.log"
        if log.exists():
            lines += [f"node {node}: " + line.split("] ", 1)[-1] for line in log.read_text(errors="replace").splitlines()
                      if needle in line]
    return lines


def tv2_equal_marker(ctx: ScenarioContext) -> None:
    """Topic ``tv2-equal`` (1 partition): as ``tv2_refused_marker``, but the buggy client's
    batch inside the transaction is at epoch e+1 (sequence 0), the very epoch of the
    coordinator's TV2 PrepareCommit and COMMIT marker. What the partition leader does with a
    marker EQUAL to the producer's epoch is recorded, not assumed: after 10 s the notes hold
    ``describe`` (PrepareCommit with ``tv2-equal-0`` pending: refused; CompleteCommit:
    accepted), the LSO and HW of ``tv2-equal``/0 (``end_offsets``), find-hanging of every
    broker and every coordinator log line about the marker (``coordinator_log``)."""
    cluster = ctx.cluster
    tid = "tv2-equal"
    producer, data, buggy, bumped = _commit_after_a_batch_ahead(ctx, EQUAL_TOPIC, tid, 1)
    time.sleep(REFUSED_WATCH_S)
    described = describe_transactions(cluster, [tid])[tid]["row"]
    if (described["TransactionState"], described["TopicPartitions"]) not in (
            ("PrepareCommit", f"{EQUAL_TOPIC}-0"), ("CompleteCommit", "")):
        raise RuntimeError(f"{tid}: neither refused nor committed: {described}")
    offsets = end_offsets(cluster, EQUAL_TOPIC, 0)
    found = {str(b): dict(zip(("rows", "stdout"), find_hanging(cluster, b))) for b in range(cluster.nodes)}
    ctx.note("tv2_equal_marker", topic=EQUAL_TOPIC, partition=0, transactional_id=tid,
             producer=asdict(producer), bumped=asdict(bumped) if bumped else None,
             data={"base_offset": data.base_offset, "producer_epoch": data.producer_epoch},
             ahead={"base_offset": buggy.base_offset, "producer_epoch": buggy.producer_epoch},
             marker_epoch=producer.producer_epoch + 1, end_offsets=offsets, describe=described,
             find_hanging=found, coordinator_log=_broker_log_lines(cluster, f"Sending {tid}'s transaction marker"))
