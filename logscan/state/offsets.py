"""Consumer groups' committed offsets, rebuilt from ``__consumer_offsets`` the way the group
coordinator loads them, and the groups a hanging or open transaction holds back.

The rules are Kafka 4.1's group coordinator (``OffsetMetadataManager``), which every load of
a ``__consumer_offsets`` partition replays record by record in log order:

* ``replay(recordOffset, producerId, key, value)``: a commit from a batch without a producer id
  (``NO_PRODUCER_ID``: a plain OffsetCommit, written by the coordinator itself) replaces the
  group's offset for that topic-partition: the last record wins. A commit from a batch with a
  producer id (TxnOffsetCommit: sendOffsetsToTransaction) is only *pending*, per producer id,
  until that producer's transaction marker reaches the partition.
* A tombstone (null value: offset deletion, expiry, group deletion) removes the committed
  offset and the pending ones of every open transaction for that group-topic-partition.
* ``replayEndTransactionMarker(producerId, result)``: COMMIT moves the producer's pending
  offsets into the committed ones, each unless the committed offset there comes from a record
  with a higher offset in ``__consumer_offsets`` ("we always keep the most recent committed
  offset when we have a mix of transactional and regular offset commits"); ABORT drops them.
* Offsets are served at the coordinator's last committed offset: what is above the
  partition's high watermark is not read (the runtime's timeline snapshots).

While a group has a pending commit on a partition, an OffsetFetch with requireStable (every
read_committed consumer since KIP-447) for it answers UNSTABLE_OFFSET_COMMIT, and the client
retries until its timeout: the group cannot start or rebalance. A read_committed consumer
whose committed offset is at or past a partition's last stable offset reads nothing more there
until the LSO moves.

Rows in (``logscan.scan.consumer_offsets``): ``kind`` OFFSET_COMMIT or MARKER, in log order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from logscan.state.facts import NO_PRODUCER_ID

Row = dict
Key = tuple[str, str, int]  # (group_id, topic, partition)

OFFSET_COMMIT = "offset_commit"
MARKER = "marker"
COMMIT = "COMMIT"
ABORT = "ABORT"
COMMIT_KINDS = (COMMIT, ABORT)

# committed_offsets' ``state``
COMMITTED = "committed"
PENDING = "pending"

# affected_groups' ``kind``
UNSTABLE_OFFSET_COMMIT = "unstable_offset_commit"
READ_COMMITTED_STUCK = "read_committed_stuck"
# affected_groups' ``reason`` of a transaction find-hanging does not list yet (within the timeout)
OPEN = "open"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(slots=True)
class OffsetsLoad:
    """One ``__consumer_offsets`` partition loaded as the coordinator loads it. Each value is
    the commit row that put it there (its ``offset`` is Kafka's recordOffset)."""

    committed: dict[Key, Row] = field(default_factory=dict)
    pending: dict[int, dict[Key, Row]] = field(default_factory=dict)  # producer id -> its commits

    def replay(self, row: Row) -> None:
        if row["kind"] == MARKER:
            self._end_transaction(row["producer_id"], row["control_type"])
            return
        key = (row["group_id"], row["topic"], row["partition"])
        if row["committed_offset"] is None:
            self.committed.pop(key, None)
            for commits in self.pending.values():
                commits.pop(key, None)
        elif row["producer_id"] == NO_PRODUCER_ID:
            self.committed[key] = row
        else:
            self.pending.setdefault(row["producer_id"], {})[key] = row

    def _end_transaction(self, producer_id: int, control_type: str) -> None:
        commits = self.pending.pop(producer_id, None)
        if commits is None or control_type != COMMIT:
            return
        for key, row in commits.items():
            existing = self.committed.get(key)
            if existing is None or row["offset"] > existing["offset"]:
                self.committed[key] = row

    def rows(self) -> list[Row]:
        """The committed offsets, then the pending ones (a producer's emptied by tombstones
        give none), each sorted by (group, topic, partition)."""
        out = [_offset_row(row, COMMITTED) for _, row in sorted(self.committed.items())]
        for producer_id in sorted(self.pending):
            out.extend(_offset_row(row, PENDING) for _, row in sorted(self.pending[producer_id].items()))
        return out


def _offset_row(commit: Row, state: str) -> Row:
    return {"offsets_partition": commit["offsets_partition"], "group_id": commit["group_id"],
            "topic": commit["topic"], "partition": commit["partition"], "state": state,
            "committed_offset": commit["committed_offset"], "leader_epoch": commit["leader_epoch"],
            "metadata": commit["metadata"], "commit_timestamp_ms": commit["commit_timestamp_ms"],
            "record_offset": commit["offset"], "record_timestamp_ms": commit["timestamp_ms"],
            "producer_id": commit["producer_id"], "producer_epoch": commit["producer_epoch"]}


def committed_offsets(entries: Iterable[Row], *, as_of_ms: Optional[int] = None,
                      end_offset: Optional[int] = None) -> list[Row]:
    """The offsets one ``__consumer_offsets`` partition holds: a row per (group, topic,
    partition) committed, and per (producer id, group, topic, partition) still pending.

    ``entries``: the partition's commit and marker rows in log order. ``end_offset``: the
    partition's high watermark (what the coordinator serves ends there). ``as_of_ms``: the
    offsets as they were then: the load stops at the first row written after it (a
    ``__consumer_offsets`` partition is written by its coordinator, so its timestamps follow
    the log)."""
    load = OffsetsLoad()
    for row in entries:
        if end_offset is not None and row["offset"] >= end_offset:
            break
        if as_of_ms is not None and row["timestamp_ms"] > as_of_ms:
            break
        load.replay(row)
    return load.rows()


# --- the groups a hang holds back --------------------------------------------------------------

def served_state(partition_states: Iterable[Row]) -> dict[tuple[str, int], Row]:
    """The partition_state row each partition is served from: its leader's, else the replica
    furthest ahead (high watermark, then LSO)."""
    best: dict[tuple[str, int], Row] = {}
    for s in partition_states:
        key = (s["topic"], s["partition"])
        cur = best.get(key)
        if cur is None or _rank(s) > _rank(cur):
            best[key] = s
    return best


def _rank(s: Row) -> tuple:
    return (bool(s.get("is_leader")), s.get("high_watermark") or -1, s.get("last_stable_offset") or -1)


def _candidate(candidates: dict[tuple[str, int], list[Row]], topic: str, partition: int, leader: Optional[int],
               match) -> Optional[Row]:
    """The find-hanging candidate of (topic, partition) that ``match`` accepts, the leader's
    replica's first."""
    rows = [c for c in candidates.get((topic, partition), ()) if match(c)]
    rows.sort(key=lambda c: (c["broker"] != leader, c["broker"]))
    return rows[0] if rows else None


def _verdict(candidate: Optional[Row]) -> dict:
    if candidate is None:
        return {"hanging": None, "reason": OPEN, "transactional_id": None}
    return {"hanging": candidate["hanging"], "reason": candidate["reason"],
            "transactional_id": candidate.get("transactional_id")}


def _lag(state: Optional[Row], committed: Optional[int]) -> dict:
    if state is None:
        return {"last_stable_offset": None, "high_watermark": None, "lag_messages": None}
    hw = state["high_watermark"]
    return {"last_stable_offset": state["last_stable_offset"], "high_watermark": hw,
            "lag_messages": None if committed is None or hw is None else max(0, hw - committed)}


def affected_groups(offsets: Iterable[Row], partition_states: Iterable[Row], candidates: Iterable[Row],
                    open_spans: Iterable[Row] = (), *, as_of_ms: int) -> list[Row]:
    """The groups a hanging or open transaction holds back, a row per (group, topic,
    partition, kind):

    * UNSTABLE_OFFSET_COMMIT: the group has a pending transactional commit there; the
      transaction holding it is the producer's on the group's ``__consumer_offsets``
      partition (``held_*``), with find-hanging's verdict on it when it is a candidate,
      else reason OPEN. ``lag_ms``: since the pending commit was written.
    * READ_COMMITTED_STUCK: the group's committed offset is at or past the partition's LSO
      while the LSO is below the high watermark; the transaction is the one open at the LSO.
      ``lag_ms``: since that transaction began (its span's start timestamp; else the
      candidate's lastTimestamp, else the partition's oldest_txn_last_timestamp).

    ``lag_messages`` is high watermark - committed offset of the group's partition (what
    ``kafka-consumer-groups --describe`` prints as LAG). Inputs are a scan's rows:
    ``offsets`` from committed_offsets, ``partition_states`` (partition_state),
    ``candidates`` (hanging_candidates) and ``open_spans`` (txn_spans; OPEN ones are used)."""
    offsets = list(offsets)
    states = served_state(partition_states)
    by_partition: dict[tuple[str, int], list[Row]] = {}
    for c in candidates:
        by_partition.setdefault((c["topic"], c["partition"]), []).append(c)
    spans: dict[tuple[str, int, int], Row] = {}
    for s in open_spans:
        if s["outcome"] == "OPEN":
            spans.setdefault((s["topic"], s["partition"], s["first_offset"]), s)
    committed = {(o["group_id"], o["topic"], o["partition"]): o for o in offsets if o["state"] == COMMITTED}
    out: list[Row] = []
    for o in offsets:
        key = (o["group_id"], o["topic"], o["partition"])
        state = states.get((o["topic"], o["partition"]))
        if o["state"] == PENDING:
            held = states.get((CONSUMER_OFFSETS_TOPIC, o["offsets_partition"]))
            cand = _candidate(by_partition, CONSUMER_OFFSETS_TOPIC, o["offsets_partition"],
                              held and held.get("leader"), lambda c: c["producer_id"] == o["producer_id"])
            current = committed.get(key)
            current_offset = None if current is None else current["committed_offset"]
            out.append(_affected(o, UNSTABLE_OFFSET_COMMIT, current_offset, o["committed_offset"],
                                 o["producer_id"], o["producer_epoch"], CONSUMER_OFFSETS_TOPIC,
                                 o["offsets_partition"], _verdict(cand), _lag(state, current_offset),
                                 o["record_timestamp_ms"], as_of_ms))
            continue
        if state is None or state["last_stable_offset"] is None or state["high_watermark"] is None:
            continue
        lso = state["last_stable_offset"]
        if not (lso < state["high_watermark"] and o["committed_offset"] >= lso):
            continue
        cand = _candidate(by_partition, o["topic"], o["partition"], state.get("leader"),
                          lambda c: c["start_offset"] == lso)
        span = spans.get((o["topic"], o["partition"], lso))
        producer = cand or span or {}
        since = (span["start_timestamp"] if span is not None and span["start_timestamp"] >= 0
                 else cand["last_timestamp"] if cand is not None
                 else state.get("oldest_txn_last_timestamp"))
        out.append(_affected(o, READ_COMMITTED_STUCK, o["committed_offset"], None, producer.get("producer_id"),
                             producer.get("producer_epoch"), o["topic"], o["partition"], _verdict(cand),
                             _lag(state, o["committed_offset"]), since if since is None or since >= 0 else None,
                             as_of_ms))
    out.sort(key=lambda r: (r["group_id"], r["topic"], r["partition"], r["kind"]))
    return out


def _affected(o: Row, kind: str, committed: Optional[int], pending: Optional[int], producer_id, producer_epoch,
              held_topic: str, held_partition: int, verdict: dict, lag: dict, since_ms: Optional[int],
              as_of_ms: int) -> Row:
    return {"group_id": o["group_id"], "topic": o["topic"], "partition": o["partition"], "kind": kind,
            "committed_offset": committed, "pending_offset": pending, "producer_id": producer_id,
            "producer_epoch": producer_epoch, "held_topic": held_topic, "held_partition": held_partition,
            **verdict, **lag, "since_ms": since_ms,
            "lag_ms": None if since_ms is None else max(0, as_of_ms - since_ms)}
