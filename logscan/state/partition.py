"""Per-replica partition state: offsets, LSO and LSO lag, the way UnifiedLog derives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .producer_state import first_unstable_offset, last_stable_offset
from .spans import ReplicaReplay


@dataclass(frozen=True, slots=True)
class ReplicaState:
    broker: int
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    high_watermark_checkpointed: bool
    first_unstable_offset: Optional[int]
    last_stable_offset: int
    open_transactions: int
    producers: int

    @property
    def lso_lag(self) -> int:
        """LastStableOffsetLag as the broker's gauge computes it: HW - LSO."""
        return self.high_watermark - self.last_stable_offset


def log_start_offset(first_segment_base: Optional[int], checkpointed: Optional[int]) -> int:
    """logStartOffset: the log-start-offset-checkpoint entry (written only when it is past the
    first segment) or else the first segment's base offset."""
    base = first_segment_base or 0
    return base if checkpointed is None else max(base, checkpointed)


def high_watermark(checkpointed: Optional[int], log_start: int, log_end: int) -> int:
    """UnifiedLog.updateHighWatermark on load: max(logStartOffset, min(hw, LEO)); a partition
    missing from replication-offset-checkpoint loads with hw 0."""
    return max(log_start, min(checkpointed or 0, log_end))


def replica_state(broker: int, topic: str, partition: int, replay: ReplicaReplay, *,
                  first_segment_base: Optional[int], last_segment_base: Optional[int],
                  hw_checkpoint: Optional[int], log_start_checkpoint: Optional[int]) -> ReplicaState:
    log_start = log_start_offset(first_segment_base, log_start_checkpoint)
    psm = replay.producers
    log_end = max(psm.map_end_offset, last_segment_base or 0, log_start)
    hw = high_watermark(hw_checkpoint, log_start, log_end)
    ongoing = psm.ongoing()
    fuo = first_unstable_offset(ongoing.values(), psm.completed, hw, log_start)
    return ReplicaState(broker, topic, partition, log_start, log_end, hw, hw_checkpoint is not None,
                        fuo, last_stable_offset(fuo, hw), len(ongoing), len(psm.producers))
