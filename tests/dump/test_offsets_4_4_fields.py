"""`logscan dump --offsets-decoder` on the tagged fields Kafka 4.4.0 added to the group
coordinator's records (logscan.format.offsets.RECORD_TYPES_4_4): 4.4.0's kafka-dump-log prints
them, 4.1.1's skips them as unknown tags. Found on the real share-4.4 cluster
(fixtures/trimmed/share-4.4: its ShareGroupTargetAssignmentMetadata records carry
assignmentTimestamp; tests/dump/test_fixtures.py); here every such field, on encoder-made
records of each type, against both releases' tools."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import RELEASES
from logscan.format.message import encode_message
from logscan.format.offsets import RECORD_TYPES, RECORD_TYPES_4_4
from logscan.testing.encoder import Rec, encode_batch
from tools.kafka.cluster import jars_present, libs_for, run_java_tools

T0 = 1_700_000_000_000
TOPIC = uuid.UUID(int=1)
TASKS = [{"subtopologyId": "s0", "partitions": [0, 2], "assignmentEpochs": [5, 6]}]
VALUES = {
    6: {"assignmentEpoch": 3, "assignmentTimestamp": T0},
    8: {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 0,
        "assignedPartitions": [{"topicId": TOPIC, "partitions": [0, 1], "assignmentEpochs": [2, 4]}],
        "partitionsPendingRevocation": [{"topicId": TOPIC, "partitions": [7]}]},
    12: {"assignmentEpoch": 2, "assignmentTimestamp": T0 + 1},
    17: {"epoch": 9, "metadataHash": 77, "validatedTopologyEpoch": 1,
         "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}],
         "storedDescriptionTopologyEpoch": -2, "failedDescriptionTopologyEpoch": 4},
    20: {"assignmentEpoch": 5, "assignmentTimestamp": T0 + 2},
    22: {"memberEpoch": 1, "previousMemberEpoch": 0, "state": 0, "activeTasks": TASKS,
         "standbyTasks": [{"subtopologyId": "s1", "partitions": [3]}]},
}


def _key(record_type: int) -> bytes:
    schema = RECORD_TYPES[record_type][0]
    values = {f.json_name: ("grp" if f.type == "string" else 0) for f in schema.fields}
    return struct.pack(">h", record_type) + encode_message(schema, 0, values)


def _segment(folder: Path) -> Path:
    path = folder / "00000000000000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = []
    for record_type, values in VALUES.items():
        schema = RECORD_TYPES_4_4[record_type][1]
        records.append((_key(record_type), struct.pack(">h", 0) + encode_message(schema, 0, values)))
        # the same record with every 4.4.0 field at its default: nothing more printed
        records.append((_key(record_type), struct.pack(">h", 0) + encode_message(RECORD_TYPES[record_type][1], 0, {
            k: v for k, v in values.items() if k in {f.json_name for f in RECORD_TYPES[record_type][1].fields}})))
    path.write_bytes(b"".join(encode_batch([Rec(v, k, (), T0 + i)], base_offset=i) for i, (k, v) in enumerate(records)))
    return path


def test_4_1_skips_the_fields_and_4_4_prints_them(tmp_path):
    path = _segment(tmp_path / "x")
    out = {v: CliRunner().invoke(main, ["dump", "--kafka-version", v, "--offsets-decoder", "--files", str(path)])
           for v in ("4.1", "4.4")}
    assert all(r.exit_code == 0 for r in out.values()), {v: r.stderr for v, r in out.items()}
    for shown in ('"assignmentTimestamp":1700000000000', '"assignmentEpochs":[2,4]', '"assignmentEpochs":[5,6]',
                  '"validatedTopologyEpoch":1', '"lastAssignmentConfigs":[{"key":"num.standby.replicas","value":"1"}]',
                  '"storedDescriptionTopologyEpoch":-2', '"failedDescriptionTopologyEpoch":4'):
        assert shown in out["4.4"].stdout and shown not in out["4.1"].stdout, shown


@pytest.mark.kafka
@pytest.mark.parametrize("version", ["4.1", "4.4"])
def test_as_the_releases_kafka_dump_log_prints_them(version, tmp_path):
    release = RELEASES[version]
    if not jars_present(libs_for(release), release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    path = _segment(tmp_path / "x")
    args = ["--offsets-decoder", "--files", str(path)]
    [kafka] = run_java_tools([("kafka-dump-log", args)], libs=libs_for(release))
    assert kafka.returncode == 0, kafka.stderr
    ours = CliRunner().invoke(main, ["dump", "--kafka-version", version, *args])
    assert ours.exit_code == 0, ours.stderr
    assert ours.stdout_bytes.decode("utf-8").splitlines() == kafka.stdout.splitlines()
