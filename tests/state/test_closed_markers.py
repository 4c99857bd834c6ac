"""The streamed end-marker comparison (partition.ClosedMarkers) against the set comparison it
replaced, on randomized partitions: every replica_differences message must be the same."""

import random

import pytest

from logscan.state import hanging as h
from logscan.state import partition as P
from logscan.state.coordinator import WHOLE


def reference_differences(view, other, closed_here, closed_there):
    """The comparison as it was: each replica's closed transactions held as a list, the end
    markers both should hold compared as sets."""
    a, b = view.state, other.state
    out = [f"{name} {getattr(a, name)} here, {getattr(b, name)} there"
           for name in ("log_end_offset", "high_watermark", "last_stable_offset")
           if getattr(a, name) != getattr(b, name)]
    open_a = {(t.producer_id, t.start_offset) for t in view.open_txns}
    open_b = {(t.producer_id, t.start_offset) for t in other.open_txns}
    for label, diff in (("open here only", open_a - open_b), ("open there only", open_b - open_a)):
        if diff:
            txns = sorted(diff, key=lambda x: x[1])
            out.append(f"{label}: " + P._txns([f"producer {p} from offset {o}" for p, o in txns]))
    low, high = max(a.log_start_offset, b.log_start_offset), min(a.log_end_offset, b.log_end_offset)

    def markers(closed):
        return {(c.end_marker_offset, c.producer_id, c.first_offset, c.outcome) for c in closed
                if low <= c.end_marker_offset < high}

    m_a, m_b = markers(closed_here), markers(closed_there)
    for label, diff in (("end markers here only", m_a - m_b), ("end markers there only", m_b - m_a)):
        if diff:
            out.append(f"{label}: " + P._txns([f"{kind} at {at} (producer {pid}, from {first})"
                                               for at, pid, first, kind in sorted(diff)]))
    return out


def random_partition(rnd: random.Random, replicas: int):
    """Replicas of one partition copied from a common history: each keeps a window of it
    (log start, log end) and some of its markers differ (lost, another outcome, or a marker
    only it has), so that windows, duplicates at one offset and long lists all occur."""
    history = []
    offset = 0
    for _ in range(rnd.randrange(0, 40)):
        offset += rnd.randrange(1, 4)
        pid = rnd.randrange(5)
        history.append(P.ClosedTxn(pid, offset - rnd.randrange(0, 3), offset, rnd.choice(("COMMIT", "ABORT"))))
    top = offset + 2
    views, closed = [], {}
    for broker in rnd.sample(range(6), replicas):
        start = rnd.choice((0, 0, rnd.randrange(0, top + 1)))
        leo = rnd.choice((top, top, rnd.randrange(0, top + 1)))
        leo = max(leo, start)
        txns = []
        for c in history:
            roll = rnd.random()
            if roll < 0.1:
                continue
            if roll < 0.15:
                c = P.ClosedTxn(c.producer_id, c.first_offset, c.end_marker_offset,
                                "ABORT" if c.outcome == "COMMIT" else "COMMIT")
            txns.append(c)
            if rnd.random() < 0.05:  # a second marker at the same offset (a damaged copy)
                txns.append(P.ClosedTxn(c.producer_id + 7, c.first_offset, c.end_marker_offset, c.outcome))
        open_ = [h.OpenTxn("t", 0, pid, 0, rnd.randrange(top + 1), 100)
                 for pid in rnd.sample(range(5), rnd.randrange(3))]
        open_.sort(key=lambda t: t.start_offset)
        hw = rnd.randrange(start, leo + 1)
        lso = min([t.start_offset for t in open_ if t.start_offset < hw] + [hw])
        state = P.ReplicaState(broker, "t", 0, start, leo, hw, True, None, lso, len(open_), 1)
        views.append(P.ReplicaView(state, open_, {t.producer_id: 0 for t in open_}))
        closed[broker] = txns
    return views, closed


def partitions():
    """The 300 seeded random partitions, with their streamed comparison."""
    for seed in range(300):
        rnd = random.Random(seed)
        views, closed = random_partition(rnd, rnd.choice((2, 2, 3, 4)))
        yield views, closed, P.closed_markers(views, stream(closed))


def pairs(views):
    return [(view, other) for view in views for other in views if other is not view]


def stream(closed):
    return sorted(((b, c) for b, txns in closed.items() for c in txns), key=lambda bc: (bc[1].end_marker_offset, bc[0]))


@pytest.mark.parametrize("seed", range(300))
def test_streamed_comparison_gives_the_messages_of_the_set_comparison(seed):
    rnd = random.Random(seed)
    views, closed = random_partition(rnd, rnd.choice((2, 2, 3, 4)))
    markers = P.closed_markers(views, stream(closed))
    for view, other in pairs(views):
        expected = reference_differences(view, other, closed[view.state.broker], closed[other.state.broker])
        got = [d for d in P.replica_differences(view, other, markers) if d.field != P.DIVERGED_AT]
        assert [d.text for d in got] == expected
        assert {d.other_broker for d in got} <= {other.state.broker}
    # and through assess_partition, which joins them per other broker
    out = P.assess_partition(views, stream(closed), metadata_leader=None, index={}, as_of_ms=0,
                             max_timeout_ms=10**9, coordinator=WHOLE, bootstrap="b")
    for r in out.replicas:
        view = next(v for v in views if v.state.broker == r.broker)
        diffs = [f"vs broker {p.state.broker}: " + "; ".join(d) for p in sorted(views, key=lambda v: v.state.broker)
                 if p is not view
                 for d in [reference_differences(view, p, closed[view.state.broker], closed[p.state.broker])] if d]
        shared = [d for d in r.replica_differences if d.field != P.DIVERGED_AT]  # two histories: tested apart
        assert P.replica_differences_text(shared) == (" | ".join(diffs) or None)
        assert r.replicas_agree == (not diffs)


def test_the_cases_cover_what_the_comparison_must_get_right():
    """The randomized cases above reach long lists, markers outside a pair's window and
    disagreeing outcomes: otherwise they would prove little."""
    seen = set()
    for views, closed, markers in partitions():
        for view, other in pairs(views):
            text = " ".join(d.text for d in P.replica_differences(view, other, markers))
            seen.update(k for k in ("more", "end markers here only", "end markers there only") if k in text)
            a, b = view.state, other.state
            low, high = max(a.log_start_offset, b.log_start_offset), min(a.log_end_offset, b.log_end_offset)
            if any(not low <= c.end_marker_offset < high for c in closed[a.broker]):
                seen.add("outside the window")
    assert seen == {"more", "end markers here only", "end markers there only", "outside the window"}


def one_history(rnd: random.Random):
    """A partition's log as Kafka writes it: at each offset one record, a producer's data (its
    transaction begins at its first) or the end marker of its open transaction; a producer has
    one transaction open at a time. Transactions as (producer, data offsets, marker offset or
    None, outcome)."""
    txns, open_ = [], {}
    top = rnd.randrange(1, 60)
    for offset in range(top):
        pid = rnd.randrange(4)
        if pid in open_ and rnd.random() < 0.4:
            t = open_.pop(pid)
            txns.append((pid, t, offset, rnd.choice(("COMMIT", "ABORT"))))
        else:
            open_.setdefault(pid, []).append(offset)
    txns.extend((pid, t, None, None) for pid, t in open_.items())
    return txns, top


def replicas_of(rnd: random.Random, txns, top: int, count: int):
    """Replicas of one history: each a window of it (lag, retention) whose cleaner removed some
    closed transactions whole, or their first batches (a span then starts at a later batch)."""
    views, closed = [], {}
    for broker in range(count):
        start = rnd.choice((0, 0, rnd.randrange(top)))
        leo = max(start + 1, rnd.choice((top, top, rnd.randrange(1, top + 1))))
        mine, open_ = [], []
        for pid, data, marker, outcome in txns:
            if marker is not None and marker < leo:
                if rnd.random() < 0.15:
                    continue  # cleaned away, marker and all
                kept = data[rnd.randrange(len(data)):] if rnd.random() < 0.2 else data
                mine.append(P.ClosedTxn(pid, kept[0], marker, outcome))
            elif data[0] < leo:
                open_.append(h.OpenTxn("t", 0, pid, 0, data[0], 100))
        open_.sort(key=lambda t: t.start_offset)
        lso = min([t.start_offset for t in open_] + [leo])
        state = P.ReplicaState(broker, "t", 0, start, leo, leo, True, None, lso, len(open_), 1)
        views.append(P.ReplicaView(state, open_, {t.producer_id: 0 for t in open_}))
        closed[broker] = mine
    return views, closed


@pytest.mark.parametrize("seed", range(200))
def test_replicas_of_one_history_never_diverge(seed):
    """Issue 36: lag, retention and the cleaner never read as two histories."""
    rnd = random.Random(seed)
    txns, top = one_history(rnd)
    views, closed = replicas_of(rnd, txns, top, rnd.choice((2, 3)))
    assert P.closed_markers(views, stream(closed)).divergence() is None


@pytest.mark.parametrize("seed", range(200))
def test_another_outcome_on_one_replica_is_two_histories(seed):
    """The same, with one replica's marker of another outcome, at an offset both hold: found
    there or earlier."""
    rnd = random.Random(seed)
    txns, top = one_history(rnd)
    views, closed = replicas_of(rnd, txns, top, 2)
    a, b = (v.state for v in views)
    low, high = max(a.log_start_offset, b.log_start_offset), min(a.log_end_offset, b.log_end_offset)
    shared = [c for c in closed[0] if low <= c.end_marker_offset < high
              and c.end_marker_offset in {d.end_marker_offset for d in closed[1]}]
    if not shared:
        pytest.skip("no marker both replicas hold")
    flip = rnd.choice(shared)
    closed[0] = [P.ClosedTxn(c.producer_id, c.first_offset, c.end_marker_offset,
                             "ABORT" if c.outcome == "COMMIT" else "COMMIT") if c is flip else c for c in closed[0]]
    found = P.closed_markers(views, stream(closed)).divergence()
    assert found is not None and found[0] <= flip.end_marker_offset


def test_what_is_held_of_a_replica_s_closed_transactions_grows_with_its_producers_not_its_transactions():
    """A replica's latest closed transaction per producer is what the divergence check keeps
    (ClosedMarkers); 3,000 transactions of two producers leave two offsets of each kind held,
    where one empty entry per transaction was left behind before (the single-process scan's
    memory grew 11 MiB from 30 MB to 1 GB: tests/robust/test_scan_memory_flat.py)."""
    views = [P.ReplicaView(P.ReplicaState(b, "t", 0, 0, 9000, 9000, True, None, 9000, 0, 2), [], {}) for b in (1, 2)]
    markers = P.ClosedMarkers(views)
    for i in range(3000):
        for broker in (1, 2):
            markers.add(broker, P.ClosedTxn(i % 2, 3 * i, 3 * i + 2, "COMMIT"))
    markers.finish()
    for broker in (1, 2):
        assert len(markers._last_from[broker]) == 2 and len(markers._last_marker[broker]) == 2
    assert markers.only(1, 2).count == 0 and markers.only(2, 1).count == 0
