"""`logscan scan`'s text (logscan.scan.summary.write_figures, both executors print it): a row
per partition with its leader's numbers, a row per transaction with its verdict once, the
lagging follower named, --per-replica, and tables that fit 80 and 100 columns without a word
cut in two. On the real `hanging` cluster (a follower of replica-0 copied before its marker)
and on small rows where the copy lacks the leader or the replicas judge alike."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan import summary

from .conftest import HANGING, truth

BROKERS = str(HANGING / "brokers")


def _text(columns: int, *extra: str) -> str:
    res = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        main, ["scan", BROKERS, "--as-of", str(truth()["recorded_at_ms"]), "--no-progress", *extra])
    assert res.exit_code == 4, res.output
    return res.stdout


def _rows(text: str, first: str) -> list[list[str]]:
    """The table rows starting with ``first`` (not the lagging followers' "PARTITION on broker")."""
    return [cells for cells in map(str.split, text.splitlines()) if cells[:1] == [first] and cells[1:2] != ["on"]]


def _leader(topic: str, partition: int) -> str:
    return str(next(p["leader"] for p in truth()["partitions"] if (p["topic"], p["partition"]) == (topic, partition)))


def test_a_row_per_partition_with_its_leaders_numbers_and_a_row_per_transaction():
    text = _text(100)
    # hang-0: the partition's row (leader, log start, LSO, HW, LEO, LSO lag, open, replicas), then
    # its transaction's row (producer, start offset, age min, hanging, reason): once each, for 3 replicas
    assert _rows(text, "hang-0") == [["hang-0", _leader("hang", 0), "0", "0", "4", "4", "4", "1", "3", "agree"],
                                     ["hang-0", "0", "0", "60", "yes", "no_coordinator_record"]], text
    # replica-0: the leader's numbers (nothing open, LSO at the HW), broker 2 behind it; no transaction row
    assert _rows(text, "replica-0") == [["replica-0", _leader("replica", 0), "0", "5", "5", "5", "0", "0", "2",
                                         "behind"]], text
    assert "judged against __transaction_state: 5 (15 replica rows)" in " ".join(text.split())


def test_the_lagging_follower_is_named_and_explained():
    text = " ".join(_text(100).split())
    assert "Lagging followers: 1 A follower whose log ends before its leader's was copied while it was still " \
           "fetching, or is falling behind" in text
    assert "a transaction open only on the follower is not a hang (replicas_disagree)" in text
    assert (f"replica-0 on broker 2 (leader {_leader('replica', 0)}): log end 4 against 5, LSO 0 against 5, "
            f"open transactions 1 against 0; its copy is incomplete too (partition_state.copy_gap)") in text


def test_per_replica_shows_every_replica():
    text = _text(100, "--per-replica")
    # three lagging rows (broker, is it the leader, log start, LSO, HW, LEO, LSO lag, open) and three candidates
    leader = _leader("hang", 0)
    assert [r[1:] for r in _rows(text, "hang-0") if len(r) == 9] == [
        [b, "yes" if b == leader else "no", "0", "0", "4", "4", "4", "1"] for b in "012"], text
    assert [r[1:] for r in _rows(text, "hang-0") if len(r) == 8] == [
        [b, "0", "0", "0", "60", "yes", "no_coordinator_record"] for b in "012"], text
    assert _rows(text, "replica-0") == [["replica-0", "2", "no", "0", "0", "4", "4", "4", "1"]], text
    assert "judged against __transaction_state: 15\n" in text


@pytest.mark.parametrize("per_replica", [False, True])
@pytest.mark.parametrize("columns", [80, 100])
def test_the_text_fits_the_width_and_never_cuts_a_word(columns, per_replica):
    extra = ("--per-replica",) if per_replica else ()
    text = _text(columns, *extra)
    # Finding lines are one line each (as logscan dump writes them, for grep), and so is the
    # command to paste (its length is the copy's path's: never wrapped); the rest fits.
    long = [line for line in text.splitlines()
            if len(line) > columns and not line.startswith(("  logscan: ", "  logscan plan "))]
    assert long == [], text
    # The same words as when nothing has to wrap: a word cut in two would be two other words.
    wide = _text(1000, *extra)
    if per_replica and columns == 80:    # the candidates' table is too wide: a paragraph per row
        assert "hang-0: broker 1, producer 0, epoch 0, start offset 0, age min 60, hanging yes, reason " \
               "no_coordinator_record" in " ".join(text.split())
        return
    assert Counter(text.split()) == Counter(wide.split())


def _state(broker, topic, partition, leo, lso, open_txns, leader, agree=True, gap=None):
    return {"broker": broker, "topic": topic, "partition": partition, "log_start_offset": 0,
            "last_stable_offset": lso, "high_watermark": leo, "log_end_offset": leo, "lso_lag": leo - lso,
            "open_transactions": open_txns, "leader": leader, "is_leader": None if leader is None else broker == leader,
            "has_late_transaction": False, "copy_gap": gap, "log_fault": None, "replicas_agree": agree}


def _candidate(broker, topic, partition, hanging, reason, evidence):
    return {"broker": broker, "topic": topic, "partition": partition, "producer_id": 7, "producer_epoch": 1,
            "start_offset": 3, "age_ms": 3_600_000, "hanging": hanging, "reason": reason, "evidence": evidence}


def test_without_the_leaders_replica_the_furthest_ahead_speaks_and_differing_verdicts_are_named():
    # The leader (broker 5) is not in the copy: broker 1 is furthest ahead; broker 0 lags it and
    # judges the transaction otherwise.
    states = [_state(0, "t[bold]", 0, 4, 3, 1, 5, agree=False), _state(1, "t[bold]", 0, 9, 3, 1, 5, agree=False)]
    states = [{**s, "is_leader": False} for s in states]
    candidates = [_candidate(0, "t[bold]", 0, False, "replicas_disagree", "behind, lacks the marker"),
                  _candidate(1, "t[bold]", 0, True, "no_coordinator_record", "no transactional id")]
    fig = summary.figures(as_of_ms=0, states=states, candidates=candidates, findings=[], files=[])
    out = io.StringIO()
    summary.write_figures(fig, out, max_transaction_timeout_ms=900_000, inputs=["copy dir"], width=100)
    text = out.getvalue()
    assert _rows(text, "t[bold]-0") == [["t[bold]-0", "(1)", "0", "3", "9", "9", "6", "1", "0", "behind"],
                                        ["t[bold]-0", "7", "3", "60", "yes", "no_coordinator_record"]], text
    flat = " ".join(text.split())
    assert "(N): the copy holds no replica of the leader, or cannot tell which it is" in flat
    assert ("t[bold]-0, producer 7 epoch 1 from offset 3 (broker 1, the furthest ahead; brokers 1 agree): no "
            "transactional id broker 0: replicas_disagree (no): behind, lacks the marker") in flat
    assert "t[bold]-0 on broker 0 (broker 1, the furthest ahead): log end 4 against 9" in flat
    assert "\n  logscan plan 'copy dir' --bootstrap-server HOST:PORT\n" in text
    assert fig.transactions == 1 and fig.candidates == 2 and fig.followers == 1 and fig.lagging_partitions == 1
