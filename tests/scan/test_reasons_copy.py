"""Reason codes that need no special scenario, proven on the real-broker fixture copies.

- ``coordinator_ongoing``: txn_open's transaction (the coordinator lists it as Ongoing with
  the partition) passes find-hanging's age filter once the max timeout is 0, yet Kafka's
  find-hanging with ``--max-transaction-timeout 0`` did not list it: logscan reports it as a
  candidate that is not hanging, and plans nothing.
- ``coordinator_not_in_copy``: the same copy without its ``__transaction_state`` folders
  cannot prove anything about the producer ids: every candidate is undetermined and no abort
  is planned, where the full copy plans one per hanging transaction.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import assess_partitions, scan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _truth(cluster: str) -> dict:
    return json.loads((FIXTURES / cluster / "truth" / "truth.json").read_text())


@pytest.mark.parametrize("cluster", ["tv1", "tv2"])
def test_coordinator_ongoing_is_a_candidate_but_not_hanging(cluster):
    truth = _truth(cluster)
    notes = truth["scenario_notes"]["txn_open"]
    result = scan([FIXTURES / cluster / "brokers"], as_of_ms=truth["recorded_at_ms"])
    found = assess_partitions(result, as_of_ms=truth["recorded_at_ms"], max_timeout_ms=0)["hanging_candidates"]
    open_on = {tuple(tp) for tp in notes["open_on"]}
    mine = [c for c in found if c["transactional_id"] == notes["transactional_id"]]
    # Every replica of both partitions it wrote to holds the open transaction.
    assert {(c["topic"], c["partition"]) for c in mine} == open_on
    assert len(mine) == 3 * len(open_on)
    for c in mine:
        assert (c["reason"], c["hanging"]) == ("coordinator_ongoing", False)
        assert "Ongoing" in c["evidence"]
    # Kafka agreed: find-hanging with a 0 max timeout left these out on every broker.
    for name, recorded in truth["find_hanging"].items():
        if name.endswith("max-timeout-0"):
            assert not {(r["Topic"], int(r["Partition"])) for r in recorded["rows"]} & open_on, name


def _without_transaction_state(tmp_path: Path) -> Path:
    copy = tmp_path / "brokers"
    shutil.copytree(FIXTURES / "hanging" / "brokers", copy)
    removed = [d for d in copy.glob("*/__transaction_state-*") if d.is_dir()]
    assert removed
    for d in removed:
        shutil.rmtree(d)
    return copy


def test_coordinator_not_in_copy_is_undetermined_and_never_planned(tmp_path):
    truth = _truth("hanging")
    full = scan([FIXTURES / "hanging" / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert full.tables["abort_plans"], "the full copy plans aborts for its hanging transactions"
    hanging_full = {(c["broker"], c["topic"], c["partition"], c["producer_id"])
                    for c in full.tables["hanging_candidates"] if c["hanging"]}

    partial = scan([_without_transaction_state(tmp_path)], as_of_ms=truth["recorded_at_ms"])
    assert partial.tables["coordinator_state"] == [] and not partial.coordinator.partitions
    cands = {(c["broker"], c["topic"], c["partition"], c["producer_id"]): c
             for c in partial.tables["hanging_candidates"]}
    assert hanging_full <= set(cands)
    for key in hanging_full:
        c = cands[key]
        if c["reason"] == "replicas_disagree":
            continue   # a lagging follower: the other replicas decide, whatever the coordinator says
        assert (c["reason"], c["hanging"]) == ("coordinator_not_in_copy", None), key
        assert "lacks part of __transaction_state" in c["evidence"]
    assert partial.tables["abort_plans"] == []


def test_cli_plan_without_transaction_state_plans_nothing(tmp_path):
    copy = _without_transaction_state(tmp_path)
    as_of = str(_truth("hanging")["recorded_at_ms"])
    scan_out = CliRunner().invoke(main, ["scan", str(copy), "--as-of", as_of])
    assert "coordinator_not_in_copy" in scan_out.output
    plan_out = CliRunner().invoke(main, ["plan", str(copy), "--as-of", as_of])
    assert plan_out.exit_code == 0, plan_out.output
    assert "kafka-transactions" not in plan_out.output
