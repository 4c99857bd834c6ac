"""`logscan dump --remote-log-metadata-decoder` (and the automatic decoder of
``__remote_log_metadata-N`` folders) against kafka-dump-log of 3.9.2, 4.1.1 and 4.4.0: on every
``__remote_log_metadata`` segment of the fixture clusters (the tiered cluster's real upload
records), and on a segment of encoder-made records of every kind and every way the tool's
parser fails (tests/format/test_remotelog.EDGE_VALUES), written to tmp_path. The tool's text
is the expected text; stdout must be equal line for line with the matching --kafka-version.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import KAFKA_VERSIONS, RELEASES
from logscan.testing.encoder import Rec, encode_batch
from tests.format.test_remotelog import EDGE_VALUES, GOOD, partition_delete, segment
from tools.kafka.cluster import jars_present, libs_for, run_java_tools

from .kafkatool import logscan_kafka_stderr_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: every __remote_log_metadata segment of the fixture clusters, relative to their brokers/ folder
SEGMENTS = sorted(p for p in FIXTURES.glob("*/brokers/*/__remote_log_metadata-*/*.log"))
DECODE = ["--deep-iteration", "--print-data-log", "--remote-log-metadata-decoder"]
T0 = 1_700_000_000_000

#: The tiered cluster's upload of its first segment, as kafka-dump-log 4.1.1 and 4.4.0 print it
#: (3.9.2: without ", txnIdxEmpty=true").
FIXTURE_PAYLOADS = [
    "payload: RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
    "Ty8ea2hTSuyxx5e7Tx55Pw:hang-tiered-0, id=a0VJ4a26R5KKI0vnkU3jrw}, startOffset=0, endOffset=14, brokerId=1, "
    "maxTimestampMs=1795821419764, eventTimestampMs=1795821420242, segmentLeaderEpochs={0=0}, "
    "segmentSizeInBytes=903, customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}",
    "payload: RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
    "Ty8ea2hTSuyxx5e7Tx55Pw:hang-tiered-0, id=a0VJ4a26R5KKI0vnkU3jrw}, customMetadata=Optional.empty, "
    "state=COPY_SEGMENT_FINISHED, eventTimestampMs=1795821420720, brokerId=1}",
]
TIERED = FIXTURES / "tiered" / "brokers" / "broker-0" / "__remote_log_metadata-2" / "00000000000000000000.log"


def run(*args):
    return CliRunner().invoke(main, ["dump", *args])


def _payloads(stdout: str) -> list[str]:
    return [line[line.index("payload: "):] for line in stdout.splitlines() if "payload: " in line]


def _edge_segment(folder: Path) -> Path:
    """EDGE_VALUES, a batch each (a record without a key, as the metadata manager writes)."""
    path = folder / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_batch([Rec(value, None, (), T0 + i)], base_offset=i)
                              for i, value in enumerate(EDGE_VALUES)))
    return path


# -- without Java ------------------------------------------------------------------------


@pytest.mark.skipif(not TIERED.is_file(), reason="no tiered fixture cluster")
@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_the_decoder_prints_the_tiered_clusters_upload_records(version):
    r = run("--kafka-version", version, *DECODE, "--files", str(TIERED))
    assert r.exit_code == 0, r.output
    want = FIXTURE_PAYLOADS if version != "3.9" else [FIXTURE_PAYLOADS[0].replace(", txnIdxEmpty=true", ""),
                                                      FIXTURE_PAYLOADS[1]]
    assert _payloads(r.stdout) == want
    assert " key: " not in r.stdout   # the parser prints no key


@pytest.mark.skipif(not TIERED.is_file(), reason="no tiered fixture cluster")
def test_the_tiered_clusters_truth_was_recorded_with_the_decoder():
    """The tiered cluster's dumps of its __remote_log_metadata segments are 4.1.1's
    kafka-dump-log with --remote-log-metadata-decoder (``python -m tools.kafka.fixtures --only
    tiered --redump __remote_log_metadata-``), so tests/dump/test_fixtures.py holds logscan's
    decoded text to the release's own on every one of them."""
    truth = json.loads((FIXTURES / "tiered" / "truth" / "truth.json").read_text())
    segments = {rel: d for rel, d in truth["dumps"].items()
                if "/__remote_log_metadata-" in rel and rel.endswith(".log")}
    assert len(segments) == 9 and all(d["args"] == DECODE and d["exit_code"] == 0 for d in segments.values())
    dumps = FIXTURES / "tiered" / "truth" / "dump"
    assert _payloads((dumps / TIERED.relative_to(FIXTURES / "tiered" / "brokers")).with_suffix(".log.txt")
                     .read_text()) == FIXTURE_PAYLOADS


@pytest.mark.skipif(not TIERED.is_file(), reason="no tiered fixture cluster")
def test_a_remote_log_metadata_folder_is_decoded_automatically():
    assert _payloads(run(str(TIERED)).stdout) == FIXTURE_PAYLOADS
    assert "payload" not in run("--no-auto-decoder", str(TIERED)).stdout
    assert "payload" not in run("--files", str(TIERED)).stdout   # kafka-dump-log's spelling: as it prints


def test_decoder_precedence_is_kafkas(tmp_path):
    # DumpLogSegmentsOptions.messageParser: the cluster metadata decoder before this one
    path = _edge_segment(tmp_path / "__remote_log_metadata-0")
    both = run("--cluster-metadata-decoder", "--remote-log-metadata-decoder", "--files", str(path)).stdout
    alone = run("--cluster-metadata-decoder", "--files", str(path)).stdout
    assert both == alone and "RemoteLogSegmentMetadata{" not in both


def test_bad_records_are_kafkas_error_text_and_a_located_finding(tmp_path):
    path = _edge_segment(tmp_path / "x")
    r = run("--remote-log-metadata-decoder", "--files", str(path))
    errors = [p for p in _payloads(r.stdout) if p.startswith("payload: Error at offset ")]
    findings = [line for line in r.stderr.splitlines() if line.startswith("logscan: ")]
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert len(errors) == len(findings) > 10
    assert all(f"{path.name}: byte " in f and "kafka-dump-log skips it" in f for f in findings)


def test_json_gives_the_payload_as_an_object(tmp_path):
    value = segment(customMetadata=b"\x01\x02", segmentLeaderEpochs=[{"leaderEpoch": 4, "offset": 120},
                                                                     {"leaderEpoch": 2, "offset": 100}])
    path = tmp_path / "__remote_log_metadata-1" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(encode_batch([Rec(value, None, (), T0), Rec(partition_delete(), None, (), T0),
                                   Rec(b"\x01\x07\x00", None, (), T0)]))
    r = run("--format", "json", str(path))   # auto-decoded from the folder name
    records = [json.loads(line) for line in r.stdout.splitlines() if '"type":"record"' in line]
    first, second, third = (rec["payload"] for rec in records)
    assert first == {
        "type": "RemoteLogSegmentMetadata",
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": "Ty8ea2hTSuyxx5e5Tx55Pw", "topic": "orders",
                                                    "partition": 3}, "id": "a0VJ4a26R5KKIvS9TuPrrg"},
        "startOffset": 100, "endOffset": 250, "brokerId": 2, "maxTimestampMs": 1700000000123,
        "eventTimestampMs": 1700000000456, "segmentLeaderEpochs": {"2": 100, "4": 120},
        "segmentSizeInBytes": 4096, "customMetadata": "AQI=", "state": "COPY_SEGMENT_STARTED", "txnIdxEmpty": True}
    assert second["type"] == "RemotePartitionDeleteMetadata" and second["state"] == "DELETE_PARTITION_MARKED"
    assert third == ("Error at offset 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
                     "Unknown metadata id 7")
    assert all(rec["key"] is None for rec in records)
    [finding] = [json.loads(line) for line in r.stderr.splitlines()]
    # located at its batch (record bytes carry no position of their own)
    assert finding["type"] == "finding" and finding["position"] == 0 and "offset 2" in finding["message"]
    assert r.exit_code == 1


def test_help_lists_the_decoder():
    r = CliRunner().invoke(main, ["dump", "--help"])
    assert "--remote-log-metadata-decoder" in r.stdout and "__remote_log_metadata" in r.stdout


# -- against kafka-dump-log ---------------------------------------------------------------


def _release(version: str) -> str:
    release = RELEASES[version]
    if not jars_present(libs_for(release), release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    return release


@pytest.mark.kafka
@pytest.mark.skipif(not SEGMENTS, reason="no __remote_log_metadata segment in the fixtures")
@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_every_fixture_segment_as_kafka_dump_log_prints_it(version, monkeypatch):
    release = _release(version)
    cases = [[*DECODE, "--files", str(p)] for p in SEGMENTS]
    for args, kafka in zip(cases, run_java_tools([("kafka-dump-log", a) for a in cases], libs=libs_for(release))):
        assert kafka.returncode == 0, kafka.stderr
        ours = run("--kafka-version", version, *args)
        assert ours.stdout_bytes.decode("utf-8").splitlines() == kafka.stdout.splitlines(), args
        assert ours.exit_code == 0, ours.stderr
    assert any("payload: RemoteLogSegmentMetadata{" in run(*c).stdout for c in cases)


@pytest.mark.kafka
@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_encoded_records_as_kafka_dump_log_prints_them(version, tmp_path):
    release = _release(version)
    path = _edge_segment(tmp_path / "__remote_log_metadata-0")
    cases = [["--remote-log-metadata-decoder", "--files", str(path)],
             ["--remote-log-metadata-decoder", "--skip-record-metadata", "--files", str(path)],
             ["--cluster-metadata-decoder", "--remote-log-metadata-decoder", "--files", str(path)]]
    for args, kafka in zip(cases, run_java_tools([("kafka-dump-log", a) for a in cases], libs=libs_for(release))):
        assert kafka.returncode == 0, kafka.stderr   # the tool goes past every bad record
        ours = run("--kafka-version", version, *args)
        got = ours.stdout_bytes.decode("utf-8").splitlines()
        assert got == kafka.stdout.splitlines(), args
        assert logscan_kafka_stderr_lines(ours.stderr_bytes) == [
            line for line in kafka.stderr.splitlines() if not line.startswith("SLF4J:")]
        assert "Traceback" not in ours.output
    # every kind, and Kafka's error texts, are in what was compared
    text = run("--kafka-version", version, *cases[0]).stdout
    for shown in ("RemoteLogSegmentMetadata{", "RemoteLogSegmentMetadataUpdate{", "RemotePartitionDeleteMetadata{",
                  "RemoteLogSegmentMetadataSnapshot{", "Optional[CustomMetadata{12 bytes}]",
                  "segmentLeaderEpochs={-1=7, 1=100, 3=150, 5=200}", "Unknown metadata id 4",
                  "Failed to deserialize record with type 0", "state can not be null"):
        assert shown in text, shown
    assert GOOD in path.read_bytes()
