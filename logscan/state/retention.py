"""What a partition's last stable offset holds back on disk (issue 35 item 3): bytes the log
cleaner may not clean on a compacted topic, and bytes tiered storage may not upload, by
Kafka's own rules, over plain rows (a replica's live segments: base offset and size).

Both rules work by whole segments and stop at the LSO, so a hanging transaction keeps every
segment from the one holding its first offset to the active one out of their reach, however
much is written after it:

- **the log cleaner** (LogCleanerManager.cleanableOffsets, LogToClean): the first uncleanable
  offset is the least of the LSO, the active segment's base offset and the first segment
  within min.compaction.lag.ms of now; a pass cleans from the first dirty offset (the
  partition's ``cleaner-offset-checkpoint`` entry, reset to the log start when it lies outside
  the log) up to the base offset of the segment holding that offset, and checkpoints it. The
  lag is a topic setting the copy does not hold: the figures here are what the LSO alone
  allows (the lag can only stop the cleaner earlier).
- **tiered storage** (RemoteLogManager.candidateLogSegments): a segment is uploaded once the
  next segment's base offset is at or below the LSO; the active segment never is. Only where
  remote storage is in use: the copy holds ``__remote_log_metadata`` partitions (its
  TopicBasedRemoteLogMetadataManager's topic).

``held_by_cleaner`` and ``held_from_tiering`` take a replica's segments in offset order, the
last being the active one; ``segments_of`` makes them from the scan's ``files`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from logscan.logdir.naming import base_offset_from_name

#: The topic of Kafka's default RemoteLogMetadataManager (TopicBasedRemoteLogMetadataManager):
#: its partitions in a log dir say remote storage is enabled on the cluster.
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
#: ConfigRecord's ResourceType of a topic (ConfigResource.Type.TOPIC).
TOPIC_RESOURCE = 2
#: Internal topics Kafka creates with cleanup.policy=compact.
COMPACTED_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True, slots=True)
class Segment:
    base_offset: int
    size: int   # bytes of the segment's .log file
    largest_timestamp: Optional[int] = None   # its batches' largest maxTimestamp (LogSegment.largestTimestamp)


@dataclass(frozen=True, slots=True)
class CleanerHold:
    """Where the log cleaner may clean a replica, and what the LSO keeps from it."""

    first_dirty_offset: int             # where the next pass starts
    lag_limit_offset: Optional[int]     # base of the first dirty segment within min.compaction.lag.ms of now
    first_uncleanable_offset: int       # where it must stop: the base of the segment holding min(LSO, active base)
    cleanable_bytes: int                # segments a pass may clean now (first dirty .. first uncleanable)
    held_back_bytes: int                # closed segments from the LSO's segment on: dirty until the LSO moves
    held_back_segments: int
    cleaner_checkpoint: Optional[int]   # the partition's cleaner-offset-checkpoint entry, as the copy has it
    cleaner_at_limit: bool              # the checkpoint is at the first uncleanable offset: the cleaner
                                        # has done all the LSO lets it do


@dataclass(frozen=True, slots=True)
class TieringHold:
    """What tiered storage may not upload from a replica because of its LSO."""

    held_back_bytes: int    # closed segments whose next segment starts past the LSO
    held_back_segments: int
    first_held_offset: Optional[int]   # base offset of the first of them; None when none


def segments_of(files: Iterable[dict], batches: Iterable[dict] = ()) -> list[Segment]:
    """A replica's live segments in offset order from its ``files`` rows (kind log_segment;
    a ``.deleted``/``.cleaned``/``.swap`` file is not a segment of the log), each with its
    largest batch timestamp when its ``batches`` rows are given."""
    largest: dict[str, int] = {}
    for b in batches:
        largest[b["file"]] = max(largest.get(b["file"], -1), b["max_timestamp"])
    out = []
    for row in files:
        if row["kind"] != "log_segment" or row.get("size") is None or row["size"] < 0:
            continue
        base = base_offset_from_name(row["file"].rsplit("/", 1)[-1])
        if base is not None and row["file"].endswith(".log"):
            out.append(Segment(base, row["size"], largest.get(row["file"])))
    return sorted(out, key=lambda s: s.base_offset)


def _floor_index(segments: list[Segment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last whose base is at or below it)."""
    index = 0
    for i, s in enumerate(segments):
        if s.base_offset <= offset:
            index = i
    return index


def _lag_limit(segments: list[Segment], first_dirty: int, now_ms: int, min_compaction_lag_ms: int) -> Optional[int]:
    """findFirstUncleanableSegment: the base of the first closed segment from the first dirty
    one whose largest timestamp is within the lag of now (a segment whose largest timestamp
    the copy does not give stops the search: the lag may hold it)."""
    for s in segments[_floor_index(segments, first_dirty):-1]:
        if s.largest_timestamp is None or s.largest_timestamp > now_ms - min_compaction_lag_ms:
            return s.base_offset
    return None


def held_by_cleaner(segments: list[Segment], *, last_stable_offset: int, log_start_offset: int,
                    log_end_offset: int, cleaner_checkpoint: Optional[int], now_ms: Optional[int] = None,
                    min_compaction_lag_ms: int = 0) -> Optional[CleanerHold]:
    """The cleaner's reach over a compacted replica's ``segments`` (None: no segment); the
    compaction lag counts when ``now_ms`` is given and the lag is positive."""
    if not segments:
        return None
    active = len(segments) - 1
    # LogCleanerManager.cleanableOffsets: a checkpoint outside [log start, log end] is reset
    # to the log start (a truncated or deleted-records log, or a corrupt checkpoint).
    if cleaner_checkpoint is None or not log_start_offset <= cleaner_checkpoint <= log_end_offset:
        first_dirty = log_start_offset
    else:
        first_dirty = cleaner_checkpoint
    lag_limit = (_lag_limit(segments, first_dirty, now_ms, min_compaction_lag_ms)
                 if now_ms is not None and min_compaction_lag_ms > 0 else None)
    uncleanable = min(last_stable_offset, segments[active].base_offset,
                      *([lag_limit] if lag_limit is not None else []))
    # LogToClean: the first segment from the uncleanable offset on, before the active one,
    # else the active one: the base of the segment holding it.
    stop = _floor_index(segments, uncleanable)
    first_uncleanable = segments[stop].base_offset
    start = _floor_index(segments, first_dirty)
    cleanable = sum(s.size for s in segments[start:stop]) if first_dirty < first_uncleanable else 0
    lso_stop = _floor_index(segments, last_stable_offset)
    held = segments[lso_stop:active] if last_stable_offset < segments[active].base_offset else []
    return CleanerHold(first_dirty, lag_limit, first_uncleanable, cleanable, sum(s.size for s in held), len(held),
                       cleaner_checkpoint, cleaner_checkpoint == first_uncleanable)


def held_from_tiering(segments: list[Segment], *, last_stable_offset: int) -> TieringHold:
    """The closed segments tiered storage may not upload: those whose next segment's base
    offset is past the LSO (RemoteLogManager copies a segment once ``next.base <= LSO``)."""
    held = [s for s, nxt in zip(segments, segments[1:]) if nxt.base_offset > last_stable_offset]
    return TieringHold(sum(s.size for s in held), len(held), held[0].base_offset if held else None)


def remote_storage_in_copy(topics: Iterable[str]) -> bool:
    """The copy shows remote storage enabled: a ``__remote_log_metadata`` partition is in it."""
    return REMOTE_LOG_METADATA_TOPIC in set(topics)


def topic_configs(records: Iterable[tuple[int, str, str, Optional[str]]]) -> dict[str, dict[str, str]]:
    """Each topic's configs set in ``__cluster_metadata``: its ConfigRecords (resource type,
    resource name, config name, value) in log order, the last value winning and a null value
    removing the config (an incremental alter's DELETE), as the controller's ConfigurationControlManager
    replays them. Only what was set for the topic: the broker defaults are not in the log."""
    out: dict[str, dict[str, str]] = {}
    for resource_type, name, key, value in records:
        if resource_type != TOPIC_RESOURCE:
            continue
        if value is None:
            out.get(name, {}).pop(key, None)
        else:
            out.setdefault(name, {})[key] = value
    return out


def is_compacted(topic: str, cleaner_checkpointed: bool, cleanup_policy: Optional[str] = None) -> bool:
    """A compacted topic: its cleanup.policy (from ``__cluster_metadata``'s ConfigRecords, when
    known) includes compact, else it is one of Kafka's compacted internal topics or the log
    cleaner has checkpointed it (the cleaner only ever takes compacted logs)."""
    if cleanup_policy is not None:
        return "compact" in [p.strip() for p in cleanup_policy.split(",")]
    return topic in COMPACTED_INTERNAL_TOPICS or cleaner_checkpointed


def impact_rows(states: Iterable[dict], files: Iterable[dict], *, cleaner_checkpoints: dict[tuple, int],
                configs: dict[str, dict[str, str]], remote_storage: bool, batches: Iterable[dict] = (),
                as_of_ms: Optional[int] = None) -> list[dict]:
    """A partition_impact row per replica of ``states`` (partition_state rows): what its LSO
    holds back from the log cleaner (compacted topics) and from tiered storage (a copy with
    remote storage); null where the rule does not apply. ``cleaner_checkpoints``: (broker,
    topic, partition) -> the log dir's cleaner-offset-checkpoint entry; ``configs``:
    topic_configs of the copy's metadata; ``batches`` (optional) give the segments' largest
    timestamps for min.compaction.lag.ms."""
    by_replica: dict[tuple, list[dict]] = {}
    for f in files:
        by_replica.setdefault((f["broker"], f["topic"], f["partition"]), []).append(f)
    stamps: dict[tuple, list[dict]] = {}
    for b in batches:
        stamps.setdefault((b["broker"], b["topic"], b["partition"]), []).append(b)
    out = []
    for s in states:
        key = (s["broker"], s["topic"], s["partition"])
        segments = segments_of(by_replica.get(key, ()), stamps.get(key, ()))
        topic_config = configs.get(s["topic"], {})
        compacted = is_compacted(s["topic"], key in cleaner_checkpoints, topic_config.get("cleanup.policy"))
        cleaner = held_by_cleaner(segments, last_stable_offset=s["last_stable_offset"],
                                  log_start_offset=s["log_start_offset"], log_end_offset=s["log_end_offset"],
                                  cleaner_checkpoint=cleaner_checkpoints.get(key), now_ms=as_of_ms,
                                  min_compaction_lag_ms=int(topic_config.get("min.compaction.lag.ms", 0))
                                  ) if compacted else None
        tiering = held_from_tiering(segments, last_stable_offset=s["last_stable_offset"]) if remote_storage else None
        out.append({"broker": s["broker"], "topic": s["topic"], "partition": s["partition"],
                    "segments": len(segments), "bytes": sum(x.size for x in segments), "compacted": compacted,
                    "cleaner_checkpoint": cleaner_checkpoints.get(key),
                    "cleaner_first_uncleanable_offset": getattr(cleaner, "first_uncleanable_offset", None),
                    "cleaner_at_limit": getattr(cleaner, "cleaner_at_limit", None),
                    "cleanable_bytes": getattr(cleaner, "cleanable_bytes", None),
                    "cleaner_held_bytes": getattr(cleaner, "held_back_bytes", None),
                    "cleaner_held_segments": getattr(cleaner, "held_back_segments", None),
                    "remote_storage": remote_storage,
                    "tiering_held_bytes": getattr(tiering, "held_back_bytes", None),
                    "tiering_held_segments": getattr(tiering, "held_back_segments", None),
                    "tiering_first_held_offset": getattr(tiering, "first_held_offset", None)})
    return out
