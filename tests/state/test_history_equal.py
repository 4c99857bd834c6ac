"""transactional_id_history, its folds made cheaper for the Spark driver (issue 30: 1.80 s of
its 5.2 s on make bench's cores copy under cProfile), gives the histories it gave before:
generated records (every state, producer ids fenced, bumped and reused, tombstones, unknown
start times) and spans (replicas of a transaction, open and closed, without durations), in
the orders the executors give them, against a plain fold kept here as the reference; and an
id's few durations stay out of the sort."""

from __future__ import annotations

import random
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from logscan.scan.spool import SpoolFolder
from logscan.state.coordinator import NO_PRODUCER_ID, TxnLogRecord
from logscan.state.history import (HELD_DURATIONS, OUTCOMES, SPAN_ORDER, Durations, IdHistory, ProducerRun,
                                   history_rows, percentile, transactional_id_history,
                                   transactional_id_history_rows)


def _durations(values: list[int]) -> Durations:
    if not values:
        return Durations(0, None, None, None)
    return Durations(len(values), percentile(values, 0.5), percentile(values, 0.99), max(values))


def _history_before(records: list[TxnLogRecord], spans: list[dict]) -> dict[str, IdHistory]:
    """The fold as it was written before issue 30's change, each id's durations in a list."""
    out: dict[str, IdHistory] = {}
    opened: dict[str, Optional[tuple]] = {}
    began: dict[str, dict] = {}
    first: dict[str, tuple] = {}
    owner: dict[int, tuple] = {}
    durations: dict[str, list[int]] = {}
    for r in records:
        h = out.setdefault(r.transactional_id, IdHistory(r.transactional_id))
        at = first.setdefault(r.transactional_id, (r.coordinator_partition, r.offset))
        for pid in (r.producer_id, r.previous_producer_id, r.next_producer_id):
            if pid != NO_PRODUCER_ID and (pid not in owner or owner[pid][0] > at):
                owner[pid] = (at, r.transactional_id)
        if r.state == "Empty" and h.records > 0:
            h.fences += 1
        h.records += 1
        h.last_state = r.state
        if r.state is not None and r.producer_id != NO_PRODUCER_ID:
            if h.producers and h.producers[-1].producer_id == r.producer_id:
                last = h.producers[-1]
                h.producers[-1] = ProducerRun(last.producer_id, last.first_epoch, r.producer_epoch, last.first_ms,
                                              r.last_update_timestamp_ms)
            else:
                h.producers.append(ProducerRun(r.producer_id, r.producer_epoch, r.producer_epoch,
                                               r.last_update_timestamp_ms, r.last_update_timestamp_ms))
        if r.state in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            opened[h.transactional_id] = (r.producer_id, r.start_timestamp_ms)
            if r.state == "PrepareAbort":
                began.setdefault(h.transactional_id, {}).setdefault(opened[h.transactional_id], r)
            continue
        opened[h.transactional_id] = None
        if r.state not in OUTCOMES:
            continue
        b = began.get(h.transactional_id, {}).pop((r.producer_id, r.start_timestamp_ms), r)
        if OUTCOMES[r.state] == "COMMIT":
            h.committed += 1
        else:
            h.aborted += 1
            if b.last_update_timestamp_ms - r.start_timestamp_ms >= r.transaction_timeout_ms > 0:
                h.timeouts += 1
        if r.start_timestamp_ms >= 0:
            durations.setdefault(h.transactional_id, []).append(r.last_update_timestamp_ms - r.start_timestamp_ms)
    key = lambda s: tuple(s[c] for c in SPAN_ORDER)   # noqa: E731
    once: dict[tuple, dict] = {}
    for s in sorted(spans, key=key):
        kept = once.get(key(s))
        if kept is None or (kept["outcome"] == "OPEN" and s["outcome"] != "OPEN"):
            once[key(s)] = s
    span_durations: dict[str, list[int]] = {}
    for s in once.values():
        if s["producer_id"] not in owner:
            continue
        h = out[owner[s["producer_id"]][1]]
        h.span_outcomes[s["outcome"]] = h.span_outcomes.get(s["outcome"], 0) + 1
        if s.get("duration_ms") is not None:
            span_durations.setdefault(h.transactional_id, []).append(s["duration_ms"])
    for tid, h in out.items():
        h.open = 1 if opened.get(tid) is not None else 0
        h.durations = _durations(durations.get(tid, []))
        h.span_durations = _durations(span_durations.get(tid, []))
    return out


_STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
           "PrepareEpochFence", "Dead", None]
_PIDS = st.sampled_from([NO_PRODUCER_ID, 1, 2, 3, 4])


@st.composite
def _inputs(draw):
    records, offsets = [], {0: 0, 1: 0}
    for tid in draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=60)):
        partition = {"a": 0, "b": 1, "c": 0, "d": 1}[tid]
        offsets[partition] += draw(st.integers(1, 3))
        start = draw(st.one_of(st.integers(0, 50), st.just(-1)))
        state = draw(st.sampled_from(_STATES[:6] * 3 + _STATES[6:]))
        records.append(TxnLogRecord(partition, offsets[partition], tid, state, producer_id=draw(_PIDS),
                                    previous_producer_id=draw(_PIDS), next_producer_id=draw(_PIDS),
                                    producer_epoch=draw(st.integers(0, 3)),
                                    transaction_timeout_ms=draw(st.sampled_from([0, 10, 30])),
                                    last_update_timestamp_ms=start + draw(st.integers(0, 60)),
                                    start_timestamp_ms=start))
    spans = [{"broker": draw(st.integers(1, 3)), "topic": draw(st.sampled_from(["t", "u"])),
              "partition": draw(st.integers(0, 1)), "producer_id": draw(st.integers(1, 5)),
              "first_offset": draw(st.integers(0, 6)), "outcome": draw(st.sampled_from(["COMMIT", "ABORT", "OPEN"])),
              "duration_ms": draw(st.one_of(st.integers(0, 40), st.none()))}
             for _ in range(draw(st.integers(0, 60)))]
    return records, spans, draw(st.randoms(use_true_random=False))


def _spool_order(folder: SpoolFolder):
    """SpoolFolder.sorted with runs of 7 rows: merged from its spool, as a big copy's are."""
    import logscan.scan.spool as spool

    def order(rows, key):
        saved = spool.SORT_RUN_ROWS, spool.SORT_FAN_IN
        spool.SORT_RUN_ROWS, spool.SORT_FAN_IN = 7, 3
        try:
            yield from folder.sorted(rows, key=key)
        finally:
            spool.SORT_RUN_ROWS, spool.SORT_FAN_IN = saved
    return order


@settings(max_examples=200, deadline=None)
@given(_inputs())
def test_histories_are_what_they_were(inputs):
    records, spans, rnd = inputs
    want = _history_before(records, spans)
    # the ids' records interleaved another way: each id's in log order, the ids in a shuffled order
    tids = list(dict.fromkeys(r.transactional_id for r in records))
    rnd.shuffle(tids)
    by_id = [r for tid in tids for r in records if r.transactional_id == tid]
    # each transaction's spans together, the transactions in a shuffled order
    grouped: dict[tuple, list[dict]] = {}
    for s in sorted(spans, key=lambda s: tuple(s[c] for c in SPAN_ORDER)):
        grouped.setdefault(tuple(s[c] for c in SPAN_ORDER), []).append(s)
    transactions = list(grouped.values())
    rnd.shuffle(transactions)
    in_order = [s for t in transactions for s in t]
    with SpoolFolder() as folder:
        for got in (transactional_id_history(iter(records), iter(spans)),
                    transactional_id_history(by_id, spans, order=_spool_order(folder)),
                    transactional_id_history(by_id, in_order, spans_in_order=True),
                    transactional_id_history(records, in_order, order=_spool_order(folder), spans_in_order=True)):
            assert got == want
            assert repr(history_rows(got)) == repr(history_rows(want))
        # the rows made from the folds themselves (the history step's) are history_rows's
        for rows in (transactional_id_history_rows(iter(records), iter(spans)),
                     transactional_id_history_rows(by_id, spans, order=_spool_order(folder)),
                     transactional_id_history_rows(by_id, in_order, spans_in_order=True),
                     transactional_id_history_rows(records, in_order, order=_spool_order(folder), spans_in_order=True)):
            assert repr(rows) == repr(history_rows(want))


def test_an_ids_few_durations_stay_out_of_the_sort():
    """Of each id, its durations of a kind go through ``order`` only past HELD_DURATIONS of
    them, and then all of them: the few are held by its fold."""
    records, offset = [], 0
    for tid, transactions in (("few", HELD_DURATIONS), ("many", HELD_DURATIONS + 1)):
        for i in range(transactions):
            offset += 1
            records.append(TxnLogRecord(0, offset, tid, "CompleteCommit", producer_id=1 if tid == "few" else 2,
                                        producer_epoch=0, last_update_timestamp_ms=100 + i * 7 % 5,
                                        start_timestamp_ms=100 - i))
    spans = [{"broker": 1, "topic": "t", "partition": 0, "producer_id": 1, "first_offset": i, "outcome": "COMMIT",
              "duration_ms": i % 3} for i in range(HELD_DURATIONS + 2)]
    sorted_values = []

    def order(rows, key):
        out = sorted(rows, key=key)
        if key is None:
            sorted_values.extend(out)
        return out

    got = transactional_id_history(records, spans, order=order)
    assert transactional_id_history_rows(records, spans) == history_rows(got)
    assert sorted(sorted_values) == sorted([("many", 0, 100 + i * 7 % 5 - (100 - i)) for i in range(HELD_DURATIONS + 1)]
                                           + [("few", 1, i % 3) for i in range(HELD_DURATIONS + 2)])
    assert got == _history_before(records, spans)
    assert got["few"].durations.count == HELD_DURATIONS and got["few"].span_durations.count == HELD_DURATIONS + 2


def test_an_abort_is_timed_from_its_first_prepare_abort():
    """A PrepareAbort written again (the coordinator retrying its marker writes) does not move
    when the abort began: 5 ms in, under the 10 ms timeout, not a timeout."""
    records = [TxnLogRecord(0, 1, "a", "Ongoing", producer_id=1, transaction_timeout_ms=10,
                            last_update_timestamp_ms=0, start_timestamp_ms=0),
               TxnLogRecord(0, 2, "a", "PrepareAbort", producer_id=1, transaction_timeout_ms=10,
                            last_update_timestamp_ms=5, start_timestamp_ms=0),
               TxnLogRecord(0, 3, "a", "PrepareAbort", producer_id=1, transaction_timeout_ms=10,
                            last_update_timestamp_ms=20, start_timestamp_ms=0),
               TxnLogRecord(0, 4, "a", "CompleteAbort", producer_id=1, transaction_timeout_ms=10,
                            last_update_timestamp_ms=25, start_timestamp_ms=0)]
    got = transactional_id_history(records)
    assert got == _history_before(records, [])
    assert (got["a"].aborted, got["a"].timeouts, got["a"].durations) == (1, 0, Durations(1, 25, 25, 25))
