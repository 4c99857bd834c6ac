"""The scan's consumer-group step (issue 35 items 1 and 2): ``committed_offsets`` and
``affected_groups`` from a copy's ``__consumer_offsets`` replicas and the partition step's rows.

    read     consumer_offsets.replica_rows: one ``__consumer_offsets`` replica's commit and
             marker rows, in log order (a replica per partition is enough: the served one)
    offsets  partition_offsets(rows, state, as_of_ms): one partition's offsets, loaded from
             the replica the partition is served from, up to its high watermark and as_of
    groups   groups(offsets, partition_state, hanging_candidates, txn_spans, as_of_ms)

The two tables' schemas are declared here until both executors write them (then they move to
logscan.scan.rows.TABLES, whose every table both executors' tests expect in their output).
"""

from __future__ import annotations

from typing import Iterable, Optional

import pyarrow as pa

from logscan.logdir.segment import Finding
from logscan.logdir.tree import ReplicaDir
from logscan.state.offsets import CONSUMER_OFFSETS_TOPIC, affected_groups, committed_offsets, served_state

from .consumer_offsets import replica_rows
from .rows import Row, _f, _schema

#: The last committed offset per (group, topic, partition) as the group coordinator loads it at
#: as_of, and the transactional commits still pending then (one row per producer).
COMMITTED_OFFSETS = _schema(
    _f("broker", pa.int32(), "broker whose __consumer_offsets replica was loaded (the partition's leader, else "
                             "the replica furthest ahead)"),
    _f("offsets_partition", pa.int32(), "the __consumer_offsets partition holding the group (abs(hashCode) % "
                                        "partitions)"),
    _f("group_id", pa.string(), "consumer group id"),
    _f("topic", pa.string(), "committed topic"),
    _f("partition", pa.int32(), "committed partition"),
    _f("state", pa.string(), "committed (served by OffsetFetch) or pending (a transactional commit whose "
                             "transaction has no marker yet)"),
    _f("committed_offset", pa.int64(), "the committed offset: the next offset the group will read"),
    _f("leader_epoch", pa.int32(), "committed leader epoch (-1: none)"),
    _f("metadata", pa.string(), "the commit's metadata string"),
    _f("commit_timestamp_ms", pa.int64(), "commitTimestamp of the OffsetCommitValue, epoch ms"),
    _f("record_offset", pa.int64(), "offset of the commit record in __consumer_offsets (Kafka's recordOffset: "
                                    "a transactional commit wins over a plain one only from a later record)"),
    _f("record_timestamp_ms", pa.int64(), "timestamp of the commit record, epoch ms"),
    _f("producer_id", pa.int64(), "producer id of the commit's batch: -1 for a plain OffsetCommit, the "
                                  "transactional producer's for a TxnOffsetCommit"),
    _f("producer_epoch", pa.int32(), "producer epoch of the commit's batch (-1 for a plain commit)"),
)

#: Groups a hanging or open transaction holds back, with the lag it costs them.
AFFECTED_GROUPS = _schema(
    _f("group_id", pa.string(), "consumer group id"),
    _f("topic", pa.string(), "the group's topic"),
    _f("partition", pa.int32(), "the group's partition"),
    _f("kind", pa.string(), "unstable_offset_commit: a pending transactional commit there, so an OffsetFetch "
                            "with requireStable (read_committed consumers) answers UNSTABLE_OFFSET_COMMIT; "
                            "read_committed_stuck: the committed offset is at or past the LSO, below the HW"),
    _f("committed_offset", pa.int64(), "the group's committed offset there (null: none)"),
    _f("pending_offset", pa.int64(), "the pending transactional commit's offset (unstable_offset_commit)"),
    _f("producer_id", pa.int64(), "producer of the transaction holding the group back"),
    _f("producer_epoch", pa.int32(), "its epoch"),
    _f("held_topic", pa.string(), "where that transaction is open: __consumer_offsets (unstable_offset_commit) "
                                  "or the group's topic (read_committed_stuck)"),
    _f("held_partition", pa.int32(), "partition of held_topic"),
    _f("hanging", pa.bool_(), "hanging_candidates' verdict on that transaction; null: cannot tell, or not a "
                              "candidate yet"),
    _f("reason", pa.string(), "hanging_candidates' reason, or 'open': within the max transaction timeout"),
    _f("transactional_id", pa.string(), "transactional id of the coordinator record the verdict rests on"),
    _f("last_stable_offset", pa.int64(), "the group's partition's LSO (its served replica's)"),
    _f("high_watermark", pa.int64(), "the group's partition's high watermark"),
    _f("lag_messages", pa.int64(), "high_watermark - committed_offset (kafka-consumer-groups' LAG)"),
    _f("since_ms", pa.int64(), "since when: the pending commit's record timestamp, or the start of the "
                               "transaction open at the LSO, epoch ms"),
    _f("lag_ms", pa.int64(), "as_of - since_ms"),
)


def offsets_states(partition_states: Iterable[Row]) -> dict[int, Row]:
    """The partition_state row each ``__consumer_offsets`` partition is served from."""
    return {p: s for (t, p), s in served_state(s for s in partition_states if s["topic"] == CONSUMER_OFFSETS_TOPIC)
            .items()}


def partition_offsets(rows: Iterable[Row], state: Row, as_of_ms: Optional[int]) -> list[Row]:
    """The committed_offsets rows of one ``__consumer_offsets`` partition, from the replica of
    ``state`` (its partition_state row): the load ends at its high watermark and at as_of."""
    return [{"broker": state["broker"], **o}
            for o in committed_offsets(rows, as_of_ms=as_of_ms, end_offset=state["high_watermark"])]


def groups(offsets: Iterable[Row], partition_states: Iterable[Row], candidates: Iterable[Row],
           spans: Iterable[Row], as_of_ms: int) -> list[Row]:
    """The affected_groups rows (logscan.state.offsets.affected_groups)."""
    return affected_groups(offsets, partition_states, candidates, (s for s in spans if s["outcome"] == "OPEN"),
                           as_of_ms=as_of_ms)


def scan_groups(replicas: Iterable[ReplicaDir], partition_states: list[Row], candidates: Iterable[Row],
                spans: Iterable[Row], as_of_ms: int) -> tuple[list[Row], list[Row], list[Finding]]:
    """Both tables for a copy in one process: the served replica of each ``__consumer_offsets``
    partition read and loaded, then the groups held back; with the reading's findings."""
    states = offsets_states(partition_states)
    offsets: list[Row] = []
    findings: list[Finding] = []
    for r in replicas:
        s = states.get(r.partition)
        if r.topic == CONSUMER_OFFSETS_TOPIC and s is not None and s["broker"] == r.broker:
            offsets.extend(partition_offsets(replica_rows(r, findings), s, as_of_ms))
    return offsets, groups(offsets, partition_states, candidates, spans, as_of_ms), findings
