"""Transaction scenarios driven against a live cluster with a real client (confluent-kafka).

A scenario is a plain function ``fn(ctx: ScenarioContext) -> None`` registered in ``SCENARIOS``
with :func:`scenario`. Other modules (e.g. ``tools.kafka.hanging``) register more by importing
this module and using the same decorator; ``tools.kafka.fixtures`` imports the modules listed in
``SCENARIO_MODULES`` before it runs a cluster, so registering there is enough.

Each scenario writes what it did (transactional ids, producer ids it observed, offsets, errors)
into ``ctx.notes[name]``; the fixture builder stores those notes in ``truth.json`` next to what
Kafka's own tools report, so tests compare with recorded facts, never hand-typed numbers.

librdkafka (confluent-kafka 2.x) speaks the pre-KIP-890 transaction protocol, so on a cluster
finalized at transaction.version=2 its transactions still end the TV1 way (no epoch bump per
marker); the TV2 client case comes from the Java client (tools.kafka.hanging).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tools.kafka.cluster import (DEFAULT_KAFKA_VERSION, Cluster, _quiet_logger, create_topic, release_defines,
                                 wait_for)


@dataclass(frozen=True)
class ClusterSpec:
    """One fixture cluster: ``fixtures/<name>/`` is built from a cluster of this Kafka release
    (its jars in ``.kafka/<kafka_version>/libs``), formatted like this."""
    transaction_version: int
    broker_config: dict = field(default_factory=dict)
    kafka_version: str = DEFAULT_KAFKA_VERSION
    # ``log.dirs`` per node: more than one is a JBOD broker, each dir copied on its own
    # (tools.kafka.fixtures.copied_dirs)
    log_dirs: int = 1
    # run before the cluster starts, given its work dir (wiped at start: use a sibling); returns
    # broker config to add that names what it made (e.g. a plugin's class path)
    prepare: Optional[Callable[[Path], dict]] = None
    # the harness's cluster class (None: tools.kafka.cluster.Cluster, KRaft); e.g.
    # tools.kafka.zookeeper.ZooKeeperCluster for a ZooKeeper-mode cluster
    cluster_class: Optional[type] = None
    # finalized features formatted besides transaction.version (``--feature name=level``),
    # e.g. share.version=1 on 4.1.1, whose share groups are off by default (tools.kafka.share)
    features: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    fn: Callable[["ScenarioContext"], None]
    clusters: tuple[str, ...]  # names in CLUSTERS whose fixture runs this scenario
    doc: str


# A module registering scenarios may add its own cluster here (e.g. one with
# transaction.partition.verification.enable=false) and name it in ``scenario(clusters=...)``.
CLUSTERS: dict[str, ClusterSpec] = {"tv1": ClusterSpec(1), "tv2": ClusterSpec(2)}
# A small cluster of a newer release: a few of the scenarios below (and the hanging ones of
# tools.kafka.hanging, hence verification off) on Kafka 4.4.0, whose files and tools differ
# from 4.1.1's (metadata record versions, DumpLogSegments ported to Java).
KAFKA_44_CLUSTER = "kafka-4.4"
CLUSTERS[KAFKA_44_CLUSTER] = ClusterSpec(
    transaction_version=2, kafka_version="4.4.0",
    broker_config={"transaction.partition.verification.enable": "false"})
# The newest 3.x line (3.9.2): files and tools of a release before KIP-890 part 2 and the 4.0
# clean-ups. Its transaction.version levels 1 and 2 need metadata version 4.0-IV0
# (TransactionVersion's bootstrapMetadataVersion; 3.9.2's StorageTool format refuses them: "No
# feature:transaction.version with feature level 2"), so it is formatted at level 0, where
# __transaction_state values are written at version 0 (not flexible) and every marker carries
# the data's epoch. Verification off, for the hanging scenarios, as on kafka-4.4.
KAFKA_39_CLUSTER = "kafka-3.9"
CLUSTERS[KAFKA_39_CLUSTER] = ClusterSpec(
    transaction_version=0, kafka_version="3.9.2",
    broker_config={"transaction.partition.verification.enable": "false"})
# A JBOD cluster (issue 36 item 5): every node has two log.dirs, so a broker's partitions are
# spread over two dirs, each with its own meta.properties (same node.id, its own
# directory.id) and its own checkpoints; the metadata log stays in the first. The hanging
# scenarios on it (verification off, as on kafka-4.4) put hanging partitions and the
# coordinator partitions in both dirs.
JBOD_CLUSTER = "jbod"
CLUSTERS[JBOD_CLUSTER] = ClusterSpec(
    transaction_version=2, log_dirs=2,
    broker_config={"transaction.partition.verification.enable": "false"})
SCENARIOS: dict[str, Scenario] = {}
SCENARIO_MODULES = ["tools.kafka.scenarios", "tools.kafka.hanging", "tools.kafka.groups", "tools.kafka.retention",
                    "tools.kafka.tiered", "tools.kafka.epochs"]


def scenario(name: str, clusters: tuple[str, ...] = ("tv1", "tv2")):
    """Register ``fn`` as scenario ``name`` (run in registration order); its docstring is
    the README paragraph."""
    def register(fn):
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} registered twice")
        SCENARIOS[name] = Scenario(name, fn, tuple(clusters), " ".join((fn.__doc__ or "").split()))
        return fn
    return register


@dataclass
class ScenarioContext:
    cluster: Cluster
    notes: dict = field(default_factory=dict)
    # producers deliberately left open (still-open transactions) stay referenced here until
    # the copy is taken: dropping them would let librdkafka abort on close.
    keep_alive: list = field(default_factory=list)
    # ``fn(cluster_out: Path) -> dict`` run after the log dirs were copied to
    # ``fixtures/<cluster>/brokers`` and BEFORE the dumps, for edits an operator's copy can
    # show (e.g. a follower copy cut before a marker); each result lands in truth.json
    # ``post_copy[fn.__name__]``.
    post_copy: list = field(default_factory=list)
    # A copy the scenario made itself while the cluster ran (tools.kafka.cutcopy), with what
    # truth.json ``copy`` says of it: taken as ``brokers/`` instead of a copy after the stop.
    live_copy: Optional[Path] = None
    copy_mode: Optional[dict] = None

    def small_segments(self, segment_bytes: int) -> dict[str, int]:
        """The topic config rolling segments at ``segment_bytes``: ``internal.segment.bytes``
        where the release defines it (4.1+), else ``segment.bytes`` (3.x)."""
        name = ("internal.segment.bytes" if release_defines(self.cluster.libs, "internal.segment.bytes")
                else "segment.bytes")
        return {name: segment_bytes}

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None) -> None:
        create_topic(self.cluster.admin(),
                     NewTopic(name, partitions, 3, config={k: str(v) for k, v in (config or {}).items()}))
        self._wait_leaders(name, partitions)

    def _wait_leaders(self, name: str, partitions: int, timeout: float = 30) -> None:
        admin = self.cluster.admin()

        def led(t) -> bool:
            return bool(t and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in t.partitions.values()))

        wait_for(lambda: admin.list_topics(name, timeout=5).topics.get(name), led, timeout=timeout, every=0.2,
                 retry=(KafkaException,), failure=lambda _: f"topic {name} has no full ISR after {timeout}s")

    def producer(self, **config) -> Producer:
        conf = {"bootstrap.servers": self.cluster.bootstrap, "linger.ms": 5, "acks": "all",
                "logger": _quiet_logger()}
        conf.update({k.replace("_", "."): v for k, v in config.items()})
        return Producer(conf)

    def txn_producer(self, transactional_id: str, **config) -> Producer:
        p = self.producer(**{"transactional.id": transactional_id, **config})
        p.init_transactions(30)
        return p

    def consumer(self, group_id: str) -> Consumer:
        return Consumer({"bootstrap.servers": self.cluster.bootstrap, "group.id": group_id,
                         "enable.auto.commit": False, "logger": _quiet_logger()})

    def note(self, scenario_name: str, **facts) -> None:
        self.notes.setdefault(scenario_name, {}).update(facts)


def send(p: Producer, topic: str, partition: int, n: int, prefix: str, key: bool = True) -> None:
    """Produce ``n`` small records to one partition and wait for delivery (one batch)."""
    errors = []

    def cb(err, _msg):
        if err is not None:
            errors.append(err)

    for i in range(n):
        p.produce(topic, value=f"{prefix}-{i}".encode(), key=f"k{i}".encode() if key else None,
                  partition=partition, on_delivery=cb)
    p.flush(30)
    if errors:
        raise KafkaException(errors[0])


# ---- scenarios ------------------------------------------------------------------------------

@scenario("txn_basic", clusters=("tv1", "tv2", KAFKA_44_CLUSTER, KAFKA_39_CLUSTER, JBOD_CLUSTER))
def txn_basic(ctx: ScenarioContext) -> None:
    """One transactional producer (``txn-basic``) over topics ``txn-a`` (3 partitions) and
    ``txn-b`` (2 partitions): a committed transaction on txn-a/0, txn-a/1, txn-b/0; an aborted
    one on txn-a/1, txn-a/2, txn-b/1; then a committed transaction that also calls
    sendOffsetsToTransaction for group ``txn-basic-group``. On disk: data batches with the
    transactional flag, COMMIT/ABORT control batches on each partition touched, ``.txnindex``
    entries only for the aborted one, and in ``__consumer_offsets`` (the group's partition) a
    transactional offset-commit batch followed by a COMMIT marker; ``__transaction_state``
    holds the Ongoing/PrepareCommit/CompleteCommit... transitions of ``txn-basic``."""
    ctx.create_topic("txn-a", 3)
    ctx.create_topic("txn-b", 2)
    p = ctx.txn_producer("txn-basic")
    p.begin_transaction()
    for t, part in (("txn-a", 0), ("txn-a", 1), ("txn-b", 0)):
        send(p, t, part, 3, "commit1")
    p.commit_transaction(30)
    p.begin_transaction()
    for t, part in (("txn-a", 1), ("txn-a", 2), ("txn-b", 1)):
        send(p, t, part, 2, "abort1")
    p.abort_transaction(30)
    c = ctx.consumer("txn-basic-group")
    p.begin_transaction()
    send(p, "txn-a", 0, 2, "commit2")
    p.send_offsets_to_transaction([TopicPartition("txn-a", 0, 3), TopicPartition("txn-a", 1, 3)],
                                  c.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    c.close()
    ctx.note("txn_basic", transactional_id="txn-basic", group_id="txn-basic-group",
             committed=[["txn-a", 0], ["txn-a", 1], ["txn-b", 0]],
             aborted=[["txn-a", 1], ["txn-a", 2], ["txn-b", 1]],
             offsets_committed={"txn-a-0": 3, "txn-a-1": 3})


@scenario("txn_open", clusters=("tv1", "tv2", KAFKA_44_CLUSTER, KAFKA_39_CLUSTER, JBOD_CLUSTER))
def txn_open(ctx: ScenarioContext) -> None:
    """Transactional id ``txn-open`` (transaction.timeout.ms = 15 min) begins a transaction,
    writes to ``txn-a``/2 and ``txn-b``/0 and never ends it; the producer stays alive until the
    copy. On disk: transactional data batches with no end marker, so the last stable offset of
    those partitions stops at the first such batch (LSO < high watermark); describe-producers
    shows a CurrentTransactionStartOffset; the coordinator still lists the id as Ongoing, so
    find-hanging (by its rule) reports nothing for it."""
    p = ctx.txn_producer("txn-open", **{"transaction.timeout.ms": 900000})
    p.begin_transaction()
    send(p, "txn-a", 2, 2, "open")
    send(p, "txn-b", 0, 2, "open")
    ctx.keep_alive.append(p)
    ctx.note("txn_open", transactional_id="txn-open", open_on=[["txn-a", 2], ["txn-b", 0]])


@scenario("idempotent", clusters=("tv2", KAFKA_39_CLUSTER))
def idempotent(ctx: ScenarioContext) -> None:
    """A non-transactional idempotent producer (enable.idempotence) writes three batches to
    each partition of ``idem`` (2 partitions). On disk: batches with a producer id, epoch 0 and
    increasing base sequences, no transactional flag, no control batches; describe-producers
    lists the producer with no current transaction."""
    ctx.create_topic("idem", 2)
    p = ctx.producer(**{"enable.idempotence": True})
    for part in (0, 1):
        for b in range(3):
            send(p, "idem", part, 2, f"idem-b{b}")
    ctx.note("idempotent", topic="idem", batches_per_partition=3, records_per_batch=2)


@scenario("fenced")
def fenced(ctx: ScenarioContext) -> None:
    """Two producers share ``txn-fenced``. The first writes to ``fence``/0 and leaves its
    transaction open; the second's InitProducerId bumps the epoch, which makes the coordinator
    abort the first one's transaction (ABORT marker with the bumped epoch) and fence it; the
    second commits its own transaction; the first's commit then fails (its error is recorded).
    On disk: data at epoch e, ABORT marker at a higher epoch, then data and COMMIT at the new
    epoch, all under one producer id."""
    ctx.create_topic("fence", 1)
    a = ctx.txn_producer("txn-fenced")
    a.begin_transaction()
    send(a, "fence", 0, 2, "zombie")
    b = ctx.txn_producer("txn-fenced")
    b.begin_transaction()
    send(b, "fence", 0, 2, "winner")
    b.commit_transaction(30)
    error = None
    try:
        a.commit_transaction(10)
    except KafkaException as e:
        error = e.args[0].name()
    ctx.note("fenced", transactional_id="txn-fenced", topic="fence", zombie_commit_error=error)


@scenario("timeout_abort", clusters=("tv1", "tv2", KAFKA_44_CLUSTER, KAFKA_39_CLUSTER, JBOD_CLUSTER))
def timeout_abort(ctx: ScenarioContext) -> None:
    """Transactional id ``txn-timeout`` with transaction.timeout.ms = 2000 writes to
    ``timeout``/0 and goes silent; the coordinator's timed-out-transaction sweep (every 1 s
    here) aborts it with a bumped epoch. On disk: the data batch, then an ABORT marker written
    by the coordinator (epoch + 1), a ``.txnindex`` entry; the coordinator lists the id as
    CompleteAbort."""
    ctx.create_topic("timeout", 1)
    p = ctx.txn_producer("txn-timeout", **{"transaction.timeout.ms": 2000})
    p.begin_transaction()
    send(p, "timeout", 0, 2, "timeout")
    ctx.keep_alive.append(p)  # never ends it itself
    state = _wait_txn_state(ctx.cluster, "txn-timeout", ("CompleteAbort",), timeout=30)
    ctx.note("timeout_abort", transactional_id="txn-timeout", topic="timeout",
             coordinator_state=state)


@scenario("codecs", clusters=("tv2",))
def codecs(ctx: ScenarioContext) -> None:
    """Topic ``codecs`` (1 partition, compression.type=producer) receives one 5-record batch
    per codec (none, gzip, snappy, lz4, zstd) from an idempotent producer each, then one
    committed transactional zstd batch from ``txn-codecs``. On disk: batches whose attributes
    carry compression codec ids 0..4; kafka-dump-log shows ``compresscodec`` per batch."""
    ctx.create_topic("codecs", 1, {"compression.type": "producer"})
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        p = ctx.producer(**{"enable.idempotence": True, "compression.type": codec,
                            "linger.ms": 50})
        send(p, "codecs", 0, 5, f"{codec}-" + "x" * 40)
    t = ctx.txn_producer("txn-codecs", **{"compression.type": "zstd", "linger.ms": 50})
    t.begin_transaction()
    send(t, "codecs", 0, 5, "txn-zstd-" + "y" * 40)
    t.commit_transaction(30)
    ctx.note("codecs", topic="codecs", order=["none", "gzip", "snappy", "lz4", "zstd", "zstd-txn"])


@scenario("compacted", clusters=("tv2", KAFKA_44_CLUSTER, KAFKA_39_CLUSTER))
def compacted(ctx: ScenarioContext) -> None:
    """Topic ``compacted`` (cleanup.policy=compact, internal.segment.bytes=1024 (3.x: segment.bytes),
    min.cleanable.dirty.ratio=0.01, min.compaction.lag.ms=0, file.delete.delay.ms=1 h)
    receives five rounds of keys
    k0..k4, a committed and an aborted transaction (``txn-compact``) on the same keys, then
    more rounds so the transactional data lands in closed segments; the log cleaner runs
    (waited for via ``cleaner-offset-checkpoint``). On disk: merged segments whose file
    names are lower than their first batch's base offset, offset gaps, aborted data removed
    by the cleaner, markers kept or removed per the cleaner's rules, and the replaced
    segments still beside them as ``*.log.deleted``/``*.index.deleted``/... files (their
    asynchronous delete is an hour away), which an analyzer must not count twice."""
    ctx.create_topic("compacted", 1, {"cleanup.policy": "compact", **ctx.small_segments(1024),
                                      "min.cleanable.dirty.ratio": 0.01,
                                      "min.compaction.lag.ms": 0, "delete.retention.ms": 100,
                                      "segment.ms": 600000, "file.delete.delay.ms": 3600000})
    p = ctx.producer(**{"enable.idempotence": True})
    for r in range(5):
        send(p, "compacted", 0, 5, f"round{r}-" + "v" * 30)
    t = ctx.txn_producer("txn-compact")
    t.begin_transaction()
    send(t, "compacted", 0, 5, "txn-commit-" + "c" * 30)
    t.commit_transaction(30)
    t.begin_transaction()
    send(t, "compacted", 0, 5, "txn-abort-" + "a" * 30)
    t.abort_transaction(30)
    for r in range(5, 10):
        send(p, "compacted", 0, 5, f"round{r}-" + "v" * 30)
    cleaned = _wait_cleaned(ctx.cluster, "compacted-0", timeout=45)
    ctx.note("compacted", topic="compacted", transactional_id="txn-compact",
             cleaner_checkpoint=cleaned)


@scenario("segment_roll", clusters=("tv2",))
def segment_roll(ctx: ScenarioContext) -> None:
    """Topic ``straddle`` (internal.segment.bytes=1024, 3.x: segment.bytes) gets a committed transaction of ten
    ~200-byte batches from ``txn-straddle``, then an aborted transaction of ten more, so both
    span several segments. On disk: a transaction whose first data batch is in an earlier
    segment than its marker, and a ``.txnindex`` entry in the ABORT marker's segment whose
    firstOffset is below that segment's base offset."""
    ctx.create_topic("straddle", 1, ctx.small_segments(1024))
    t = ctx.txn_producer("txn-straddle", **{"linger.ms": 0})
    for outcome in ("commit", "abort"):
        t.begin_transaction()
        for b in range(10):
            send(t, "straddle", 0, 1, f"{outcome}-b{b}-" + "s" * 180)
        t.commit_transaction(30) if outcome == "commit" else t.abort_transaction(30)
    ctx.note("segment_roll", topic="straddle", transactional_id="txn-straddle")


# ---- waiting helpers -------------------------------------------------------------------------

def _wait_txn_state(cluster: Cluster, tid: str, states, timeout: float) -> str:
    """Poll ``kafka-transactions describe`` until the coordinator reports one of ``states``."""

    def state() -> str | None:
        cp = cluster.run_tool("kafka-transactions", "describe", "--transactional-id", tid)
        rows = [line.split("\t") for line in cp.stdout.splitlines()]
        if len(rows) < 2:
            return None
        return dict(zip([c.strip() for c in rows[0]], [c.strip() for c in rows[1]])).get("TransactionState")

    return wait_for(state, lambda last: last in states, timeout=timeout, every=1,
                    failure=lambda last: f"{tid} did not reach {states} in {timeout}s (last: {last})")


def _wait_cleaned(cluster: Cluster, partition: str, timeout: float,
                  after: dict[int, int] | None = None) -> dict[int, int]:
    """Wait until every node's ``cleaner-offset-checkpoint`` names ``partition`` (with
    ``after``: at an offset past the one each node had there, i.e. the cleaner ran again)."""
    topic, _, part = partition.rpartition("-")
    found: dict[int, int] = {}
    after = after or {}

    def checkpointed() -> dict[int, int]:
        for node, d in cluster.log_dirs.items():
            f = d / "cleaner-offset-checkpoint"
            if f.exists():
                for line in f.read_text().splitlines()[2:]:
                    t, p, off = line.split()
                    if t == topic and p == part and int(off) > after.get(node, -1):
                        found[node] = int(off)
        return found

    return wait_for(checkpointed, lambda nodes: len(nodes) == cluster.nodes, timeout=timeout, every=0.5,
                    failure=lambda nodes: f"cleaner did not checkpoint {partition} on every node: {nodes}")
