"""A copy of a live cluster cut the way an operator's copy is cut (issue 36 item 2):
fixtures/live-cut/cut-copy, made by the harness (tools/kafka/cutcopy.py) while the cluster ran,
by README's two steps, the second killed inside cut-1's .log on every node; Kafka's tools were
asked on the live cluster after the transaction committed (truth.json). Whatever the copy
lacks, the scan must advise no abort that Kafka's own find-hanging would not list.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging

CUT = Path(__file__).resolve().parents[2] / "fixtures" / "live-cut" / "cut-copy"


def _truth() -> dict:
    return json.loads((CUT / "truth" / "truth.json").read_text())


def _note() -> dict:
    return _truth()["scenario_notes"]["live_cut_copy"]


def _live_hanging(truth: dict) -> set[tuple[str, int, int]]:
    """(topic, partition, producer id) find-hanging listed on any broker, any timeout."""
    return {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]))
            for recorded in truth["find_hanging"].values() for r in recorded["rows"]}


def _as_of() -> int:
    return _truth()["recorded_at_ms"]


def test_the_copy_is_cut_as_the_harness_recorded():
    """Every node: the top files of step 1, the folders before cut-1 whole, cut-1's .log ending
    inside its last batch (the COMMIT marker), nothing after it; the checkpoints copied at step 1
    name the data's end, below the markers the logs hold."""
    truth, note = _truth(), _note()
    assert truth["copy"]["mode"] == "live_cut"
    for node, step in note["step_2"].items():
        broker = CUT / "brokers" / f"broker-{node}"
        cut = step["cut"]
        assert cut["file"].startswith("cut-1/") and cut["last_entry"]["position"] < cut["kept_bytes"] < cut["size"]
        assert (broker / cut["file"]).stat().st_size == cut["kept_bytes"]
        assert "cut-2" in step["not_copied"] and not (broker / "cut-2").exists()
        assert (broker / "cut-0").is_dir() and "__transaction_state-0" in step["copied"]
        hws = note["checkpoints_at_step_1"][node]["replication-offset-checkpoint"]
        assert {int(p): hw for p, hw in hws.items()} == {int(p): e for p, e in note["data_end"].items()}
    # the live cluster after the commit: every partition of the topic settled, nothing hanging
    assert all(o["last_stable_offset"] == o["high_watermark"] for o in note["end_offsets_after_commit"].values())
    assert not {h for h in _live_hanging(truth) if h[0] == note["topic"]}


def test_no_abort_the_copy_cannot_justify():
    """The scan plans nothing find-hanging did not list; on cut-1 the transaction the copy holds
    open (its marker cut in half) is partition_not_in_copy on every replica, each located as
    'incomplete' at cut-1's folder; cut-0, copied whole after the commit, holds it closed."""
    truth, note = _truth(), _note()
    result = scan([CUT / "brokers"], as_of_ms=_as_of())
    planned = {(p["topic"], p["partition"], p["producer_id"]) for p in result.tables["abort_plans"]}
    assert planned <= _live_hanging(truth)
    cut = {(c["broker"], c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]
           if (c["topic"], c["partition"]) == (note["topic"], 1)}
    assert cut == {(int(n), hanging.PARTITION_NOT_IN_COPY, None) for n in note["step_2"]}
    assert not [c for c in result.tables["hanging_candidates"] if (c["topic"], c["partition"]) == (note["topic"], 0)]
    incomplete = {Path(f.path).parent.name for f in result.findings
                  if f.reason == "incomplete" and Path(f.path).name == "cut-1"}
    assert incomplete == {f"broker-{n}" for n in note["step_2"]}
    out = CliRunner().invoke(main, ["plan", str(CUT / "brokers"), "--as-of", str(_as_of()), "--format", "json"])
    assert "Traceback" not in out.output
    assert {(p["topic"], p["partition"], p["producer_id"]) for p in map(json.loads, out.output.splitlines())} <= (
        _live_hanging(truth))


def test_cut_at_the_marker_s_first_byte_the_copy_cannot_tell(tmp_path):
    """The same copy cut at the COMMIT marker's first byte instead (an rsync killed on a batch
    boundary) holds nothing that says the log went on: the coordinator's CompleteCommit then
    reads as a missed marker, and the abort is planned. That is the limit of a copy; the
    half-marker the harness's copy holds is what the scan reads as a cut."""
    note = _note()
    copy = tmp_path / "brokers"
    shutil.copytree(CUT / "brokers", copy)
    for node, step in note["step_2"].items():
        log = copy / f"broker-{node}" / step["cut"]["file"]
        log.write_bytes(log.read_bytes()[:step["cut"]["last_entry"]["position"]])
    result = scan([copy], as_of_ms=_as_of())
    assert {(c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]
            if (c["topic"], c["partition"]) == (note["topic"], 1)} == {(hanging.COORDINATOR_MOVED_ON, True)}
    assert (note["topic"], 1) in {(p["topic"], p["partition"]) for p in result.tables["abort_plans"]}
