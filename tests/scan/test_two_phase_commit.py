"""A two-phase-commit participant (KIP-939) is never planned for a partition abort (issue 32
item 5), on the real `two-phase-4.4` cluster (fixtures/trimmed, tools/kafka/twophase.py): a
Kafka 4.4.0 producer that asked for 2PC (InitProducerId 6, Enable2Pc; the broker with
transaction.two.phase.commit.enable) wrote to `two-phase`/0, was prepared and went away with
neither commit nor abort. Kafka's coordinator recorded the transaction Ongoing with
transactionTimeoutMs Int.MaxValue (not the 15 min the producer asked for): it never expires,
and may hold the LSO for days while the external transaction manager decides."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import assess_partitions, scan
from logscan.state import hanging
from tests.killed_fixtures import TRIMMED_CLUSTERS

ROOT = TRIMMED_CLUSTERS["two-phase-4.4"]
TRUTH = json.loads((ROOT / "truth" / "truth.json").read_text())
NOTES = TRUTH["scenario_notes"]["two_phase_participant"]
TID = NOTES["transactional_id"]
DAY_MS = 86_400_000
HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging"


def _verdicts(rows) -> dict[tuple[str, int], set]:
    out: dict[tuple[str, int], set] = {}
    for c in rows:
        out.setdefault((c["topic"], c["partition"]), set()).add((c["reason"], c["hanging"]))
    return out


def test_kafka_recorded_an_ongoing_two_phase_commit_transaction():
    # What the broker's own tools said, live: Ongoing, the partition listed, Int.MaxValue
    # although the producer asked for 15 min; the LSO held at its first offset; no hang found.
    (row,) = TRUTH["describe"][TID]["rows"]
    assert (row["TransactionState"], row["TopicPartitions"], int(row["TransactionTimeoutMs"])) == (
        "Ongoing", "two-phase-0", hanging.TWO_PHASE_COMMIT_TIMEOUT_MS)
    assert NOTES["asked_timeout_ms"] != hanging.TWO_PHASE_COMMIT_TIMEOUT_MS
    assert NOTES["end_offsets"]["last_stable_offset"] == NOTES["data"]["base_offset"]
    assert all(r["rows"] == [] for r in TRUTH["find_hanging"].values())


def test_the_record_on_disk_is_two_phase_and_in_doubt_never_aborted_even_days_later():
    for as_of in (TRUTH["recorded_at_ms"], TRUTH["recorded_at_ms"] + 7 * DAY_MS):
        result = scan([ROOT / "brokers"], as_of_ms=as_of)
        (record,) = [r for r in result.tables["coordinator_state"] if r["transactional_id"] == TID]
        # the timeout as the broker wrote it in __transaction_state
        assert (record["state"], record["transaction_timeout_ms"], record["producer_id"]) == (
            "Ongoing", hanging.TWO_PHASE_COMMIT_TIMEOUT_MS, NOTES["producer"]["producer_id"])
        candidates = [c for c in result.tables["hanging_candidates"] if c["topic"] == NOTES["topic"]]
        # every replica of the partition judges it so
        assert sorted(c["broker"] for c in candidates) == [0, 1, 2]
        assert _verdicts(candidates) == {(NOTES["topic"], 0): {(hanging.TWO_PHASE_COMMIT_IN_DOUBT, None)}}
        assert {c["start_offset"] for c in candidates} == {NOTES["data"]["base_offset"]}
        assert result.tables["abort_plans"] == []


def test_the_cli_says_what_to_do_and_prints_no_abort():
    later = str(TRUTH["recorded_at_ms"] + 7 * DAY_MS)
    out = CliRunner().invoke(main, ["plan", str(ROOT / "brokers"), "--as-of", later, "--no-progress"])
    assert out.exit_code == 0 and "abort --topic" not in out.output, out.output
    out = CliRunner().invoke(main, ["scan", str(ROOT / "brokers"), "--as-of", later, "--no-progress"])
    assert f"{hanging.TWO_PHASE_COMMIT_IN_DOUBT} (unknown): 1" in out.output, out.output
    text = " ".join(out.output.split())
    assert "Never abort it by partition markers" in text and "external transaction manager" in text
    command = "kafka-transactions.sh --bootstrap-server HOST:PORT forceTerminateTransaction --transactionalId"
    assert f"{command} {shlex.quote(TID)}" in text
    assert "abort --topic" not in text


def test_the_two_phase_timeout_covers_only_the_partitions_its_record_lists():
    # No real 2PC participant writes outside its transaction, so the real `hanging` cluster's
    # 'hang-ongoing' (Kafka 4.1.1: Ongoing, listing hang-ongoing-0 only, a write on
    # hang-ongoing-1 never added) is judged again with the two-phase-commit timeout: the
    # listed partition is in doubt, the other still a write never added to the transaction.
    truth = json.loads((HANGING / "truth" / "truth.json").read_text())
    result = scan([HANGING / "brokers"], as_of_ms=truth["recorded_at_ms"])
    (record,) = [r for r in result.tables["coordinator_state"] if r["transactional_id"] == "hang-ongoing"]
    assert record["state"] == "Ongoing" and record["transaction_timeout_ms"] != hanging.TWO_PHASE_COMMIT_TIMEOUT_MS
    record["transaction_timeout_ms"] = hanging.TWO_PHASE_COMMIT_TIMEOUT_MS
    judged = assess_partitions(result, as_of_ms=truth["recorded_at_ms"], max_timeout_ms=15 * 60_000)
    verdicts = _verdicts(judged["hanging_candidates"])
    assert verdicts[("hang-ongoing", 0)] == {(hanging.TWO_PHASE_COMMIT_IN_DOUBT, None)}
    assert verdicts[("hang-ongoing", 1)] == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
    assert ("hang-ongoing", 0) not in {(p["topic"], p["partition"]) for p in judged["abort_plans"]}


def test_the_suggested_command_quotes_the_transactional_id():
    # The real id is shell-safe; one that is not must come out as one quoted word.
    from logscan.state.coordinator import TxnLogRecord

    tid = "app$(touch PWNED); 'x'"
    rec = TxnLogRecord(0, 7, tid, "Ongoing", 5, producer_epoch=1, partitions=(("t", 0),),
                       transaction_timeout_ms=hanging.TWO_PHASE_COMMIT_TIMEOUT_MS)
    verdict = hanging._with_record(hanging.OpenTxn("t", 0, 5, 1, 0, 0), rec)
    assert verdict.reason == hanging.TWO_PHASE_COMMIT_IN_DOUBT
    assert shlex.split(verdict.evidence.rsplit("kafka-transactions.sh", 1)[1])[-1] == tid
