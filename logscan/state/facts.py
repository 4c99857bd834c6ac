"""The plain row a batch becomes before Kafka's rules are applied to it.

Only what producer-state rebuild and transaction spans need is kept, so the Spark scan can
ship these rows as Arrow columns and the rules never see a decoder object.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1


class BatchFact(NamedTuple):
    """One batch of one partition replica, in log order."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    max_timestamp: int
    is_transactional: bool
    is_control: bool
    records_count: int
    size_in_bytes: int
    # Control batches only: 'COMMIT', 'ABORT', another control type name, or None when the
    # batch has no records (emptied by the cleaner; Kafka ignores such a batch entirely).
    control_type: Optional[str] = None
    coordinator_epoch: int = -1
    # The marker record's own timestamp: Kafka sets lastTimestamp from it, not maxTimestamp.
    marker_timestamp: int = NO_TIMESTAMP
