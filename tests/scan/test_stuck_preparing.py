"""A coordinator stuck in PrepareCommit/PrepareAbort (issue 32 item 5), on the real `pending`
cluster (Kafka 4.1.1): its coordinators wrote PrepareCommit and PrepareAbort and could not land
the markers on `pending`/0 (NOT_ENOUGH_REPLICAS) when the copy was taken. At the recorded time
that is `markers_pending` (Kafka's find-hanging listed nothing); once the Prepare* record is
older than the limit (the max transaction timeout) the copy cannot tell a coordinator still
retrying from one stuck for good (KAFKA-19999, KAFKA-20322): `coordinator_stuck_preparing`,
hanging unknown, and never an abort plan (the transaction is decided)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging
from tests.killed_fixtures import KILLED_CLUSTERS

ROOT = Path(__file__).resolve().parents[2]
PENDING = ROOT / "fixtures" / "pending"
TRUTH = json.loads((PENDING / "truth" / "truth.json").read_text())
MINUTE = 60_000


def _verdicts(result) -> dict[tuple[str, int], set]:
    out: dict[tuple[str, int], set] = {}
    for c in result.tables["hanging_candidates"]:
        out.setdefault((c["topic"], c["partition"]), set()).add((c["reason"], c["hanging"]))
    return out


def test_a_prepare_record_older_than_the_limit_is_stuck_not_pending():
    recorded = TRUTH["recorded_at_ms"]
    at_recording = scan([PENDING / "brokers"], as_of_ms=recorded)
    assert _verdicts(at_recording)[("pending", 0)] == {(hanging.MARKERS_PENDING, False)}
    prepared = {r["transactional_id"]: r for r in at_recording.tables["coordinator_state"]
                if r["state"] in ("PrepareCommit", "PrepareAbort")}
    assert sorted(prepared) == ["prepare-abort", "prepare-commit"]
    youngest = max(r["last_update_timestamp_ms"] for r in prepared.values())
    # One minute past the default limit (the max transaction timeout, 15 min) after the newer record.
    later = youngest + 16 * MINUTE
    stuck = scan([PENDING / "brokers"], as_of_ms=later)
    assert _verdicts(stuck)[("pending", 0)] == {(hanging.COORDINATOR_STUCK_PREPARING, None)}
    assert stuck.tables["abort_plans"] == []
    evidence = {c["evidence"] for c in stuck.tables["hanging_candidates"] if c["topic"] == "pending"}
    assert len(evidence) == 2 and all("never abort this partition by hand" in e for e in evidence)
    assert {p for e in evidence for p in ("__transaction_state-0", "__transaction_state-2") if p in e} == {
        "__transaction_state-0", "__transaction_state-2"}
    # Just inside the limit it is still pending; and the limit follows the max timeout.
    assert _verdicts(scan([PENDING / "brokers"], as_of_ms=youngest + 14 * MINUTE))[("pending", 0)] == {
        (hanging.MARKERS_PENDING, False)}
    assert _verdicts(scan([PENDING / "brokers"], as_of_ms=later, max_transaction_timeout_ms=30 * MINUTE))[
        ("pending", 0)] == {(hanging.MARKERS_PENDING, False)}
    # The commands say it too: no plan, and the scan's reasons name it.
    out = CliRunner().invoke(main, ["plan", str(PENDING / "brokers"), "--as-of", str(later), "--no-progress"])
    assert out.exit_code == 0 and "kafka-transactions" not in out.output, out.output
    out = CliRunner().invoke(main, ["scan", str(PENDING / "brokers"), "--as-of", str(later), "--no-progress"])
    # The summary counts transactions (each once, whichever replicas judge it so): the two Prepare records.
    assert "coordinator_stuck_preparing (unknown): 2" in out.output, out.output


@pytest.mark.parametrize("root", KILLED_CLUSTERS, ids=[c.name for c in KILLED_CLUSTERS])
def test_stuck_preparing_on_the_killed_clusters_of_3_9_and_4_4(root):
    """The same scenario on Kafka 3.9.2 (transaction.version 0) and 4.4.0 (fixtures/killed): at
    the recorded time (find-hanging listed nothing, describe showed PrepareCommit and
    PrepareAbort) every replica of `pending`/0 says markers_pending; a minute past the max
    transaction timeout after the newer Prepare* record, coordinator_stuck_preparing, and no
    abort plan at either time."""
    truth = json.loads((root / "truth" / "truth.json").read_text())
    notes = truth["scenario_notes"]["killed_broker"]
    assert {tid: d["TransactionState"] for tid, d in notes["describe"].items()} == {
        "prepare-commit": "PrepareCommit", "prepare-abort": "PrepareAbort"}
    assert all(r["rows"] == [] for r in truth["find_hanging"].values())
    at_recording = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert _verdicts(at_recording)[("pending", 0)] == {(hanging.MARKERS_PENDING, False)}
    assert at_recording.tables["abort_plans"] == []
    prepared = {r["transactional_id"]: r for r in at_recording.tables["coordinator_state"]
                if r["state"] in ("PrepareCommit", "PrepareAbort")}
    assert {tid: r["state"] for tid, r in prepared.items()} == {
        "prepare-commit": "PrepareCommit", "prepare-abort": "PrepareAbort"}
    later = max(r["last_update_timestamp_ms"] for r in prepared.values()) + 16 * MINUTE
    stuck = scan([root / "brokers"], as_of_ms=later)
    assert _verdicts(stuck)[("pending", 0)] == {(hanging.COORDINATOR_STUCK_PREPARING, None)}
    assert stuck.tables["abort_plans"] == []


def _prepare_ages(result) -> dict[int, int]:
    """Producer id -> the age of its coordinator's Prepare* record at the scan's time."""
    return {r["producer_id"]: result.as_of_ms - r["last_update_timestamp_ms"]
            for r in result.tables["coordinator_state"] if r["state"] in ("PrepareCommit", "PrepareAbort")}


def _by_producer(candidates) -> dict[int, set]:
    out: dict[int, set] = {}
    for c in candidates:
        if c["topic"] == "pending":
            out.setdefault(c["producer_id"], set()).add((c["reason"], c["hanging"]))
    return out


def test_max_prepare_ms_sets_the_age_past_which_a_prepare_record_is_stuck():
    # At the recorded time both Prepare* records are ~20 s old: pending by the default limit.
    # With --max-prepare-ms between their two ages, the older one is stuck and the younger
    # still pending (the limit is strict, as find-hanging's); the candidates stay those of the
    # max transaction timeout.
    recorded = TRUTH["recorded_at_ms"]
    ages = _prepare_ages(scan([PENDING / "brokers"], as_of_ms=recorded))
    assert len(ages) == 2 and len(set(ages.values())) == 2, ages
    older, younger = sorted(ages, key=ages.get, reverse=True)
    limit = ages[younger]
    result = scan([PENDING / "brokers"], as_of_ms=recorded, max_prepare_ms=limit)
    assert _by_producer(result.tables["hanging_candidates"]) == {
        older: {(hanging.COORDINATOR_STUCK_PREPARING, None)}, younger: {(hanging.MARKERS_PENDING, False)}}
    assert result.tables["abort_plans"] == []
    stuck = [c["evidence"] for c in result.tables["hanging_candidates"]
             if c["producer_id"] == older and c["topic"] == "pending"]
    assert all(f"more than {limit} ms" in e for e in stuck), stuck
    # One ms under the younger age: both stuck.
    both = scan([PENDING / "brokers"], as_of_ms=recorded, max_prepare_ms=limit - 1)
    assert _by_producer(both.tables["hanging_candidates"]) == {
        p: {(hanging.COORDINATOR_STUCK_PREPARING, None)} for p in ages}
    # The CLI: scan and plan take it, the text counts the stuck ones, and no plan is printed.
    args = [str(PENDING / "brokers"), "--as-of", str(recorded), "--no-progress", "--max-prepare-ms", str(limit)]
    out = CliRunner().invoke(main, ["scan", *args])
    assert "coordinator_stuck_preparing (unknown): 1" in out.output and "markers_pending" in out.output, out.output
    out = CliRunner().invoke(main, ["scan", *args, "--format", "json"])
    rows = [json.loads(line) for line in out.output.splitlines()]
    assert _by_producer(rows) == _by_producer(result.tables["hanging_candidates"])
    out = CliRunner().invoke(main, ["plan", *args])
    assert out.exit_code == 0 and "kafka-transactions" not in out.output, out.output
    out = CliRunner().invoke(main, ["plan", *args[:-1], "-1"])
    assert out.exit_code == 2 and "--max-prepare-ms" in out.output, out.output


@pytest.mark.spark
def test_max_prepare_ms_reaches_the_delta_tables_of_both_executors(tmp_path):
    # logscan scan --output --executor local and the Spark job's own command line: the
    # hanging_candidates they write judge the Prepare* records by the limit given.
    pytest.importorskip("deltalake")
    from logscan.sql.delta import open_table

    recorded = TRUTH["recorded_at_ms"]
    ages = _prepare_ages(scan([PENDING / "brokers"], as_of_ms=recorded))
    limit = min(ages.values())
    want = _by_producer(scan([PENDING / "brokers"], as_of_ms=recorded, max_prepare_ms=limit)
                        .tables["hanging_candidates"])
    assert {r for v in want.values() for r in v} == {(hanging.COORDINATOR_STUCK_PREPARING, None),
                                                     (hanging.MARKERS_PENDING, False)}
    out = CliRunner().invoke(main, ["scan", str(PENDING / "brokers"), "--as-of", str(recorded), "--no-progress",
                                    "--max-prepare-ms", str(limit), "--output", str(tmp_path / "local"),
                                    "--executor", "local"])
    assert out.exit_code == 0, out.output
    got = open_table(str(tmp_path / "local" / "hanging_candidates")).to_pyarrow_table().to_pylist()
    assert _by_producer(got) == want
    # The Spark job, as spark-submit runs it: its own process and JVM.
    job = subprocess.run([sys.executable, "-m", "spark_jobs.scan", str(PENDING / "brokers"), "--output",
                          str(tmp_path / "spark"), "--as-of", str(recorded), "--max-prepare-ms", str(limit),
                          "--master", "local[1]", "--tables", "hanging_candidates"],
                         cwd=ROOT, capture_output=True, text=True)
    assert job.returncode == 0, job.stderr[-3000:]
    got = open_table(str(tmp_path / "spark" / "hanging_candidates")).to_pyarrow_table().to_pylist()
    assert _by_producer(got) == want
    bad = subprocess.run([sys.executable, "-m", "spark_jobs.scan", str(PENDING / "brokers"), "--output",
                          str(tmp_path / "bad"), "--max-prepare-ms", "-5"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--max-prepare-ms must not be negative" in bad.stderr, bad.stderr
