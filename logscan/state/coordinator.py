"""The transaction coordinator's view, rebuilt from `__transaction_state` records.

TransactionStateManager.loadTransactionMetadata reads each partition from its start to the
log end (above the high watermark too), record by record; per transactional id the last
record wins and a tombstone removes the id. We do the same, per coordinator partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

PREPARING = frozenset({"PrepareCommit", "PrepareAbort"})
COMPLETE = frozenset({"Empty", "CompleteCommit", "CompleteAbort"})
NO_PRODUCER_ID = -1


@dataclass(frozen=True, slots=True)
class TxnLogRecord:
    """One `__transaction_state` record; ``state`` is None for a tombstone."""

    coordinator_partition: int
    offset: int
    transactional_id: str
    state: Optional[str] = None
    producer_id: int = NO_PRODUCER_ID
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    transaction_timeout_ms: int = 0
    partitions: tuple[tuple[str, int], ...] = ()
    last_update_timestamp_ms: int = -1
    start_timestamp_ms: int = -1
    # Leader epoch of the coordinator partition when written (the batch's partitionLeaderEpoch):
    # the coordinator epoch its markers carry.
    coordinator_epoch: int = -1


def latest_states(records: Iterable[TxnLogRecord]) -> dict[str, TxnLogRecord]:
    """Transactional id -> its last record, as the coordinator would load it.

    Records must come in log order per coordinator partition; a transactional id lives in
    exactly one coordinator partition, so partitions may be interleaved freely.
    """
    latest: dict[str, TxnLogRecord] = {}
    for rec in records:
        if rec.state is None:
            latest.pop(rec.transactional_id, None)
        else:
            latest[rec.transactional_id] = rec
    return latest


@dataclass(frozen=True, slots=True)
class ProducerIdMatch:
    """How a data producer id relates to a coordinator record."""

    record: TxnLogRecord
    relation: str  # 'current', 'previous' or 'next'


def index_by_producer_id(latest: dict[str, TxnLogRecord]) -> dict[int, list[ProducerIdMatch]]:
    """Producer id -> coordinator records naming it as current, previous or next producer id.

    find-hanging's listTransactions only matches the *current* producer id; logscan also
    keeps previous/next (KIP-890 epoch exhaustion, KIP-939) so the evidence can say why.
    """
    index: dict[int, list[ProducerIdMatch]] = {}
    for rec in latest.values():
        for pid, relation in ((rec.producer_id, "current"), (rec.previous_producer_id, "previous"),
                              (rec.next_producer_id, "next")):
            if pid != NO_PRODUCER_ID:
                index.setdefault(pid, []).append(ProducerIdMatch(rec, relation))
    return index
