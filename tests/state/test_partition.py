"""Cross-replica rules on tiny inputs: leaders, agreement, the late flag, plans per partition,
and the coordinator's replica choice and merge that both drivers share."""

import pytest

from logscan.state import hanging as h
from logscan.state import partition as P
from logscan.state.coordinator import (WHOLE, TxnLogRecord, choose_replicas, is_complete, latest_states,
                                       merge_partitions)
from logscan.state.snapshots import compare_producers


def ev(offset, kind, tid="T1", ts=100, **kw):
    return P.MetadataEvent(offset, ts, kind, tid, **kw)


def test_leaders_replay_up_to_as_of_and_keep_the_last_real_leader():
    events = [ev(0, P.TOPIC, name="orders"), ev(1, P.PARTITION, partition=0, leader=1),
              ev(2, P.PARTITION, partition=1, leader=-1),
              ev(3, P.PARTITION_CHANGE, partition=0, leader=-2, ts=200),   # ISR change only
              ev(4, P.PARTITION_CHANGE, partition=1, leader=2, ts=200),
              ev(5, P.PARTITION_CHANGE, partition=0, leader=2, ts=300),    # controlled shutdown of 1
              ev(6, P.PARTITION_CHANGE, partition=0, leader=-1, ts=400)]   # whole cluster down
    assert P.partition_leaders(events, 250) == {("orders", 0): 1, ("orders", 1): 2}
    assert P.partition_leaders(events, None) == {("orders", 0): 2, ("orders", 1): 2}
    assert P.partition_leaders(events, 50) == {}


def test_a_removed_topic_has_no_leader_and_a_recreated_one_has_its_own():
    events = [ev(0, P.TOPIC, name="t"), ev(1, P.PARTITION, partition=0, leader=1), ev(2, P.REMOVE_TOPIC),
              ev(3, P.TOPIC, tid="T2", name="t"), ev(4, P.PARTITION, tid="T2", partition=0, leader=0)]
    assert P.partition_leaders(events[:3]) == {}
    assert P.partition_leaders(events) == {("t", 0): 0}


def state(broker, leo=10, hw=10, lso=10, start=0, topic="t", partition=0, open_txns=0):
    return P.ReplicaState(broker, topic, partition, start, leo, hw, True, None if lso == hw else lso, lso,
                          open_txns, 1)


def view(broker, leo=10, epoch=None, open_=(), hw=None, lso=None, start=0):
    hw = leo if hw is None else hw
    lso = hw if lso is None else lso
    txns = [h.OpenTxn("t", 0, pid, 0, first, ts) for pid, first, ts in open_]
    return P.ReplicaView(state(broker, leo, hw, lso, start=start, open_txns=len(txns)), txns,
                         {t.producer_id: 3 for t in txns}, leader_epoch=epoch)


def closed(*per_replica):
    """(broker, [(producer, first offset, end marker offset, outcome)]) pairs as the drivers
    stream them into the cross-replica rules: by end-marker offset, then broker."""
    out = [(b, P.ClosedTxn(pid, first, at, kind)) for b, txns in per_replica for pid, first, at, kind in txns]
    return sorted(out, key=lambda bt: (bt[1].end_marker_offset, bt[0]))


def differences(here, there, closed_here=(), closed_there=()):
    views = [here, there]
    markers = P.closed_markers(views, closed((here.state.broker, closed_here), (there.state.broker, closed_there)))
    return [d.text for d in P.replica_differences(here, there, markers)]


def test_leadership_from_metadata_else_from_a_single_highest_epoch():
    views = [view(0, epoch=4), view(1, epoch=5), view(2, epoch=None)]
    assert P.leadership(views, 0) == (0, P.CLUSTER_METADATA, {0: True, 1: False, 2: False})
    assert P.leadership(views, None) == (1, P.LEADER_EPOCH_CHECKPOINT, {0: False, 1: True, 2: False})
    tied = [view(0, epoch=5), view(1, epoch=5), view(2, epoch=3)]
    assert P.leadership(tied, None) == (None, P.LEADER_EPOCH_CHECKPOINT, {0: None, 1: None, 2: False})
    assert P.leadership([view(0), view(1)], None) == (None, None, {0: None, 1: None})


def test_differences_name_offsets_open_transactions_and_markers_both_should_hold():
    leader, on_leader = view(1, leo=20), [(7, 0, 5, "COMMIT"), (8, 6, 12, "ABORT"), (9, 13, 19, "COMMIT")]
    lagging = view(2, leo=15, lso=13, open_=[(9, 13, 50)])
    assert differences(lagging, leader, [(7, 0, 5, "COMMIT"), (8, 6, 12, "ABORT")], on_leader) == [
        "log_end_offset 15 here, 20 there", "high_watermark 15 here, 20 there",
        "last_stable_offset 13 here, 20 there", "open here only: producer 9 from offset 13"]
    diverged = view(2, leo=20)
    assert differences(diverged, leader, [(7, 0, 5, "ABORT"), (8, 6, 12, "ABORT"), (9, 13, 19, "COMMIT")],
                       on_leader) == [
        "end markers here only: ABORT at 5 (producer 7, from 0)",
        "end markers there only: COMMIT at 5 (producer 7, from 0)",
        "diverged_at 5: the ABORT marker of producer 7's transaction from 0 here, the COMMIT marker of producer 7's "
        "transaction from 0 there (two histories)"]
    assert differences(leader, view(0, leo=20), on_leader, on_leader) == []


def test_differences_are_fields_with_both_values_and_how_many_transactions_or_markers():
    leader, on_leader = view(1, leo=20), [(7, 0, 5, "COMMIT"), (8, 6, 12, "ABORT"), (9, 13, 19, "COMMIT")]
    lagging = view(2, leo=15, lso=13, open_=[(9, 13, 50)])
    markers = P.closed_markers([lagging, leader], closed((2, [(7, 0, 5, "ABORT")]), (1, on_leader)))
    got = [d[:4] for d in P.replica_differences(lagging, leader, markers)]
    assert got == [(1, "log_end_offset", 15, 20), (1, "high_watermark", 15, 20), (1, "last_stable_offset", 13, 20),
                   (1, "open_here_only", 1, None), (1, "end_markers_here_only", 1, None),
                   (1, "end_markers_there_only", 2, None), (1, "diverged_at", 5, None)]
    out = P.assess_partition([lagging, leader], closed((2, [(7, 0, 5, "ABORT")]), (1, on_leader)),
                             metadata_leader=1, index={}, as_of_ms=0, max_timeout_ms=10**9, coordinator=None,
                             bootstrap="b")
    lead, follower = out.replicas
    assert (lead.broker, follower.broker) == (1, 2)
    assert {d.other_broker for d in lead.replica_differences} == {2}
    assert [d.field for d in lead.replica_differences][:3] == ["log_end_offset", "high_watermark",
                                                              "last_stable_offset"]
    assert P.replica_differences_text(follower.replica_differences).startswith(
        "vs broker 1: log_end_offset 15 here, 20 there; high_watermark 15 here, 20 there; ")
    assert P.replica_differences_text(()) is None


def test_marker_differences_show_five_then_count_the_rest():
    a, b = view(0, leo=100), view(1, leo=100)
    txns = [(p, 10 * p, 10 * p + 5, "COMMIT") for p in range(8)]
    assert differences(a, b, txns, txns[:1]) == [
        "end markers here only: " + ", ".join(f"COMMIT at {10 * p + 5} (producer {p}, from {10 * p})"
                                             for p in range(1, 6)) + " and 2 more"]


def test_closed_transactions_must_come_by_end_marker_offset():
    markers = P.ClosedMarkers([view(0), view(1)])
    markers.add(0, P.ClosedTxn(1, 0, 5, "COMMIT"))
    with pytest.raises(ValueError, match="out of order"):
        markers.add(1, P.ClosedTxn(1, 0, 4, "COMMIT"))


def test_a_marker_another_replica_holds_amends_find_hanging():
    # Broker 1 holds producer 5's transaction from offset 3 open; broker 2, further ahead,
    # committed it at 9: broker 1 is behind and lacks the marker, so it is not hanging.
    a = view(1, leo=8, lso=3, open_=[(5, 3, 1_000)])
    b = view(2, leo=12)
    out = P.assess_partition([a, b], closed((2, [(4, 0, 2, "COMMIT"), (5, 3, 9, "COMMIT")])), metadata_leader=2,
                             index={}, as_of_ms=10**7, max_timeout_ms=1, coordinator=WHOLE, bootstrap="b")
    (candidate,) = out.candidates
    assert (candidate.broker, candidate.verdict.reason, candidate.verdict.hanging) == (1, h.REPLICAS_DISAGREE, False)
    assert "broker 2 has its COMMIT marker at offset 9" in candidate.verdict.evidence
    alone = P.assess_partition([a, b], metadata_leader=2, index={}, as_of_ms=10**7, max_timeout_ms=1,
                               coordinator=WHOLE, bootstrap="b")
    assert alone.candidates[0].verdict.reason == h.NO_COORDINATOR_RECORD


def test_assess_partition_flags_late_transactions_and_plans_from_the_replica_ahead():
    # Both replicas hold producer 5's transaction open since offset 3 (last written at t=1000);
    # broker 2 is further ahead, so the plan reads it.
    a = view(1, leo=8, lso=3, open_=[(5, 3, 1_000)])
    b = view(2, leo=9, lso=3, open_=[(5, 3, 1_000), (6, 8, 5_000)])
    out = P.assess_partition([b, a], metadata_leader=1, index={}, as_of_ms=1_000 + 900_000 + 300_001,
                             max_timeout_ms=900_000, coordinator=WHOLE, bootstrap="k:9092")
    assert [(r.broker, r.is_leader, r.oldest_txn_last_timestamp, r.has_late_transaction) for r in out.replicas] == [
        (1, True, 1_000, True), (2, False, 1_000, True)]
    assert not any(r.replicas_agree for r in out.replicas)
    assert {(c.broker, c.txn.producer_id, c.verdict.reason) for c in out.candidates} == {
        (1, 5, h.NO_COORDINATOR_RECORD), (2, 5, h.NO_COORDINATOR_RECORD), (2, 6, h.NO_COORDINATOR_RECORD)}
    assert [(broker, p.producer_id, p.start_offset) for broker, p in out.plans] == [(2, 5, 3), (2, 6, 8)]
    assert "from 3 to 8" in " ".join(out.plans[0][1].effects)  # the next open transaction holds the LSO
    assert out.plans[0][1].command.startswith("kafka-transactions.sh --bootstrap-server k:9092 abort")
    on_time = P.assess_partition([a], metadata_leader=None, index={}, as_of_ms=1_000 + 900_000 + 300_000,
                                 max_timeout_ms=900_000, coordinator=WHOLE, bootstrap="k:9092")
    assert not on_time.replicas[0].has_late_transaction and on_time.replicas[0].replicas_agree


def test_plans_tie_break_on_the_leader_then_the_lowest_broker():
    views = [view(b, leo=9, open_=[(5, 3, 1_000)]) for b in (0, 1, 2)]
    common = dict(index={}, as_of_ms=10**7, max_timeout_ms=1, coordinator=WHOLE, bootstrap="b")
    assert [b for b, _ in P.assess_partition(views, metadata_leader=2, **common).plans] == [2]
    assert [b for b, _ in P.assess_partition(views, metadata_leader=None, **common).plans] == [0]


def rec(partition, offset, tid, state="Ongoing", ts=1_000):
    return TxnLogRecord(partition, offset, tid, state, 5, last_update_timestamp_ms=ts)


def test_replica_choice_is_furthest_log_end_then_lowest_broker():
    assert choose_replicas([(0, 2, 10), (0, 1, 10), (0, 0, 9), (1, 2, 4), (1, 0, 5)]) == {0: 1, 1: 0}
    assert choose_replicas([]) == {}
    assert is_complete([0, 1, 2]) and not is_complete([0, 2]) and not is_complete([])
    # With the partition count from __cluster_metadata, a missing last partition shows.
    assert not is_complete([0, 1], 3) and is_complete([0, 1, 2], 3) and not is_complete([], 0)


def test_a_replica_left_behind_by_a_newer_leader_epoch_is_not_chosen_however_far_it_reaches():
    """A former leader's unreplicated tail (epoch 4) past where the new leader (epoch 5) took
    over: Kafka truncates it when it fetches again, so the furthest log is not the history."""
    stale, leader, follower = (0, 1, 12, None, None, 4), (0, 2, 10, None, None, 5), (0, 3, 9, None, None, 5)
    assert choose_replicas([stale, leader, follower]) == {0: 2}
    # a follower of the new epoch reaching further than the leader's copy (copied later) wins
    assert choose_replicas([stale, leader, (0, 3, 11, None, None, 5)]) == {0: 3}
    # an epoch the copy does not show (no leader-epoch-checkpoint) competes by log end
    assert choose_replicas([stale, leader, (0, 3, 13, None, None, None)]) == {0: 3}
    assert choose_replicas([stale]) == {0: 1}


def test_partition_counts_follow_creation_and_removal():
    events = [ev(0, P.TOPIC, name="__transaction_state"), ev(1, P.PARTITION, partition=0, leader=0),
              ev(2, P.PARTITION, partition=2, leader=1, ts=300), ev(3, P.TOPIC, tid="T2", name="x"),
              ev(4, P.PARTITION, tid="T2", partition=0, leader=0), ev(5, P.REMOVE_TOPIC, tid="T2")]
    assert P.partition_counts(events) == {"__transaction_state": 3}
    assert P.partition_counts(events, 200) == {"__transaction_state": 1}
    assert P.partition_counts(events[:5]) == {"__transaction_state": 3, "x": 1}


def test_a_transactional_id_in_two_partitions_resolves_the_same_in_any_order():
    records = [rec(0, 0, "a", ts=5), rec(1, 0, "a", "CompleteCommit", ts=9), rec(2, 0, "a", "Empty", ts=9),
               rec(1, 1, "b"), TxnLogRecord(1, 2, "b"), rec(0, 1, "b", ts=3)]
    forward = latest_states(records)
    assert (forward["a"].coordinator_partition, forward["a"].state) == (1, "CompleteCommit")
    assert forward["b"].coordinator_partition == 0  # the tombstone removed it from partition 1 only
    per_partition = [r for p in (2, 1, 0)
                     for r in latest_states(x for x in records if x.coordinator_partition == p).values()]
    assert merge_partitions(per_partition) == forward


def test_snapshot_comparison_names_each_difference():
    held = {1: (0, 2, 4, 1_000, None), 2: (1, 0, 9, 2_000, 40), 3: (0, 0, 0, 10, None)}
    rebuilt = {1: (0, 2, 4, 1_000, None), 2: (1, 0, 9, 2_000, None), 4: (0, -1, 0, 20, None)}
    diffs = compare_producers(held, rebuilt)
    assert diffs[1] is None
    assert diffs[2] == "current_txn_start_offset None rebuilt, 40 in the snapshot"
    assert diffs[3].startswith("in the snapshot, but the log")
    assert diffs[4].startswith("not in the snapshot")


def _diverged(views, *per_replica):
    return P.closed_markers(views, closed(*per_replica)).divergence()


def test_two_histories_are_found_at_the_first_offset_both_hold_differently():
    """Issue 36: where both replicas hold an offset it is the same record (a follower copies
    its leader's bytes, the cleaner only removes), so any offset held differently is two
    histories; the first such offset is diverged_at."""
    a, b = view(1, leo=20), view(2, leo=20)
    # COMMIT on one replica, ABORT on the other, at one offset
    assert _diverged([a, b], (1, [(7, 0, 5, "COMMIT")]), (2, [(7, 0, 5, "ABORT")]))[:3] == (5, 1, 2)
    # markers of two producers at one offset
    assert _diverged([a, b], (1, [(7, 0, 5, "COMMIT")]), (2, [(8, 1, 5, "COMMIT")]))[0] == 5
    # a marker on one, the data of a transaction on the other (closed later, or still open)
    assert _diverged([a, b], (1, [(7, 0, 5, "COMMIT")]), (2, [(8, 5, 9, "COMMIT")]))[0] == 5
    assert _diverged([a, view(2, leo=20, lso=5, open_=[(8, 5, 100)])], (1, [(7, 0, 5, "COMMIT")]))[0] == 5
    # transactions of two producers from one offset
    assert _diverged([a, b], (1, [(7, 3, 5, "COMMIT")]), (2, [(8, 3, 9, "ABORT")]))[0] == 3
    assert _diverged([view(1, leo=20, lso=3, open_=[(7, 3, 100)]), view(2, leo=20, lso=3, open_=[(8, 3, 100)])]) \
        [:3] == (3, 1, 2)
    # one producer's marker on one, its transaction still open across it on the other
    assert _diverged([a, view(2, leo=20, lso=2, open_=[(7, 2, 100)])], (1, [(7, 2, 5, "ABORT")]))[0] == 5
    assert _diverged([a, b], (1, [(7, 2, 5, "ABORT")]), (2, [(7, 2, 9, "COMMIT")]))[0] == 5
    assert _diverged([a, b], (1, [(7, 2, 9, "COMMIT")]), (2, [(7, 2, 5, "ABORT")]))[:3] == (5, 1, 2)


def test_lag_and_the_cleaner_are_one_history():
    a = view(1, leo=20)
    # a follower behind: the marker past its log end, its transaction open
    assert _diverged([a, view(2, leo=5, lso=2, open_=[(7, 2, 100)])], (1, [(7, 2, 5, "COMMIT")])) is None
    # a log start past the offset (retention on one replica)
    assert _diverged([a, view(2, leo=20, start=6)], (1, [(7, 0, 5, "COMMIT")]), (2, [(8, 3, 9, "ABORT")])) is None
    # the cleaner removed a marker, or a transaction's first batches, on one replica
    assert _diverged([a, view(2, leo=20)], (1, [(7, 0, 5, "COMMIT"), (8, 6, 9, "ABORT")]),
                     (2, [(8, 6, 9, "ABORT")])) is None
    assert _diverged([a, view(2, leo=20)], (1, [(7, 0, 5, "COMMIT")]), (2, [(7, 3, 5, "COMMIT")])) is None
    # the same history on both
    txns = [(7, 0, 5, "COMMIT"), (8, 1, 9, "ABORT"), (7, 6, 12, "COMMIT")]
    assert _diverged([a, view(2, leo=20)], (1, txns), (2, txns)) is None


def test_two_histories_withhold_the_partition_s_verdicts():
    # broker 2 holds producer 5's transaction open from 3 where broker 1 committed it at 9:
    # with broker 2 ahead, that is no lagging follower but two histories, and no abort is planned
    a = view(1, leo=12, lso=3, open_=[(5, 3, 1_000)])
    b = view(2, leo=12)
    out = P.assess_partition([a, b], closed((2, [(5, 3, 9, "COMMIT")])), metadata_leader=1, index={},
                             as_of_ms=10**7, max_timeout_ms=1, coordinator=WHOLE, bootstrap="b")
    (candidate,) = out.candidates
    assert (candidate.verdict.reason, candidate.verdict.hanging) == (h.DIVERGED, None)
    assert "diverged_at 9" in candidate.verdict.evidence
    assert out.plans == []
    alone = P.assess_partition([a], metadata_leader=1, index={}, as_of_ms=10**7, max_timeout_ms=1,
                               coordinator=WHOLE, bootstrap="b")
    assert alone.plans and alone.candidates[0].verdict.hanging is True
