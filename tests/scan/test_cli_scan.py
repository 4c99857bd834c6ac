"""`logscan scan` as an operator runs it, on the real-broker fixture clusters."""

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.summary import EXIT_HANGING

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def run(*args):
    return CliRunner().invoke(main, ["scan", *args], catch_exceptions=False)


def truth(cluster):
    return json.loads((FIXTURES / cluster / "truth" / "truth.json").read_text())


def test_hanging_cluster_exits_4_and_lists_what_find_hanging_listed():
    t = truth("hanging")
    result = run(str(FIXTURES / "hanging" / "brokers"), "--as-of", str(t["recorded_at_ms"]), "--format", "json")
    assert result.exit_code == EXIT_HANGING
    rows = [json.loads(line) for line in result.output.splitlines()]
    got = sorted((r["broker"], r["topic"], r["partition"], r["producer_id"], r["start_offset"])
                 for r in rows if r["hanging"])
    want = sorted((int(name.split(".")[0].split("-")[1]), r["Topic"], int(r["Partition"]), int(r["ProducerId"]),
                   int(r["StartOffset"]))
                  for name, rec in t["find_hanging"].items() if name.endswith("max-timeout-15")
                  for r in rec["rows"])
    assert got == want and got


def test_the_text_shows_each_transaction_once_with_the_replicas_that_judge_it_alike():
    # Every replica of a hanging partition has the same verdict and evidence: one row and one
    # evidence paragraph for the three (they were three of each), the JSON keeping a row per replica.
    t = truth("hanging")
    text = CliRunner(env={"COLUMNS": "100"}).invoke(
        main, ["scan", str(FIXTURES / "hanging" / "brokers"), "--as-of", str(t["recorded_at_ms"]), "--no-progress"]
    ).output
    rows = [cells for cells in map(str.split, text.splitlines()) if cells[-1:] == ["no_coordinator_record"]]
    assert rows == [["hang-0", "0", "0", "60", "yes", "no_coordinator_record"]], text
    evidence = text.split("\n  hang-0, ")[1].split("\n  hang-")[0]
    assert " ".join(evidence.split()) == ("producer 0 epoch 0 from offset 0 (leader 1; brokers 0,1,2 agree): no "
                                          "transactional id has producer id 0 as its current producer (expired or "
                                          "never known)"), text
    # What to run next, the input shell-quoted (a copy's path is anybody's bytes).
    brokers = str(FIXTURES / "hanging" / "brokers")
    assert f"\n  logscan plan {shlex.quote(brokers)} --bootstrap-server HOST:PORT\n" in text, text


@pytest.mark.parametrize("cluster", ["tv1", "tv2"])
def test_clusters_without_hangs_exit_0(cluster):
    t = truth(cluster)
    result = run(str(FIXTURES / cluster / "brokers"), "--as-of", str(t["recorded_at_ms"]))
    assert result.exit_code == 0, result.output
    assert "judged against __transaction_state: 0" in result.output and "Next:" not in result.output


def test_as_of_accepts_iso_and_a_later_time_turns_open_transactions_into_candidates():
    result = run(str(FIXTURES / "tv1" / "brokers"), "--as-of", "2099-01-01T00:00:00Z", "--format", "json")
    rows = [json.loads(line) for line in result.output.splitlines()]
    # tv1's still-open transaction is Ongoing at the coordinator: a candidate, never hanging.
    assert rows and {(r["reason"], r["hanging"]) for r in rows} == {("coordinator_ongoing", False)}
    assert result.exit_code == 0


def test_bad_as_of_is_a_usage_error():
    result = CliRunner().invoke(main, ["scan", str(FIXTURES / "tv1" / "brokers"), "--as-of", "yesterday"])
    assert result.exit_code == 2 and "neither epoch milliseconds nor an ISO-8601 time" in result.output


def test_plan_prints_one_abort_per_hanging_partition_with_both_command_forms():
    t = truth("hanging")
    result = CliRunner().invoke(main, ["plan", str(FIXTURES / "hanging" / "brokers"), "--as-of",
                                       str(t["recorded_at_ms"]), "--bootstrap-server", "k1:9092",
                                       "--format", "json"], catch_exceptions=False)
    assert result.exit_code == EXIT_HANGING
    plans = [json.loads(line) for line in result.output.splitlines()]
    rows = {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["StartOffset"]))
            for rec in t["find_hanging"].values() for r in rec["rows"]}
    assert sorted((p["topic"], p["partition"], p["producer_id"], p["producer_epoch"], p["start_offset"])
                  for p in plans) == sorted(rows)
    for p in plans:
        assert p["command"] == (f"kafka-transactions.sh --bootstrap-server k1:9092 abort --topic {p['topic']} "
                                f"--partition {p['partition']} --start-offset {p['start_offset']}")
        assert f"--producer-id {p['producer_id']} --producer-epoch {p['producer_epoch']}" in p["command_explicit"]
        assert p["risk"] in ("low", "medium")


def test_plan_makes_nothing_for_clusters_without_hangs():
    result = CliRunner().invoke(main, ["plan", str(FIXTURES / "tv1" / "brokers"), "--as-of", "2099-01-01T00:00:00Z"])
    assert result.exit_code == 0 and result.output == ""
