"""A two-phase-commit participant (KIP-939) is never planned for a partition abort (issue 32
item 5). Kafka 4.4.0's TransactionCoordinator.handleInitProducerId records Int.MaxValue as the
transaction timeout of a producer that asks for 2PC (read with javap); such a transaction may
hold the LSO for days while its external transaction manager decides. The real `hanging`
cluster's Ongoing record of 'hang-ongoing' (Kafka 4.1.1, listing hang-ongoing-0, a live
transaction) is judged again with that timeout: no 2PC cluster is recorded yet."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from logscan.scan.local import assess_partitions, scan
from logscan.state import hanging

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging"
TRUTH = json.loads((HANGING / "truth" / "truth.json").read_text())


def _verdicts(rows) -> dict[tuple[str, int], set]:
    out: dict[tuple[str, int], set] = {}
    for c in rows:
        out.setdefault((c["topic"], c["partition"]), set()).add((c["reason"], c["hanging"]))
    return out


def test_an_ongoing_two_phase_commit_transaction_is_in_doubt_never_aborted():
    as_of = TRUTH["recorded_at_ms"]
    result = scan([HANGING / "brokers"], as_of_ms=as_of)
    assert _verdicts(result.tables["hanging_candidates"])[("hang-ongoing", 0)] == {
        (hanging.COORDINATOR_ONGOING, False)}
    (record,) = [r for r in result.tables["coordinator_state"] if r["transactional_id"] == "hang-ongoing"]
    assert record["state"] == "Ongoing" and record["transaction_timeout_ms"] != hanging.TWO_PHASE_COMMIT_TIMEOUT_MS
    record["transaction_timeout_ms"] = hanging.TWO_PHASE_COMMIT_TIMEOUT_MS
    judged = assess_partitions(result, as_of_ms=as_of, max_timeout_ms=15 * 60_000)
    verdicts = _verdicts(judged["hanging_candidates"])
    assert verdicts[("hang-ongoing", 0)] == {(hanging.TWO_PHASE_COMMIT_IN_DOUBT, None)}
    # The partition its record does not list is still a write never added to the transaction.
    assert verdicts[("hang-ongoing", 1)] == {(hanging.PARTITION_NOT_IN_TRANSACTION, True)}
    assert ("hang-ongoing", 0) not in {(p["topic"], p["partition"]) for p in judged["abort_plans"]}
    (evidence,) = {c["evidence"] for c in judged["hanging_candidates"] if (c["topic"], c["partition"]) == (
        "hang-ongoing", 0)}
    assert "Never abort it by partition markers" in evidence
    assert evidence.endswith(f"forceTerminateTransaction --transactionalId {shlex.quote('hang-ongoing')}")


def test_the_suggested_command_quotes_the_transactional_id():
    from logscan.state.coordinator import TxnLogRecord

    tid = "app$(touch PWNED); 'x'"
    rec = TxnLogRecord(0, 7, tid, "Ongoing", 5, producer_epoch=1, partitions=(("t", 0),),
                       transaction_timeout_ms=hanging.TWO_PHASE_COMMIT_TIMEOUT_MS)
    verdict = hanging._with_record(hanging.OpenTxn("t", 0, 5, 1, 0, 0), rec)
    assert verdict.reason == hanging.TWO_PHASE_COMMIT_IN_DOUBT
    assert shlex.split(verdict.evidence.rsplit("kafka-transactions.sh", 1)[1])[-1] == tid
