"""A two-phase-commit participant (KIP-939) on real Kafka 4.4.0 files (issue 32 item 5).

What 4.4.0 needs (read from its jars): the broker allows 2PC only with
``transaction.two.phase.commit.enable=true`` (TransactionStateManagerConfig
``TRANSACTIONS_2PC_ENABLED_CONFIG``: "Allow participation in Two-Phase Commit (2PC) transactions
with an external transaction coordinator"), and the request that asks for it, InitProducerId
version 6 (Enable2Pc), is marked ``latestVersionUnstable``: served only with
``unstable.api.versions.enable=true`` (tried without it: the broker closed the connection). The 4.4.0 Java client cannot ask for it: its
KafkaProducer has neither ``initTransactions(keepPreparedTxn)`` nor ``prepareTransaction()``,
and its TransactionManager builds InitProducerId without ever setting Enable2Pc, whatever
``transaction.two.phase.commit.enable`` says (javap). So the participant here is the raw client
(tools/kafka/rawclient.py ``init_producer_id(enable_2pc=True)``). Its "prepare" is what the
client's TransactionManager.prepareTransaction is in 4.4.0: every write acknowledged, the
producer id and epoch kept, no request to the broker.
"""
from __future__ import annotations

import time
from dataclasses import asdict

from tools.kafka.hanging import (HANG_AGE_MS, MAX_TRANSACTION_TIMEOUT_MS, describe_transactions, end_offsets,
                                 find_hanging)
from tools.kafka.rawclient import RawClient
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario

TWO_PHASE_CLUSTER = "two-phase-4.4"
CLUSTERS.setdefault(TWO_PHASE_CLUSTER, ClusterSpec(
    transaction_version=2, kafka_version="4.4.0",
    broker_config={"transaction.two.phase.commit.enable": "true", "unstable.api.versions.enable": "true"}))
TWO_PHASE_TOPIC = "two-phase"
TWO_PHASE_ID = "two-phase-app"
# the coordinator's transaction timeout for a 2PC producer (Int.MaxValue: never expires)
TWO_PHASE_TIMEOUT_MS = 2**31 - 1


@scenario("two_phase_participant", clusters=(TWO_PHASE_CLUSTER,))
def two_phase_participant(ctx: ScenarioContext) -> None:
    """Topic ``two-phase`` (1 partition): the raw client's ``two-phase-app`` asks for
    two-phase commit (InitProducerId version 6, Enable2Pc, its own timeout 15 min), adds
    ``two-phase``/0 to its transaction (AddPartitionsToTxn), writes 2 records there (CreateTime
    one hour back), is prepared (every write acknowledged, nothing sent: what the 4.4.0
    client's prepareTransaction does) and goes away with neither commit nor abort, as a
    participant whose external transaction manager has not decided. ``kafka-transactions
    describe`` (the notes' ``describe``) showed it Ongoing with ``two-phase-0`` and
    TransactionTimeoutMs 2147483647 (Int.MaxValue, not the 15 min asked: the coordinator never
    expires it), the LSO of ``two-phase``/0 held at the transaction's first offset
    (``end_offsets``), and find-hanging of every broker (``find_hanging``) listed nothing,
    though the batch is an hour old: the coordinator's record lists the partition."""
    cluster = ctx.cluster
    ctx.create_topic(TWO_PHASE_TOPIC, 1)
    old = int(time.time() * 1000) - HANG_AGE_MS
    with RawClient(cluster.bootstrap) as client:
        producer = client.init_producer_id(TWO_PHASE_ID, MAX_TRANSACTION_TIMEOUT_MS, enable_2pc=True)
        client.add_partitions_to_txn(TWO_PHASE_ID, producer, [(TWO_PHASE_TOPIC, 0)])
        data = client.produce_transactional(TWO_PHASE_ID, producer, TWO_PHASE_TOPIC, 0,
                                            [b"two-phase-0", b"two-phase-1"], old)
    described = describe_transactions(cluster, [TWO_PHASE_ID])[TWO_PHASE_ID]["row"]
    if (described["TransactionState"], described["TopicPartitions"], described["TransactionTimeoutMs"]) != (
            "Ongoing", f"{TWO_PHASE_TOPIC}-0", str(TWO_PHASE_TIMEOUT_MS)):
        raise RuntimeError(f"{TWO_PHASE_ID} is not an Ongoing 2PC transaction: {described}")
    offsets = end_offsets(cluster, TWO_PHASE_TOPIC, 0)
    if offsets["last_stable_offset"] != data.base_offset:
        raise RuntimeError(f"{TWO_PHASE_TOPIC}-0 LSO {offsets}, the transaction started at {data.base_offset}")
    found = {str(b): dict(zip(("rows", "stdout"), find_hanging(cluster, b))) for b in range(cluster.nodes)}
    if any(r["rows"] for r in found.values()):
        raise RuntimeError(f"find-hanging listed the 2PC transaction: {found}")
    ctx.note("two_phase_participant", topic=TWO_PHASE_TOPIC, partition=0, transactional_id=TWO_PHASE_ID,
             producer=asdict(producer), asked_timeout_ms=MAX_TRANSACTION_TIMEOUT_MS, data=asdict(data),
             describe=described, end_offsets=offsets, find_hanging=found)
