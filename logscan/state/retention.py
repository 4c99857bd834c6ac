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
from operator import attrgetter
from typing import Iterable, Optional

from logscan.logdir.naming import INT64_MAX

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
        name, stamp = b["file"], b["max_timestamp"]
        known = largest.get(name, -1)
        largest[name] = stamp if stamp > known else known
    out = []
    for row in files:
        if row["kind"] != "log_segment":
            continue
        size = row.get("size")
        if size is None or size < 0:
            continue
        name = row["file"]
        base = _log_base(name) if name.endswith(".log") else None
        if base is not None:
            out.append(Segment(base, size, largest.get(name)))
    if len(out) > 1:
        out.sort(key=_BASE_OFFSET)   # stable, as sorted() is
    return out


def replica_segments(files: Iterable[dict]) -> list[Segment]:
    """segments_of(the log_segment rows of one replica's ``files`` rows, batches: those of them
    with a max_timestamp): what pipeline.impact takes of a replica's files rows, which give the
    segments' largest timestamps themselves. A replica's one row (60,009 replicas of 60,009 rows
    on make bench's cores copy, 2026-12-08) is read once, no list nor dict made for it."""
    if not isinstance(files, list):
        files = list(files)
    if len(files) != 1:
        segments = [f for f in files if f["kind"] == "log_segment"]
        return segments_of(segments, [f for f in segments if f.get("max_timestamp") is not None])
    row = files[0]
    if row["kind"] != "log_segment":
        return []
    size = row.get("size")
    if size is None or size < 0:
        return []
    name = row["file"]
    base = _log_base(name) if name.endswith(".log") else None
    if base is None:
        return []
    stamp = row.get("max_timestamp")
    # segments_of's largest timestamp of one batch row: at least its -1 (NO_TIMESTAMP)
    return [Segment(base, size, None if stamp is None else stamp if stamp > -1 else -1)]


#: A segment's sort key.
_BASE_OFFSET = attrgetter("base_offset")


def _log_base(path: str) -> Optional[int]:
    """naming.base_offset_from_name of a path ending in ``.log``: the digits before it, as
    that name is a live segment's only when they are all its name holds (no suffix may
    follow ``.log``), without the regular expression. A segment per replica went through it:
    0.30 of the 1.92 s partition_impact took on the driver of make bench's cores copy (60,009
    replicas, cProfile, 2026-12-07)."""
    digits = path[path.rfind("/") + 1:-4]
    if digits and digits.isascii() and digits.isdigit():
        base = int(digits)
        return base if base <= INT64_MAX else None
    return None


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
    timestamps for min.compaction.lag.ms.

    pipeline.impact takes a replica at a time (60,009 on make bench's cores copy) through
    replica_segments and replica_impact, this grouping of one replica's rows spared."""
    by_replica: dict[tuple, list[dict]] = {}
    for f in files:
        key = (f["broker"], f["topic"], f["partition"])
        held = by_replica.get(key)
        if held is None:
            by_replica[key] = [f]
        else:
            held.append(f)
    stamps: dict[tuple, list[dict]] = {}
    for b in batches:
        stamps.setdefault((b["broker"], b["topic"], b["partition"]), []).append(b)
    return [replica_impact(s, segments_of(by_replica.get(key, ()), stamps.get(key, ())), cleaner_checkpoints,
                           configs, remote_storage, as_of_ms)
            for s in states for key in ((s["broker"], s["topic"], s["partition"]),)]


def replica_impact(s: dict, segments: list[Segment], cleaner_checkpoints: dict[tuple, int],
                   configs: dict[str, dict[str, str]], remote_storage: bool, as_of_ms: Optional[int] = None) -> dict:
    """:func:`impact_rows`'s row of one replica (``s``: its partition_state row) of its live
    ``segments`` (segments_of's, or replica_segments's): what pipeline.impact calls a replica at
    a time, without impact_rows's grouping of one replica's rows (60,009 replicas on make bench's
    cores copy, 2026-12-08)."""
    broker, topic, partition, lso = s["broker"], s["topic"], s["partition"], s["last_stable_offset"]
    key = (broker, topic, partition)
    topic_config = configs.get(topic)
    checkpoint = cleaner_checkpoints.get(key)
    compacted = is_compacted(topic, key in cleaner_checkpoints,
                             topic_config.get("cleanup.policy") if topic_config else None)
    if compacted:
        c = held_by_cleaner(segments, last_stable_offset=lso, log_start_offset=s["log_start_offset"],
                            log_end_offset=s["log_end_offset"], cleaner_checkpoint=checkpoint, now_ms=as_of_ms,
                            min_compaction_lag_ms=int(topic_config.get("min.compaction.lag.ms", 0)
                                                      if topic_config else 0))
        cleaner = ((c.first_uncleanable_offset, c.cleaner_at_limit, c.cleanable_bytes, c.held_back_bytes,
                    c.held_back_segments) if c is not None else _NO_CLEANER)
    else:
        cleaner = _NO_CLEANER
    if remote_storage:
        t = held_from_tiering(segments, last_stable_offset=lso)
        tiering = (t.held_back_bytes, t.held_back_segments, t.first_held_offset)
    else:
        tiering = _NO_TIERING
    size = 0
    for x in segments:
        size += x.size
    return {"broker": broker, "topic": topic, "partition": partition,
            "segments": len(segments), "bytes": size, "compacted": compacted,
            "cleaner_checkpoint": checkpoint,
            "cleaner_first_uncleanable_offset": cleaner[0],
            "cleaner_at_limit": cleaner[1],
            "cleanable_bytes": cleaner[2],
            "cleaner_held_bytes": cleaner[3],
            "cleaner_held_segments": cleaner[4],
            "remote_storage": remote_storage,
            "tiering_held_bytes": tiering[0],
            "tiering_held_segments": tiering[1],
                "tiering_first_held_offset": tiering[2]}


#: impact_rows's figures where a rule does not apply.
_NO_CLEANER = (None,) * 5
_NO_TIERING = (None,) * 3
