"""Unit tests of the harness helpers that need neither jars nor a cluster."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tools.kafka import cluster
from tools.kafka.cluster import (Cluster, KafkaHarnessError, copy_live_log_dir, free_ports, jars_present,
                                 random_cluster_id)
from tools.kafka.fixtures import dump_args
from tools.kafka.scenarios import CLUSTERS, SCENARIOS
from tools.kafka.truth import parse_log_end_offsets, parse_table


def test_parse_table_reads_tab_terminated_padded_cells():
    # TransactionsCommand pads each cell to its column width and ends every cell with a TAB
    out = ("ProducerId\tProducerEpoch\tCurrentTransactionStartOffset\t\n"
           "1000      \t0            \t3                            \t\n"
           "0         \t5            \tNone                         \t\n")
    assert parse_table(out) == [
        {"ProducerId": "1000", "ProducerEpoch": "0", "CurrentTransactionStartOffset": "3"},
        {"ProducerId": "0", "ProducerEpoch": "5", "CurrentTransactionStartOffset": "None"}]
    assert parse_table("") == []


def test_dump_args_pick_the_decoder_of_internal_topics():
    assert dump_args(Path("broker-0/__transaction_state-1/00000000000000000000.log"))[-1] \
        == "--transaction-log-decoder"
    assert dump_args(Path("broker-0/__consumer_offsets-2/00000000000000000000.log"))[-1] \
        == "--offsets-decoder"
    assert dump_args(Path("broker-0/__cluster_metadata-0/00000000000000000000.log"))[-1] \
        == "--cluster-metadata-decoder"
    assert dump_args(Path("broker-0/bootstrap.checkpoint"))[-1] == "--cluster-metadata-decoder"
    assert dump_args(Path("broker-0/__remote_log_metadata-2/00000000000000000000.log"))[-1] \
        == "--remote-log-metadata-decoder"
    assert dump_args(Path("broker-0/__share_group_state-5/00000000000000000000.log"))[-1] \
        == "--share-group-state-decoder"
    assert dump_args(Path("broker-1/t-0/00000000000000000000.log")) \
        == ["--deep-iteration", "--print-data-log"]
    for suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
        assert dump_args(Path(f"broker-1/t-0/00000000000000000007{suffix}")) == []
    for name in ("partition.metadata", "leader-epoch-checkpoint", "meta.properties"):
        assert dump_args(Path(f"broker-1/t-0/{name}")) is None


def test_server_properties_are_loopback_kraft_with_small_internal_topics(tmp_path):
    c = Cluster(tmp_path / "c", transaction_version=1,
                broker_config={"transaction.partition.verification.enable": False})
    c.broker_ports = {0: 1000, 1: 1001, 2: 1002}
    c.controller_ports = {0: 2000, 1: 2001, 2: 2002}
    props = c.server_properties(1)
    assert props["controller.quorum.voters"] == \
        "0@127.0.0.1:2000,1@127.0.0.1:2001,2@127.0.0.1:2002"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:1001,CONTROLLER://127.0.0.1:2001"
    assert props["transaction.state.log.num.partitions"] == "3"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.partition.verification.enable"] == "False"
    assert props["log.dirs"] == str(c.log_dirs[1])
    assert c.bootstrap == "127.0.0.1:1000,127.0.0.1:1001,127.0.0.1:1002"


def test_free_ports_are_distinct_and_bindable():
    ports = free_ports(6)
    assert len(set(ports)) == 6
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_cluster_id_is_22_char_urlsafe_base64():
    cid = random_cluster_id()
    assert len(cid) == 22 and set(cid) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_cluster_id_never_starts_with_a_dash(monkeypatch):
    # 0xf8.. encodes to '-' first: kafka-storage would read `--cluster-id -...` as no value.
    import uuid

    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" + bytes(15))])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(drawn))
    assert random_cluster_id() == "AQAAAAAAAAAAAAAAAAAAAA"


def test_every_scenario_names_known_clusters_and_documents_itself():
    assert {"txn_basic", "txn_open", "idempotent", "fenced", "timeout_abort", "codecs",
            "compacted", "segment_roll"} <= set(SCENARIOS)
    for sc in SCENARIOS.values():
        assert set(sc.clusters) <= set(CLUSTERS), sc.name
        assert len(sc.doc) > 80, sc.name


def test_start_refuses_to_wipe_a_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    if not jars_present():
        pytest.skip("the jar check comes first")
    with pytest.raises(KafkaHarnessError, match="not a cluster work dir"):
        Cluster(tmp_path).start()
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_parse_log_end_offsets_reads_jmxtool_properties_lines():
    out = ("time=1795382020260\n"
           "kafka.log:type=Log,name=LogEndOffset,topic=__cluster_metadata,partition=0:Value=26\n"
           "kafka.log:type=Log,name=LogEndOffset,topic=txn-a,partition=12:Value=7\n")
    assert parse_log_end_offsets(out) == {("__cluster_metadata", 0): 26, ("txn-a", 12): 7}


def test_a_live_log_dir_copy_leaves_out_a_file_the_broker_renames_away(tmp_path, monkeypatch):
    """A CI run failed copying a running broker's log dir: replication-offset-checkpoint.tmp
    was listed, then renamed over the checkpoint before it was copied."""
    import shutil

    src = tmp_path / "data"
    (src / "hang-0").mkdir(parents=True)
    (src / "hang-0" / "00000000000000000000.log").write_bytes(b"x" * 10)
    (src / "replication-offset-checkpoint.tmp").write_text("0\n1\nhang 0 5\n")
    real_copy2 = shutil.copy2

    def broker_renames_first(s, d, **kw):
        if s.endswith(".tmp"):
            os.replace(s, src / "replication-offset-checkpoint")
        return real_copy2(s, d, **kw)

    monkeypatch.setattr(shutil, "copy2", broker_renames_first)
    copy_live_log_dir(src, tmp_path / "copy")
    copied = sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*") if p.is_file())
    assert copied == ["hang-0/00000000000000000000.log"]
    with pytest.raises(FileNotFoundError):  # a missing destination is still an error
        cluster._copy_unless_vanished(str(src / "hang-0" / "00000000000000000000.log"), str(tmp_path / "no" / "x"))


def test_a_process_whose_main_thread_ended_is_alive_until_its_last_thread_ends():
    # A JVM's main thread can end (a zombie in /proc/PID/stat) while its other threads still
    # run: its parent cannot reap it yet, so `stop` must not call it stopped.
    import subprocess
    import sys
    import time

    code = ("import ctypes, threading, time\n"
            "threading.Thread(target=time.sleep, args=(1.5,)).start()\n"
            "print('ready', flush=True)\n"
            "ctypes.CDLL(None).pthread_exit(None)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 5
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the main thread did not end"
            time.sleep(0.01)
        assert cluster._alive(proc.pid, None)      # the other thread still runs
        assert proc.poll() is None                 # and the parent cannot reap it
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()


def test_waiting_for_an_isr_asks_again_after_a_metadata_timeout(monkeypatch):
    # Right after a node is killed a metadata request can time out: the wait goes on.
    from types import SimpleNamespace

    from confluent_kafka import KafkaException

    from tools.kafka import hanging

    answers = [KafkaException("Failed to get metadata: Local: Timed out"), [1, 2, 3], [1, 2]]

    def list_topics(topic, timeout):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions={0: SimpleNamespace(isrs=answer)})})

    cluster = SimpleNamespace(admin=lambda: SimpleNamespace(list_topics=list_topics))
    monkeypatch.setattr(hanging.time, "sleep", lambda s: None)
    assert hanging.wait_isr(cluster, "t", 0, {1, 2}) == [1, 2]
    assert answers == []



class _Admin:
    """Answers CreateTopics with ``outcomes`` in turn (an exception or None) and keeps the
    topics each request named."""

    def __init__(self, outcomes):
        self.outcomes, self.sent = list(outcomes), []

    def create_topics(self, topics):
        from concurrent.futures import Future
        self.sent.append([t.topic for t in topics])
        fut, outcome = Future(), self.outcomes.pop(0)
        fut.set_exception(outcome) if outcome else fut.set_result(None)
        return {topics[0].topic: fut}


def test_a_create_topics_request_lost_on_the_client_is_sent_again(monkeypatch):
    # CI, 3.9.2: librdkafka dropped its bootstrap broker handle under the first CreateTopics
    # (_DESTROY_BROKER); when the broker had created the topic, the resend finds it there.
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    monkeypatch.setattr(cluster.time, "sleep", lambda s: None)
    lost = KafkaException(KafkaError(KafkaError._DESTROY_BROKER, "Broker handle destroyed"))
    exists = KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 'hang' already exists."))
    for outcomes in ([lost, exists], [lost, None], [lost, lost, None]):
        admin = _Admin(outcomes)
        cluster.create_topic(admin, NewTopic("hang", 3, 3))
        assert admin.sent == [["hang"]] * (len(outcomes)) and admin.outcomes == []


def test_a_topic_that_existed_before_or_a_refusal_is_an_error_not_a_resend(monkeypatch):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    monkeypatch.setattr(cluster.time, "sleep", lambda s: None)
    for refusal in (KafkaError.TOPIC_ALREADY_EXISTS, KafkaError.INVALID_REPLICATION_FACTOR):
        admin = _Admin([KafkaException(KafkaError(refusal, "no"))])
        with pytest.raises(KafkaException):
            cluster.create_topic(admin, NewTopic("hang", 3, 3))
        assert admin.sent == [["hang"]]

def test_wait_for_returns_the_first_answer_that_is_done(monkeypatch):
    slept = []
    monkeypatch.setattr(cluster.time, "sleep", slept.append)
    answers = iter([1, 2, 3, 4])
    assert cluster.wait_for(lambda: next(answers), lambda n: n >= 3, timeout=60, every=0.5, failure=str) == 3
    assert slept == [0.5, 0.5]


def test_wait_for_asks_again_after_a_retried_exception_only(monkeypatch):
    monkeypatch.setattr(cluster.time, "sleep", lambda s: None)
    answers = [TimeoutError("metadata timed out"), "ready"]

    def probe() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert cluster.wait_for(probe, lambda a: a == "ready", timeout=60, every=1, failure=str,
                            retry=(TimeoutError,)) == "ready"
    answers[:] = [ValueError("a broken answer"), "ready"]
    with pytest.raises(ValueError, match="a broken answer"):
        cluster.wait_for(probe, lambda a: a == "ready", timeout=60, every=1, failure=str, retry=(TimeoutError,))


def test_wait_for_raises_with_the_last_answer_past_its_deadline(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(cluster.time, "monotonic", lambda: now[0])

    def sleep(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(cluster.time, "sleep", sleep)
    answers = iter(range(100))
    with pytest.raises(TimeoutError, match="stuck at 5"):
        cluster.wait_for(lambda: next(answers), lambda n: False, timeout=2, every=0.5,
                         failure=lambda n: f"stuck at {n}")
    with pytest.raises(KafkaHarnessError, match="never answered: None"):
        cluster.wait_for(lambda: 1 / 0, lambda n: True, timeout=1, every=0.5, retry=(ZeroDivisionError,),
                         failure=lambda n: f"never answered: {n}", error=KafkaHarnessError)


# ---- Kafka releases -------------------------------------------------------------------------

def _make_variable(name: str) -> list[str]:
    mk = (Path(cluster.REPO) / "tools" / "kafka" / "kafka.mk").read_text()
    line = next(ln for ln in mk.splitlines() if ln.startswith(f"{name} "))
    return line.split("=", 1)[1].split()


def test_make_fetches_the_jars_of_every_release_a_fixture_cluster_runs():
    """`make kafka-jars-all` (run by `make test` and `make fixtures`) resolves KAFKA_VERSIONS;
    `make kafka-jars` alone the default release."""
    assert set(_make_variable("KAFKA_VERSIONS")) == {s.kafka_version for s in CLUSTERS.values()}
    assert _make_variable("KAFKA_VERSION") == [cluster.DEFAULT_KAFKA_VERSION]
    makefile = (Path(cluster.REPO) / "Makefile").read_text()
    assert any(ln.startswith("test:") and "kafka-jars-all" in ln.split() for ln in makefile.splitlines())


def test_each_release_has_its_own_jars_folder(tmp_path):
    assert cluster.libs_for("4.4.0") == Path(cluster.REPO) / ".kafka" / "4.4.0" / "libs"
    c = Cluster(tmp_path / "w", kafka_version="4.4.0")
    assert c.libs == cluster.libs_for("4.4.0") and c.kafka_version == "4.4.0"
    assert Cluster(tmp_path / "w").kafka_version == cluster.DEFAULT_KAFKA_VERSION
    libs = tmp_path / "libs"
    libs.mkdir()
    for jar in ("kafka_2.13", "kafka-tools", "kafka-clients", "kafka-storage"):
        (libs / f"{jar}-9.9.9.jar").write_bytes(b"")
    assert jars_present(libs) and jars_present(libs, "9.9.9") and not jars_present(libs, "4.4.0")


def test_a_tool_alias_is_the_class_its_release_ships(tmp_path):
    import zipfile

    def libs_with(*classes):
        libs = tmp_path / str(len(list(tmp_path.iterdir())))
        libs.mkdir()
        with zipfile.ZipFile(libs / "kafka-tools-1.0.jar", "w") as z:
            for c in classes:
                z.writestr(c.replace(".", "/") + ".class", b"")
        return libs

    java_port = libs_with("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.StorageTool")
    scala_only = libs_with("kafka.tools.DumpLogSegments")
    assert cluster.tool_class("kafka-dump-log", java_port) == "org.apache.kafka.tools.DumpLogSegments"
    assert cluster.tool_class("kafka-dump-log", scala_only) == "kafka.tools.DumpLogSegments"
    assert cluster.tool_class("kafka.Kafka", scala_only) == "kafka.Kafka"  # a class stays itself
    with pytest.raises(KafkaHarnessError, match="kafka-storage"):
        cluster.tool_class("kafka-storage", scala_only)


@pytest.mark.parametrize("version,dump_class", [
    ("3.9.2", "kafka.tools.DumpLogSegments"),
    ("4.1.1", "kafka.tools.DumpLogSegments"),
    ("4.4.0", "org.apache.kafka.tools.DumpLogSegments"),  # KAFKA-14579: ported to Java
])
def test_the_real_releases_tool_classes(version, dump_class):
    libs = cluster.libs_for(version)
    if not jars_present(libs, version):
        pytest.skip(f"no Kafka {version} jars: make kafka-jars KAFKA_VERSION={version}")
    assert cluster.tool_class("kafka-dump-log", libs) == dump_class
    for alias in cluster.TOOL_CANDIDATES:
        cluster.tool_class(alias, libs)  # every tool the harness runs is in the release


@pytest.mark.parametrize("version,defined", [("3.9.2", False), ("4.1.1", True), ("4.4.0", True)])
def test_small_segments_use_the_config_the_release_defines(version, defined):
    """internal.segment.bytes is 4.1+; 3.9.2's CreateTopics refuses it, and its own
    segment.bytes has no 1 MiB floor (the compacted scenario rolls at 1024 bytes on both)."""
    libs = cluster.libs_for(version)
    if not jars_present(libs, version):
        pytest.skip(f"no Kafka {version} jars: make kafka-jars KAFKA_VERSION={version}")
    assert cluster.release_defines(libs, "internal.segment.bytes") is defined


def test_a_release_with_its_own_slf4j_binding_loses_the_poms():
    """3.9.2 ships slf4j-reload4j; with the pom's log4j-slf4j-impl beside it SLF4J 1.7 picks
    one of two bindings by jar order (kafka.mk removes the pom's), and the harness passes a
    log4j 1 file next to the log4j2 one so the tools' stderr holds no log4j:WARN lines."""
    libs = cluster.libs_for("3.9.2")
    if not jars_present(libs, "3.9.2"):
        pytest.skip("no Kafka 3.9.2 jars: make kafka-jars KAFKA_VERSION=3.9.2")
    names = {p.name for p in libs.glob("*.jar")}
    assert any(n.startswith("slf4j-reload4j-") for n in names)
    assert not any(n.startswith("log4j-slf4j-impl-") for n in names)
    cp = cluster.run_java_tool("kafka-dump-log", "--help", libs=libs)
    assert "log4j:WARN" not in cp.stderr and "SLF4J" not in cp.stderr, cp.stderr


def test_a_jbod_cluster_has_two_log_dirs_per_node_copied_apart(tmp_path):
    from tools.kafka.fixtures import copied_dirs
    from tools.kafka.scenarios import CLUSTERS, JBOD_CLUSTER

    c = Cluster(tmp_path / "c", log_dirs_per_node=CLUSTERS[JBOD_CLUSTER].log_dirs)
    c.broker_ports = {0: 1000, 1: 1001, 2: 1002}
    c.controller_ports = {0: 2000, 1: 2001, 2: 2002}
    node = tmp_path.resolve() / "c" / "node-1"
    assert c.server_properties(1)["log.dirs"] == f"{node / 'data'},{node / 'data-2'}"
    assert c.log_dirs[1] == node / "data"   # the metadata log's dir
    assert copied_dirs(c) == {tmp_path.resolve() / "c" / f"node-{n}" / d: f"brokers/broker-{n}{suffix}"
                              for n in range(3) for d, suffix in (("data", ""), ("data-2", "-disk2"))}
    assert Cluster(tmp_path / "one").node_log_dirs[0] == [tmp_path.resolve() / "one" / "node-0" / "data"]


def test_trim_stores_a_preallocated_file_small_and_restore_gives_its_bytes_back(tmp_path):
    from tools.kafka.trimmed import LIMIT_BYTES, TrimError, restore, trim

    part = tmp_path / "c" / "brokers" / "broker-0" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    index = part / "00000000000000000000.index"
    entries = (5).to_bytes(4, "big") + (4096).to_bytes(4, "big")
    index.write_bytes(entries + bytes(10 * 1024 * 1024 - len(entries)))  # preallocated, as Kafka leaves it
    log = part / "00000000000000000000.log"
    log.write_bytes(b"\x01" * 1000)
    manifest = trim(tmp_path / "c")
    assert index.stat().st_size == len(entries) and log.stat().st_size == 1000
    assert manifest["files"] == {"brokers/broker-0/__cluster_metadata-0/00000000000000000000.index": {
        "size": 10 * 1024 * 1024, "stored_size": len(entries), "sha256": manifest["files"][
            "brokers/broker-0/__cluster_metadata-0/00000000000000000000.index"]["sha256"]}}
    copy = restore(tmp_path / "c", tmp_path / "work")
    restored = copy / "brokers" / "broker-0" / "__cluster_metadata-0" / index.name
    assert restored.read_bytes() == entries + bytes(10 * 1024 * 1024 - len(entries))
    assert restore(tmp_path / "c", tmp_path / "work") == copy  # reused while unchanged
    # a stored file that is not what was trimmed is refused, never restored into other bytes
    index.write_bytes(b"\x00\x00\x00\x06" + entries[4:])
    with pytest.raises(TrimError, match="SHA-256"):
        restore(tmp_path / "c", tmp_path / "work2")
    # a large file with data past the limit cannot be stored trimmed
    big = tmp_path / "d" / "brokers" / "x.log"
    big.parent.mkdir(parents=True)
    big.write_bytes(b"\x01" * (LIMIT_BYTES + 1))
    with pytest.raises(TrimError):
        trim(tmp_path / "d")
