"""Share groups (KIP-932) on real brokers: ``__share_group_state`` written by Kafka 4.1.1 and 4.4.0.

What each release needs (read from its jars, tried on a live cluster):

* 4.4.0: nothing. ``share.version`` (server-common ``ShareVersion``: SV_1 from metadata
  version 4.2-IV0, SV_2 from 4.4-IV0, LATEST_PRODUCTION SV_2) is finalized at 2 by a plain
  ``kafka-storage format``, and the share coordinator starts with the broker.
* 4.1.1: share groups are a preview, off by default; ``kafka-storage format --feature
  share.version=1`` turns them on (the cluster stays at metadata version 4.1-IV1; no
  ``unstable.*`` setting is needed), which ``share_4_1`` does (``ClusterSpec.features``).

Both clusters make the share coordinator's topic small: ``share.coordinator.state.topic.num.partitions=3``
(default 50, each partition on every node). The scenario's share consumer is the Java client of
the same jars (tools/kafka/java/ShareConsume.java), with explicit acknowledgement, so the state
holds every kind of delivery state, not only accepted records.
"""
from __future__ import annotations

import subprocess

from tools.kafka.cluster import Cluster
from tools.kafka.hanging import JAVA_DIR
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario, send
from tools.kafka.truth import _drop_slf4j_noise

SHARE_41_CLUSTER = "share-4.1"
SHARE_44_CLUSTER = "share-4.4"
SHARE_CLUSTERS = (SHARE_41_CLUSTER, SHARE_44_CLUSTER)
SHARE_BROKER_CONFIG = {"share.coordinator.state.topic.num.partitions": "3",
                       "share.coordinator.state.topic.replication.factor": "3",
                       "share.coordinator.state.topic.min.isr": "2"}
CLUSTERS.setdefault(SHARE_41_CLUSTER, ClusterSpec(
    transaction_version=2, kafka_version="4.1.1", broker_config=SHARE_BROKER_CONFIG,
    features={"share.version": 1}))
CLUSTERS.setdefault(SHARE_44_CLUSTER, ClusterSpec(
    transaction_version=2, kafka_version="4.4.0", broker_config=SHARE_BROKER_CONFIG))
SHARE_TOPIC = "share-t"
SHARE_GROUP = "share-g"
RECORDS_PER_PARTITION = 12


def run_share_consumer(cluster: Cluster, group: str, topic: str, records: int,
                       timeout_ms: int = 60_000) -> list[dict]:
    """Run tools/kafka/java/ShareConsume.java; its acknowledgements, in order."""
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
           "-cp", f"{cluster.libs}/*", str(JAVA_DIR / "ShareConsume.java"),
           "--bootstrap", cluster.bootstrap, "--group", group, "--topic", topic,
           "--records", str(records), "--timeout-ms", str(timeout_ms)]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_ms / 1000 + 60)
    if cp.returncode != 0:
        raise RuntimeError(f"ShareConsume failed ({cp.returncode}): {_drop_slf4j_noise(cp.stderr)[-3000:]}")
    acks = []
    for line in cp.stdout.splitlines():
        cells = line.split("\t")
        if cells[0] == "ack":
            acks.append({"topic": cells[1], "partition": int(cells[2]), "offset": int(cells[3]),
                         "delivery_count": int(cells[4]), "type": cells[5]})
    return acks


@scenario("share_group", clusters=SHARE_CLUSTERS)
def share_group(ctx: ScenarioContext) -> None:
    """Topic ``share-t`` (2 partitions) gets 12 records on each partition from an idempotent
    producer; then share group
    ``share-g`` (its ``share.auto.offset.reset`` set to earliest by Admin
    incrementalAlterConfigs) consumes them with the Java share consumer of the same jars
    (tools/kafka/java/ShareConsume.java, explicit acknowledgement, commitSync after each
    poll): offset % 5 == 4 REJECTed, offset % 5 == 3 RELEASEd once and ACCEPTed on its second
    delivery, every other ACCEPTed (the notes' ``acks``, in order). On disk: the share
    coordinator's ``__share_group_state`` partitions (3 here) with the group's
    ShareSnapshot/ShareUpdate records for each ``share-t`` partition (state epoch, start
    offset, state batches with delivery state and count); ``kafka-share-groups --describe
    --offsets`` and ``--state`` of the same release, run live, are in the notes."""
    ctx.create_topic(SHARE_TOPIC, 2)
    p = ctx.producer(enable_idempotence=True)   # producer state for describe-producers to compare
    for part in range(2):
        send(p, SHARE_TOPIC, part, RECORDS_PER_PARTITION, f"share-{part}-")
    p.flush(30)
    acks = run_share_consumer(ctx.cluster, SHARE_GROUP, SHARE_TOPIC, 2 * RECORDS_PER_PARTITION)
    cls = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
    described = {}
    for what in ("--offsets", "--state"):
        cp = ctx.cluster.run_tool(cls, "--bootstrap-server", ctx.cluster.bootstrap, "--describe",
                                  "--group", SHARE_GROUP, what)
        described[what.lstrip("-")] = {"exit_code": cp.returncode, "stdout": cp.stdout,
                                       "stderr": _drop_slf4j_noise(cp.stderr)}
    ctx.note("share_group", topic=SHARE_TOPIC, group=SHARE_GROUP, partitions=2,
             records_per_partition=RECORDS_PER_PARTITION, acks=acks, share_groups_describe=described)
