"""impact_rows and segments_of, made cheaper per replica for the Spark driver (issue 30: the
driver calls impact_rows a replica at a time, 60,009 times on make bench's cores copy), give
what they gave before, row for row: generated replicas, segment files (live, deleted, of
other kinds, unnamed, out of int64), batches, checkpoints and topic configs, against the
rules as they were written before (kept here as the reference)."""

from __future__ import annotations

from typing import Iterable, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from logscan.logdir.naming import INT64_MAX, base_offset_from_name
from logscan.state.retention import (Segment, _log_base, held_by_cleaner, held_from_tiering, impact_rows,
                                     is_compacted, replica_impact, replica_segments, segments_of)


def _segments_before(files: Iterable[dict], batches: Iterable[dict] = ()) -> list[Segment]:
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


def _impact_before(states, files, *, cleaner_checkpoints, configs, remote_storage, batches=(),
                   as_of_ms: Optional[int] = None) -> list[dict]:
    by_replica: dict[tuple, list[dict]] = {}
    for f in files:
        by_replica.setdefault((f["broker"], f["topic"], f["partition"]), []).append(f)
    stamps: dict[tuple, list[dict]] = {}
    for b in batches:
        stamps.setdefault((b["broker"], b["topic"], b["partition"]), []).append(b)
    out = []
    for s in states:
        key = (s["broker"], s["topic"], s["partition"])
        segments = _segments_before(by_replica.get(key, ()), stamps.get(key, ()))
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


_DIGITS = st.one_of(st.integers(0, 10**6).map(lambda n: f"{n:020d}"), st.integers(0, 200).map(str),
                    st.just(str(INT64_MAX)), st.just(str(INT64_MAX + 1)), st.just("1" * 30),
                    st.sampled_from(["", "١٢", "０１", "+1", "-1", "1_0", " 1", "1e3", "abc", "00.log"]))
_SUFFIX = st.sampled_from([".log", ".log", ".log", ".index", ".timeindex", ".txnindex", ".snapshot",
                           ".log.deleted", ".log.cleaned", ".log.swap", ".LOG", "log", ".log.tmp"])
_NAMES = st.builds(lambda d, s, folder: f"{folder}{d}{s}", _DIGITS, _SUFFIX,
                   st.sampled_from(["", "b1/t-0/", "b1/x/t-0/", "/"]))


@given(_NAMES)
def test_a_log_files_base_offset_is_the_names(name):
    """_log_base is base_offset_from_name for a name ending in .log (segments_of's only)."""
    if name.endswith(".log"):
        assert _log_base(name) == base_offset_from_name(name.rsplit("/", 1)[-1])


_REPLICAS = [(1, "t", 0), (2, "t", 0), (1, "c", 1), (3, "__consumer_offsets", 0)]


@st.composite
def _copies(draw):
    files, batches = [], []
    for broker, topic, partition in draw(st.lists(st.sampled_from(_REPLICAS), max_size=16)):
        # mostly live segments, so that a replica has a few
        digits = draw(st.one_of(st.integers(0, 300).map(lambda n: f"{n:020d}"), _DIGITS))
        suffix = draw(st.one_of(st.just(".log"), _SUFFIX))
        name = f"b{broker}/{topic}-{partition}/{digits}{suffix}"
        files.append({"broker": broker, "topic": topic, "partition": partition, "file": name,
                      "kind": draw(st.sampled_from(["log_segment"] * 5 + ["offset_index"])),
                      "size": draw(st.one_of(st.integers(0, 5000), st.none(), st.integers(-2, 5000)))})
        for stamp in draw(st.lists(st.integers(-5, 2000), max_size=3)):
            batches.append({"broker": broker, "topic": topic, "partition": partition, "file": name,
                            "max_timestamp": stamp})
    states = []
    for broker, topic, partition in draw(st.lists(st.sampled_from(_REPLICAS), max_size=5)):
        start = draw(st.integers(0, 100))
        end = draw(st.integers(start, 400))
        states.append({"broker": broker, "topic": topic, "partition": partition, "log_start_offset": start,
                       "log_end_offset": end, "last_stable_offset": draw(st.integers(start, end))})
    checkpoints = {r: draw(st.integers(-1, 400)) for r in draw(st.lists(st.sampled_from(_REPLICAS), max_size=3))}
    configs = draw(st.dictionaries(st.sampled_from(["t", "c"]), st.dictionaries(
        st.sampled_from(["cleanup.policy", "min.compaction.lag.ms", "retention.ms"]),
        st.sampled_from(["compact", "delete", "compact,delete", "0", "1000", "86400000"]), max_size=3), max_size=2))
    configs = {t: c for t, c in configs.items()
               if c.get("min.compaction.lag.ms", "0").isdigit()}   # an int, as topic_configs would give
    return states, files, batches, checkpoints, configs


@settings(max_examples=300, deadline=None)
@given(_copies(), st.booleans(), st.one_of(st.none(), st.integers(0, 3000)), st.booleans())
def test_impact_rows_are_what_they_were(copy, remote, as_of_ms, one_at_a_time):
    states, files, batches, checkpoints, configs = copy
    kw = dict(cleaner_checkpoints=checkpoints, configs=configs, remote_storage=remote, batches=batches,
              as_of_ms=as_of_ms)
    want = _impact_before(states, files, **kw)
    if one_at_a_time:   # as pipeline.impact calls it: a replica, its files and batches
        got = []
        for s in states:
            key = (s["broker"], s["topic"], s["partition"])
            got += impact_rows([s], [f for f in files if (f["broker"], f["topic"], f["partition"]) == key],
                               **{**kw, "batches": [b for b in batches
                                                    if (b["broker"], b["topic"], b["partition"]) == key]})
    else:
        got = impact_rows(iter(states), iter(files), **{**kw, "batches": iter(batches)})
    assert repr(got) == repr(want)
    assert segments_of(files, batches) == _segments_before(files, batches)


def test_impact_rows_are_what_they_were_on_compacted_replicas_with_and_without_configs():
    """The cleaner's figures, the compaction lag counting (a config's) or not (none: 0)."""
    files, batches = [], []
    for broker, topic, partition in _REPLICAS:
        for base, size, stamps in ((30, 300, [900]), (0, 100, [100, 50]), (10, 200, [700]), (20, 50, [])):
            name = f"b{broker}/{topic}-{partition}/{base:020d}.log"
            files.append({"broker": broker, "topic": topic, "partition": partition, "file": name,
                          "kind": "log_segment", "size": size})
            batches += [{"broker": broker, "topic": topic, "partition": partition, "file": name, "max_timestamp": m}
                        for m in stamps]
    states = [{"broker": b, "topic": t, "partition": p, "log_start_offset": 0, "log_end_offset": 35,
               "last_stable_offset": lso} for b, t, p in _REPLICAS for lso in (15, 32)]
    for configs in ({}, {"t": {"cleanup.policy": "compact", "min.compaction.lag.ms": "500"}},
                    {"t": {"cleanup.policy": "delete"}, "c": {"min.compaction.lag.ms": "10"}}):
        kw = dict(cleaner_checkpoints={(1, "c", 1): 10, (2, "t", 0): 40}, configs=configs, remote_storage=True,
                  batches=batches, as_of_ms=1000)
        want = _impact_before(states, files, **kw)
        assert repr(impact_rows(states, files, **kw)) == repr(want)
        assert any(r["cleaner_first_uncleanable_offset"] is not None for r in want)


@settings(max_examples=300, deadline=None)
@given(_copies(), st.booleans(), st.one_of(st.none(), st.integers(0, 3000)),
       st.lists(st.one_of(st.none(), st.integers(-5, 2), st.integers(-5, 2000)), min_size=16, max_size=16))
def test_a_replica_at_a_time_is_impact_rows(copy, remote, as_of_ms, stamps):
    """replica_segments and replica_impact (pipeline.impact's, a replica's files rows carrying
    their own max_timestamp) give what impact_rows gave of the replica's log_segment rows and,
    as batches, those of them with a max_timestamp: a replica of one row (its fast path) or
    of several, timestamps below -1 (NO_TIMESTAMP) and none."""
    states, files, _, checkpoints, configs = copy
    files = [{**f, "max_timestamp": stamp} for f, stamp in zip(files, stamps)]
    for s in states:
        key = (s["broker"], s["topic"], s["partition"])
        mine = [f for f in files if (f["broker"], f["topic"], f["partition"]) == key]
        segments = [f for f in mine if f["kind"] == "log_segment"]
        batches = [f for f in segments if f["max_timestamp"] is not None]
        got_segments = replica_segments(iter(mine))
        assert got_segments == segments_of(segments, batches) == _segments_before(segments, batches)
        for chunk in ([f] for f in mine):   # each row alone: the one-row path
            lone = [f for f in chunk if f["kind"] == "log_segment"]
            assert replica_segments(chunk) == _segments_before(lone, [f for f in lone if f["max_timestamp"] is not None])
        want = impact_rows([s], segments, cleaner_checkpoints=checkpoints, configs=configs, remote_storage=remote,
                           batches=batches, as_of_ms=as_of_ms)
        assert repr([replica_impact(s, got_segments, checkpoints, configs, remote, as_of_ms)]) == repr(want)
