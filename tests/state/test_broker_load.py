"""The producer state a broker loads for a log (BrokerLoad), on tiny row sets: the newest
snapshot in (log start, log end], then the batches from its offset on. The case that needs
it: a compacted log whose cleaner left a producer nothing but an emptied control batch."""

from logscan.state.facts import BatchFact
from logscan.state.producer_state import (BatchMetadata, BrokerLoad, ProducerStateEntry, describe_producers,
                                          rebuild, snapshots_kept_on_load)

TV2_PID = 5


def data(base, last, pid=9, epoch=0, seq=0, ts=1000, txn=False):
    return BatchFact(base, last, pid, epoch, seq, seq + (last - base), ts, txn, False, last - base + 1, 100)


def emptied_abort(offset, pid=TV2_PID, epoch=2, ts=7000):
    """An ABORT marker batch after the cleaner dropped its record (count 0, delete horizon
    passed): the header keeps the producer, epoch and maxTimestamp, the record (with the
    coordinator epoch and the marker type) is gone."""
    return BatchFact(offset, offset, pid, epoch, -1, -1, ts, True, True, 0, 61)


def snapshot(*entries):
    """A snapshot file's loader: fresh entries each time, as decoding the file gives them."""
    def load():
        out = []
        for pid, epoch, coord, ts, last in entries:
            e = ProducerStateEntry(pid, epoch, coord, ts, None)
            if last is not None:
                seq, offset = last
                e.batches.append(BatchMetadata(seq, offset, 0, ts))
            out.append(e)
        return out
    return load


# The compacted log as the cleaner left it: the TV2 producer's only batch is its emptied
# ABORT marker (offset 36); an idempotent producer's batches follow. The broker's snapshot at
# the log end (clean shutdown, 47) holds both producers as the broker had them in memory.
LOG = [emptied_abort(36), data(37, 41, seq=20), data(42, 46, seq=25, ts=1100)]
AT_END = snapshot((TV2_PID, 2, 0, 7000, None), (9, 0, -1, 1100, (29, 46)))


def _load(snapshots, batches, log_end, log_start=0, known_below=None):
    load = BrokerLoad(snapshots, log_start, known_below_log_end=known_below)
    for b in batches:
        if load.start_offset is not None and b.last_offset >= load.start_offset:
            load.feed(b)
    return load.finish(log_end)


def test_a_replay_learns_nothing_from_an_emptied_marker_and_the_broker_loads_its_snapshot():
    replayed = dict((r[0], r[1:]) for r in describe_producers(rebuild(LOG)))
    # ProducerAppendInfo.append: an empty control batch appends nothing, the entry stays empty.
    assert replayed[TV2_PID] == (-1, -1, -1, -1, None)
    psm = _load([(47, AT_END)], LOG, log_end=47)
    assert psm.loaded_snapshot_offset == 47
    assert list(describe_producers(psm)) == [(TV2_PID, 2, 0, -1, 7000, None), (9, 0, -1, 29, 1100, None)]


def test_the_batches_after_the_snapshot_are_replayed_over_it():
    older = snapshot((TV2_PID, 2, 0, 7000, None), (9, 0, -1, 1000, (24, 41)))
    psm = _load([(42, older)], LOG, log_end=47)
    assert psm.loaded_snapshot_offset == 42
    assert list(describe_producers(psm)) == [(TV2_PID, 2, 0, -1, 7000, None), (9, 0, -1, 29, 1100, None)]


def test_the_replay_into_the_taken_producers_keeps_its_completed_transactions():
    replay = rebuild([data(30, 30, pid=TV2_PID, epoch=1, txn=True), emptied_abort(36)] + LOG[1:])
    replay.take_producers(_load([(47, AT_END)], LOG, log_end=47))
    assert replay.loaded_snapshot_offset == 47
    assert list(describe_producers(replay))[0] == (TV2_PID, 2, 0, -1, 7000, None)
    assert replay.ongoing() == {}


def test_the_newest_snapshot_the_log_reaches_wins_and_one_past_the_log_end_is_not_loaded():
    stale = snapshot((TV2_PID, 1, 0, 5000, None))
    past_end = snapshot((TV2_PID, 3, 0, 9000, None))
    psm = _load([(37, stale), (47, AT_END), (60, past_end)], LOG, log_end=47)
    assert psm.loaded_snapshot_offset == 47
    # Only the stale one within the log: loaded, then the batches after it.
    psm = _load([(37, stale), (60, past_end)], LOG, log_end=47)
    assert psm.loaded_snapshot_offset == 37
    assert list(describe_producers(psm)) == [(TV2_PID, 1, 0, -1, 5000, None), (9, 0, -1, 29, 1100, None)]


def test_no_snapshot_within_the_log_means_the_broker_replays_the_log():
    assert _load([(60, AT_END)], LOG, log_end=47) is None
    # At or below the log start offset Kafka deletes it (truncateAndReload).
    assert _load([(36, AT_END)], LOG, log_end=47, log_start=36) is None
    assert _load([], LOG, log_end=47) is None


def test_a_snapshot_that_does_not_load_gives_way_to_the_next_older_one():
    older = snapshot((TV2_PID, 2, 0, 7000, None), (9, 0, -1, 1000, (24, 41)))
    psm = _load([(42, older), (47, None)], LOG, log_end=47)
    assert psm.loaded_snapshot_offset == 42


def test_the_replay_over_a_snapshot_starts_at_the_newest_one_surely_within_the_log():
    load = BrokerLoad([(10, AT_END), (37, AT_END), (47, AT_END)], 0, known_below_log_end=40)
    assert load.start_offset == 37
    assert BrokerLoad([(10, AT_END)], 0, known_below_log_end=40).start_offset == 10
    assert BrokerLoad([(50, AT_END)], 0, known_below_log_end=40).start_offset == 50
    assert BrokerLoad([], 0).start_offset is None


def test_stray_snapshots_are_dropped_but_the_clean_shutdown_one_past_the_last_segment():
    # LogLoader.load: ProducerStateManager.removeStraySnapshots(segment base offsets).
    assert snapshots_kept_on_load([92, 95, 107, 117], [0, 92, 107]) == {92, 107, 117}
    assert snapshots_kept_on_load([50, 95], [0, 92, 107]) == set()
    assert snapshots_kept_on_load([5, 8], []) == {8}
