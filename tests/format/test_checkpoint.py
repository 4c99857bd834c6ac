"""Text checkpoint files, partition.metadata, meta.properties and .kafka_cleanshutdown."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from logscan.format.checkpoint import (
    CheckpointError, LeaderEpochEntry, OffsetCheckpointEntry, _common_offset_checkpoint, _parse_offset_frame, java_split, parse_clean_shutdown,
    parse_leader_epoch_checkpoint, parse_meta_properties, parse_offset_checkpoint,
    parse_partition_metadata, text_lines)
from tests.kafkajava import REPO, requires_jdk, run_java_source, text

FIXTURES = REPO / "fixtures"


def test_offset_checkpoint_literal():
    data = b"0\n3\nmy.topic_a-b 0 42\n__transaction_state 17 9223372036854775807\nt-1 3 -1\n"
    cp = parse_offset_checkpoint(data)
    assert (cp.version, cp.count) == (0, 3)
    assert cp.entries == (
        OffsetCheckpointEntry(3, 4, "my.topic_a-b", 0, 42),
        OffsetCheckpointEntry(4, 22, "__transaction_state", 17, 2**63 - 1),
        OffsetCheckpointEntry(5, 65, "t-1", 3, -1))


def test_leader_epoch_checkpoint_literal_with_crlf_and_tabs():
    cp = parse_leader_epoch_checkpoint("0\r\n2\r\n0\t0\n5   1200  \n")
    assert cp.entries == (LeaderEpochEntry(3, 6, 0, 0), LeaderEpochEntry(4, 10, 5, 1200))


def test_empty_and_version_only_files_are_empty_checkpoints():
    assert parse_offset_checkpoint(b"").entries == ()
    cp = parse_offset_checkpoint(b"0\n")
    assert (cp.version, cp.count, cp.entries) == (0, None, ())
    assert parse_offset_checkpoint(b"0\n0\n").entries == ()


@pytest.mark.parametrize("data, line, position", [
    (b"1\n0\n", 1, 0),                       # unknown version
    (b"0 \n0\n", 1, 0),                      # parseInt does not trim
    (b"0\nx\n", 2, 2),
    (b"0\n1\nt 0\n", 3, 4),                  # two fields
    (b"0\n1\n t 0 5\n", 3, 4),               # leading blank -> empty first field in Java
    (b"0\n2\nt 0 5\n\nt 1 6\n", 4, 10),      # blank line among entries
    (b"0\n2\nt 0 5\n", 2, 2),                # count mismatch, located at the count line
    (b"0\n1\nt 0 5\nt 1 6\n", 2, 2),
    (b"0\n1\nt zero 5\n", 3, 4),
    (b"0\n1\nt 0 99999999999999999999\n", 3, 4),
    (b"0\n1\nt 0 5\xff\n", 3, 9),            # not UTF-8: byte position of the bad byte
    (b"0\n1\nt 0 " + b"1" * 5000 + b"\n", 3, 4),   # more digits than Python's int() takes from text
])
def test_offset_checkpoint_errors_are_located(data, line, position):
    with pytest.raises(CheckpointError) as info:
        parse_offset_checkpoint(data)
    assert (info.value.line, info.value.position) == (line, position)


def test_numbers_with_many_leading_zeros_are_read_as_kafka_reads_them():
    # Long.parseLong takes any count of leading zeros; the significant digits decide the range
    cp = parse_offset_checkpoint(b"0\n1\nt +000 -" + b"0" * 5000 + b"9223372036854775808\n")
    assert (cp.entries[0].partition, cp.entries[0].offset) == (0, -2**63)


def test_java_split_semantics():
    assert java_split("a  b\tc  ") == ["a", "b", "c"]
    assert java_split(" a b") == ["", "a", "b"]
    assert java_split("") == [""]


@settings(deadline=None)  # a loaded machine must not fail a test: no timed tests
@given(st.lists(st.tuples(st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True),
                          st.integers(0, 2**31 - 1), st.integers(-2**63, 2**63 - 1)), max_size=8))
def test_offset_checkpoint_round_trip(rows):
    text = f"0\n{len(rows)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in rows)
    cp = parse_offset_checkpoint(text)
    assert [(e.topic, e.partition, e.offset) for e in cp.entries] == rows
    lines = text_lines(text)
    assert [e.position for e in cp.entries] == [l.position for l in lines[2:]]


def test_partition_metadata():
    pm = parse_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    assert (pm.version, pm.topic_id) == (0, "AAAAAAAAAAAAAAAAAAAAAQ")
    assert parse_partition_metadata("version: 3\ntopic_id:   zzzzzzzzzzzzzzzzzzzzzw\n").version == 3
    for bad, line in [(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 2),    # zero UUID
                      (b"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 1),
                      (b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 1),     # needs ':' + blank
                      (b"version: 0\ntopic_id: not-a-uuid", 2),
                      (b"version: 0\n", 2), (b"", 1)]:
        with pytest.raises(CheckpointError) as info:
            parse_partition_metadata(bad)
        assert info.value.line == line, bad


def test_meta_properties_kraft_and_zk():
    data = (b"#\n#Sun Nov 22 20:00:00 UTC 2026\nnode.id=1\ndirectory.id=ujpkQKYrQ4WLkUvgdeN0Bw\n"
            b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")
    mp = parse_meta_properties(data)
    assert (mp.version, mp.node_id, mp.cluster_id, mp.directory_id) == (
        1, 1, "MkU3OEVBNTcwNTJENDM2Qk", "ujpkQKYrQ4WLkUvgdeN0Bw")
    assert ("node.id", "1") in mp.properties
    zk = parse_meta_properties("version = 0\nbroker.id : 7\ncluster.id a\\\n  b\n")
    assert (zk.version, zk.node_id, zk.cluster_id) == (0, 7, "ab")
    with pytest.raises(CheckpointError):
        parse_meta_properties(b"version=1\nnode.id=1\n")               # no cluster.id
    with pytest.raises(CheckpointError) as info:
        parse_meta_properties(b"version=1\ncluster.id=x\nnode.id=one\n")
    assert info.value.line == 3
    with pytest.raises(CheckpointError):
        parse_meta_properties(b"version=2\n")
    with pytest.raises(CheckpointError):       # loadRequiredIntProp does not trim
        parse_meta_properties(b"version=1 \ncluster.id=x\nnode.id=1 \n")
    # Properties.load(InputStream) reads ISO-8859-1, with \\u escapes for the rest
    latin = parse_meta_properties(b"version=1\ncluster.id=caf\xe9\\u00e9\nnode.id=2\n")
    assert latin.cluster_id == "caf\u00e9\u00e9"


def test_clean_shutdown():
    assert parse_clean_shutdown(b'{"version":0,"brokerEpoch":42}').broker_epoch == 42
    assert parse_clean_shutdown(b"") == parse_clean_shutdown(b"  \n")
    assert parse_clean_shutdown(b"").version is None
    for bad in (b"{", b"[1]", b'{"brokerEpoch":"x"}', b"\xff"):
        with pytest.raises(CheckpointError):
            parse_clean_shutdown(bad)


# --- against Kafka 4.1.1's own readers --------------------------------------------------------

JAVA_READER = """
import java.io.File;
import java.nio.file.*;
import org.apache.kafka.server.common.CheckpointFile;
import org.apache.kafka.storage.internals.checkpoint.*;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
public class ReadCheckpoints {
    public static void main(String[] args) throws Exception {
        for (String a : args) {
            String kind = a.substring(0, a.indexOf(':'));
            File f = new File(a.substring(a.indexOf(':') + 1));
            try {
                Object result;
                if (kind.equals("offsets")) result = new OffsetCheckpointFile(f, null).read().size();
                else if (kind.equals("epochs")) result = new LeaderEpochCheckpointFile(f, new LogDirFailureChannel(1)).read().size();
                else result = new PartitionMetadataFile(f, new LogDirFailureChannel(1)).read().topicId();
                System.out.println("ok " + result);
            } catch (Throwable t) {
                System.out.println("error");
            }
        }
    }
}
"""

KAFKA_CASES = [
    ("offsets", b"0\n2\nt 0 5\nu.v_w-x 1 6\n"), ("offsets", b""), ("offsets", b"0\n"),
    ("offsets", b"0 \n0\n"), ("offsets", b"0\n1\n t 0 5\n"), ("offsets", b"0\n1\nt 0 5 \n"),
    ("offsets", b"0\n2\nt 0 5\n\n"), ("offsets", b"0\n1\nt 0 5\n\n"), ("offsets", b"0\n+1\nt +0 -5\n"),
    ("offsets", b"1\n0\n"), ("offsets", b"0\n1\nt\t0\t5\r\n"), ("offsets", b"0\n2\nt 0 5\n"),
    ("epochs", b"0\n2\n0 0\n3 100\n"), ("epochs", b"0\n1\n0 0 0\n"), ("epochs", b"0\n1\n2147483648 0\n"),
    ("metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"),
    ("metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA"),
    ("metadata", b"vers: 2\nx:\tAAAAAAAAAAAAAAAAAAAAAQ\nextra\n"),
    ("metadata", b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"),
    ("metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ=="),
    ("metadata", b"version: 0\ntopic_id: AAAA"),
]


def ours(kind: str, data: bytes) -> str:
    parse = {"offsets": parse_offset_checkpoint, "epochs": parse_leader_epoch_checkpoint,
             "metadata": parse_partition_metadata}[kind]
    try:
        result = parse(data)
    except CheckpointError:
        return "error"
    return f"ok {result.topic_id if kind == 'metadata' else len(result.entries)}"


@pytest.mark.kafka
@requires_jdk
def test_accept_and_reject_like_kafka(tmp_path):
    args = []
    for i, (kind, data) in enumerate(KAFKA_CASES):
        sub = tmp_path / f"case{i}" / "t-0"
        sub.mkdir(parents=True)
        (sub / "file").write_bytes(data)
        args.append(f"{kind}:{sub / 'file'}")
    # Kafka logs the rejected files at ERROR; keep its log out of the checked stdout.
    proc = run_java_source(tmp_path, JAVA_READER, *args, jvm_opts=["-Dlog4j2.level=OFF"])
    assert proc.returncode == 0, text(proc.stderr)
    assert text(proc.stdout).splitlines() == [ours(kind, data) for kind, data in KAFKA_CASES]


def test_real_fixture_checkpoints_parse():
    files = [f for f in FIXTURES.rglob("*") if f.is_file() and f.name in (
        "recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint", "leader-epoch-checkpoint", "partition.metadata", "meta.properties",
        ".kafka_cleanshutdown")]
    if not files:
        pytest.skip("no real checkpoint files under fixtures/ yet")
    for f in files:
        data = f.read_bytes()
        if f.name == "leader-epoch-checkpoint":
            parse_leader_epoch_checkpoint(data)
        elif f.name == "partition.metadata":
            parse_partition_metadata(data)
        elif f.name == "meta.properties":
            props = parse_meta_properties(data)
            # version 1 (KRaft); version 0 with broker.id only in the ZooKeeper-mode copy
            zookeeper = "zookeeper" in f.relative_to(FIXTURES).parts
            assert props.version == (0 if zookeeper else 1) and props.cluster_id and props.node_id is not None, f
        elif f.name == ".kafka_cleanshutdown":
            assert parse_clean_shutdown(data).broker_epoch is not None
        else:
            parse_offset_checkpoint(data)


@settings(deadline=None)
@given(st.binary(max_size=80) | st.text(alphabet=" \t\r\n0123456789-+:=#!\\abxyz_.", max_size=80))
def test_fuzz_only_values_or_checkpoint_errors(data):
    """Invariant: every parser returns a value or raises CheckpointError located inside the input."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    for parse in (parse_offset_checkpoint, parse_leader_epoch_checkpoint, parse_partition_metadata,
                  parse_meta_properties, parse_clean_shutdown):
        try:
            parse(data)
        except CheckpointError as err:
            assert 0 <= err.position <= size


# --- the common file's one-pass reader (issue 30) --------------------------------------------

def _outcome(parse, data):
    try:
        return parse(data)
    except CheckpointError as err:
        return ("error", str(err), err.line, err.position)


def test_common_offset_checkpoint_reads_what_kafka_writes_in_one_pass():
    data = b"0\n4\n__transaction_state 0 15674\nbench-000 17 -1\nt.x_y-z 2147483647 9223372036854775807\nu 0 0"
    common = _common_offset_checkpoint(data)
    assert common is not None and common == _parse_offset_frame(data) == parse_offset_checkpoint(data)
    assert common.entries[1] == OffsetCheckpointEntry(4, 32, "bench-000", 17, -1)


@pytest.mark.parametrize("data", [
    b"", b"0\n", b"0\n0\n", b"00\n0\n", b"+0\n0\n", b"0\n+1\nt 0 5\n", b"0\n1\nt +0 5\n", b"0\n1\nt 00 5\n",
    b"0\n1\nt 0 -0005\n", b"0\n1\nt\t0\t5\n", b"0\r\n1\r\nt 0 5\r\n", b"0\n1\nt  0 5\n", b"0\n1\n t 0 5\n",
    b"0\n1\nt 0 5 \n", b"0\n1\nt 2147483648 5\n", b"0\n1\nt 0 9223372036854775808\n",
    b"0\n1\nt 0 -9223372036854775809\n", b"0\n2\nt 0 5\n\n", b"0\n2\nt 0 5\n", b"0\n1\nt\x0b 0 5\n",
    b"0\n1\nt\x01 0 5\n", "0\n1\nt\u00e9 0 5\n".encode(), b"0\n1\nt 0 5\xff\n", b"1\n0\n",
])
def test_common_offset_checkpoint_leaves_every_other_form_to_the_frame_reader(data):
    """Anything but Kafka's own form is read (or refused, located) by the line reader."""
    assert _common_offset_checkpoint(data) is None or _common_offset_checkpoint(data) == _parse_offset_frame(data)
    assert _outcome(parse_offset_checkpoint, data) == _outcome(_parse_offset_frame, data)


@settings(deadline=None)
@given(st.lists(st.tuples(st.text(alphabet="ab.\t\x0b\x01 é", min_size=0, max_size=4),
                          st.sampled_from(["0", "7", "+1", "-1", "00", "2147483648", ""]),
                          st.sampled_from(["0", "-1", "-0", "9223372036854775807", "9223372036854775808", "x", ""])),
                max_size=5),
       st.integers(-1, 6), st.sampled_from(["\n", "\r\n", " \n"]), st.booleans())
def test_common_offset_checkpoint_agrees_with_the_frame_reader(rows, count, end, last_end):
    lines = ["0", str(len(rows) if count < 0 else count)] + [f"{t} {p} {o}" for t, p, o in rows]
    data = (end.join(lines) + (end if last_end else "")).encode()
    assert _outcome(parse_offset_checkpoint, data) == _outcome(_parse_offset_frame, data)
