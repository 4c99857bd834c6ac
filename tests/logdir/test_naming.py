"""File and directory names of a Kafka log dir."""

from __future__ import annotations

import string

import pytest

from logscan.logdir.naming import (
    TOPIC_MAX_LENGTH, InternalTopicDecoder, Kind, PartitionDir, base_offset_from_name, classify,
    decoder_for_partition_dir, dump_log_suffix, is_legal_topic, parse_partition_dir, segment_file_name)
from tests.kafkajava import REPO, requires_jdk, run_java_source, text

FIXTURES = REPO / "fixtures"


@pytest.mark.parametrize("name, kind, state, base", [
    ("00000000000000000042.log", Kind.LOG_SEGMENT, None, 42),
    ("00000000000000000042.index", Kind.OFFSET_INDEX, None, 42),
    ("00000000000000000042.timeindex", Kind.TIME_INDEX, None, 42),
    ("00000000000000000042.txnindex", Kind.TXN_INDEX, None, 42),
    ("00000000000000001234.snapshot", Kind.PRODUCER_SNAPSHOT, None, 1234),
    ("00000000000000000042.log.deleted", Kind.LOG_SEGMENT, "deleted", 42),
    ("00000000000000000042.index.swap", Kind.OFFSET_INDEX, "swap", 42),
    ("00000000000000000042.log.cleaned", Kind.LOG_SEGMENT, "cleaned", 42),
    ("00000000000000000007.snapshot.deleted", Kind.PRODUCER_SNAPSHOT, "deleted", 7),
    ("09223372036854775807.log", Kind.LOG_SEGMENT, None, 2**63 - 1),
])
def test_segment_family(name, kind, state, base):
    fk = classify(f"/copy/broker1/data/t-0/{name}")
    assert (fk.kind, fk.state, fk.base_offset, fk.name) == (kind, state, base, name)
    assert fk.is_live == (state is None)
    assert base_offset_from_name(name) == base


def test_segment_name_round_trip():
    assert segment_file_name(42, "log") == "00000000000000000042.log"
    assert classify(segment_file_name(2**40, "txnindex")).base_offset == 2**40


@pytest.mark.parametrize("name", [
    "09223372036854775808.log",        # beyond int64
    "00000000000000000042.logx", "0000000000000000004a.log", "00000000000000000042.log.old",
    "00000000000000000042.log.deleted.swap", "notes.txt", ".log", "",
])
def test_unknown_names(name):
    assert classify(name).kind is Kind.UNKNOWN and not classify(name).is_live
    assert base_offset_from_name(name) is None


@pytest.mark.parametrize("name, state, end, epoch", [
    ("00000000000000001000-0000000003.checkpoint", None, 1000, 3),
    ("00000000000000001000-0000000003.checkpoint.part", "part", 1000, 3),
    ("00000000000000001000-0000000003.checkpoint.deleted", "deleted", 1000, 3),
])
def test_kraft_snapshots(name, state, end, epoch):
    fk = classify(name)
    assert (fk.kind, fk.state, fk.end_offset, fk.epoch, fk.base_offset) == (Kind.KRAFT_SNAPSHOT, state, end, epoch, None)


def test_short_kraft_snapshot_names_are_unknown():
    assert classify("1000-3.checkpoint").kind is Kind.UNKNOWN
    assert classify("00000000000000001000-0000000003.checkpoint.tmp").kind is Kind.UNKNOWN


@pytest.mark.parametrize("name, kind", [
    ("recovery-point-offset-checkpoint", Kind.RECOVERY_POINT_CHECKPOINT),
    ("replication-offset-checkpoint", Kind.REPLICATION_OFFSET_CHECKPOINT),
    ("log-start-offset-checkpoint", Kind.LOG_START_OFFSET_CHECKPOINT),
    ("cleaner-offset-checkpoint", Kind.CLEANER_OFFSET_CHECKPOINT),
    ("leader-epoch-checkpoint", Kind.LEADER_EPOCH_CHECKPOINT),
    ("partition.metadata", Kind.PARTITION_METADATA),
    ("meta.properties", Kind.META_PROPERTIES),
    ("quorum-state", Kind.QUORUM_STATE),
    (".kafka_cleanshutdown", Kind.CLEAN_SHUTDOWN),
    (".lock", Kind.LOCK),
    ("bootstrap.checkpoint", Kind.BOOTSTRAP_SNAPSHOT),
])
def test_fixed_names_and_their_tmp_files(name, kind):
    assert (classify(name).kind, classify(name).state) == (kind, None)
    tmp = classify(name + ".tmp")
    assert (tmp.kind, tmp.state, tmp.is_live) == (kind, "tmp", False)


def test_dump_log_suffix():
    assert dump_log_suffix("/a/00000000000000000042.log.deleted") == ".deleted"
    assert dump_log_suffix("00000000000000001000-0000000003.checkpoint") == ".checkpoint"
    assert dump_log_suffix("dir.x/leader-epoch-checkpoint") is None


@pytest.mark.parametrize("name, expected", [
    ("orders-0", PartitionDir("orders", 0, "live")),
    ("my.topic_with-dashes-12", PartitionDir("my.topic_with-dashes", 12, "live")),
    ("__cluster_metadata-0", PartitionDir("__cluster_metadata", 0, "live")),
    ("orders-3.0123456789abcdef0123456789abcdef-delete", PartitionDir("orders", 3, "delete")),
    ("orders-3.0123456789abcdef0123456789abcdef-future", PartitionDir("orders", 3, "future")),
    ("orders-3.0123456789abcdef0123456789abcdef-stray", PartitionDir("orders", 3, "stray")),
    ("a.b-1.c-2.0123456789abcdef0123456789abcdef-delete", PartitionDir("a.b-1.c", 2, "delete")),
    ("/copy/b1/data/orders-7/", PartitionDir("orders", 7, "live")),
    ("t-+1", PartitionDir("t", 1, "live")),        # Integer.parseInt accepts a plus sign
    ("t-007", PartitionDir("t", 7, "live")),
    ("t-2147483647", PartitionDir("t", 2147483647, "live")),
])
def test_partition_dirs(name, expected):
    assert parse_partition_dir(name) == expected


@pytest.mark.parametrize("name", [
    "orders", "orders-", "-0", "orders-x", "orders-2147483648", "orders-0.abc-delete x",
    "bad name-0.0123-stray", "orders-0-delete", "", "t--1x",
    "t-\u0663", "t-1\u0663", "t-+\u0663",   # digits, but not ASCII ones: parseTopicPartitionName's pattern refuses them
])
def test_not_partition_dirs(name):
    assert parse_partition_dir(name) is None


def test_internal_topic_decoders():
    assert decoder_for_partition_dir("__transaction_state-49") is InternalTopicDecoder.TRANSACTION_LOG
    assert decoder_for_partition_dir("__consumer_offsets-0") is InternalTopicDecoder.OFFSETS
    assert decoder_for_partition_dir("__cluster_metadata-0") is InternalTopicDecoder.CLUSTER_METADATA
    assert decoder_for_partition_dir("__share_group_state-1") is InternalTopicDecoder.SHARE_GROUP_STATE
    assert decoder_for_partition_dir(
        "__consumer_offsets-5.0123456789abcdef0123456789abcdef-future") is InternalTopicDecoder.OFFSETS
    assert decoder_for_partition_dir("orders-0") is None
    assert decoder_for_partition_dir("__consumer_offsets") is None
    assert InternalTopicDecoder.TRANSACTION_LOG.value == "--transaction-log-decoder"


JAVA_PARSER = """
import java.io.File;
import org.apache.kafka.storage.internals.log.LocalLog;
public class ParseDirs {
    public static void main(String[] args) {
        for (String a : args) {
            try {
                var tp = LocalLog.parseTopicPartitionName(new File(a));
                System.out.println(tp.topic() + "|" + tp.partition());
            } catch (Exception e) {
                System.out.println("error");
            }
        }
    }
}
"""

DIR_NAMES = [
    "orders-0", "my.topic_with-dashes-12", "__cluster_metadata-0", "orders-3.0123abc-delete",
    "orders-3.0123456789abcdef0123456789abcdef-future", "orders-3.x-stray", "a.b-1.c-2.0123-delete",
    "t-+1", "orders", "orders-", "-0", "orders-x", "orders-2147483648", "orders-0-delete", "t--1x",
    "t-0.a.b-delete",
]


@pytest.mark.kafka
@requires_jdk
def test_partition_dirs_like_kafka(tmp_path):
    proc = run_java_source(tmp_path, JAVA_PARSER, *DIR_NAMES)
    assert proc.returncode == 0, text(proc.stderr)
    ours = []
    for name in DIR_NAMES:
        parsed = parse_partition_dir(name)
        ours.append("error" if parsed is None else f"{parsed.topic}|{parsed.partition}")
    assert text(proc.stdout).splitlines() == ours


def test_real_fixture_names():
    files = [f for f in FIXTURES.rglob("*") if f.is_file()]
    if not files:
        pytest.skip("no fixture cluster under fixtures/ yet")
    kinds = {classify(str(f)).kind for f in files}
    assert Kind.LOG_SEGMENT in kinds
    for f in files:
        fk = classify(str(f))
        if fk.kind in (Kind.LOG_SEGMENT, Kind.OFFSET_INDEX, Kind.TIME_INDEX, Kind.TXN_INDEX):
            assert parse_partition_dir(f.parent.name) is not None, f


# --- topic names (Topic.validate) ---------------------------------------------------------

LEGAL_TOPICS = ["a", "orders", "my.topic_with-dashes", "__transaction_state", "...", ".a", "a..", "-", "_",
                "0", "x" * TOPIC_MAX_LENGTH]
ILLEGAL_TOPICS = ["", ".", "..", "x" * (TOPIC_MAX_LENGTH + 1), "x" * 1000, "a\n", "\na", "a b", "a\tb", "a\x00",
                  "caf\u00e9", "\u0663", "\uff41", "hang$(touch PWNED)"]


def test_the_longest_topic_name_is_249_characters():
    assert TOPIC_MAX_LENGTH == 249
    assert is_legal_topic("x" * 249) and not is_legal_topic("x" * 250)


@pytest.mark.parametrize("topic", LEGAL_TOPICS)
def test_legal_topics(topic):
    assert is_legal_topic(topic)


@pytest.mark.parametrize("topic", ILLEGAL_TOPICS, ids=repr)
def test_illegal_topics(topic):
    assert not is_legal_topic(topic)


@pytest.mark.parametrize("char", sorted(set(string.punctuation + string.whitespace) - set("._-")))
def test_every_other_ascii_punctuation_or_space_is_illegal_anywhere(char):
    for topic in (char, f"a{char}", f"{char}a", f"a{char}b"):
        assert not is_legal_topic(topic), topic


def test_only_letters_digits_dot_underscore_dash_are_legal():
    legal = {chr(c) for c in range(128) if is_legal_topic(f"a{chr(c)}")}
    assert legal == set(string.ascii_letters + string.digits + "._-")


JAVA_TOPIC_VALIDATOR = """
import org.apache.kafka.common.internals.Topic;
public class ValidTopics {
    public static void main(String[] args) {
        for (String a : args) System.out.println(Topic.isValid(a));
    }
}
"""


@pytest.mark.kafka
@requires_jdk
def test_topic_names_like_kafka(tmp_path):
    names = LEGAL_TOPICS + [t for t in ILLEGAL_TOPICS if "\x00" not in t] + [
        f"a{c}" for c in sorted(set(string.punctuation) - set("._-"))]
    proc = run_java_source(tmp_path, JAVA_TOPIC_VALIDATOR, *names)
    assert proc.returncode == 0, text(proc.stderr)
    assert text(proc.stdout).splitlines() == [str(is_legal_topic(n)).lower() for n in names]
