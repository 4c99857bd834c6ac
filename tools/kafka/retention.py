"""Fixture scenario for what a hang holds back on disk (issue 35 item 3): a compacted topic
whose log cleaner stops at a hanging transaction's last stable offset.

Kafka's log cleaner never cleans at or past a partition's last stable offset: the first
uncleanable offset is the least of the LSO, the active segment's base offset and the
compaction lag's limit (LogCleanerManager.cleanableOffsets), and a cleaning pass runs up to
the base offset of the segment holding it (LogToClean), which it then writes to
``cleaner-offset-checkpoint``. Behind a hanging transaction every segment from the LSO's on
stays dirty however much is written after it. Tiered storage (RemoteLogManager) likewise
uploads only a closed segment whose next segment starts at or below the LSO: behind a hang
every segment rolled after it stays on the local disk. ``hang-segments`` is a delete-policy
topic with small segments and such a hang, for that rule (the cluster has no remote storage:
Kafka ships its only RemoteStorageManager, LocalTieredStorage, in test jars).
"""
from __future__ import annotations

import time
from dataclasses import asdict

from tools.kafka.hanging import HANG_AGE_MS, HANGING_CLUSTER, HangingTxn, wait_until_found
from tools.kafka.rawclient import RawClient
from tools.kafka.scenarios import CLUSTERS, ScenarioContext, _wait_cleaned, scenario, send

RETENTION_CLUSTER = "retention"
# the ``hanging`` cluster's spec: TV2, verification off for the raw client's hanging batches
CLUSTERS.setdefault(RETENTION_CLUSTER, CLUSTERS[HANGING_CLUSTER])

COMPACT_TOPIC = "hang-compact"
SEGMENTS_TOPIC = "hang-segments"
ROUNDS_BEFORE, ROUNDS_AFTER = 5, 10


@scenario("compacted_hang", clusters=(RETENTION_CLUSTER,))
def compacted_hang(ctx: ScenarioContext) -> None:
    """The ``retention`` cluster (TV2, partition verification off): topic ``hang-compact``
    (configured as ``compacted``: cleanup.policy=compact, 1024-byte segments,
    min.cleanable.dirty.ratio=0.01, min.compaction.lag.ms=0) receives five rounds of keys
    k0..k4 from an idempotent producer, then a GENUINELY hanging transactional batch of keys k0
    and k1 (the raw client's ``hang-compact-never-added``, which never called
    AddPartitionsToTxn: coordinator state Empty; CreateTime one hour back, confirmed by
    find-hanging on every broker), then ten more rounds, so several
    segments roll past the hang; the log cleaner runs (waited for via
    ``cleaner-offset-checkpoint`` on every node). On disk: cleaned segments below the segment
    holding the hanging batch, every segment from it on dirty (the cleaner's checkpoint is that
    segment's base offset, recorded in the notes' ``cleaner_checkpoint``), and the LSO at the
    hanging batch. Topic ``hang-segments`` (cleanup.policy=delete, 1024-byte segments) gets
    the same: five rounds, a hanging batch of ``hang-segments-never-added``, ten rounds."""
    ctx.create_topic(COMPACT_TOPIC, 1, {"cleanup.policy": "compact", **ctx.small_segments(1024),
                                        "min.cleanable.dirty.ratio": 0.01,
                                        "min.compaction.lag.ms": 0, "delete.retention.ms": 100,
                                        "segment.ms": 600000, "file.delete.delay.ms": 3600000})
    p = ctx.producer(**{"enable.idempotence": True})
    for r in range(ROUNDS_BEFORE):
        send(p, COMPACT_TOPIC, 0, 5, f"round{r}-" + "v" * 30)
    old = int(time.time() * 1000) - HANG_AGE_MS
    ctx.create_topic(SEGMENTS_TOPIC, 1, {"cleanup.policy": "delete", **ctx.small_segments(1024),
                                         "segment.ms": 600000})
    for r in range(ROUNDS_BEFORE):
        send(p, SEGMENTS_TOPIC, 0, 5, f"round{r}-" + "v" * 30)
    hangs = []
    with RawClient(ctx.cluster.bootstrap) as client:
        for topic in (COMPACT_TOPIC, SEGMENTS_TOPIC):
            # as hanging's never_added case: InitProducerId, then a transactional batch with no
            # AddPartitionsToTxn (the coordinator stays Empty), keyed for the compacted topic
            tid = f"{topic}-never-added"
            producer = client.init_producer_id(tid)
            b = client.produce_transactional(tid, producer, topic, 0, [b"hanging-0", b"hanging-1"], old,
                                             keys=[b"k0", b"k1"])
            hangs.append(HangingTxn("never_added", topic, 0, b.producer_id, b.producer_epoch, b.base_offset,
                                    old, tid, b.leader_id))
    for r in range(ROUNDS_BEFORE, ROUNDS_BEFORE + ROUNDS_AFTER):
        send(p, COMPACT_TOPIC, 0, 5, f"round{r}-" + "v" * 30)
        send(p, SEGMENTS_TOPIC, 0, 5, f"round{r}-" + "v" * 30)
    cleaned = _wait_cleaned(ctx.cluster, f"{COMPACT_TOPIC}-0", timeout=90)
    confirmed = {}
    for broker in range(ctx.cluster.nodes):
        rows, raw = wait_until_found(ctx.cluster, hangs, broker)
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    ctx.note("compacted_hang", topic=COMPACT_TOPIC, hanging=[asdict(h) for h in hangs], cleaner_checkpoint=cleaned,
             find_hanging_at_creation=confirmed)
