"""Fixture scenario for what a hang keeps from tiered storage (issue 35 item 3): a topic with
remote storage enabled whose RemoteLogManager stops uploading at a hanging transaction's LSO.

RemoteLogManager copies a closed segment to remote storage once the next segment's base offset
is at or below the partition's last stable offset (candidateLogSegments): behind a hang every
segment rolled after it stays on the local disk only. Kafka's one RemoteStorageManager
(LocalTieredStorage) is in its test jars, so the cluster loads tools/kafka/java/DirRemoteStorage.java,
compiled before the cluster starts, which keeps each uploaded segment in a folder beside the
cluster's work dir; what it holds at the end is recorded (notes ``uploaded``).
"""
from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

from tools.kafka.cluster import LIBS, wait_for
from tools.kafka.hanging import HANG_AGE_MS, HangingTxn, wait_until_found
from tools.kafka.rawclient import RawClient
from tools.kafka.scenarios import CLUSTERS, ClusterSpec, ScenarioContext, scenario, send

TIERED_CLUSTER = "tiered"
TIERED_TOPIC = "hang-tiered"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "DirRemoteStorage.java"
ROUNDS_BEFORE, ROUNDS_AFTER = 5, 10


def storage_dir(workdir: Path) -> Path:
    """The remote storage's folder and the plugin's classes: a sibling of the cluster's work
    dir (which the cluster wipes at start)."""
    return workdir.parent / f"{workdir.name}-remote"


def prepare(workdir: Path) -> dict:
    """Compile the RemoteStorageManager and make its folder; the broker config naming both."""
    base = storage_dir(workdir)
    if base.exists():
        shutil.rmtree(base)
    classes, remote = base / "classes", base / "segments"
    classes.mkdir(parents=True)
    remote.mkdir()
    cp = subprocess.run(["javac", "-cp", f"{LIBS}/*", "-d", str(classes), str(JAVA_SOURCE)],
                        capture_output=True, text=True, timeout=300)
    if cp.returncode != 0:
        raise RuntimeError(f"javac DirRemoteStorage failed: {cp.stderr[-2000:]}")
    return {"remote.log.storage.manager.class.path": str(classes), "rsm.config.dir": str(remote)}


# TV2, verification off for the raw client's hanging batch (as the ``hanging`` cluster), remote
# storage on with the topic-based metadata manager (its topic ``__remote_log_metadata``, 3
# partitions here) and the copy task every second.
CLUSTERS.setdefault(TIERED_CLUSTER, ClusterSpec(
    transaction_version=2,
    broker_config={"transaction.partition.verification.enable": "false",
                   "remote.log.storage.system.enable": "true",
                   "remote.log.storage.manager.class.name": "DirRemoteStorage",
                   "remote.log.metadata.manager.listener.name": "PLAINTEXT",
                   "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
                   "remote.log.manager.task.interval.ms": "1000"},
    prepare=prepare))


def uploaded(remote: Path, topic: str, partition: int) -> list[dict]:
    """The segments DirRemoteStorage holds for a partition: start and end offsets, size."""
    folder = remote / f"{topic}-{partition}"
    out = []
    for d in sorted(folder.iterdir()) if folder.exists() else []:
        start, end, _ = d.name.split("-", 2)
        out.append({"start_offset": int(start), "end_offset": int(end),
                    "size": (d / "segment.log").stat().st_size})
    return sorted(out, key=lambda s: s["start_offset"])


@scenario("tiered_hang", clusters=(TIERED_CLUSTER,))
def tiered_hang(ctx: ScenarioContext) -> None:
    """The ``tiered`` cluster (TV2, partition verification off, remote storage enabled with
    tools/kafka/java/DirRemoteStorage.java as the RemoteStorageManager and the topic-based
    metadata manager, copy task every second): topic ``hang-tiered`` (remote.storage.enable,
    1024-byte segments) receives five rounds of five records, then a GENUINELY hanging
    transactional batch (the raw client's ``hang-tiered-never-added``, which never called
    AddPartitionsToTxn; CreateTime one hour back, confirmed by find-hanging on every broker),
    then ten more rounds, so several segments roll past the hang. The RemoteLogManager uploads
    the closed segments wholly below the LSO and no other: the notes' ``uploaded`` lists the
    segments the remote storage holds (start and end offsets, size), waited for until it stops
    changing. On disk: every segment still local (local retention is the default), the
    ``__remote_log_metadata`` partitions with the upload records, the LSO at the hanging batch."""
    topic = TIERED_TOPIC
    ctx.create_topic(topic, 1, {"remote.storage.enable": "true", **ctx.small_segments(1024),
                                "segment.ms": 600000})
    p = ctx.producer(**{"enable.idempotence": True})
    for r in range(ROUNDS_BEFORE):
        send(p, topic, 0, 5, f"round{r}-" + "v" * 30)
    old = int(time.time() * 1000) - HANG_AGE_MS
    tid = f"{topic}-never-added"
    with RawClient(ctx.cluster.bootstrap) as client:
        producer = client.init_producer_id(tid)
        b = client.produce_transactional(tid, producer, topic, 0, [b"hanging-0", b"hanging-1"], old,
                                         keys=[b"k0", b"k1"])
    hang = HangingTxn("never_added", topic, 0, b.producer_id, b.producer_epoch, b.base_offset, old, tid, b.leader_id)
    for r in range(ROUNDS_BEFORE, ROUNDS_BEFORE + ROUNDS_AFTER):
        send(p, topic, 0, 5, f"round{r}-" + "v" * 30)
    remote = storage_dir(ctx.cluster.workdir) / "segments"
    seen: list = []

    def settled() -> list[dict]:
        now = uploaded(remote, topic, 0)
        seen.append(now)
        return now

    # settled: the same uploads over six task intervals, at least one of them there
    wait_for(settled, lambda now: bool(now) and len(seen) >= 6 and all(s == now for s in seen[-6:]),
             timeout=120, every=1, failure=lambda now: f"remote storage did not settle: {now}")
    confirmed = {}
    for broker in range(ctx.cluster.nodes):
        rows, raw = wait_until_found(ctx.cluster, [hang], broker)
        confirmed[str(broker)] = {"rows": rows, "stdout": raw}
    ctx.note("tiered_hang", topic=topic, hanging=[asdict(hang)], uploaded=seen[-1],
             find_hanging_at_creation=confirmed)
