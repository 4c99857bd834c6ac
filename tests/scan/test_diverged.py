"""No verdict from replicas holding two histories (issue 36, item A).

Where two replicas of a partition both hold an offset, it is the same record: a follower
copies its leader's bytes and the log cleaner only removes batches. Replicas holding an offset
differently diverged (an unclean leader election, a copy mixing two clusters), and Kafka would
truncate one of them to its leader's epoch history: the copy cannot tell which log consumers
read, so every hanging verdict of the partition is withheld (`diverged`), the evidence names
the first offset held differently (`diverged_at`), and no abort is planned.

Built from real broker-written files (tests/scan/copy_shapes.py): one broker's folder of a
partition replaced by its folder of another partition of the same shape, so that both
histories are Kafka's own logs; no byte of a segment is written.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from logscan.scan.local import scan
from logscan.state import hanging
from logscan.state.partition import DIVERGED_AT

from .copy_shapes import copy_cluster

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HANGING = FIXTURES / "hanging"
#: An hour past the recording, as tests/scan/test_leader_absent.py judges the hanging cluster.
AS_OF = json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"] + 3_600_000
#: hang/2: producer 2's transaction from 0 left open by a missed marker (one batch). hang/0:
#: producer 0's transaction from 0 that no coordinator knows, then producer 2's, committed at 3.
DIVERGED = ("hang", 2)


def replaced(copy: Path, broker: int, folder: str, by: str) -> Path:
    """``copy``'s broker-``broker``/``folder`` replaced by that broker's ``by`` folder (another
    partition's log, written by Kafka), as a copy mixing two histories holds it."""
    log_dir = copy / f"broker-{broker}"
    shutil.rmtree(log_dir / folder)
    shutil.copytree(log_dir / by, log_dir / folder)
    return copy


def _on(rows: list[dict], key: tuple[str, int]) -> list[dict]:
    return [r for r in rows if (r["topic"], r["partition"]) == key]


def two_histories_copy(tmp_path: Path, broker: int = 1) -> Path:
    """The hanging cluster with broker ``broker``'s hang-2 holding hang-0's log (broker 1 is
    the partition's last leader)."""
    return replaced(copy_cluster(HANGING, tmp_path, f"brokers-{broker}"), broker, "hang-2", "hang-0")


def assert_withheld(tables: dict, broker: int) -> None:
    """Every hanging verdict of hang-2 is `diverged`, naming offset 0, and none is planned."""
    candidates = _on(tables["hanging_candidates"], DIVERGED)
    assert candidates and {(c["reason"], c["hanging"]) for c in candidates} == {(hanging.DIVERGED, None)}
    assert all("diverged_at 0" in c["evidence"] for c in candidates)
    assert not _on(tables["abort_plans"], DIVERGED)
    diverged = {(s["broker"], d["other_broker"], d["value"]) for s in _on(tables["partition_state"], DIVERGED)
                for d in s["replica_differences"] if d["field"] == DIVERGED_AT}
    others = {0, 1, 2} - {broker}
    assert diverged == {(broker, o, 0) for o in others} | {(o, broker, 0) for o in others}


def test_the_whole_copy_plans_the_abort_on_hang_2():
    tables = scan([HANGING / "brokers"], as_of_ms=AS_OF).tables
    assert _on(tables["abort_plans"], DIVERGED)
    assert not [d for s in tables["partition_state"] for d in s["replica_differences"] if d["field"] == DIVERGED_AT]


@pytest.mark.parametrize("broker", [1, 0])
def test_two_histories_of_a_hanging_partition_plan_no_abort(tmp_path, broker):
    """Before: each history alone hangs (producer 2's missed marker, coordinator_moved_on;
    producer 0 unknown to every coordinator, no_coordinator_record) and an abort was planned
    for each, one of them for a transaction the other history never held. The two
    transactions start at one offset: diverged at 0, nothing planned, whichever replica (the
    last leader's or a follower's) holds the other log."""
    whole = scan([HANGING / "brokers"], as_of_ms=AS_OF).tables
    tables = scan([two_histories_copy(tmp_path, broker)], as_of_ms=AS_OF).tables
    assert_withheld(tables, broker)
    # the other partitions are judged as in the whole copy
    assert [p for p in tables["abort_plans"] if p["partition"] != DIVERGED[1] or p["topic"] != DIVERGED[0]] == [
        p for p in whole["abort_plans"] if (p["topic"], p["partition"]) != DIVERGED]


def test_a_commit_on_one_replica_and_an_abort_on_another_are_two_histories(tmp_path):
    """tv2's txn-a/0 and txn-a/1 are written alike but for the second transaction's marker at
    offset 6: COMMIT on txn-a/0, ABORT on txn-a/1. Broker 0's txn-a-1 holding txn-a-0's log
    diverges from the others at 6."""
    copy = replaced(copy_cluster(FIXTURES / "tv2", tmp_path), 0, "txn-a-1", "txn-a-0")
    states = _on(scan([copy]).tables["partition_state"], ("txn-a", 1))
    found = {(s["broker"], d["other_broker"], d["value"]): d["text"] for s in states
             for d in s["replica_differences"] if d["field"] == DIVERGED_AT}
    assert set(found) == {(0, 1, 6), (0, 2, 6), (1, 0, 6), (2, 0, 6)}
    assert "COMMIT marker of producer 0's transaction from 4 here, the ABORT marker" in found[(0, 1, 6)]
    assert not [s for s in states if s["broker"] != 0 and s["replicas_agree"] is False
                and {d["other_broker"] for d in s["replica_differences"]} != {0}]


def test_the_summary_calls_two_histories_no_lag(tmp_path):
    """The summary's partition row says two histories where the replicas diverged, and the
    replicas behind are not called merely lagging."""
    from logscan.scan.summary import table_figures, write_figures

    tables = scan([two_histories_copy(tmp_path)], as_of_ms=AS_OF).tables
    out = io.StringIO()
    write_figures(table_figures(tables, AS_OF), out, max_transaction_timeout_ms=900_000, width=200)
    text = out.getvalue()
    assert [line for line in text.splitlines() if re.match(r"\s*hang-2\s+\d.*two histories$", line)]
    assert "hang-2 on broker 0 (leader 1)" in text and "hold two histories" in text
