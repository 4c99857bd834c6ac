"""`logscan dump` against the real kafka-dump-log 4.1.1 on encoder-made files of every kind.

stdout must be equal line for line; kafka-dump-log's stderr blocks (index mismatches, time
index errors, non-consecutive offsets, "Ignoring unknown file") must be equal too once
logscan's own "logscan: ..." findings are left out.
"""

from __future__ import annotations

import os

import pytest

from .corpus import build_corpus
from .kafkatool import (kafka_stderr_lines, logscan_kafka_stderr_lines, requires_kafka,
                        run_kafka_dump_log, run_logscan_dump)

pytestmark = [pytest.mark.kafka, requires_kafka]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    files = build_corpus(str(root))
    rel = {k: [os.path.relpath(f, root) for f in v] for k, v in files.items()}
    return str(root), rel


# Files kafka-dump-log dies on with deep iteration (a corrupt record after a CRC flip) or
# with --index-sanity-check (a time index failing the check); see test_where_kafka_dies.
DEEP_KILLERS = {"crc-0/00000000000000000000.log"}
SANITY_KILLERS = {"orders-0/mismatch/00000000000000000000.timeindex",
                  "active-0/00000000000000000000.timeindex"}

PLAIN_OPTIONS = [
    [],
    ["--deep-iteration"],
    ["--print-data-log"],
    ["--deep-iteration", "--skip-record-metadata"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--verify-index-only"],
    ["--index-sanity-check"],
    ["--max-bytes", "700"],
    ["--max-bytes", "700", "--deep-iteration"],
    ["--max-message-size", "1000"],
    ["--value-decoder-class"],
    ["--key-decoder-class", "org.apache.kafka.tools.api.StringDecoder", "--print-data-log"],
]


def _compare(root: str, files: list[str], options: list[str]) -> None:
    args = ["--files", ",".join(files), *options]
    kafka = run_kafka_dump_log(args, root)
    ours = run_logscan_dump(args, root)
    assert kafka.returncode == 0, kafka.stderr.decode()[-2000:]
    assert ours.stdout.decode().splitlines() == kafka.stdout.decode().splitlines()
    assert logscan_kafka_stderr_lines(ours.stderr) == kafka_stderr_lines(kafka.stderr)


@pytest.mark.parametrize("options", PLAIN_OPTIONS, ids=lambda o: " ".join(o) or "default")
def test_plain_files(corpus, options):
    root, files = corpus
    deep = any(o in options for o in ("--deep-iteration", "--print-data-log", "--value-decoder-class",
                                      "--key-decoder-class"))
    chosen = [f for f in files["plain"] if not (deep and f in DEEP_KILLERS)
              and not ("--index-sanity-check" in options and f in SANITY_KILLERS)]
    _compare(root, chosen, options)


@pytest.mark.parametrize("options", [
    ["--transaction-log-decoder"],
    ["--transaction-log-decoder", "--skip-record-metadata"],
    ["--offsets-decoder"],  # every record is an unknown type or an error for this decoder
    ["--print-data-log"],
    ["--deep-iteration"],
], ids=lambda o: " ".join(o))
def test_transaction_log(corpus, options):
    root, files = corpus
    _compare(root, files["transaction"], options)


@pytest.mark.parametrize("options", [
    ["--cluster-metadata-decoder"],
    ["--cluster-metadata-decoder", "--skip-record-metadata"],
    ["--deep-iteration"],
    [],
], ids=lambda o: " ".join(o) or "default")
def test_cluster_metadata(corpus, options):
    root, files = corpus
    _compare(root, files["metadata"], options)


def test_auto_decoder_matches_explicit_decoder(corpus):
    """FILE... in __transaction_state-N equals kafka-dump-log --transaction-log-decoder."""
    root, files = corpus
    kafka = run_kafka_dump_log(["--transaction-log-decoder", "--files", files["transaction"][0]], root)
    ours = run_logscan_dump([files["transaction"][0]], root)
    assert ours.stdout.decode().splitlines() == kafka.stdout.decode().splitlines()
    plain = run_logscan_dump(["--no-auto-decoder", files["transaction"][0]], root)
    assert "payload" not in plain.stdout.decode()


@pytest.mark.parametrize("file,options", [
    ("crc-0/00000000000000000000.log", ["--deep-iteration"]),
    ("orders-0/mismatch/00000000000000000000.timeindex", ["--index-sanity-check"]),
    ("zero-0/00000000000000000000.log", []),
])
def test_where_kafka_dies(corpus, file, options):
    """Kafka prints a stack trace and exits 1; logscan prints what Kafka printed before
    dying, then reports the damage as a located finding and exits 1."""
    root, _ = corpus
    args = ["--files", file, *options]
    kafka = run_kafka_dump_log(args, root)
    ours = run_logscan_dump(args, root)
    assert kafka.returncode == 1
    assert ours.returncode == 1
    kafka_lines = kafka.stdout.decode().splitlines()
    assert ours.stdout.decode().splitlines()[:len(kafka_lines)] == kafka_lines
    findings = [l for l in ours.stderr.decode().splitlines() if l.startswith("logscan: ")]
    assert findings and all(file in l for l in findings)


def test_carriage_returns_in_records_are_printed_as_is(tmp_path):
    """kafka-dump-log prints a CR inside a key or payload as the byte itself; logscan must
    too, and the harness's in-process runner (which records the fixtures) must hand it back
    untranslated."""
    from logscan.testing.encoder import Rec, encode_batch
    from tools.kafka.cluster import run_java_tools

    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(encode_batch([Rec(b"a\rb\r\nc\n", b"k\r", (), 1_700_000_000_000)]))
    args = ["--print-data-log", "--files", str(segment)]
    kafka = run_kafka_dump_log(args, str(tmp_path))
    ours = run_logscan_dump(args, str(tmp_path))
    assert kafka.returncode == 0 and b" key: k\r payload: a\rb\r\nc\n\n" in kafka.stdout
    assert ours.stdout == kafka.stdout
    (in_process,) = run_java_tools([("kafka-dump-log", args)])
    assert in_process.stdout.encode("utf-8") == kafka.stdout


@pytest.mark.parametrize("options", [[], ["--verify-index-only"]], ids=["default", "verify-index-only"])
def test_index_entries_disagreeing_with_the_log_are_warnings_as_in_kafka(corpus, options):
    """kafka-dump-log 3.9.2, 4.1.1 and 4.4.0 print their "Mismatches in" and time index blocks
    for such entries and exit 0; logscan prints the same blocks, one note per file, and exits 0
    too with each --kafka-version (it exited 1 before: issue 32)."""
    from tools.kafka.cluster import jars_present, libs_for, run_java_tool

    root, files = corpus
    chosen = [f for f in files["plain"] if "/mismatch/" in f and f.endswith((".index", ".timeindex"))]
    assert len(chosen) == 2
    args = ["--files", ",".join(chosen), *options]
    kafka = run_kafka_dump_log(args, root)
    ours = run_logscan_dump(args, root)
    assert kafka.returncode == ours.returncode == 0, ours.stderr.decode()
    warned = kafka_stderr_lines(kafka.stderr)
    assert [l for l in warned if l.startswith("Mismatches in :")] and [
        l for l in warned if l.startswith("Found out of order timestamp in :")]
    assert logscan_kafka_stderr_lines(ours.stderr) == warned
    notes = [l for l in ours.stderr.decode().splitlines() if l.startswith("logscan: ")]
    assert [n.split(": file: ")[0] for n in notes] == [f"logscan: {f}" for f in chosen]
    assert all("index entries disagree with the log" in n for n in notes)
    absolute = ",".join(os.path.join(root, f) for f in chosen)
    for version, release in (("3.9", "3.9.2"), ("4.4", "4.4.0")):
        libs = libs_for(release)
        if jars_present(libs, release):
            other = run_java_tool("kafka-dump-log", "--files", absolute, *options, libs=libs)
            ours = run_logscan_dump(["--kafka-version", version, "--files", absolute, *options], root)
            assert other.returncode == ours.returncode == 0 and "Mismatches in :" in other.stderr, release


#: Malformed UTF-8 of every kind Java's decoder tells apart from Python's: encoded surrogates
#: (CESU-8), overlong forms, cut sequences, stray continuation bytes, bytes no UTF-8 has.
MALFORMED_UTF8 = [b"\xed\xa0\x80", b"\xed\xb0\x80", b"\xed\xa0\x80\xed\xb0\x80", b"\xed\xa0", b"\xed\xa0A",
                  b"\xed\x9f\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xe0\x9f\xbf", b"\xf0\x80\x80\xaf",
                  b"\xf0\x8f\xbf\xbf", b"\x80", b"\xbf\xbf", b"\xfe\xff", b"\xf5\x80\x80\x80", b"\xf4\x90\x80\x80",
                  b"\xe2\x82", b"\xe2\x82A", b"\xe2A", b"\xf0\x9f\x98", b"\xf0\x9f\x98A", b"\xf0\x9fA", b"a\xffb",
                  b"\xf0\x9f\x98\x80", b"\xe2\x82\xac\xed\xbf\xbf\xc3", b"\xf8\x88\x80\x80\x80", b"\xc3\xa9\xed"]


def test_malformed_utf8_in_keys_and_payloads_prints_javas_replacement_characters(tmp_path):
    """kafka-dump-log's StringDecoder is `new String(bytes, UTF_8)` (and a header key is decoded
    the same way): Java replaces a malformed sequence with one U+FFFD where Python's "replace"
    may write several (an encoded surrogate: one against three). Every record line must be
    Kafka's."""
    from logscan.testing.encoder import Rec, encode_batch

    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(encode_batch([Rec(v, v[::-1], ((v, b"x"), (b"ok" + v[:1], None)), 1_700_000_000_000)
                                      for v in MALFORMED_UTF8]))
    args = ["--print-data-log", "--files", str(segment)]
    kafka = run_kafka_dump_log(args, str(tmp_path))
    ours = run_logscan_dump(args, str(tmp_path))
    assert kafka.returncode == 0 and kafka.stdout.count("\ufffd".encode()) > len(MALFORMED_UTF8)
    assert ours.stdout.decode().splitlines() == kafka.stdout.decode().splitlines()
