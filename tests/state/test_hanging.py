"""Every hanging reason on tiny row sets; the real-broker cases live in the e2e tests."""

import pytest

from logscan.state.coordinator import (WHOLE, CoordinatorCopy, TxnLogRecord, coordinator_copy, index_by_producer_id,
                                       latest_states, merge_partitions)
from logscan.state.partition import copy_gaps
from logscan.state import hanging as h

T = h.OpenTxn("orders", 1, producer_id=5, producer_epoch=2, start_offset=40, last_timestamp=1_000)


def rec(offset, state, pid=5, epoch=2, parts=(("orders", 1),), tid="app-1", **kw):
    return TxnLogRecord(0, offset, tid, state, pid, producer_epoch=epoch, partitions=parts, **kw)


def verdict(records, copy=WHOLE):
    index = index_by_producer_id(latest_states(records))
    return h.classify(T, index.get(T.producer_id, []), copy)


def test_last_record_wins_and_tombstone_removes():
    latest = latest_states([rec(0, "Ongoing"), rec(1, "CompleteCommit"), rec(2, "Empty", tid="b"),
                            TxnLogRecord(0, 3, "b")])
    assert list(latest) == ["app-1"] and latest["app-1"].state == "CompleteCommit"


def test_an_id_in_two_partitions_newest_then_lowest_partition_wins_in_any_order():
    """The Spark job loads each coordinator partition in its own task and merges with
    merge_partitions; the local driver loads all at once with latest_states: same winner."""
    a = TxnLogRecord(2, 7, "dup", "Ongoing", 5, last_update_timestamp_ms=100)
    b = TxnLogRecord(1, 9, "dup", "Empty", 6, last_update_timestamp_ms=100)
    c = TxnLogRecord(0, 1, "dup", "Empty", 7, last_update_timestamp_ms=50)
    for order in ([a, b, c], [c, b, a], [b, a, c]):
        assert latest_states(order)["dup"] == b
        per_partition = [latest_states([r])["dup"] for r in order]
        assert merge_partitions(per_partition)["dup"] == b
    newer = TxnLogRecord(3, 0, "dup", "Ongoing", 8, last_update_timestamp_ms=101)
    assert latest_states([a, b, newer])["dup"] == newer


def test_candidate_rule_is_strict_like_find_hanging():
    assert not h.is_candidate(T, as_of_ms=1_000 + 900_000)
    assert h.is_candidate(T, as_of_ms=1_000 + 900_001)
    assert h.is_candidate(T, as_of_ms=2_000, max_timeout_ms=999)


def test_late_rule_pads_five_minutes():
    assert not h.is_late(1_000, 1_000 + 900_000 + 300_000)
    assert h.is_late(1_000, 1_000 + 900_000 + 300_001)
    assert not h.is_late(0, 10**12)


def test_no_record_is_hanging():
    v = verdict([rec(0, "Ongoing", pid=6)])
    assert (v.reason, v.hanging) == (h.NO_COORDINATOR_RECORD, True)


def test_only_previous_producer_id_is_still_hanging_with_evidence():
    v = verdict([rec(0, "CompleteCommit", pid=9, previous_producer_id=5)])
    assert (v.reason, v.hanging) == (h.NO_COORDINATOR_RECORD, True)
    assert "previous producer id" in v.evidence


def test_missing_coordinator_partition_is_undetermined():
    v = verdict([], CoordinatorCopy(frozenset({0}), 2))
    assert (v.reason, v.hanging) == (h.COORDINATOR_NOT_IN_COPY, None)


#: A copy whose __transaction_state-0 is cut: the broker checkpointed a high watermark of 16,
#: the copy's log ends at 0.
CUT = coordinator_copy([(0, 1, 0, 16, None), (1, 1, 4, 4, None)])[1].counted(2)


def test_no_record_in_a_cut_coordinator_log_is_undetermined():
    """An empty __transaction_state log whose replication-offset-checkpoint says 16 is not
    proof that the coordinator has no record (issue 36): no verdict, so no abort plan."""
    assert verdict([]).reason == h.NO_COORDINATOR_RECORD
    v = verdict([], CUT)
    assert (v.reason, v.hanging) == (h.COORDINATOR_NOT_IN_COPY, None)
    assert "high watermark 16" in v.evidence and "__transaction_state-0" in v.evidence


def test_a_record_in_a_cut_partition_cannot_prove_the_coordinator_moved_on():
    moved_on = [rec(0, "Ongoing"), rec(1, "CompleteCommit", epoch=3)]
    assert verdict(moved_on).reason == h.COORDINATOR_MOVED_ON
    v = verdict(moved_on, CUT)
    assert (v.reason, v.hanging, v.transactional_id) == (h.COORDINATOR_NOT_IN_COPY, None, "app-1")
    # The id's own partition is whole: a cut elsewhere changes nothing.
    other = [r._replace(coordinator_partition=1) for r in moved_on]
    assert verdict(other, CUT).reason == h.COORDINATOR_MOVED_ON


def test_a_live_transaction_stays_live_in_a_cut_partition():
    v = verdict([rec(0, "Ongoing")], CUT)
    assert (v.reason, v.hanging) == (h.COORDINATOR_ONGOING, False)


def test_coordinator_copy_reads_the_furthest_replica_and_checks_every_checkpoint():
    # broker 1 cut to 0 bytes, broker 2 whole: broker 2 is read and the partition is whole
    chosen, copy = coordinator_copy([(0, 1, 0, 16, "cut"), (0, 2, 16, 16, None)])
    assert chosen == {0: 2} and copy.counted(1).lacking() is None
    # the furthest replica is below a high watermark another replica checkpointed
    chosen, copy = coordinator_copy([(0, 1, 10, 10, None), (0, 2, 8, 20, "cut at 8")])
    assert chosen == {0: 1}
    assert "below the high watermark 20" in copy.partition_gap(0)
    # its own files say it is short
    _, copy = coordinator_copy([(0, 1, 10, 10, "a segment's .index without its .log")])
    assert copy.partition_gap(0) == "broker 1: a segment's .index without its .log"
    assert copy.partition_gap(3) == "__transaction_state-3 is not in the copy"


def test_a_coordinator_partition_read_from_followers_only_is_a_gap():
    """__transaction_state-0 held by brokers 2 and 3, its last leader broker 1 not in the copy:
    a follower may lack the records its leader wrote last (issue 36, safety)."""
    _, copy = coordinator_copy([(0, 2, 10, 10, None), (0, 3, 10, 10, None), (1, 1, 4, 4, None)])
    assert copy.counted(2).lacking() is None  # without the leaders: nothing says so
    told = copy.counted(2, {0: 1, 1: 1})
    gap = told.partition_gap(0)
    assert "followers only (broker 2, 3)" in gap and "last leader, broker 1" in gap
    assert told.partition_gap(1) is None and told.lacking().startswith("__transaction_state-0 ")
    moved_on = [rec(0, "Ongoing"), rec(1, "CompleteCommit", epoch=3)]
    v = verdict(moved_on, told)
    assert (v.reason, v.hanging) == (h.COORDINATOR_NOT_IN_COPY, None)
    assert (verdict([], told).reason, verdict([rec(0, "Ongoing")], told).reason) == (
        h.COORDINATOR_NOT_IN_COPY, h.COORDINATOR_ONGOING)
    # the leader's replica in the copy: whole again
    assert copy.counted(2, {0: 3, 1: 1}).lacking() is None


def test_lacking_names_two_partitions_and_counts_the_rest():
    _, copy = coordinator_copy([(p, 2, 1, 1, None) for p in range(5)])
    text = copy.counted(5, {p: 1 for p in range(5)}).lacking()
    assert "__transaction_state-0 " in text and "__transaction_state-1 " in text
    assert "__transaction_state-2 " not in text and text.endswith("and 3 more partitions of __transaction_state")


def test_a_hanging_verdict_without_the_partition_s_last_leader_is_withheld():
    v = verdict([rec(0, "Ongoing"), rec(1, "CompleteCommit", epoch=3)])
    assert h.without_leader(v, 1, [1, 2]) is v and h.without_leader(v, None, [2]) is v
    held = h.without_leader(v, 1, [2, 0])
    assert (held.reason, held.hanging, held.transactional_id) == (h.PARTITION_NOT_IN_COPY, None, "app-1")
    assert "followers only (broker 0, 2)" in held.evidence and "copy broker 1's log dirs" in held.evidence
    live = verdict([rec(0, "Ongoing")])
    assert h.without_leader(live, 1, [2]) is live  # not hanging: nothing to withhold


def test_copy_gaps_name_what_the_brokers_files_say_was_there():
    assert copy_gaps(16, hw_checkpoint=16, snapshot_offsets=[0, 16], segment_bases=[0]) == []
    assert copy_gaps(16, hw_checkpoint=None) == []
    [hw] = copy_gaps(0, hw_checkpoint=16)
    assert "high watermark 16" in hw and "offsets 0 to 15" in hw
    [snap] = copy_gaps(10, hw_checkpoint=10, snapshot_offsets=[5, 30, 20])
    assert "snapshot at offset 30" in snap
    [orphan] = copy_gaps(10, hw_checkpoint=None, segment_bases=[0],
                         named_bases=[(0, "a.index"), (50, "b.timeindex"), (50, "b.index")])
    assert orphan == "segment 50: b.index, b.timeindex in the copy without its .log"


def test_copy_gaps_read_the_recovery_point_and_log_start_checkpoints():
    # as the brokers leave them after a clean stop: the recovery point at the log end, no log
    # start entry (written only while it is past the first segment) or one inside the log
    assert copy_gaps(16, hw_checkpoint=16, recovery_point=16, segment_bases=[0]) == []
    assert copy_gaps(16, hw_checkpoint=16, recovery_point=9, log_start_checkpoint=5, segment_bases=[0, 9]) == []
    assert copy_gaps(16, hw_checkpoint=16, log_start_checkpoint=16, segment_bases=[9]) == []  # deleted up to the end
    # flushed past the copy's end (beyond the high watermark too: a leader flushes before replication)
    [rp] = copy_gaps(10, hw_checkpoint=10, recovery_point=12)
    assert rp.startswith("recovery-point-offset-checkpoint has recovery point 12") and "offsets 10 to 11" in rp
    assert "ends at 10" in rp and "UnifiedLog.flush" in rp
    [rp] = copy_gaps(11, hw_checkpoint=None, recovery_point=12)
    assert "flushed offset 11 to disk" in rp
    # a log start past where the copy's batches end (log_end is already raised to it, as LogLoader does)
    [ls] = copy_gaps(20, hw_checkpoint=None, log_start_checkpoint=20, segment_bases=[0], batches_end=7)
    assert ls.startswith("log-start-offset-checkpoint has log start offset 20") and "ends at 7" in ls
    assert "offsets 7 to 19 are not in the copy" in ls and "deleteSegmentsIfLogStartGreaterThanLogEnd" in ls
    # segments missing at the front: the first segment starts past the checkpointed log start
    [front] = copy_gaps(30, hw_checkpoint=30, log_start_checkpoint=4, segment_bases=[20, 10])
    assert front.startswith("log-start-offset-checkpoint has log start offset 4 but the copy's first segment "
                            "starts at 10: offsets 4 to 9 are missing at the front")
    assert "remote.storage.enable" in front
    # every gap a sentence of its own, in a fixed order
    gaps = copy_gaps(5, hw_checkpoint=8, recovery_point=9, snapshot_offsets=[7], log_start_checkpoint=1,
                     segment_bases=[3], named_bases=[(0, "0.index")])
    assert [g.split(" ", 1)[0] for g in gaps] == ["replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                                                  "a", "log-start-offset-checkpoint", "segment"]


@pytest.mark.parametrize("state", ["CompleteCommit", "CompleteAbort", "Empty"])
def test_coordinator_moved_on_is_hanging(state):
    v = verdict([rec(0, "Ongoing"), rec(1, state, epoch=3)])
    assert (v.reason, v.hanging, v.transactional_id) == (h.COORDINATOR_MOVED_ON, True, "app-1")


@pytest.mark.parametrize("state", ["CompleteCommit", "CompleteAbort"])
def test_completed_at_the_same_epoch_is_a_missed_marker(state):
    v = verdict([rec(0, "Ongoing"), rec(1, state)])
    assert (v.reason, v.hanging) == (h.COORDINATOR_MOVED_ON, True)


def test_empty_at_the_same_epoch_means_the_transaction_was_never_begun():
    v = verdict([rec(0, "Empty", parts=())])
    assert (v.reason, v.hanging) == (h.PARTITION_NOT_IN_TRANSACTION, True)
    assert "never added" in v.evidence


def test_replicas_disagree_when_a_lagging_follower_lacks_the_marker():
    base = h.Verdict(h.COORDINATOR_MOVED_ON, True, "coordinator says done", "app-1")
    closed = [h.ClosedElsewhere(2, 44, "COMMIT")]
    lagging = h.with_replicas(base, T, closed, behind=True)
    assert (lagging.reason, lagging.hanging) == (h.REPLICAS_DISAGREE, False)
    assert "broker 2 has its COMMIT marker at offset 44" in lagging.evidence
    leader = h.with_replicas(base, T, closed, behind=False)
    assert (leader.reason, leader.hanging) == (h.REPLICAS_DISAGREE, True)
    assert h.with_replicas(base, T, [], behind=True) is base


def test_ongoing_without_the_partition_is_hanging():
    v = verdict([rec(0, "Ongoing", parts=(("orders", 0),))])
    assert (v.reason, v.hanging) == (h.PARTITION_NOT_IN_TRANSACTION, True)


def test_ongoing_with_the_partition_is_not_hanging():
    v = verdict([rec(0, "Ongoing")])
    assert (v.reason, v.hanging) == (h.COORDINATOR_ONGOING, False)


@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_prepare_states_are_never_hanging(state):
    v = verdict([rec(0, "Ongoing"), rec(1, state, epoch=3)])
    assert (v.reason, v.hanging) == (h.MARKERS_PENDING, False)


@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_a_prepare_record_below_the_partitions_epoch_is_stuck_at_once(state):
    # The markers carry the record's epoch; a partition holding the producer at a higher one
    # refuses them (INVALID_PRODUCER_EPOCH) and the coordinator stops for good: stuck however
    # young the record (the real case: tests/scan/test_tv2_epochs.py).
    v = verdict([rec(0, state, epoch=1, last_update_timestamp_ms=999)])
    assert (v.reason, v.hanging) == (h.COORDINATOR_STUCK_PREPARING, None)
    assert "epoch 2, above the epoch of the coordinator's markers (1)" in v.evidence
    # A TV2 record at the data's epoch + 1, or TV1's at the data's epoch: the markers land.
    for epoch in (2, 3):
        v = verdict([rec(0, state, epoch=epoch, last_update_timestamp_ms=999)])
        assert (v.reason, v.hanging) == (h.MARKERS_PENDING, False), epoch
