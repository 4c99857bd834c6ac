"""`logscan dump --kafka-version V` against kafka-dump-log of release V itself (3.9.2, 4.1.1,
4.4.0), on the encoder-made corpus of every kind of file (tests/dump/corpus.py) with the
options of test_differential, and on `__transaction_state` records of every shape one file
each (3.9.2's tool dies on the ones 4.1.1 reports as errors). stdout must be equal line for
line (where the tool dies, up to where it stopped), the tool's stderr blocks equal once
logscan's own findings are left out, the exit status equal. One JVM per release runs every
case (tools/kafka/cluster.run_java_tools). The recorded fixture files are compared per
release in test_fixtures.py (each cluster's own release) and test_kafka_releases.py (3.9.2's
and 4.4.0's tools on the 4.1.1 clusters' files)."""

from __future__ import annotations

import struct

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import KAFKA_VERSIONS, RELEASES, scala_hash_set_order
from logscan.testing.encoder import Rec, encode_batch
from tools.kafka.cluster import jars_present, libs_for, run_java_tools

from .corpus import build_corpus
from .kafkatool import logscan_kafka_stderr_lines
from .test_differential import DEEP_KILLERS, PLAIN_OPTIONS, SANITY_KILLERS

pytestmark = pytest.mark.kafka

T0 = 1_700_000_000_000


def _release(version: str) -> str:
    release = RELEASES[version]
    if not jars_present(libs_for(release), release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    return release


def _txn_records() -> list[tuple]:
    """(key, value) of `__transaction_state` records: good ones of every state and version,
    tombstones, and the damage test_txnlog.test_render_matches_kafka_dump_log covers."""
    from tests.format.test_txnlog import FULL, K, KEY_TX1, TXN_V1, V, VALUE_V0_EMPTY, VALUE_V1

    many = [{"topic": t, "partitionIds": list(range(n))} for t, n in (("orders", 24), ("a", 3), ("zz-\u00e9", 9))]
    out = [(K(f"s{status}"), V(version, **{**FULL, "transactionStatus": status}))
           for status in range(8) for version in (0, 1)]
    out += [
        (K('tx\n\x01\x1f"\\'), V(1, **FULL)), (KEY_TX1, VALUE_V1), (KEY_TX1, VALUE_V0_EMPTY), (KEY_TX1, None),
        (K("\u00e9\u2028/\U0001F600"), V(1, **{**FULL, "transactionPartitions": None})),
        (K("empty-null"), V(1, **{**FULL, "transactionStatus": 0, "transactionPartitions": None})),
        (K("many"), V(1, **{**FULL, "transactionPartitions": many})),
        (K("dup"), V(0, **{**FULL, "transactionPartitions": [{"topic": "t", "partitionIds": [1, 1, 0]}]})),
        (K("x"), V(1, **{**FULL, "transactionStatus": 9})),
        (KEY_TX1, VALUE_V1[:9]), (KEY_TX1, VALUE_V1[:-1]), (KEY_TX1, b"\x00"),
        (b"\x00\x01xx", None), (b"\x00", VALUE_V1), (KEY_TX1, b"\x00\x02" + TXN_V1),
        (b"\x00\x00\x00\x09ab", VALUE_V1), (KEY_TX1, VALUE_V0_EMPTY[:30]),
        (KEY_TX1, b"\x00\x00" + bytes(15) + b"\x7f\xff\xff\xff"), (KEY_TX1 + b"junk", VALUE_V1 + b"junk"),
        (struct.pack(">h", 1) + b"\x00\x01x", None), (None, VALUE_V1),
    ]
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    files = build_corpus(str(root))
    txn = []
    for i, (key, value) in enumerate(_txn_records()):
        path = root / "records" / f"__transaction_state-{i}" / "00000000000000000000.log"
        path.parent.mkdir(parents=True)
        path.write_bytes(encode_batch([Rec(value, key, (), T0 + i)], base_offset=i))
        txn.append(str(path))
    return files, txn


def _cases(files: dict, txn: list[str]) -> list[list[str]]:
    """kafka-dump-log argument lists: the corpus with each option set, then each record file."""
    cases = []
    for options in PLAIN_OPTIONS:
        deep = any(o in options for o in ("--deep-iteration", "--print-data-log", "--value-decoder-class",
                                          "--key-decoder-class"))
        chosen = [f for f in files["plain"] if not (deep and _one_of(f, DEEP_KILLERS))
                  and not ("--index-sanity-check" in options and _one_of(f, SANITY_KILLERS))]
        cases.append(["--files", ",".join(chosen), *options])
    for options in (["--transaction-log-decoder"], ["--deep-iteration"], ["--cluster-metadata-decoder"]):
        for kind in ("transaction", "metadata"):
            cases.append(["--files", ",".join(files[kind]), *options])
    cases += [["--transaction-log-decoder", "--files", f] for f in txn]
    return cases


def _one_of(path: str, relative: set[str]) -> bool:
    return any(path.endswith("/" + r) for r in relative)


def _kafka_stderr(text: str) -> list[str]:
    """The tool's stderr lines before any stack trace (where it died), without SLF4J's banner."""
    out = []
    for line in text.splitlines():
        if line.startswith(("Exception in thread", "\tat ", "Caused by:", "\t... ")):
            break
        if not line.startswith("SLF4J:"):
            out.append(line)
    return out


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_each_version_prints_that_releases_kafka_dump_log_text(corpus, version):
    release = _release(version)
    files, txn = corpus
    cases = _cases(files, txn)
    runs = run_java_tools([("kafka-dump-log", args) for args in cases], libs=libs_for(release))
    died = 0
    for args, kafka in zip(cases, runs):
        ours = CliRunner().invoke(main, ["dump", "--kafka-version", version, *args])
        want = kafka.stdout.splitlines()
        got = ours.stdout_bytes.decode("utf-8", "replace").splitlines()
        if kafka.returncode != 0:
            # The tool died mid-line (its record line has no key or payload): logscan printed
            # that line whole, reported the record and went on.
            died += 1
            assert got[:len(want)] == want, args
            assert ours.exit_code == 1 and "logscan: " in ours.stderr, (args, ours.stderr)
            continue
        assert got == want, args
        assert logscan_kafka_stderr_lines(ours.stderr_bytes) == _kafka_stderr(kafka.stderr), args
        # the corpus has damage Kafka goes past silently (logscan says so: exit 1, with its lines);
        # index entries that disagree with the log are warnings in every release: never exit 1 alone
        said = [line for line in ours.stderr.splitlines() if line.startswith("logscan: ")]
        assert ours.exit_code == 0 or (ours.exit_code == 1 and [
            line for line in said if "index entries disagree with the log" not in line]), (args, ours.stderr)
    # 3.9.2 dies on the damaged transaction log records (and 4.1.1/4.4.0 on the key-less one)
    assert died >= (10 if version == "3.9" else 1), died


def test_the_scala_hash_set_order_is_that_of_3_9_2_on_many_partitions(corpus):
    # 35 partitions over three topics: the set's table doubles twice, and slots hold several.
    _release("3.9")
    _, txn = corpus
    many = [f for f in txn if "many" in open(f, "rb").read().decode("latin-1")]
    [run] = run_java_tools([("kafka-dump-log", ["--transaction-log-decoder", "--files", many[0]])],
                           libs=libs_for("3.9.2"))
    listed = run.stdout.split("partitions=[", 1)[1].split("]", 1)[0].split(",")
    parts = [("orders", p) for p in range(24)] + [("a", p) for p in range(3)] + [("zz-\u00e9", p) for p in range(9)]
    assert listed == [f"{t}-{p}" for t, p in scala_hash_set_order(parts)]
    assert listed != sorted(listed) and len(listed) == 36


def test_the_json_output_is_the_same_for_every_version(corpus):
    files, txn = corpus
    args = ["--format", "json", "--transaction-log-decoder", "--files", ",".join(txn[:20] + files["metadata"])]
    outputs = {v: CliRunner().invoke(main, ["dump", "--kafka-version", v, *args]).stdout for v in KAFKA_VERSIONS}
    assert len(set(outputs.values())) == 1 and '\\"transactionStatus\\":1' in outputs["4.4"]


def test_the_default_is_the_newest(corpus):
    files, _ = corpus
    snapshot = [f for f in files["plain"] if f.endswith(".snapshot")]
    default = CliRunner().invoke(main, ["dump", "--files", ",".join(snapshot)])
    newest = CliRunner().invoke(main, ["dump", "--kafka-version", KAFKA_VERSIONS[-1], "--files", ",".join(snapshot)])
    old = CliRunner().invoke(main, ["dump", "--kafka-version", "4.1", "--files", ",".join(snapshot)])
    assert default.stdout == newest.stdout != old.stdout
    bad = CliRunner().invoke(main, ["dump", "--kafka-version", "3.8", "--files", ",".join(snapshot)])
    assert bad.exit_code == 2 and "'3.8' is not one of" in bad.output
