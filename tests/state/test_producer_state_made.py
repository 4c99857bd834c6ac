"""The replay makes its BatchMetadata and CompletedTxn with tuple.__new__ (no generated
__new__ frame) and a producer's kept batches with a partial: the same NamedTuples (their type,
fields and equality), and each producer its own deque of NUM_BATCHES_TO_RETAIN."""

from __future__ import annotations

from logscan.state.facts import BatchFact
from logscan.state.producer_state import (NUM_BATCHES_TO_RETAIN, BatchMetadata, CompletedTxn, ProducerStateEntry,
                                          ProducerStateManager)


def _data(base, pid=7, epoch=0, txn=True, seq=0):
    return BatchFact(base, base + 1, pid, epoch, seq, seq + 1, 1000 + base, txn, False, 2, 100)


def test_kept_batches_and_completed_transactions_are_the_named_tuples():
    psm = ProducerStateManager()
    for i in range(8):
        psm.append(_data(i * 2, seq=i * 2))
    done = psm.append(BatchFact(16, 16, 7, 0, -1, -1, 2000, True, True, 1, 70, "ABORT", 3, 2001))
    entry = psm.producers[7]
    assert len(entry.batches) == NUM_BATCHES_TO_RETAIN
    assert all(type(b) is BatchMetadata for b in entry.batches)
    assert list(entry.batches)[-1] == BatchMetadata(15, 15, 1, 1014)
    assert list(entry.batches)[-1].offset_delta == 1 and entry.last_sequence == 15
    assert type(done) is CompletedTxn and done == CompletedTxn(7, 0, 16, True) and done.is_aborted
    assert psm.completed == [done]


def test_each_producer_has_its_own_deque_of_the_retained_batches():
    a, b = ProducerStateEntry(1), ProducerStateEntry(2)
    assert a.batches is not b.batches and a.batches.maxlen == b.batches.maxlen == NUM_BATCHES_TO_RETAIN
    a.batches.append(BatchMetadata(0, 0, 0, 0))
    assert not b.batches
