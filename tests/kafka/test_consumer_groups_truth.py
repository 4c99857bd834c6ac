"""tools.kafka.truth.parse_columns on kafka-consumer-groups output recorded from Kafka 4.1.1
(fixtures/offsets/truth/tools), 4.4.0 and 3.9.2 (fixtures/trimmed/offsets-4.4 and offsets-3.9, the
same scenario): every data line becomes one row whose cells are the line's
words under their header, and a header cell holding a space (``COORDINATOR (ID)``) stays one."""

from __future__ import annotations

import json

import pytest

from tests.killed_fixtures import CLUSTER_ROOTS
from tools.kafka.truth import parse_columns

#: The truth folders of the clusters whose consumer groups have offsets (committed_offsets).
TRUTHS = [CLUSTER_ROOTS[name] / "truth" for name in ("offsets", "offsets-4.4", "offsets-3.9")]


def data_lines(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines()
            if ln.strip() and not ln.startswith("GROUP ") and " has no active members" not in ln]


@pytest.mark.parametrize("truth_dir", TRUTHS, ids=[t.parent.name for t in TRUTHS])
@pytest.mark.parametrize("name", ["offsets", "state"])
def test_every_recorded_line_is_one_row_of_its_words(name, truth_dir):
    stdout = (truth_dir / "tools" / f"consumer-groups-{name}.stdout.txt").read_text()
    rows = parse_columns(stdout)
    lines = data_lines(stdout)
    assert lines and len(rows) == len(lines)
    for row, line in zip(rows, lines):
        assert " ".join(v for v in row.values() if v).split() == line.split()


@pytest.mark.parametrize("truth_dir", TRUTHS, ids=[t.parent.name for t in TRUTHS])
def test_the_coordinator_column_is_one_cell_and_truth_json_holds_the_parse(truth_dir):
    stdout = (truth_dir / "tools" / "consumer-groups-state.stdout.txt").read_text()
    rows = parse_columns(stdout)
    assert all(set(r) == {"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"} for r in rows)
    assert all(r["COORDINATOR (ID)"].endswith(")") for r in rows)
    truth = json.loads((truth_dir / "truth.json").read_text())
    assert truth["consumer_groups"]["state"]["rows"] == rows
