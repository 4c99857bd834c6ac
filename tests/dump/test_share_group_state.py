"""`logscan dump --share-group-state-decoder` (and the automatic decoder of
``__share_group_state-N`` folders) against kafka-dump-log 4.1.1 and 4.4.0: on every
``__share_group_state`` segment of the real share-group clusters (fixtures/trimmed/share-4.1 and
share-4.4, tools/kafka/share.py: a share consumer of the same release accepted, released and
rejected records, and the share coordinator wrote ShareSnapshot and ShareUpdate records), whose
truth the release's own tool recorded; and on encoder-made records of every kind and every way
the tool fails (tests/format/test_sharestate.EDGE_RECORDS), written to tmp_path, where the real
tool's text on them is the expected text. 3.9.2's tool has no such option."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import RELEASES
from logscan.testing.encoder import Rec, encode_batch
from tests.format.test_sharestate import EDGE_RECORDS, key, snapshot, update
from tools.kafka.cluster import jars_present, libs_for, run_java_tools

from tests.killed_fixtures import TRIMMED_CLUSTERS

from .kafkatool import logscan_kafka_stderr_lines

T0 = 1_700_000_000_000
#: The real share-group clusters (restored copies), by release.
SHARE_CLUSTERS = {json.loads((c / "truth" / "truth.json").read_text())["kafka_version"]: c
                  for name, c in TRIMMED_CLUSTERS.items() if name.startswith("share-")}
VERSION_OF = {release: version for version, release in RELEASES.items()}
#: Every __share_group_state segment of those clusters, relative to their brokers/ folder.
REAL_SEGMENTS = [pytest.param(release, str(p.relative_to(c / "brokers")), id=f"{c.name}/{p.relative_to(c / 'brokers')}")
                 for release, c in sorted(SHARE_CLUSTERS.items())
                 for p in sorted((c / "brokers").glob("*/__share_group_state-*/*.log"))]


def run(*args):
    return CliRunner().invoke(main, ["dump", *args])


def _segment(folder: Path, records) -> Path:
    path = folder / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_batch([Rec(v, k, (), T0 + i)], base_offset=i) for i, (k, v) in enumerate(records)))
    return path


def test_real_share_group_state_of_4_1_1_and_4_4_0():
    assert sorted(SHARE_CLUSTERS) == ["4.1.1", "4.4.0"]
    for release, cluster in SHARE_CLUSTERS.items():
        truth = json.loads((cluster / "truth" / "truth.json").read_text())
        segments = [rel for rel in truth["dumps"] if "/__share_group_state-" in rel and rel.endswith(".log")]
        assert len(segments) == 9   # 3 partitions on 3 nodes
        text = "".join((cluster / "truth" / "dump" / f"{rel}.txt").read_text() for rel in segments)
        # ShareSnapshot (type 0) and ShareUpdate (type 1) records of the group, for both partitions
        for kind in ("0", "1"):
            for partition in (0, 1):
                assert f'key: {{"type":"{kind}","data":{{"groupId":"share-g","topicId":' in text
                assert re.search(f'key: {{"type":"{kind}","data":{{"groupId":"share-g","topicId":"[^"]+",'
                                 f'"partition":{partition}}}}}', text), (release, kind, partition)
        # 4.4.0's coordinator writes the tagged field Kafka 4.2 added, 4.1.1's does not
        assert ('"deliveryCompleteCount":' in text) == (release == "4.4.0")


@pytest.mark.skipif(not REAL_SEGMENTS, reason="no share-group fixture clusters")
@pytest.mark.parametrize("release,rel", REAL_SEGMENTS)
def test_real_segments_as_the_releases_kafka_dump_log_printed_them(release, rel, monkeypatch):
    cluster = SHARE_CLUSTERS[release]
    truth = json.loads((cluster / "truth" / "truth.json").read_text())["dumps"][rel]
    assert truth["args"][-1] == "--share-group-state-decoder" and truth["exit_code"] == 0
    monkeypatch.chdir(cluster / "brokers")
    want = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode("utf-8")
    ours = run("--kafka-version", VERSION_OF[release], *truth["args"], "--files", rel)
    assert ours.exit_code == 0, ours.stderr
    assert ours.stdout == want
    # a FILE in a __share_group_state-N folder gets the decoder without the option
    assert run("--kafka-version", VERSION_OF[release], rel).stdout == want


@pytest.mark.parametrize("release", ["4.1.1", "4.4.0"])
def test_the_state_logscan_reads_is_what_the_share_consumer_acknowledged(release, monkeypatch):
    """Folding the leader's ShareSnapshot/ShareUpdate state batches in log order (as logscan's
    JSON gives them) ends where the consumer's acknowledgements did: each REJECTed record
    archived (deliveryState 4) after one delivery, each RELEASEd one acknowledged (2) on its
    second delivery, every other acknowledged after one."""
    cluster = SHARE_CLUSTERS[release]
    truth = json.loads((cluster / "truth" / "truth.json").read_text())
    notes = truth["scenario_notes"]["share_group"]
    want = {}
    for ack in notes["acks"]:
        key_ = (ack["partition"], ack["offset"])
        state = {"ACCEPT": 2, "REJECT": 4, "RELEASE": 0}[ack["type"].upper()]
        want[key_] = (state, ack["delivery_count"])
    assert {s for s, _ in want.values()} == {2, 4} and {c for _, c in want.values()} == {1, 2}
    monkeypatch.chdir(cluster / "brokers")
    got = {}
    for path in sorted(Path(".").glob("broker-*/__share_group_state-*/*.log")):
        if not path.parts[0] == f"broker-{_state_leader(truth, path.parent.name)}":
            continue
        for line in run("--format", "json", str(path)).stdout.splitlines():
            rec = json.loads(line)
            if rec["type"] != "record":
                continue
            partition = json.loads(rec["key"])["data"]["partition"]
            for batch in json.loads(rec["payload"])["data"]["stateBatches"]:
                for offset in range(batch["firstOffset"], batch["lastOffset"] + 1):
                    got[(partition, offset)] = (batch["deliveryState"], batch["deliveryCount"])
    assert got == want


def _state_leader(truth: dict, folder: str) -> int:
    topic, partition = folder.rsplit("-", 1)
    [leader] = [p["leader"] for p in truth["partitions"] if (p["topic"], p["partition"]) == (topic, int(partition))]
    return leader


def test_a_share_group_state_folder_is_decoded_automatically(tmp_path):
    path = _segment(tmp_path / "__share_group_state-7", EDGE_RECORDS[:3])
    auto = run(str(path)).stdout
    assert auto == run("--share-group-state-decoder", "--files", str(path)).stdout
    assert '"stateBatches":[{"firstOffset":10' in auto
    assert "payload" not in run("--no-auto-decoder", str(path)).stdout


def test_3_9_has_no_such_option(tmp_path):
    path = _segment(tmp_path / "x", EDGE_RECORDS[:1])
    r = run("--kafka-version", "3.9", "--share-group-state-decoder", "--files", str(path))
    assert r.exit_code == 2 and "Kafka 3.9.2 has no such option" in r.stderr


def test_precedence_puts_it_after_the_remote_log_metadata_decoder(tmp_path):
    path = _segment(tmp_path / "x", EDGE_RECORDS[:1])
    both = run("--remote-log-metadata-decoder", "--share-group-state-decoder", "--files", str(path)).stdout
    assert both == run("--remote-log-metadata-decoder", "--files", str(path)).stdout


def test_json_reads_the_newest_fields_whatever_the_version(tmp_path):
    path = _segment(tmp_path / "__share_group_state-0", [(key(1), update(deliveryCompleteCount=9))])
    outs = {v: run("--kafka-version", v, "--format", "json", str(path)).stdout for v in ("4.1", "4.4")}
    assert outs["4.1"] == outs["4.4"]
    [record] = [json.loads(line) for line in outs["4.4"].splitlines() if '"type":"record"' in line]
    assert json.loads(record["payload"])["data"]["deliveryCompleteCount"] == 9


def test_a_record_without_a_key_is_a_finding_not_a_traceback(tmp_path):
    path = _segment(tmp_path / "x", [(None, snapshot()), (key(0), snapshot())])
    r = run("--share-group-state-decoder", "--files", str(path))
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "message had a missing key" in r.stderr and r.stdout.count('"snapshotEpoch":3') == 1


def _release(version: str) -> str:
    release = RELEASES[version]
    if not jars_present(libs_for(release), release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    return release


@pytest.mark.kafka
@pytest.mark.parametrize("version", ["4.1", "4.4"])
def test_encoded_records_as_kafka_dump_log_prints_them(version, tmp_path):
    release = _release(version)
    path = _segment(tmp_path / "__share_group_state-0", EDGE_RECORDS)
    keyless = _segment(tmp_path / "keyless", [(key(0), snapshot()), (None, snapshot()), (key(1), update())])
    cases = [["--share-group-state-decoder", "--files", str(path)],
             ["--share-group-state-decoder", "--skip-record-metadata", "--files", str(path)],
             ["--offsets-decoder", "--share-group-state-decoder", "--files", str(path)],
             ["--share-group-state-decoder", "--files", str(keyless)]]
    runs = run_java_tools([("kafka-dump-log", a) for a in cases], libs=libs_for(release))
    for args, kafka in zip(cases[:3], runs):
        assert kafka.returncode == 0, kafka.stderr   # the tool goes past every bad record
        ours = run("--kafka-version", version, *args)
        assert ours.stdout_bytes.decode("utf-8").splitlines() == kafka.stdout.splitlines(), args
        assert logscan_kafka_stderr_lines(ours.stderr_bytes) == [
            line for line in kafka.stderr.splitlines() if not line.startswith(("SLF4J:", "Exception in thread"))]
    # a record without a key kills the tool mid-line: logscan prints what it printed, says why, goes on
    kafka = runs[3]
    assert kafka.returncode != 0 and "message had a missing key" in kafka.stderr
    ours = run("--kafka-version", version, *cases[3])
    want = kafka.stdout.splitlines()
    assert ours.stdout.splitlines()[:len(want)] == want and ours.exit_code == 1
    assert ours.stdout.count('"snapshotEpoch":3') == 2
    text = run("--kafka-version", version, *cases[0]).stdout
    for shown in ("<DELETE>", "Unknown record type 2 at offset 6, skipping.",
                  "Found an unknown record version 1 for 0 type", '"groupId":"gr\u00fcppe \\"q\\"\\n"'):
        assert shown in text, shown
    assert ('"deliveryCompleteCount":12' in text) == (version == "4.4")
