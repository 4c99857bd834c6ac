"""A real Apache Kafka KRaft cluster on loopback, started from the pinned jars.

Why this exists: every claim logscan makes is checked against files written by a real broker
and against Kafka's own tools run on the same data. This module is the oracle's engine room:
it formats storage with Kafka's StorageTool, starts N combined broker+controller JVMs with
plain ``java -cp '.kafka/<version>/libs/*' kafka.Kafka server.properties`` and runs Kafka's CLI
tools (DumpLogSegments, TransactionsCommand, ...) from the very same jars.

The Kafka release is a parameter of the cluster (``kafka_version``, default
``DEFAULT_KAFKA_VERSION``, the release of the first fixtures): each release's jars live in their
own ``.kafka/<version>/libs`` (``make kafka-jars KAFKA_VERSION=4.4.0``), and a tool's main class
is looked up in the jars of the release that runs it (:func:`tool_class`), since releases move
tools between packages.

Choices that matter for the fixtures:
- ``transaction.version`` is a *finalized feature* fixed at format time (KIP-890 TV2 bumps the
  producer epoch at every end marker), so each cluster is formatted with the level asked for.
- ``log.index.size.max.bytes`` is small: an active segment's ``.index``/``.timeindex`` are
  preallocated to that size, so a copy of a live (or killed) broker stays small.
- Internal topics get 3 partitions and replication factor 3, so every node holds a replica of
  every ``__transaction_state``/``__consumer_offsets`` partition (leader and followers on disk).

CLI::

    python -m tools.kafka.cluster start [--workdir .work/dev] [--transaction-version 2]
                                        [--kafka-version 4.4.0]
    python -m tools.kafka.cluster status|stop [--hard] [--workdir ...]
    python -m tools.kafka.cluster tool kafka-transactions list      # --bootstrap-server added
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import base64
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, TypeVar

REPO = Path(__file__).resolve().parents[2]
#: The release of the first fixture clusters, and of every cluster that names none.
DEFAULT_KAFKA_VERSION = "4.1.1"
KAFKA_VERSION = DEFAULT_KAFKA_VERSION  # the name older callers import


def libs_for(version: str) -> Path:
    """Where ``make kafka-jars KAFKA_VERSION=<version>`` puts that release's jars."""
    return REPO / ".kafka" / version / "libs"


#: The default release's jars (LOGSCAN_KAFKA_LIBS overrides the folder, not the release).
LIBS = Path(os.environ.get("LOGSCAN_KAFKA_LIBS", libs_for(DEFAULT_KAFKA_VERSION)))
JVM_DIR = Path(__file__).resolve().parent / "jvm"
T = TypeVar("T")

# Each tool's main class, by release: the first candidate whose class file is in the release's
# jars. DumpLogSegments is the Scala kafka.tools.DumpLogSegments (kafka_2.13 jar) in 4.1.1 and
# the Java org.apache.kafka.tools.DumpLogSegments (kafka-tools jar, KAFKA-14579) in 4.4.0,
# which no longer has the Scala one; 3.9.2 has the Scala one. Every other tool the harness runs
# has the same class in all three releases (3.9.2: TransactionsCommand with describe-producers
# and find-hanging, TopicCommand, GetOffsetShell, FeatureCommand, MetadataQuorumCommand,
# LogDirsCommand and JmxTool in org.apache.kafka.tools, StorageTool in kafka.tools).
TOOL_CANDIDATES = {
    "kafka-dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell",),
    "kafka-storage": ("kafka.tools.StorageTool",),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand",),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "kafka-log-dirs": ("org.apache.kafka.tools.LogDirsCommand",),
    "kafka-jmx": ("org.apache.kafka.tools.JmxTool",),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",),
}
# The default release's classes, for callers that hold no jars folder (tests.kafkajava).
TOOL_ALIASES = {
    **{alias: classes[0] for alias, classes in TOOL_CANDIDATES.items()},
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
}
# Tools that talk to the cluster: run_tool adds --bootstrap-server when the caller did not.
NEEDS_BOOTSTRAP = {"kafka-transactions", "kafka-topics", "kafka-get-offsets", "kafka-features",
                   "kafka-metadata-quorum", "kafka-log-dirs", "kafka-consumer-groups"}

# Short-lived JVMs (tools) dominate the fixture build time: C1 only and a serial GC start faster.
TOOL_JVM_OPTS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]
BROKER_JVM_OPTS = ["-Xms128m", "-Xmx640m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Djava.awt.headless=true"]

BASE_BROKER_CONFIG = {
    "num.partitions": "1",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    # small preallocated indexes (live copies) and quick housekeeping for small fixtures
    "log.index.size.max.bytes": "4096",
    "log.cleaner.backoff.ms": "500",
    "log.cleaner.dedupe.buffer.size": "2097152",
    "log.cleaner.threads": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "3600000",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "controlled.shutdown.enable": "true",
    "socket.request.max.bytes": "10485760",
}

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {logfile}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = {level}
logger.apache.name = org.apache.kafka
logger.apache.level = {level}
"""

TOOL_LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = error
rootLogger.appenderRef.err.ref = err
"""


# Kafka 3.x logs through SLF4J to reload4j (log4j 1's API: kafka.utils.Log4jController,
# slf4j-reload4j in the release's own jars), which reads -Dlog4j.configuration and ignores the
# log4j2 file; 4.x logs to log4j2 and ignores this one. Both are passed, each release reads its
# own: the same server.log for the broker, errors only on stderr for the tools (else reload4j
# prints its "log4j:WARN No appenders" lines into every recorded stderr).
LOG4J1 = """\
log4j.rootLogger={level}, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={logfile}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

TOOL_LOG4J1 = """\
log4j.rootLogger=ERROR, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=%p %m (%c)%n
"""


class KafkaHarnessError(RuntimeError):
    """The cluster could not be formatted, started or queried."""


def wait_for(probe: Callable[[], T], done: Callable[[T], bool], *, timeout: float, every: float,
             failure: Callable[[Optional[T]], str], retry: tuple[type[BaseException], ...] = (),
             error: type[Exception] = TimeoutError) -> T:
    """Asks ``probe`` every ``every`` s until ``done`` holds for its answer, and returns that
    answer. A probe that raises one of ``retry`` is asked again; any other exception ends the
    wait. Past ``timeout`` s, raises ``error`` with ``failure`` of the last answer (None when
    every probe raised). The harness's waits on a live cluster are all of this shape."""
    deadline = time.monotonic() + timeout
    last: Optional[T] = None
    while True:
        try:
            last = probe()
        except retry:
            pass
        else:
            if done(last):
                return last
        if time.monotonic() > deadline:
            raise error(failure(last))
        time.sleep(every)


class _Resend(Exception):
    """A request librdkafka failed on the client's side, before or without the broker's
    answer: it may be sent again."""


def create_topic(admin, topic) -> None:
    """Sends CreateTopics for ``topic`` (a confluent_kafka ``NewTopic``) until an answer comes.
    librdkafka drops its bootstrap broker handle once it has learned the cluster's brokers and
    fails what was in flight on it with _DESTROY_BROKER (seen in CI on 3.9.2); such a request,
    or one lost to the transport or a timeout, is sent again. A topic an earlier request did
    create is then TOPIC_ALREADY_EXISTS, which is taken as created; on the first request, it
    is an error."""
    from confluent_kafka import KafkaError, KafkaException

    lost_on_client = {KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT}
    sent = 0

    def create() -> bool:
        nonlocal sent
        sent += 1
        try:
            admin.create_topics([topic])[topic.topic].result(30)
        except KafkaException as e:
            code = e.args[0].code()
            if code == KafkaError.TOPIC_ALREADY_EXISTS and sent > 1:
                return True
            if code in lost_on_client:
                raise _Resend from e
            raise
        return True

    wait_for(create, bool, timeout=60, every=0.5, retry=(_Resend,),
             failure=lambda _: f"topic {topic.topic}: {sent} CreateTopics requests lost on the client")


def jars_present(libs: Path = LIBS, version: str | None = None) -> bool:
    """True when the broker, tools and clients jars of ``version`` (by default the release
    ``libs`` is the folder of, else the default one) have been resolved into ``libs``."""
    version = version or _version_of(Path(libs))
    needed = (f"kafka_2.13-{version}.jar", f"kafka-tools-{version}.jar",
              f"kafka-clients-{version}.jar", f"kafka-storage-{version}.jar")
    return all((Path(libs) / n).is_file() for n in needed)


def _version_of(libs: Path) -> str:
    """The release a jars folder holds: the one its kafka-clients jar names."""
    for jar in sorted(libs.glob("kafka-clients-*.jar")):
        return jar.name[len("kafka-clients-"):-len(".jar")]
    return DEFAULT_KAFKA_VERSION


@lru_cache(maxsize=None)
def _kafka_classes(libs: Path) -> frozenset[str]:
    """Every class name in the Kafka jars of a folder (tools live in kafka_2.13 or kafka-tools)."""
    names = set()
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            names.update(n[:-len(".class")].replace("/", ".") for n in z.namelist()
                         if n.endswith(".class"))
    return frozenset(names)


@lru_cache(maxsize=None)
def release_defines(libs: Path, name: str) -> bool:
    """Whether the release's storage jar (LogConfig) names the config ``name``: 4.1+'s topic
    config ``internal.segment.bytes`` (segment.bytes has a 1 MiB floor there, KIP-1030) is
    unknown to 3.9.2, whose CreateTopics refuses an unknown config and whose segment.bytes
    itself goes down to 14 bytes (LegacyRecord.RECORD_OVERHEAD_V0)."""
    needle = name.encode()
    for jar in sorted(Path(libs).glob("kafka-storage-*.jar")):
        with zipfile.ZipFile(jar) as z:
            if any(needle in z.read(n) for n in z.namelist() if n.endswith("LogConfig.class")):
                return True
    return False


def tool_class(main_or_alias: str, libs: Path = LIBS) -> str:
    """The main class ``main_or_alias`` names in the release whose jars are in ``libs``: a
    tool alias (``kafka-dump-log``) becomes the first of its candidates that release ships, a
    class name or a ``.java`` file stays as it is."""
    candidates = TOOL_CANDIDATES.get(main_or_alias)
    if candidates is None:
        return main_or_alias
    present = _kafka_classes(Path(libs))
    for cls in candidates:
        if cls in present:
            return cls
    raise KafkaHarnessError(f"no class of {main_or_alias} ({', '.join(candidates)}) in {libs}")


def _copy_unless_vanished(src: str, dst: str) -> None:
    try:
        shutil.copy2(src, dst)
    except FileNotFoundError:
        if os.path.exists(src):
            raise  # the destination's fault, not a file the broker renamed away


def copy_live_log_dir(src: Path, dst: Path) -> None:
    """Copy a running broker's log dir, as an operator's ``cp -r`` or rsync of it would: a
    file the broker removes while the copy runs (a checkpoint's ``.tmp``, written and then
    renamed over the checkpoint) is left out, as rsync leaves out "vanished" files."""
    shutil.copytree(src, dst, copy_function=_copy_unless_vanished)


def free_ports(count: int) -> list[int]:
    """Ask the kernel for ``count`` distinct free loopback ports (held open until all are known)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars). Like
    Kafka's Uuid.randomUuid, never one starting with '-': kafka-storage's argument parser
    would take `--cluster-id -x...` for a missing value (one start in 64 failed so)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _java(main: str, args, *, jvm_opts, log4j: Path, libs: Path = LIBS) -> list[str]:
    """``log4j`` is the log4j2 file; its log4j 1 twin (``*.log4j1.properties`` beside it, for
    3.x releases) is passed too when it exists."""
    log4j1 = _log4j1_twin(Path(log4j))
    cmd = ["java", *jvm_opts, "-Dfile.encoding=UTF-8", f"-Dlog4j2.configurationFile={log4j}",
           *([f"-Dlog4j.configuration=file:{log4j1}"] if log4j1.exists() else []),
           "-cp", str(libs / "*"), main, *map(str, args)]
    return cmd


def _log4j1_twin(log4j2: Path) -> Path:
    return log4j2.with_name(log4j2.name.replace("log4j2", "log4j1"))


def run_java_tool(main_or_alias: str, *args, libs: Path = LIBS, timeout: float = 300,
                  input: str | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's command-line tools from the jars in ``libs`` (no cluster needed)."""
    main = tool_class(main_or_alias, libs)
    cmd = _java(main, args, jvm_opts=TOOL_JVM_OPTS, log4j=_tool_log4j(), libs=libs)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)


def run_java_tools(jobs, libs: Path = LIBS, timeout: float = 1800) -> list[subprocess.CompletedProcess]:
    """Run many tools in ONE JVM (tools/kafka/jvm/InProcessTools.java), each job keeping its
    own stdout, stderr and exit code: ``jobs`` is a list of ``(main_or_alias, args)``.

    A JVM start costs about a CPU second; a fixture has hundreds of files to dump, so this is
    what keeps ``make fixtures`` in minutes on a 2-core CI box. Same classes, same output:
    tests/kafka/test_live.py compares a standalone kafka-dump-log run with a recorded dump.
    """
    import tempfile

    jobs = [(tool_class(m, libs), [str(a) for a in args]) for m, args in jobs]
    if not jobs:
        return []
    cfg = _tool_log4j()
    with tempfile.TemporaryDirectory(prefix="logscan-tools-") as tmp:
        lines = []
        for n, (main, args) in enumerate(jobs):
            if any("\t" in a or "\n" in a for a in args):
                raise ValueError(f"tool argument with TAB/newline: {args}")
            lines.append("\t".join([f"{tmp}/{n}.out", f"{tmp}/{n}.err", main, *args]))
        cmd = _java(str(JVM_DIR / "InProcessTools.java"), [], jvm_opts=TOOL_JVM_OPTS,
                    log4j=cfg, libs=libs)
        cp = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True,
                            timeout=timeout)
        codes = [int(ln.split()[1]) for ln in cp.stdout.splitlines() if ln.startswith("exit ")]
        if cp.returncode != 0 or len(codes) != len(jobs):
            raise KafkaHarnessError(f"in-process tool runner failed ({cp.returncode}): {cp.stderr}")
        # Bytes decoded without newline translation: read_text would turn a CR printed
        # inside a record payload into a LF, and the recorded dump would no longer be Kafka's.
        return [subprocess.CompletedProcess([main, *args], code,
                                            Path(f"{tmp}/{n}.out").read_bytes().decode("utf-8"),
                                            Path(f"{tmp}/{n}.err").read_bytes().decode("utf-8"))
                for n, ((main, args), code) in enumerate(zip(jobs, codes))]


def _tool_log4j() -> Path:
    cfg = Path(os.environ.get("TMPDIR", "/tmp")) / "logscan-tool-log4j2.properties"
    for path, text in ((cfg, TOOL_LOG4J2), (_log4j1_twin(cfg), TOOL_LOG4J1)):
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return cfg


class Cluster:
    """N combined broker+controller nodes (node ids 0..N-1) under ``workdir``.

    ``workdir/node-<id>/`` holds ``server.properties``, ``log4j2.properties``, ``server.log``
    and the log dir ``data/`` (with ``log_dirs_per_node`` > 1, a JBOD broker: also ``data-2/``
    ...); ``workdir/cluster.json`` records ports and pids so that the CLI (another process) can
    report status and stop the cluster.
    """

    def __init__(self, workdir, nodes: int = 3, transaction_version: int = 2,
                 broker_config: dict | None = None, libs: Path | None = None,
                 log_level: str = "INFO", kafka_version: str = DEFAULT_KAFKA_VERSION,
                 log_dirs_per_node: int = 1, features: dict | None = None):
        self.workdir = Path(workdir).resolve()
        # finalized features to format with besides transaction.version (e.g. share.version)
        self.features = dict(features or {})
        self.nodes = nodes
        self.log_dirs_per_node = log_dirs_per_node
        self.transaction_version = transaction_version
        self.broker_config = dict(broker_config or {})
        self.kafka_version = kafka_version
        if libs is None:
            libs = LIBS if kafka_version == DEFAULT_KAFKA_VERSION else libs_for(kafka_version)
        self.libs = Path(libs)
        self.log_level = log_level
        self.cluster_id: str | None = None
        self.broker_ports: dict[int, int] = {}
        self.controller_ports: dict[int, int] = {}
        # JMX on loopback: per-replica log end offsets (kafka.log:type=Log,name=LogEndOffset)
        # have no client API, only this metric
        self.jmx_ports: dict[int, int] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self.start_seconds: float | None = None

    # ---- layout -------------------------------------------------------------------------
    @property
    def log_dirs(self) -> dict[int, Path]:
        """Each node's first log dir (the one holding ``__cluster_metadata``)."""
        return {i: dirs[0] for i, dirs in self.node_log_dirs.items()}

    @property
    def node_log_dirs(self) -> dict[int, list[Path]]:
        """Each node's ``log.dirs``, in order: ``data``, then ``data-2``... for a JBOD broker
        (KIP-858: the metadata log stays in the first; StorageTool formats each with its own
        directory.id, and the broker places a new partition in the dir holding fewest)."""
        return {i: [self.workdir / f"node-{i}" / ("data" if k == 1 else f"data-{k}")
                    for k in range(1, self.log_dirs_per_node + 1)] for i in range(self.nodes)}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.broker_ports[i]}" for i in sorted(self.broker_ports))

    def node_dir(self, node_id: int) -> Path:
        return self.workdir / f"node-{node_id}"

    def server_properties(self, node_id: int) -> dict[str, str]:
        voters = ",".join(f"{i}@127.0.0.1:{self.controller_ports[i]}" for i in range(self.nodes))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]},"
                         f"CONTROLLER://127.0.0.1:{self.controller_ports[node_id]}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": ",".join(map(str, self.node_log_dirs[node_id])),
        }
        props.update(BASE_BROKER_CONFIG)
        props.update({k: str(v) for k, v in self.broker_config.items()})
        return props

    # ---- lifecycle ----------------------------------------------------------------------
    def _write_configs(self) -> None:
        for i in range(self.nodes):
            d = self.node_dir(i)
            d.mkdir(parents=True, exist_ok=True)
            props = self.server_properties(i)
            (d / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            (d / "log4j2.properties").write_text(
                LOG4J2.format(logfile=d / "server.log", level=self.log_level))
            (d / "log4j1.properties").write_text(
                LOG4J1.format(logfile=d / "server.log", level=self.log_level))

    def format(self) -> None:
        """Format every node's storage (all nodes in parallel: one StorageTool JVM each)."""
        procs = []
        for i in range(self.nodes):
            d = self.node_dir(i)
            args = ["format", "--config", d / "server.properties", "--cluster-id", self.cluster_id,
                    "--feature", f"transaction.version={self.transaction_version}"]
            for name, level in self.features.items():
                args += ["--feature", f"{name}={level}"]
            cmd = _java(tool_class("kafka-storage", self.libs), args, jvm_opts=TOOL_JVM_OPTS,
                        log4j=d / "log4j2.properties", libs=self.libs)
            procs.append((i, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True)))
        for i, p in procs:
            out, err = p.communicate(timeout=120)
            if p.returncode != 0:
                raise KafkaHarnessError(f"format of node {i} failed ({p.returncode}): {out}{err}")

    def start(self, timeout: float = 120) -> "Cluster":
        if not jars_present(self.libs, self.kafka_version):
            raise KafkaHarnessError(f"Kafka {self.kafka_version} jars missing under {self.libs}: "
                                    f"run `make kafka-jars KAFKA_VERSION={self.kafka_version}`")
        t0 = time.monotonic()
        if self.workdir.exists():
            # a fresh cluster every time, but never wipe a folder that is not one of ours
            foreign = [p.name for p in self.workdir.iterdir()
                       if not (p.name.startswith("node-") or p.name == "cluster.json")]
            if foreign:
                raise KafkaHarnessError(f"{self.workdir} is not a cluster work dir: {foreign}")
            if (self.workdir / "cluster.json").exists() and any(self.running().values()):
                raise KafkaHarnessError(f"a cluster is still running under {self.workdir}")
            shutil.rmtree(self.workdir)
        self.workdir.mkdir(parents=True)
        ports = free_ports(3 * self.nodes)
        self.broker_ports = {i: ports[3 * i] for i in range(self.nodes)}
        self.controller_ports = {i: ports[3 * i + 1] for i in range(self.nodes)}
        self.jmx_ports = {i: ports[3 * i + 2] for i in range(self.nodes)}
        self.cluster_id = random_cluster_id()
        self._write_configs()
        self.format()
        for i in range(self.nodes):
            d = self.node_dir(i)
            cmd = _java("kafka.Kafka", [d / "server.properties"],
                        jvm_opts=[*BROKER_JVM_OPTS, *_jmx_opts(self.jmx_ports[i])],
                        log4j=d / "log4j2.properties", libs=self.libs)
            out = open(d / "stdout.log", "wb")
            self.procs[i] = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            out.close()
        self._save_state()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop(hard=True)
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def wait_ready(self, timeout: float) -> None:
        """Wait until every broker is registered and answers metadata requests."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0,
                             "logger": _quiet_logger()})

        def registered() -> int:
            for i, p in self.procs.items():
                if p.poll() is not None:
                    raise KafkaHarnessError(
                        f"node {i} exited with {p.returncode}; see {self.node_dir(i)}/stdout.log")
            try:
                return len(admin.list_topics(timeout=2).brokers)
            except Exception:  # noqa: BLE001 - the cluster is still booting; ask again until the deadline
                return 0

        wait_for(registered, lambda n: n == self.nodes, timeout=timeout, every=0.5, error=KafkaHarnessError,
                 failure=lambda n: f"cluster not ready after {timeout}s ({n} of {self.nodes} brokers registered)")

    def stop(self, hard: bool = False, timeout: float = 90) -> None:
        """Clean stop (SIGTERM to every node at once, wait) or hard stop (SIGKILL)."""
        sig = signal.SIGKILL if hard else signal.SIGTERM
        pids = {i: p.pid for i, p in self.procs.items()} or self._load_pids()
        for pid in pids.values():
            _signal(pid, sig)
        deadline = time.monotonic() + timeout
        for i, pid in pids.items():
            proc = self.procs.get(i)
            while _alive(pid, proc) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid, proc):
                _signal(pid, signal.SIGKILL)
                while _alive(pid, proc):
                    time.sleep(0.1)
        self.procs.clear()
        self._admin = None
        state = self.workdir / "cluster.json"
        if state.exists():
            state.unlink()

    def running(self) -> dict[int, bool]:
        pids = {i: p.pid for i, p in self.procs.items()} or self._load_pids()
        return {i: _alive(pid, self.procs.get(i)) for i, pid in pids.items()}

    def __enter__(self) -> "Cluster":
        return self.start() if not self.procs else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- tools --------------------------------------------------------------------------
    def jmx_url(self, node_id: int) -> str:
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.jmx_ports[node_id]}/jmxrmi"

    def run_tool(self, main_or_alias: str, *args, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run a Kafka CLI tool from the same jars; cluster tools get ``--bootstrap-server``."""
        args = [str(a) for a in args]
        if main_or_alias in NEEDS_BOOTSTRAP and "--bootstrap-server" not in args:
            args = ["--bootstrap-server", self.bootstrap, *args]
        return run_java_tool(main_or_alias, *args, libs=self.libs, timeout=timeout)

    def run_tools(self, jobs) -> list[subprocess.CompletedProcess]:
        """Like :meth:`run_tool` for many ``(tool, args)`` jobs, all in one JVM."""
        fixed = []
        for tool, args in jobs:
            args = [str(a) for a in args]
            if tool in NEEDS_BOOTSTRAP and "--bootstrap-server" not in args:
                args = ["--bootstrap-server", self.bootstrap, *args]
            fixed.append((tool, args))
        return run_java_tools(fixed, libs=self.libs)

    def admin(self):
        """One shared AdminClient: its futures die with it, so callers must not own it."""
        from confluent_kafka.admin import AdminClient
        if getattr(self, "_admin", None) is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap,
                                       "logger": _quiet_logger()})
        return self._admin

    # ---- state file for the CLI ---------------------------------------------------------
    def _save_state(self) -> None:
        state = {"nodes": self.nodes, "transaction_version": self.transaction_version,
                 "kafka_version": self.kafka_version, "libs": str(self.libs),
                 "cluster_id": self.cluster_id, "bootstrap": self.bootstrap,
                 "broker_ports": self.broker_ports, "controller_ports": self.controller_ports,
                 "jmx_ports": self.jmx_ports,
                 "pids": {i: p.pid for i, p in self.procs.items()},
                 "log_dirs": {i: str(p) for i, p in self.log_dirs.items()}}
        (self.workdir / "cluster.json").write_text(json.dumps(state, indent=1))

    def _load_pids(self) -> dict[int, int]:
        state = self.workdir / "cluster.json"
        if not state.exists():
            return {}
        return {int(i): pid for i, pid in json.loads(state.read_text())["pids"].items()}

    @classmethod
    def attach(cls, workdir) -> "Cluster":
        """A handle on a cluster started by another process (from its ``cluster.json``)."""
        state = json.loads((Path(workdir) / "cluster.json").read_text())
        c = cls(workdir, nodes=state["nodes"], transaction_version=state["transaction_version"],
                kafka_version=state.get("kafka_version", DEFAULT_KAFKA_VERSION),
                libs=Path(state["libs"]) if "libs" in state else None)
        c.cluster_id = state["cluster_id"]
        c.broker_ports = {int(k): v for k, v in state["broker_ports"].items()}
        c.controller_ports = {int(k): v for k, v in state["controller_ports"].items()}
        c.jmx_ports = {int(k): v for k, v in state["jmx_ports"].items()}
        return c


def _jmx_opts(port: int) -> list[str]:
    return [f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}",
            "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Djava.rmi.server.hostname=127.0.0.1",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false"]


def _signal(pid: int, sig) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int, proc: subprocess.Popen | None) -> bool:
    if proc is not None:
        return proc.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of a dead parent is not a running broker; but a JVM's main thread can be a
    # zombie while its other threads still run or exit, and until they are gone its parent
    # cannot reap it: the process is alive while any of its threads is.
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            state = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread is gone
        if state not in ("Z", "X"):
            return True
    return False


def _quiet_logger():
    import logging
    log = logging.getLogger("logscan.kafka.client")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.kafka.cluster")
    ap.add_argument("--workdir", default=str(REPO / ".work" / "dev"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("start")
    st.add_argument("--nodes", type=int, default=3)
    st.add_argument("--transaction-version", type=int, default=2)
    st.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    sp = sub.add_parser("stop")
    sp.add_argument("--hard", action="store_true")
    sub.add_parser("status")
    tl = sub.add_parser("tool")
    tl.add_argument("tool")
    tl.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.cmd == "start":
        c = Cluster(a.workdir, nodes=a.nodes, transaction_version=a.transaction_version,
                    kafka_version=a.kafka_version).start()
        # leave the JVMs running: the Popen objects die with us, the brokers do not
        c.procs.clear()
        print(f"bootstrap={c.bootstrap} Kafka {c.kafka_version} started in {c.start_seconds:.1f}s "
              f"workdir={c.workdir}")
        return 0
    if not (Path(a.workdir) / "cluster.json").exists():
        print(f"no cluster recorded under {a.workdir}", file=sys.stderr)
        return 1 if a.cmd != "stop" else 0
    c = Cluster.attach(a.workdir)
    if a.cmd == "stop":
        c.stop(hard=a.hard)
        return 0
    if a.cmd == "status":
        alive = c.running()
        print(json.dumps({"bootstrap": c.bootstrap, "alive": alive}))
        return 0 if alive and all(alive.values()) else 1
    cp = c.run_tool(a.tool, *a.args)
    sys.stdout.write(cp.stdout)
    sys.stderr.write(cp.stderr)
    return cp.returncode


if __name__ == "__main__":
    sys.exit(main())
