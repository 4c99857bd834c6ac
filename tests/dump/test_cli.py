"""The `logscan dump` command line: options, auto decoder, JSON output, exit statuses."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from logscan.cli import main

from .corpus import build_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    return root, build_corpus(str(root))


def run(*args):
    return CliRunner().invoke(main, ["dump", *args])


def test_help_documents_exit_codes_and_auto_decoder():
    r = CliRunner().invoke(main, ["dump", "--help"])
    assert r.exit_code == 0
    for text in ("Exit status", "141", "--no-auto-decoder", "--files", "Deliberate differences"):
        assert text in r.stdout


def test_no_files_is_a_usage_error():
    r = run()
    assert r.exit_code == 2 and "no files given" in r.stderr


def test_unknown_decoder_class_is_a_usage_error(corpus):
    _, files = corpus
    r = run("--key-decoder-class", "com.example.Nope", files["plain"][0])
    assert r.exit_code == 2 and "unknown decoder" in r.stderr


def test_files_option_and_positional_are_both_dumped_in_order(corpus):
    _, files = corpus
    log, index = files["plain"][0], files["plain"][1]
    r = run("--files", index, log)
    dumping = [l for l in r.stdout.splitlines() if l.startswith("Dumping ")]
    assert dumping == [f"Dumping {index}", f"Dumping {log}"]
    assert r.exit_code == 0


def test_auto_decoder_only_for_positional_files(corpus):
    _, files = corpus
    txn = files["transaction"][0]
    auto = run(txn).stdout
    compat = run("--files", txn).stdout
    off = run("--no-auto-decoder", txn).stdout
    assert '"transactionalId":"tx-a"' in auto
    assert "payload" not in compat and compat == off
    explicit = run("--transaction-log-decoder", "--files", txn).stdout
    assert explicit == auto


def test_explicit_decoder_wins_over_auto(corpus):
    _, files = corpus
    txn = files["transaction"][0]
    r = run("--offsets-decoder", txn)
    assert "Unknown record type" in r.stdout or "Error at offset" in r.stdout


@pytest.mark.parametrize("decoder,check", [
    ("hex", lambda line: "key: 6b30 payload: 7630" in line),
    ("text", lambda line: "key: k0 payload: v0" in line),
])
def test_key_value_decoders(corpus, decoder, check):
    _, files = corpus
    r = run("--key-decoder-class", decoder, "--value-decoder-class", decoder, files["plain"][0])
    first_record = next(l for l in r.stdout.splitlines() if l.startswith("| offset: 0 "))
    assert check(first_record)


def test_json_output_one_object_per_item(corpus):
    _, files = corpus
    log = files["plain"][0]
    text = run("--print-data-log", log).stdout.splitlines()
    r = run("--print-data-log", "--format", "json", log)
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.exit_code == 0
    assert [o["type"] for o in objs][:2] == ["file", "log"]
    batches = [o for o in objs if o["type"] == "batch"]
    records = [o for o in objs if o["type"] == "record"]
    assert len(batches) == sum(l.startswith("baseOffset:") for l in text)
    assert len(records) == sum(l.startswith("| ") for l in text)
    assert all(o["file"] == log for o in objs)
    first = batches[0]
    assert (first["base_offset"], first["last_offset"], first["count"], first["position"]) == (0, 2, 3, 0)
    assert first["delete_horizon_ms"] is None and first["is_valid"] is True
    rec0 = records[0]
    assert (rec0["key"], rec0["payload"], rec0["header_keys"]) == ("k0", "v0", ["h1", "h2"])
    marker = next(o for o in records if o.get("control", "").startswith("endTxnMarker: COMMIT"))
    assert marker["offset"] == 23 and "key" not in marker
    horizon = next(o for o in batches if o["delete_horizon_ms"] is not None)
    assert horizon["base_offset"] == 31


def test_json_for_indexes_and_snapshots(corpus):
    _, files = corpus
    by_suffix = {}
    for f in files["plain"]:
        if "mismatch" not in f:
            by_suffix.setdefault(f.rsplit(".", 1)[-1], f)  # the first of each kind
    r = run("--format", "json", by_suffix["index"], by_suffix["timeindex"], by_suffix["txnindex"],
            by_suffix["snapshot"])
    objs = [json.loads(l) for l in r.stdout.splitlines()]
    kinds = {o["type"] for o in objs}
    assert {"index_entry", "time_index_entry", "aborted_txn", "producer_entry"} <= kinds
    pe = [o for o in objs if o["type"] == "producer_entry"]
    assert pe[1]["current_txn_first_offset"] == 17 and pe[0]["current_txn_first_offset"] is None
    assert "first_sequence" not in pe[2]


def test_exit_status_for_damage_and_missing(corpus, tmp_path):
    root, files = corpus
    truncated = next(f for f in files["plain"] if f.endswith("00000000000000000100.log"))
    assert run(truncated).exit_code == 1
    assert run(str(tmp_path / "00000000000000000000.log")).exit_code == 3
    assert run(files["plain"][0]).exit_code == 0


def test_checkpoints_and_properties_in_logscan_mode_only(tmp_path):
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 17\n")
    (part / "partition.metadata").write_text("version: 0\ntopic_id: aEs1lWS7QfeA4kC5U2JqmQ\n")
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\norders 0 42\n")
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=abc\n")
    files = [str(part / "leader-epoch-checkpoint"), str(part / "partition.metadata"),
             str(tmp_path / "replication-offset-checkpoint"), str(tmp_path / "meta.properties")]
    r = run(*files)
    assert r.exit_code == 0, r.stderr
    body = [l for l in r.stdout.splitlines() if not l.startswith("Dumping ")]
    assert body == ["version: 0 entries: 2", "epoch: 0 startOffset: 0", "epoch: 3 startOffset: 17",
                    "version: 0 topicId: aEs1lWS7QfeA4kC5U2JqmQ",
                    "version: 0 entries: 1", "topic: orders partition: 0 offset: 42",
                    "version: 1 nodeId: 3 clusterId: abc directoryId: None"]
    compat = run("--files", files[1])
    assert compat.stdout.splitlines() == [f"Dumping {files[1]}"]
    assert f"Ignoring unknown file {files[1]}" in compat.stderr
    bad = tmp_path / "log-start-offset-checkpoint"
    bad.write_text("0\n5\norders 0 1\n")
    r = run(str(bad))
    assert r.exit_code == 1 and f"logscan: {bad}: byte " in r.stderr


def test_json_findings_on_stderr(corpus):
    _, files = corpus
    truncated = next(f for f in files["plain"] if f.endswith("00000000000000000100.log"))
    r = run("--format", "json", truncated)
    assert r.exit_code == 1
    (finding,) = [json.loads(l) for l in r.stderr.splitlines()]
    assert finding == {"type": "finding", "file": truncated, "position": 73, "length": 112,
                       "reason": "truncated",
                       "message": "last batch is truncated: 112 bytes left of a longer batch"}
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert out[-1] == {"type": "invalid_bytes", "file": truncated, "count": 112}


def test_dump_imports_only_what_a_batch_dump_needs(corpus):
    """`logscan dump FILE` is a start-up-bound command (a JVM-free kafka-dump-log): running it
    must not import the scan, the state rules, Spark, Arrow, rich, the codecs or the crc32c
    package's version lookup (importlib.metadata). Checked in a fresh interpreter."""
    import subprocess
    import sys

    _, files = corpus
    log = next(f for f in files["plain"] if f.endswith("orders-0/00000000000000000000.log"))
    probe = ("import sys\nfrom logscan.cli import main\n"
             "try:\n    main(['dump', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe, log], capture_output=True, text=True,
                          timeout=120)
    assert "baseOffset: 0 " in proc.stdout
    loaded = set(proc.stderr.splitlines()[-1].split())
    forbidden = {"pyarrow", "pyspark", "rich", "crc32c", "importlib.metadata", "tempfile", "json",
                 "logscan.scan", "logscan.state", "logscan.format.txnlog",
                 "logscan.format.metadata", "logscan.format.offsets", "logscan.format.control"}
    assert not loaded & forbidden, sorted(loaded & forbidden)
