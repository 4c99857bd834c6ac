"""Copies that lack what the brokers had: never advise an abort the copy cannot justify (issue 36).

Built from the real `hanging` cluster (Kafka 4.1.1, three genuinely hanging transactions and
a live one), then made incomplete by cutting real bytes, the way a partial rsync or a copy of a
running broker leaves it: the brokers' own checkpoints and snapshots still say what was there.
"""

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HANGING = FIXTURES / "hanging"
_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a batch's baseOffset and batchLength


def _truth() -> dict:
    return json.loads((HANGING / "truth" / "truth.json").read_text())


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "brokers"
    shutil.copytree(HANGING / "brokers", copy)
    return copy


def _cut(copy: Path, partition: int, batches: int) -> list[Path]:
    """Every replica of __transaction_state-``partition`` cut after its first ``batches``
    batches (0: an empty log), its checkpoints and snapshots left as the broker wrote them."""
    cut = []
    for log in sorted(copy.glob(f"*/__transaction_state-{partition}/*.log")):
        data = log.read_bytes()
        end = 0
        for _ in range(batches):
            _, length = _OFFSET_AND_LENGTH.unpack_from(data, end)
            end += 12 + length
        assert end < len(data), f"{log} has no more than {batches} batches"
        log.write_bytes(data[:end])
        cut.append(log.parent)
    assert cut
    return cut


def _coordinator_findings(result) -> list:
    """Findings in __transaction_state folders (the fixture's own cut follower, replica-0 on
    broker 2, has one of its own)."""
    return [f for f in result.findings if "/__transaction_state-" in f.path]


def _verdicts(result) -> dict[tuple[str, int], set]:
    out: dict[tuple[str, int], set] = {}
    for c in result.tables["hanging_candidates"]:
        out.setdefault((c["topic"], c["partition"]), set()).add((c["reason"], c["hanging"]))
    return out


def _planned(result) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in result.tables["abort_plans"]}


@pytest.fixture(scope="module")
def whole():
    truth = _truth()
    result = scan([HANGING / "brokers"], as_of_ms=truth["recorded_at_ms"])
    # What the uncut copy says, so the tests below show a change, not a coincidence.
    assert _verdicts(result)[("hang", 0)] == {(hanging.NO_COORDINATOR_RECORD, True)}
    assert _verdicts(result)[("hang-ongoing", 1)] == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
    partition = {r["transactional_id"]: r["partition"] for r in result.tables["coordinator_state"]}
    assert partition["hang-ongoing"] == 0
    assert {partition[t] for t in ("hang-never-added", "hang-missed-marker")} == {2}
    assert _planned(result) == {("hang", 0), ("hang", 1), ("hang", 2), ("hang-ongoing", 1)}
    return result


def test_an_empty_coordinator_log_under_a_checkpoint_proves_nothing(tmp_path, whole):
    """__transaction_state-0's log emptied on every broker while replication-offset-checkpoint
    still says 2: before issue 36 the open transaction with no coordinator record was
    `no_coordinator_record` and `logscan plan` printed its abort, rated risk low."""
    copy = _copy(tmp_path)
    cut = _cut(copy, 0, 0)
    result = scan([copy], as_of_ms=_truth()["recorded_at_ms"])
    assert sorted((Path(f.path), f.reason) for f in _coordinator_findings(result)) == [
        (d, "incomplete") for d in cut]
    gap = _coordinator_findings(result)[0].message
    assert "high watermark 2" in gap and "ends at 0" in gap and "snapshot at offset 2" in gap
    assert {(s["checkpointed_high_watermark"], s["high_watermark"], s["log_end_offset"])
            for s in result.tables["partition_state"]
            if (s["topic"], s["partition"]) == ("__transaction_state", 0)} == {(2, 0, 0)}
    verdicts = _verdicts(result)
    # no record of producer 0 anywhere: the copy may lack it
    assert verdicts[("hang", 0)] == {(hanging.COORDINATOR_NOT_IN_COPY, None)}
    # hang-ongoing's records were in the cut partition
    assert verdicts[("hang-ongoing", 1)] == {(hanging.COORDINATOR_NOT_IN_COPY, None)}
    # __transaction_state-2 is whole: its verdicts stand
    assert verdicts[("hang", 1)] == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
    assert verdicts[("hang", 2)] == {(hanging.COORDINATOR_MOVED_ON, True)}
    assert _planned(result) == {("hang", 1), ("hang", 2)}
    planned = CliRunner().invoke(main, ["plan", str(copy), "--as-of", str(_truth()["recorded_at_ms"]),
                                        "--format", "json"])
    assert planned.exit_code == 4
    assert {(p["topic"], p["partition"]) for p in map(json.loads, planned.output.splitlines())} == {
        ("hang", 1), ("hang", 2)}


def test_a_coordinator_log_cut_mid_way_plans_nothing_that_rests_on_it(tmp_path, whole):
    """__transaction_state-2 cut after its first batch: the records that made hang-1 and hang-2
    hanging may be among the missing ones, and any id may hash there."""
    copy = _copy(tmp_path)
    _cut(copy, 2, 1)
    result = scan([copy], as_of_ms=_truth()["recorded_at_ms"])
    assert {f.reason for f in result.findings} == {"incomplete"} and len(_coordinator_findings(result)) == 3
    for (topic, partition), verdicts in _verdicts(result).items():
        if (topic, partition) == ("hang-ongoing", 1):   # its id's partition 0 is whole
            assert verdicts == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
        else:
            assert all(h is not True for _, h in verdicts), (topic, partition, verdicts)
    assert _planned(result) == {("hang-ongoing", 1)}


def test_a_whole_replica_beside_a_cut_one_is_read(tmp_path, whole):
    """Only broker 1's copy of __transaction_state-0 is emptied: the coordinator's view comes
    from a whole replica, so the verdicts are those of the uncut copy."""
    copy = _copy(tmp_path)
    log = next((copy / "broker-1" / "__transaction_state-0").glob("*.log"))
    log.write_bytes(b"")
    result = scan([copy], as_of_ms=_truth()["recorded_at_ms"])
    assert [(Path(f.path).parent.name, Path(f.path).name, f.reason) for f in _coordinator_findings(result)] == [
        ("broker-1", "__transaction_state-0", "incomplete")]
    assert _verdicts(result) == _verdicts(whole)
    assert _planned(result) == _planned(whole)


def _cut_log(copy: Path, folder: str, batches: int, brokers=("broker-0", "broker-1", "broker-2")) -> None:
    """The log of ``folder`` cut after its first ``batches`` batches on ``brokers``, the
    broker's checkpoints and snapshots left as it wrote them."""
    for broker in brokers:
        log = next((copy / broker / folder).glob("*.log"))
        data, end = log.read_bytes(), 0
        for _ in range(batches):
            end += 12 + _OFFSET_AND_LENGTH.unpack_from(data, end)[1]
        assert end < len(data)
        log.write_bytes(data[:end])


def test_a_partition_cut_past_its_open_transaction_plans_no_abort(tmp_path, whole):
    """hang-0 cut after producer 0's open batch (offsets 0-1) on every broker, while each
    broker's replication-offset-checkpoint says 4: the end marker may be among the missing
    offsets 2-3. Aborting a transaction Kafka closed aborts whatever that producer has open
    now (the explicit --producer-id form writes its marker unconditionally): the copy cannot
    tell, so no plan; before, `no_coordinator_record` and a plan rated risk low."""
    copy = _copy(tmp_path)
    _cut_log(copy, "hang-0", 1)
    result = scan([copy], as_of_ms=_truth()["recorded_at_ms"])
    assert {(Path(f.path).name, f.reason) for f in result.findings if "/hang-0" in f.path} == {("hang-0", "incomplete")}
    verdicts = _verdicts(result)
    assert verdicts[("hang", 0)] == {(hanging.PARTITION_NOT_IN_COPY, None)}
    (evidence,) = {c["evidence"] for c in result.tables["hanging_candidates"] if (c["topic"], c["partition"]) == ("hang", 0)}
    assert "no transactional id has producer id 0" in evidence and "high watermark 4" in evidence, evidence
    assert {k: v for k, v in verdicts.items() if k != ("hang", 0)} == {
        k: v for k, v in _verdicts(whole).items() if k != ("hang", 0)}
    assert _planned(result) == _planned(whole) - {("hang", 0)}
    planned = CliRunner().invoke(main, ["plan", str(copy), "--as-of", str(_truth()["recorded_at_ms"]), "--format", "json"])
    assert ("hang", 0) not in {(p["topic"], p["partition"]) for p in map(json.loads, planned.output.splitlines())}


def test_a_whole_replica_beside_a_cut_one_still_plans(tmp_path, whole):
    """Only broker 2's hang-0 is cut: its own candidate is withheld, the whole replicas' verdict
    stands and the plan is read from one of them."""
    copy = _copy(tmp_path)
    _cut_log(copy, "hang-0", 1, brokers=("broker-2",))
    result = scan([copy], as_of_ms=_truth()["recorded_at_ms"])
    by_broker = {c["broker"]: (c["reason"], c["hanging"]) for c in result.tables["hanging_candidates"]
                 if (c["topic"], c["partition"]) == ("hang", 0)}
    assert by_broker[2] == (hanging.PARTITION_NOT_IN_COPY, None)
    assert {v for b, v in by_broker.items() if b != 2} == {(hanging.NO_COORDINATOR_RECORD, True)}
    assert _planned(result) == _planned(whole)
    assert {p["broker"] for p in result.tables["abort_plans"] if (p["topic"], p["partition"]) == ("hang", 0)} <= {0, 1}


def test_the_summary_says_how_complete_the_copy_is(tmp_path, whole):
    """One line under "Scanned ...": the replicas the copy holds short of their brokers' files
    (the fixture's own cut follower, then hang-0 cut on all three brokers too)."""
    replicas = len(whole.tables["partition_state"])
    as_of = str(_truth()["recorded_at_ms"])

    def copy_line(root) -> str:
        out = CliRunner().invoke(main, ["scan", str(root), "--as-of", as_of, "--no-progress"])
        (para,) = [p for p in out.output.split("\nCopy: ")[1:]]   # a paragraph wrapped to the width
        return "Copy: " + " ".join(para.split("\nDamage: ")[0].split())

    assert copy_line(HANGING / "brokers").startswith(f"Copy: 1 of {replicas} replicas are incomplete")
    copy = _copy(tmp_path)
    _cut_log(copy, "hang-0", 1)
    line = copy_line(copy)
    assert line.startswith(f"Copy: 4 of {replicas} replicas are incomplete") and "partition_state.copy_gap" in line
    assert "no verdict rests on what they lack" in line
