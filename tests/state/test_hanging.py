"""Every hanging reason on tiny row sets; the real-broker cases live in the e2e tests."""

import pytest

from logscan.state.coordinator import TxnLogRecord, index_by_producer_id, latest_states, merge_partitions
from logscan.state import hanging as h

T = h.OpenTxn("orders", 1, producer_id=5, producer_epoch=2, start_offset=40, last_timestamp=1_000)


def rec(offset, state, pid=5, epoch=2, parts=(("orders", 1),), tid="app-1", **kw):
    return TxnLogRecord(0, offset, tid, state, pid, producer_epoch=epoch, partitions=parts, **kw)


def verdict(records, in_copy=True):
    index = index_by_producer_id(latest_states(records))
    return h.classify(T, index.get(T.producer_id, []), in_copy)


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
    v = verdict([], in_copy=False)
    assert (v.reason, v.hanging) == (h.COORDINATOR_NOT_IN_COPY, None)


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
