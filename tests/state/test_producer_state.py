"""Kafka's producer-state rules on tiny row sets (ProducerAppendInfo semantics)."""

from logscan.state.facts import BatchFact
from logscan.state.producer_state import (
    ProducerStateEntry, describe_producers, first_unstable_offset, last_stable_offset, rebuild,
)
from logscan.state.spans import OPEN, replay


def data(base, last, pid=7, epoch=0, seq=0, ts=1000, txn=True, count=None):
    count = last - base + 1 if count is None else count
    return BatchFact(base, last, pid, epoch, seq, seq + (last - base), ts, txn, False, count, 100)


def marker(offset, kind="COMMIT", pid=7, epoch=0, coord=3, ts=2000):
    return BatchFact(offset, offset, pid, epoch, -1, -1, ts, True, True, 1, 78, kind, coord, ts)


def test_commit_closes_the_transaction_and_keeps_sequence_under_same_epoch():
    psm = rebuild([data(0, 2), data(3, 4, seq=3), marker(5)])
    assert list(describe_producers(psm)) == [(7, 0, 3, 4, 2000, None)]
    assert [(t.first_offset, t.last_offset, t.is_aborted) for t in psm.completed] == [(0, 5, False)]


def test_tv2_marker_with_bumped_epoch_clears_last_sequence():
    # KIP-890 TV2: data at epoch e, marker at e+1; the epoch change drops cached batches.
    psm = rebuild([data(0, 2, epoch=4), marker(3, epoch=5)])
    assert list(describe_producers(psm)) == [(7, 5, 3, -1, 2000, None)]


def test_open_transaction_pins_lso_at_its_first_offset():
    psm = rebuild([data(0, 0, pid=1, txn=False), data(1, 2, pid=2), data(3, 3, pid=3), marker(4, pid=3)])
    assert psm.ongoing() == {2: 1}
    fuo = first_unstable_offset(psm.ongoing().values(), psm.completed, high_watermark=5, log_start_offset=0)
    assert fuo == 1
    assert last_stable_offset(fuo, 5) == 1


def test_unreplicated_marker_keeps_transaction_unstable():
    psm = rebuild([data(0, 1), marker(2)])
    assert first_unstable_offset([], psm.completed, high_watermark=2, log_start_offset=0) == 0
    assert first_unstable_offset([], psm.completed, high_watermark=3, log_start_offset=0) is None


def test_lso_clamped_to_log_start_and_never_above_hw():
    assert first_unstable_offset([5], [], high_watermark=100, log_start_offset=10) == 10
    assert last_stable_offset(50, 20) == 20
    assert last_stable_offset(None, 20) == 20


def test_marker_without_open_txn_completes_nothing():
    psm = rebuild([marker(0), marker(1, kind="ABORT")])
    assert psm.completed == []
    assert list(describe_producers(psm)) == [(7, 0, 3, -1, 2000, None)]


def test_empty_control_batch_is_ignored_entirely():
    empty = BatchFact(9, 9, 7, 9, -1, -1, 5000, True, True, 0, 61, None, -1, -1)
    psm = rebuild([data(0, 1), empty])
    assert psm.ongoing() == {7: 0}
    assert psm.producers[7].producer_epoch == 0


def test_lower_epoch_is_applied_but_reported():
    psm = rebuild([data(0, 0, epoch=3, txn=False), data(1, 1, epoch=2, txn=False)])
    assert psm.producers[7].producer_epoch == 2
    assert [a.kind for a in psm.anomalies] == ["epoch_regression"]


def test_older_coordinator_epoch_marker_is_applied_but_reported():
    psm = rebuild([data(0, 0), marker(1, coord=5), data(2, 2), marker(3, coord=4)])
    assert psm.producers[7].coordinator_epoch == 4
    assert [a.kind for a in psm.anomalies] == ["coordinator_epoch_regression"]


def test_non_transactional_write_inside_txn_is_an_anomaly():
    psm = rebuild([data(0, 0), data(1, 1, txn=False)])
    assert psm.ongoing() == {7: 0}
    assert psm.anomalies[0].kind == "non_transactional_in_txn"


def test_snapshot_seed_carries_an_open_transaction_whose_head_was_deleted():
    seeded = ProducerStateEntry(7, producer_epoch=1, coordinator_epoch=2, last_timestamp=900,
                                current_txn_first_offset=40)
    result = replay([data(30, 31, pid=8, txn=False), data(50, 51, epoch=1, seq=10), marker(52, epoch=1)],
                    seed=([seeded], 50))
    (span,) = result.spans
    assert (span.from_snapshot, span.first_offset, span.outcome) == (True, 40, "COMMIT")
    assert span.end_marker_offset == 52
    assert 8 not in result.producers.producers  # below the snapshot offset: already in the seed


def test_spans_count_batches_records_and_bytes():
    result = replay([data(0, 2, ts=10), data(3, 3, pid=9, txn=False), data(4, 5, seq=3, ts=20),
                     marker(6, kind="ABORT", ts=30), data(7, 7, seq=5, ts=40)])
    first, second = result.spans
    assert (first.first_offset, first.last_data_offset, first.end_marker_offset) == (0, 5, 6)
    assert (first.batches, first.records, first.bytes, first.outcome) == (2, 5, 200, "ABORT")
    assert first.duration_ms == 20
    assert second.outcome == OPEN and second.first_offset == 7
    assert [s.first_offset for s in result.open_spans] == [7]


def _interleaved(rng, producers=4, steps=400):
    """Transactional batches and markers of a few producers, interleaved, in offset order."""
    out, offset, open_ = [], 0, set()
    for _ in range(steps):
        pid = rng.randrange(producers)
        if pid in open_ and rng.random() < 0.3:
            out.append(marker(offset, rng.choice(["COMMIT", "ABORT"]), pid=pid))
            open_.discard(pid)
            offset += 1
        else:
            n = rng.randint(1, 3)
            out.append(data(offset, offset + n - 1, pid=pid))
            open_.add(pid)
            offset += n
    return out, offset


def test_a_high_watermark_floor_keeps_one_completed_transaction_and_the_same_lso():
    """With the floor the replica's HW loads as at least (max(log start, HW checkpoint)), the
    replay keeps at most one completed transaction, and the first unstable offset and LSO
    are those of the replay that keeps them all, for every checkpoint (below, inside, past
    the log) and log start."""
    import random

    from logscan.state.partition import high_watermark
    from logscan.state.producer_state import ProducerStateManager

    rng = random.Random(5)
    for case in range(200):
        batches, log_end = _interleaved(rng)
        log_start = rng.choice([0, rng.randrange(log_end)])
        hw_checkpoint = rng.choice([None, 0, rng.randrange(log_end + 1), log_end, log_end + 10])
        every, bounded = ProducerStateManager(), ProducerStateManager(max(log_start, hw_checkpoint or 0))
        for b in batches:
            every.append(b)
            bounded.append(b)
            assert len(bounded.completed) <= 1
        hw = high_watermark(hw_checkpoint, log_start, log_end)
        fuo = [first_unstable_offset(p.ongoing().values(), p.completed, hw, log_start) for p in (every, bounded)]
        assert fuo[0] == fuo[1], (case, log_start, hw_checkpoint, log_end)
        assert last_stable_offset(fuo[0], hw) == last_stable_offset(fuo[1], hw)
        assert len(every.completed) > 20  # the unbounded replay did keep them all
