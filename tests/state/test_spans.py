"""Replay keeps producer state and open spans only: closed spans leave through on_close."""

from logscan.state.facts import BatchFact
from logscan.state.spans import OPEN, Replay, replay


def data(base, last, pid, seq=0, ts=1000, txn=True):
    return BatchFact(base, last, pid, 0, seq, seq + (last - base), ts, txn, False, last - base + 1, 100)


def marker(offset, pid, kind="COMMIT", ts=2000):
    return BatchFact(offset, offset, pid, 0, -1, -1, ts, True, True, 1, 78, kind, 3, ts)


def interleaved(rounds: int, producers: int = 3):
    """``rounds`` rounds in which every producer opens a transaction (all open at once, their
    batches interleaved), then each is closed (one in five aborted); then one more round
    left open."""
    offset, seqs = 0, [0] * producers
    for r in range(rounds + 1):
        for _ in range(2):
            for pid in range(producers):
                yield data(offset, offset + 1, pid, seq=seqs[pid], ts=offset)
                seqs[pid] += 2
                offset += 2
        if r < rounds:
            for pid in range(producers):
                yield marker(offset, pid, "ABORT" if (r + pid) % 5 == 0 else "COMMIT", ts=offset)
                offset += 1


def test_closed_spans_leave_the_replay_as_they_close():
    closed = []
    r = Replay(on_close=closed.append)
    retained = []
    for i, batch in enumerate(interleaved(1_000)):
        r.feed(batch)
        if i % 500 == 0:
            # Whatever the replay holds besides the producers: never more than one span per producer.
            retained.append(max((len(v) for k, v in vars(r).items()
                                 if k != "producers" and isinstance(v, (list, dict, set))), default=0))
    assert len(closed) == 3_000
    assert max(retained) <= 3
    assert [s.outcome for s in r.open_spans] == [OPEN] * 3
    assert [s.index for s in r.open_spans] == [3_000, 3_001, 3_002]
    assert r.result().closed_spans == [] and len(r.result().open_spans) == 3
    # each span went out once, closed, numbered in the order the spans opened
    assert [s.index for s in closed] == list(range(3_000))
    assert {s.outcome for s in closed} == {"COMMIT", "ABORT"} and all(s.end_marker_offset is not None for s in closed)


def test_replay_keeps_every_span_in_the_order_they_opened():
    batches = list(interleaved(4))
    full = replay(batches)
    assert [s.index for s in full.spans] == list(range(15))
    assert [s.first_offset for s in full.spans] == sorted(s.first_offset for s in full.spans)
    assert [s.first_offset for s in full.open_spans] == [s.first_offset for s in full.spans[-3:]]
    closed = []
    r = Replay(on_close=closed.append)
    for b in batches:
        r.feed(b)
    assert closed == full.closed_spans  # the same spans, closed in the same order
