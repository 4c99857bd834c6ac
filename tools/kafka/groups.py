"""Fixture scenario for consumer groups' committed offsets (issue 35 item 6): what a hang does
to the groups reading a partition, and a transactional offset commit left pending.

The group coordinator keeps a transactional offset commit (TxnOffsetCommit, which the Java
client's sendOffsetsToTransaction sends) as *pending* until the transaction's COMMIT marker
reaches the group's ``__consumer_offsets`` partition (an ABORT drops it). While it is pending,
an OffsetFetch with requireStable (every read_committed Java consumer since KIP-447) answers
UNSTABLE_OFFSET_COMMIT for that partition, and ``kafka-consumer-groups --describe --offsets``
(Admin listConsumerGroupOffsets, requireStable false) shows the last committed offset. A
read_committed consumer whose committed offset is at or past a partition's last stable
offset gets nothing until the LSO moves. Both are recorded live here, before the copy, with
``kafka-consumer-groups`` (tools.kafka.truth: truth.json ``consumer_groups``).
"""
from __future__ import annotations

import time
from dataclasses import asdict

from confluent_kafka import TopicPartition

from tools.kafka.cluster import Cluster
from tools.kafka.hanging import (HANG_AGE_MS, MAX_TRANSACTION_TIMEOUT_MS, create_unknown_producer_hang,
                                 end_offsets, run_txn_producer, wait_until_found)
from tools.kafka.rawclient import RawClient
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario, send
from tools.kafka.truth import _drop_slf4j_noise

OFFSETS_CLUSTER = "offsets"
# TV2 (the Java client's transactional offset commits end with an epoch bump), verification
# off for the raw client's hanging batch, as on the ``hanging`` cluster.
CLUSTERS.setdefault(OFFSETS_CLUSTER, ClusterSpec(
    transaction_version=2,
    broker_config={"transaction.partition.verification.enable": "false"}))

DATA_TOPIC = "offs-data"
OUT_TOPIC = "offs-out"
# (group, {partition of DATA_TOPIC: offset}) in commit order: later commits of a group win
PLAIN_COMMITS = (
    ("offs-plain", {0: 2, 1: 5}),
    ("offs-plain", {0: 3}),
    ("offs-stuck", {0: 5, 1: 5}),
    ("offs-beyond", {0: 9}),
)
# offs-plain's offset of DATA_TOPIC/1 is deleted (an offset tombstone) by kafka-consumer-groups
DELETED = ("offs-plain", 1)
TXN_GROUP = "offs-txn"
TXN_ID = "offs-txn"
# the open transaction's sendOffsetsToTransaction commits --offsets-start + 1 on DATA_TOPIC/0
OPEN_OFFSETS_START = 3


def commit_plain(cluster: Cluster, group: str, offsets: dict[int, int]) -> None:
    """A plain OffsetCommit (generation -1, no member: a simple group) from a consumer that
    never subscribed."""
    from confluent_kafka import Consumer

    from tools.kafka.cluster import _quiet_logger

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                  "enable.auto.commit": False, "logger": _quiet_logger()})
    try:
        c.commit(offsets=[TopicPartition(DATA_TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def fetch_stable(cluster: Cluster, group: str, partitions: tuple[int, ...], timeout_s: float = 5) -> dict:
    """The group's committed offsets as a read_committed consumer asks for them: librdkafka
    sends OffsetFetch with requireStable there (KIP-447), which the coordinator answers with
    UNSTABLE_OFFSET_COMMIT while a transactional commit of the group is pending; the client
    retries that until ``timeout_s`` and then gives up. Returns {"offsets"} or {"error"}."""
    from confluent_kafka import Consumer, KafkaException

    from tools.kafka.cluster import _quiet_logger

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed", "logger": _quiet_logger()})
    try:
        got = c.committed([TopicPartition(DATA_TOPIC, p) for p in partitions], timeout=timeout_s)
        return {"offsets": {str(tp.partition): tp.offset for tp in got}}
    except KafkaException as e:
        return {"error": e.args[0].name()}
    finally:
        c.close()


def delete_offsets(cluster: Cluster, group: str, partition: int) -> str:
    """``kafka-consumer-groups --delete-offsets``: the coordinator writes an offset tombstone."""
    cp = cluster.run_tool("kafka-consumer-groups", "--delete-offsets", "--group", group,
                          "--topic", f"{DATA_TOPIC}:{partition}", timeout=120)
    if cp.returncode != 0:
        raise RuntimeError(f"delete-offsets {group} failed ({cp.returncode}): {_drop_slf4j_noise(cp.stderr)}")
    return cp.stdout


@scenario("committed_offsets", clusters=(OFFSETS_CLUSTER,))
def committed_offsets(ctx: ScenarioContext) -> None:
    """The ``offsets`` cluster (TV2, partition verification off): topic ``offs-data`` (2
    partitions) gets 5 plain records on each partition, then on ``offs-data``/0 a GENUINELY
    hanging transactional batch of 2 records (offsets 5-6; the raw client's idempotent
    producer id, unknown to every coordinator, CreateTime one hour back, confirmed by
    find-hanging on every broker), then 5 more plain records (7-11): high watermark 12, last
    stable offset 5. Plain offset commits (simple groups, no members): ``offs-plain`` commits
    ``offs-data``/0=2 and /1=5, then /0=3, then ``kafka-consumer-groups --delete-offsets``
    deletes its /1 (an offset tombstone); ``offs-stuck`` commits /0=5 (at the LSO: a
    read_committed consumer gets nothing there) and /1=5; ``offs-beyond`` commits /0=9 (past
    the LSO). Then the Java client (TxnProducer, TV2) of ``offs-txn`` writes to ``offs-out``
    and calls sendOffsetsToTransaction for group ``offs-txn``: a committed transaction
    (``offs-data``/0 and /1 = 1), an aborted one (=2, never to count), then a transaction on
    ``offs-out``/0 whose offset commit (``offs-data``/0 = 4) stays pending because the JVM
    halts with it open (timeout 15 min, the coordinator Ongoing): the group's
    ``__consumer_offsets`` partition holds a transactional batch with no marker. truth.json
    ``consumer_groups`` holds ``kafka-consumer-groups --describe --all-groups --offsets`` and
    ``--state`` run live: ``offs-txn`` shows 1 on both partitions (the pending 4 is not served
    without requireStable), ``offs-plain`` only /0=3; the notes' ``stable_fetch`` holds what a
    read_committed consumer (OffsetFetch with requireStable) got: for ``offs-txn`` no offsets
    (UNSTABLE_OFFSET_COMMIT, retried until the client's timeout), for ``offs-stuck`` its
    offsets."""
    ctx.create_topic(DATA_TOPIC, 2)
    ctx.create_topic(OUT_TOPIC, 2)
    p = ctx.producer()
    send(p, DATA_TOPIC, 0, 5, "before-hang")
    send(p, DATA_TOPIC, 1, 5, "plain")
    old = int(time.time() * 1000) - HANG_AGE_MS
    with RawClient(ctx.cluster.bootstrap) as client:
        hang = create_unknown_producer_hang(client, DATA_TOPIC, 0, old)
    send(p, DATA_TOPIC, 0, 5, "after-hang")
    for group, offsets in PLAIN_COMMITS:
        commit_plain(ctx.cluster, group, offsets)
    deleted = delete_offsets(ctx.cluster, *DELETED)
    runs = {
        "commit_abort": run_txn_producer(ctx.cluster, "--transactional-id", TXN_ID, "--topic", OUT_TOPIC,
                                         "--partitions", "0,1", "--records", 2, "--transactions", 2,
                                         "--end", "commit", "--end-last", "abort",
                                         "--offsets-group", TXN_GROUP, "--offsets-topic", DATA_TOPIC),
        "open": run_txn_producer(ctx.cluster, "--transactional-id", TXN_ID, "--topic", OUT_TOPIC,
                                 "--partitions", "0", "--records", 2, "--transactions", 1, "--end", "open",
                                 "--offsets-group", TXN_GROUP, "--offsets-topic", DATA_TOPIC,
                                 "--offsets-start", OPEN_OFFSETS_START,
                                 "--timeout-ms", MAX_TRANSACTION_TIMEOUT_MS),
    }
    # asked while the open transaction still holds offs-txn's commit: the stable fetch of
    # offs-txn cannot be answered, offs-stuck's (nothing pending) is
    stable_fetch = {TXN_GROUP: fetch_stable(ctx.cluster, TXN_GROUP, (0, 1)),
                    "offs-stuck": fetch_stable(ctx.cluster, "offs-stuck", (0, 1))}
    confirmed = {}
    for broker in range(ctx.cluster.nodes):
        rows, raw = wait_until_found(ctx.cluster, [hang], broker)
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    ctx.note("committed_offsets", topic=DATA_TOPIC, out_topic=OUT_TOPIC, hanging=asdict(hang),
             data_offsets={str(part): end_offsets(ctx.cluster, DATA_TOPIC, part) for part in (0, 1)},
             plain_commits=[[g, {str(k): v for k, v in o.items()}] for g, o in PLAIN_COMMITS],
             deleted={"group": DELETED[0], "topic": DATA_TOPIC, "partition": DELETED[1],
                      "stdout": deleted},
             transactional_id=TXN_ID, txn_group=TXN_GROUP,
             txn_offsets={"committed": 1, "aborted": 2, "pending": OPEN_OFFSETS_START + 1},
             stable_fetch=stable_fetch, output=runs, find_hanging_at_creation=confirmed)
