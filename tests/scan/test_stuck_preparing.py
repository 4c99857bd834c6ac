"""A coordinator stuck in PrepareCommit/PrepareAbort (issue 32 item 5), on the real `pending`
cluster (Kafka 4.1.1): its coordinators wrote PrepareCommit and PrepareAbort and could not land
the markers on `pending`/0 (NOT_ENOUGH_REPLICAS) when the copy was taken. At the recorded time
that is `markers_pending` (Kafka's find-hanging listed nothing); once the Prepare* record is
older than the limit (the max transaction timeout) the copy cannot tell a coordinator still
retrying from one stuck for good (KAFKA-19999, KAFKA-20322): `coordinator_stuck_preparing`,
hanging unknown, and never an abort plan (the transaction is decided)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging

PENDING = Path(__file__).resolve().parents[2] / "fixtures" / "pending"
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
