"""The benchmark cluster generator (tools/bench/gen_cluster.py): its copy must be what it
says it is. logscan's scan finds exactly the planted hanging transactions, LSOs and log end
offsets of the manifest, with no corruption; and Kafka's own kafka-dump-log reads a sample of
its segments exactly as `logscan dump` does."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from tests.kafkajava import dump_log, requires_kafka
from tools.bench import gen_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bench") / "copy"
    gen_cluster.main(["--out", str(out), "--size-mb", "12", "--partitions", "24", "--brokers", "3",
                      "--replication", "2", "--segment-mb", "0.1", "--hanging", "4", "--seed", "7"])
    return out, json.loads((out / "manifest.json").read_text())


def test_scan_finds_what_was_planted(cluster):
    root, manifest = cluster
    result = scan([root])
    assert result.findings == []
    candidates = result.tables["hanging_candidates"]
    hanging = {(c["broker"], c["topic"], c["partition"], c["producer_id"], c["producer_epoch"], c["start_offset"],
                c["reason"]) for c in candidates if c["hanging"] is True}
    expected = {(b, h["topic"], h["partition"], h["producer_id"], h["producer_epoch"], h["start_offset"],
                 h["reason"])
                for h in manifest["hanging"]
                for b in manifest["partitions"][f"{h['topic']}-{h['partition']}"]["replicas"]}
    assert len(manifest["hanging"]) == 4
    assert {h["reason"] for h in manifest["hanging"]} == {"no_coordinator_record", "coordinator_moved_on"}
    assert hanging == expected
    # Young open transactions are open (they hold the LSO back) but no candidate.
    assert manifest["young_open"]
    assert all(c["hanging"] is True for c in candidates)
    states = {(r["topic"], r["partition"], r["broker"]): r for r in result.tables["partition_state"]}
    for name, p in manifest["partitions"].items():
        topic, partition = name.rsplit("-", 1)
        for b in p["replicas"]:
            st = states[(topic, int(partition), b)]
            assert (st["log_end_offset"], st["high_watermark"], st["last_stable_offset"]) == (
                p["log_end_offset"], p["log_end_offset"], p["last_stable_offset"]), (name, b)
    assert sum(1 for r in states.values() if not r["topic"].startswith("__")) == 24 * 2


def test_segments_rolled_and_every_codec_written(cluster):
    root, manifest = cluster
    assert any(p["segments"] > 1 for p in manifest["partitions"].values())
    assert manifest["totals"]["transactions"] > 0
    codecs, sizes = set(), []
    for seg in root.glob("broker-*/bench-*/*.log"):
        data, pos = seg.read_bytes(), 0
        while pos < len(data):
            length = struct.unpack_from(">i", data, pos + 8)[0]
            codecs.add(data[pos + 22] & 7)
            sizes.append(length + 12)
            pos += length + 12
    assert codecs == {0, 1, 2, 3, 4}
    assert min(sizes) < 2048 and max(sizes) > 60_000


@requires_kafka
@pytest.mark.kafka
def test_kafka_dump_log_reads_a_sample_as_logscan_does(cluster):
    root, manifest = cluster
    biggest = max(manifest["partitions"], key=lambda n: manifest["partitions"][n]["bytes"])
    broker = manifest["partitions"][biggest]["replicas"][0]
    segments = sorted((root / f"broker-{broker}" / biggest).glob("*.log"))
    txn = next(root.glob("broker-*/__transaction_state-0/*.log"))
    cases = [(segments[0], ["--deep-iteration", "--print-data-log"]),
             (segments[-1], []),
             (txn, ["--deep-iteration", "--print-data-log", "--transaction-log-decoder"])]
    for path, args in cases:
        kafka_out, kafka_err, code = dump_log("--files", str(path), *args)
        assert code == 0, kafka_err
        # the text of the release dump_log runs (tests/kafkajava.py: the harness's 4.1.1)
        ours = CliRunner().invoke(main, ["dump", "--kafka-version", "4.1", "--files", str(path), *args])
        assert ours.exit_code == 0, ours.output
        assert ours.stdout.splitlines() == kafka_out.splitlines(), path
        assert "compresscodec" in kafka_out
