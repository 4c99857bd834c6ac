"""Producer snapshots against the producer state rebuilt from the log.

A `.snapshot` named N holds the broker's producer state after every offset below N. The
state rebuilt from the copied batches below N should hold the same producers with the same
values; where it does not, either the log or the snapshot is not what the broker had (a
truncated or damaged copy, a stale snapshot past the log end) or the broker expired an idle
producer (producer.id.expiration.ms) that a replay of the log still sees.
"""

from __future__ import annotations

from typing import Optional

from .producer_state import ProducerStateEntry, describe_entry

#: The describe-producers fields of one producer, in the order the tuples hold them.
FIELDS = ("producer_epoch", "coordinator_epoch", "last_sequence", "last_timestamp", "current_txn_start_offset")
#: A producer rebuilt from nothing but control batches the cleaner emptied (ProducerStateEntry.empty).
_EMPTY = describe_entry(ProducerStateEntry(0))[1:]
#: Why such a producer's snapshot entry differs from the log (producer_state.BrokerLoad).
CLEANED_PRODUCER = ("the log below the snapshot holds only control batches the cleaner emptied for this "
                    "producer, from which Kafka's replay takes nothing: the snapshot holds the state the "
                    "cleaner removed, and the broker loads it from there")


def compare_producers(snapshot: dict[int, tuple], rebuilt: dict[int, tuple]) -> dict[int, Optional[str]]:
    """Producer id -> None when the snapshot and the rebuild agree, else what differs.

    Both map a producer id to its (producer_epoch, coordinator_epoch, last_sequence,
    last_timestamp, current_txn_start_offset), as describe-producers shows them."""
    out: dict[int, Optional[str]] = {}
    for pid in sorted(set(snapshot) | set(rebuilt)):
        held, got = snapshot.get(pid), rebuilt.get(pid)
        if held is None:
            out[pid] = ("not in the snapshot, yet the log below its offset has this producer "
                        "(expired by the broker, or the snapshot is not of this log)")
        elif got is None:
            out[pid] = "in the snapshot, but the log below its offset has no batch of this producer"
        else:
            diffs = [f"{name} {g} rebuilt, {h} in the snapshot"
                     for name, h, g in zip(FIELDS, held, got) if h != g]
            if diffs and got == _EMPTY:
                diffs.append(CLEANED_PRODUCER)
            out[pid] = "; ".join(diffs) or None
    return out
