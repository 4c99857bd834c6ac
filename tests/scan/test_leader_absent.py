"""No abort from a copy that lacks a partition's last leader (issue 36, safety).

A follower lags its leader (out of the ISR, or copied before it fetched), so an end marker the
copy lacks may be in the leader's log alone; the coordinator appends its markers with acks=all
and a leader is elected from the ISR, so the last leader `__cluster_metadata` names holds every
marker written. Built from the real `hanging` cluster (Kafka 4.1.1): its broker 2's replica-0
is the follower the fixture cut before its COMMIT marker (truth.json ``post_copy``); here its
checkpoints are made to end with its log, as an out-of-ISR follower's do, so nothing of its own
says it is short. Reshaped copies: folders removed, checkpoint lines rewritten in Kafka's text
format; no byte of a segment is written (tests/scan/copy_shapes.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from logscan.scan import pipeline
from logscan.scan.listing import list_copy
from logscan.scan.local import scan
from logscan.state import hanging

from .copy_shapes import CHECKPOINTS, copy_cluster, read_checkpoint, write_checkpoint

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging"
TRUTH = json.loads((HANGING / "truth" / "truth.json").read_text())
CUT = TRUTH["post_copy"]["replica_truncation"]
#: An hour past the recording: the cut follower's open transaction is a find-hanging candidate.
AS_OF = TRUTH["recorded_at_ms"] + 3_600_000
REPLICA = (CUT["topic"], CUT["partition"])
WITHHELD = {hanging.PARTITION_NOT_IN_COPY, hanging.COORDINATOR_NOT_IN_COPY}


def _whole() -> dict:
    return scan([HANGING / "brokers"], as_of_ms=AS_OF).tables


def _last_leaders() -> dict[tuple[str, int], int]:
    """Each partition's last leader, as the whole copy's `__cluster_metadata` names it."""
    result = scan([HANGING / "brokers"], as_of_ms=AS_OF, keep=())
    return {key: row["last_leader"] for key, row in result.leaders.items()}


def in_sync_with_its_log(log_dir: Path, topic: str, partition: int, log_end: int) -> None:
    """The log dir's checkpoints of ``topic-partition`` at ``log_end`` and its snapshots past it
    gone: a follower's files after it fell out of the ISR (its high watermark and recovery
    point never pass its own log end)."""
    for name in CHECKPOINTS[:2]:
        entries = read_checkpoint(log_dir / name)
        write_checkpoint(log_dir / name, [(t, p, min(o, log_end) if (t, p) == (topic, partition) else o)
                                          for t, p, o in entries])
    for snapshot in (log_dir / f"{topic}-{partition}").glob("*.snapshot"):
        if int(snapshot.stem) > log_end:
            snapshot.unlink()


def lone_follower_copy(tmp_path: Path) -> Path:
    """The whole cluster but the cut replica's partition, held by the cut follower alone."""
    copy = copy_cluster(HANGING, tmp_path)
    for broker in (0, 1, 2):
        if broker != CUT["broker"]:
            shutil.rmtree(copy / f"broker-{broker}" / f"{CUT['topic']}-{CUT['partition']}")
    in_sync_with_its_log(copy / f"broker-{CUT['broker']}", *REPLICA, CUT["new_log_end_offset"])
    return copy


def _on(rows: list[dict], key: tuple[str, int]) -> list[dict]:
    return [r for r in rows if (r["topic"], r["partition"]) == key]


def test_the_whole_copy_judges_the_cut_follower_a_lagging_one():
    tables = _whole()
    on_replica = _on(tables["hanging_candidates"], REPLICA)
    assert on_replica and {(c["broker"], c["reason"], c["hanging"]) for c in on_replica} == {
        (CUT["broker"], hanging.REPLICAS_DISAGREE, False)}
    assert not _on(tables["abort_plans"], REPLICA)
    hanging_now = {(h["topic"], h["partition"]) for h in TRUTH["scenario_notes"]["hanging_txns"]["hanging"]}
    assert hanging_now <= {(p["topic"], p["partition"]) for p in tables["abort_plans"]}


def test_a_lone_lagging_follower_gets_no_abort(tmp_path):
    """Without its leader's replica the follower's open transaction is the coordinator's
    missed marker (CompleteCommit), hanging by every rule of the replica alone; an abort
    pasted then aborts whatever the producer has open. It is partition_not_in_copy, and the
    evidence names the broker to copy."""
    last = _last_leaders()[REPLICA]
    assert last != CUT["broker"]
    result = scan([lone_follower_copy(tmp_path)], as_of_ms=AS_OF)
    (state,) = _on(result.tables["partition_state"], REPLICA)
    assert state["copy_gap"] is None  # nothing of the follower's own says it is short
    (candidate,) = _on(result.tables["hanging_candidates"], REPLICA)
    assert (candidate["reason"], candidate["hanging"]) == (hanging.PARTITION_NOT_IN_COPY, None)
    assert "a missed marker" in candidate["evidence"]
    assert f"copy broker {last}'s log dirs" in candidate["evidence"]
    assert not _on(result.tables["abort_plans"], REPLICA)
    # the other partitions, every replica here, are judged as in the whole copy
    whole = _whole()
    assert result.tables["abort_plans"] == whole["abort_plans"]


def _coordinator_of(tables: dict, topic: str, partition: int) -> set[int]:
    """The coordinator partitions the hanging verdicts of ``topic-partition`` rest on."""
    out = set()
    for c in _on(tables["hanging_candidates"], (topic, partition)):
        rec = [r for r in tables["coordinator_state"] if r["transactional_id"] == c["transactional_id"]]
        out.update(r["partition"] for r in rec)
    return out


def test_a_coordinator_partition_without_its_last_leader_plans_nothing_resting_on_it(tmp_path):
    """The last leader's replica of one `__transaction_state` partition gone: its followers'
    copies may lack the records it wrote last, so every verdict resting on that partition's
    records (or on a record's absence) is coordinator_not_in_copy; verdicts resting on the
    other partitions' records stand."""
    whole = _whole()
    leaders = _last_leaders()
    planned = {(p["topic"], p["partition"]): p for p in whole["abort_plans"]}
    resting = {key: _coordinator_of(whole, *key) for key in planned}
    gone = min(p for parts in resting.values() for p in parts)
    copy = copy_cluster(HANGING, tmp_path)
    shutil.rmtree(copy / f"broker-{leaders[('__transaction_state', gone)]}" / f"__transaction_state-{gone}")

    tables = scan([copy], as_of_ms=AS_OF).tables

    plans = {(p["topic"], p["partition"]) for p in tables["abort_plans"]}
    for key, parts in resting.items():
        candidates = [c for c in _on(tables["hanging_candidates"], key) if c["hanging"] is not False]
        if not parts or gone in parts:  # absence proves nothing now, nor a record of that partition
            assert key not in plans
            assert {c["reason"] for c in candidates} == {hanging.COORDINATOR_NOT_IN_COPY}, key
            assert all(f"__transaction_state-{gone}" in c["evidence"] for c in candidates)
        else:
            assert key in plans, key
    assert plans and plans < set(planned)


def test_one_broker_s_copy_plans_only_where_it_led(tmp_path):
    """Each broker's log dir alone: a plan only for a partition that broker last led, resting
    on a coordinator partition it last led too; every other hanging verdict withheld."""
    leaders = _last_leaders()
    for broker in (0, 1, 2):
        copy = tmp_path / f"broker-{broker}-alone"
        shutil.copytree(HANGING / "brokers" / f"broker-{broker}", copy / f"broker-{broker}")
        tables = scan([copy], as_of_ms=AS_OF).tables
        for plan in tables["abort_plans"]:
            key = (plan["topic"], plan["partition"])
            assert leaders[key] == broker, (broker, plan)
            assert all(leaders[("__transaction_state", p)] == broker for p in _coordinator_of(tables, *key)), plan
        for c in tables["hanging_candidates"]:
            if leaders[(c["topic"], c["partition"])] != broker and c["hanging"] is not False:
                assert c["reason"] in WITHHELD, (broker, c)


def test_the_metadata_step_names_the_last_leader_beside_the_leader_at_as_of():
    (info,) = [pipeline.replica_info(r) for r in list_copy([HANGING / "brokers" / "broker-0"]).replicas
               if r.replica.topic == pipeline.CLUSTER_METADATA_TOPIC]
    early = dict(((r["topic"], r["partition"]), r) for k, r in pipeline.metadata(info, 0) if k == "leader")
    late = dict(((r["topic"], r["partition"]), r) for k, r in pipeline.metadata(info, AS_OF) if k == "leader")
    assert early.keys() == late.keys() and REPLICA in late
    assert {r["leader"] for r in early.values()} == {None}  # nothing was led before the cluster began
    assert [r["last_leader"] for r in early.values()] == [r["last_leader"] for r in late.values()]
    assert all(r["last_leader"] is not None for r in late.values())
