"""The scan's consumer-group step (issue 35 items 1 and 2): ``committed_offsets`` and
``affected_groups`` from a copy's ``__consumer_offsets`` replicas and the partition step's rows.

    read     consumer_offsets.replica_rows: one ``__consumer_offsets`` replica's commit and
             marker rows, in log order (a replica per partition is enough: the served one)
    offsets  partition_offsets(rows, state, as_of_ms): one partition's offsets, loaded from
             the replica the partition is served from, up to its high watermark and as_of
    groups   groups(offsets, partition_state, hanging_candidates, txn_spans, as_of_ms)

The two tables' schemas are rows.COMMITTED_OFFSETS and rows.AFFECTED_GROUPS; the scan runs
these steps through logscan.scan.pipeline (decode reads the commit rows as it walks a
``__consumer_offsets`` replica, once: replica.iter_segment's ``offsets``).
"""

from __future__ import annotations

from typing import Iterable, Optional

from logscan.state.offsets import CONSUMER_OFFSETS_TOPIC, affected_groups, committed_offsets, served_state

from .rows import Row


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

