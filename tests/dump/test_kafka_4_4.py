"""kafka-dump-log 4.4.0 against 4.1.1's recorded text, on the 4.1.1 fixture clusters' files.

`logscan dump` prints 4.1.1's text. This runs 4.4.0's tool (the Java port of DumpLogSegments,
KAFKA-14579) on every file the 4.1.1 clusters recorded, with the recorded arguments, and
checks that what differs is exactly the list below, so that the kafka-4.4 cluster's
comparison (test_fixtures.TEXT_CHANGES) and a future `--kafka-version 4.4` know every change:

stdout (test_fixtures.TEXT_CHANGES["4.4.0"], applied to the 4.1.1 text):
  * --transaction-log-decoder prints ``"transactionStatus":"Ongoing"`` (the state's name)
    where 4.1.1 printed its persisted id (``"transactionStatus":1``);
  * producer snapshot entries lose the trailing space 4.1.1 printed after ``lastTimestamp``.
stderr (``STDERR_CHANGES``, test_fixtures.STDERR_TO_4_1_1["4.4.0"], applied to 4.4.0's text):
  * "Non-consecutive offsets in F" / "  -1 is followed by N" for every deep-iterated segment
    whose first offset N is not 0 (4.4.0 compares the first batch with -1 + 1; 4.1.1 did
    not), e.g. every segment but the first of a rolled partition;
  * the time index block's header "The following indexed offsets are not found in :F"
    where 4.1.1 printed "... not found in the log.".
Exit codes are the same for every file (index warnings included: both exit 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.kafka.cluster import jars_present, libs_for
from tools.kafka.fixtures import dump_all

from .test_fixtures import STDERR_TO_4_1_1, TEXT_CHANGES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LIBS = libs_for("4.4.0")

pytestmark = [pytest.mark.kafka, pytest.mark.skipif(
    not jars_present(LIBS, "4.4.0"), reason="no Kafka 4.4.0 jars: make kafka-jars KAFKA_VERSION=4.4.0")]

#: Rewrites of 4.4.0's stderr lines into 4.1.1's (the kafka-4.4 cluster's comparison uses them too).
STDERR_CHANGES = STDERR_TO_4_1_1["4.4.0"]


def _clusters_of(version: str) -> list[Path]:
    return [c.parent.parent for c in sorted(FIXTURES.glob("*/truth/truth.json"))
            if json.loads(c.read_text()).get("kafka_version") == version]


@pytest.fixture(scope="module")
def redumped(tmp_path_factory):
    """{cluster: (recorded truth.json dumps, folder of 4.4.0's dumps of the same files)}."""
    out = {}
    for cluster in _clusters_of("4.1.1"):
        folder = tmp_path_factory.mktemp(cluster.name)
        out[cluster] = (dump_all(cluster / "brokers", folder, LIBS), folder)
    if not out:
        pytest.skip("no 4.1.1 fixture cluster")
    return out


def test_4_4_0_prints_4_1_1_text_but_for_the_listed_changes(redumped):
    changed = {rule.__name__: 0 for rule in (*TEXT_CHANGES["4.4.0"], *STDERR_CHANGES)}
    compared = 0
    for cluster, (runs, folder) in redumped.items():
        recorded = json.loads((cluster / "truth" / "truth.json").read_text())["dumps"]
        assert set(runs) == set(recorded), cluster.name
        for rel, run in runs.items():
            assert run["exit_code"] == recorded[rel]["exit_code"], (cluster.name, rel)
            old = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode().splitlines(True)
            new = (folder / f"{rel}.txt").read_bytes().decode().splitlines(True)
            for rule in TEXT_CHANGES["4.4.0"]:
                rewritten = [rule(line) for line in old]
                changed[rule.__name__] += rewritten != old
                old = rewritten
            assert new == old, (cluster.name, rel)
            old_err = (cluster / "truth" / "dump" / f"{rel}.stderr.txt").read_text().splitlines()
            new_err = (folder / f"{rel}.stderr.txt").read_text().splitlines()
            for rule in STDERR_CHANGES:
                rewritten = rule(new_err)
                changed[rule.__name__] += rewritten != new_err
                new_err = rewritten
            assert new_err == old_err, (cluster.name, rel)
            compared += 1
    assert compared > 500  # every dumped file of the four 4.1.1 clusters
    # every listed change is seen on these files: none of them is a guess
    assert all(changed.values()), changed
