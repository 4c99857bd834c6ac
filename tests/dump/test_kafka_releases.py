"""kafka-dump-log of Kafka 3.9.2 and 4.4.0 on every file of the 4.1.1 fixture clusters, against
`logscan dump --kafka-version 3.9|4.4` on the same files with the recorded arguments.

The clusters of 3.9.2 and 4.4.0 (fixtures/kafka-3.9, fixtures/kafka-4.4) are compared with
their own tools' recorded text in test_fixtures.py; this runs those releases' tools on the
4.1.1 clusters' files too (more partitions, codecs, segment rolls, fencing, transaction
states), so each release's text is checked on every kind of file any fixture holds. stdout
must be equal, the tool's stderr blocks equal (logscan's own notes left out) and the exit
status equal: 0 on every file, index warnings included, but the one where each release's tool
dies as 4.1.1's did (there logscan prints what the tool printed, reports the file and exits 1). Where the texts differ
(logscan.dump.versions), each difference must be seen on these files at least once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import RELEASES
from tools.kafka.cluster import jars_present, libs_for
from tools.kafka.fixtures import dump_all

from .kafkatool import logscan_kafka_stderr_lines
from .test_fixtures import _relative

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

pytestmark = pytest.mark.kafka


def _clusters_of(release: str) -> list[Path]:
    return [c.parent.parent for c in sorted(FIXTURES.glob("*/truth/truth.json"))
            if json.loads(c.read_text()).get("kafka_version") == release]


@pytest.mark.parametrize("version", ["3.9", "4.4"])
def test_a_releases_kafka_dump_log_on_the_4_1_1_clusters_files(version, tmp_path, monkeypatch):
    release = RELEASES[version]
    libs = libs_for(release)
    if not jars_present(libs, release):
        pytest.skip(f"no Kafka {release} jars: make kafka-jars KAFKA_VERSION={release}")
    clusters = _clusters_of("4.1.1")
    if not clusters:
        pytest.skip("no 4.1.1 fixture cluster")
    compared, differs, died = 0, 0, 0
    for cluster in clusters:
        folder = tmp_path / cluster.name
        runs = dump_all(cluster / "brokers", folder, libs)
        monkeypatch.chdir(cluster / "brokers")
        for rel, run in runs.items():
            ours = CliRunner().invoke(main, ["dump", "--kafka-version", version, *run["args"], "--files", rel])
            theirs = (folder / f"{rel}.txt").read_bytes().decode("utf-8")
            got = ours.stdout_bytes.decode("utf-8", "replace").splitlines()
            if run["exit_code"] != 0:
                # the tool died (a SIGKILLed broker's preallocated index of an empty log, as
                # 4.1.1's did: tests/kafka/test_fixtures.py): what it printed, then logscan goes on
                assert got[:len(theirs.splitlines())] == theirs.splitlines(), (cluster.name, rel)
                assert run["exit_code"] == ours.exit_code == 1 and "logscan: " in ours.stderr, (cluster.name, rel)
                died += 1
                continue
            assert got == theirs.splitlines(), (cluster.name, rel)
            err = [_relative(line) for line in (folder / f"{rel}.stderr.txt").read_text().splitlines() if line.strip()]
            assert [_relative(line) for line in logscan_kafka_stderr_lines(ours.stderr_bytes)] == err, (cluster.name, rel)
            assert run["exit_code"] == ours.exit_code == 0, (cluster.name, rel, ours.stderr)
            old = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode("utf-8")
            differs += old != theirs
            compared += 1
    assert compared > 500  # every dumped file of the 4.1.1 clusters
    assert differs > 0  # the release's text differs from 4.1.1's on some of them
    assert died <= 1  # only where 4.1.1's tool died too (the pending cluster's crashed broker)
