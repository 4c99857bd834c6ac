"""What a hang holds back on disk (logscan.state.retention), on the real ``retention`` cluster
(tools/kafka/retention.py): ``hang-compact``/0, a compacted topic whose log cleaner Kafka ran
with a hanging transaction open at offset 25, and ``hang-segments``/0, a delete-policy topic
with the same hang, both with 1024-byte segments rolled past it.

Kafka's own numbers: the cleaner's ``cleaner-offset-checkpoint`` entry as it wrote it live
(truth.json notes), the partition sizes of ``kafka-log-dirs --describe`` and the LSO and high
watermark from ListOffsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logscan.format.checkpoint import parse_offset_checkpoint
from logscan.scan.local import scan
from logscan.state.retention import (Segment, held_by_cleaner, held_from_tiering, is_compacted,
                                     remote_storage_in_copy, segments_of, topic_configs)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RETENTION = FIXTURES / "retention"


def _truth(root: Path) -> dict:
    return json.loads((root / "truth" / "truth.json").read_text())


@pytest.fixture(scope="module")
def copy():
    truth = _truth(RETENTION)
    result = scan([RETENTION / "brokers"], as_of_ms=truth["recorded_at_ms"])
    return truth, result.tables


def _replica(tables, broker: int, topic: str):
    files = [f for f in tables["files"] if (f["broker"], f["topic"], f["partition"]) == (broker, topic, 0)]
    (state,) = [s for s in tables["partition_state"] if (s["broker"], s["topic"], s["partition"]) == (broker, topic, 0)]
    return segments_of(files), state


def _log_dirs_size(truth: dict, broker: int, name: str) -> int:
    (b,) = [b for b in truth["log_dirs"]["brokers"] if b["broker"] == broker]
    return next(p["size"] for d in b["logDirs"] for p in d["partitions"] if p["partition"] == name)


def _cleaner_checkpoint(broker: int, topic: str) -> int:
    data = (RETENTION / "brokers" / f"broker-{broker}" / "cleaner-offset-checkpoint").read_bytes()
    return next(e.offset for e in parse_offset_checkpoint(data).entries if (e.topic, e.partition) == (topic, 0))


def _recorded(truth: dict, topic: str) -> dict:
    return next(p for p in truth["partitions"] if (p["topic"], p["partition"]) == (topic, 0))


@pytest.mark.parametrize("broker", [0, 1, 2])
def test_the_cleaner_stops_where_kafkas_did(copy, broker):
    truth, tables = copy
    segments, state = _replica(tables, broker, "hang-compact")
    recorded = _recorded(truth, "hang-compact")
    assert state["last_stable_offset"] == recorded["last_stable_offset"] < recorded["high_watermark"]
    # the segments the scan lists are the partition's whole size as kafka-log-dirs gave it
    # (the cleaner's replaced .log.deleted files are not segments of the log)
    assert sum(s.size for s in segments) == _log_dirs_size(truth, broker, "hang-compact-0")
    live = truth["scenario_notes"]["compacted_hang"]["cleaner_checkpoint"][str(broker)]
    hold = held_by_cleaner(segments, last_stable_offset=state["last_stable_offset"],
                           log_start_offset=state["log_start_offset"], log_end_offset=state["log_end_offset"],
                           cleaner_checkpoint=_cleaner_checkpoint(broker, "hang-compact"))
    # Kafka's cleaner cleaned up to the base of the segment holding the LSO and checkpointed it
    assert hold.first_uncleanable_offset == live == hold.cleaner_checkpoint and hold.cleaner_at_limit
    assert hold.cleanable_bytes == 0 and hold.lag_limit_offset is None
    # the topic's own min.compaction.lag.ms (0, from the copy's metadata) changes nothing
    assert held_by_cleaner(segments, last_stable_offset=state["last_stable_offset"],
                           log_start_offset=state["log_start_offset"], log_end_offset=state["log_end_offset"],
                           cleaner_checkpoint=hold.cleaner_checkpoint, now_ms=truth["recorded_at_ms"],
                           min_compaction_lag_ms=0) == hold
    # held back: every closed segment from that one on; the active segment is never cleaned
    held = [s for s in segments[:-1] if s.base_offset >= live]
    assert held and segments[0].base_offset < live   # the cleaner did clean below the hang
    assert (hold.held_back_bytes, hold.held_back_segments) == (sum(s.size for s in held), len(held))
    below = sum(s.size for s in segments if s.base_offset < live)
    assert below + hold.held_back_bytes + segments[-1].size == _log_dirs_size(truth, broker, "hang-compact-0")
    assert is_compacted("hang-compact", cleaner_checkpointed=True)


@pytest.mark.parametrize("broker", [0, 1, 2])
def test_tiered_storage_would_keep_every_segment_rolled_after_the_hang(copy, broker):
    truth, tables = copy
    segments, state = _replica(tables, broker, "hang-segments")
    lso = _recorded(truth, "hang-segments")["last_stable_offset"]
    assert state["last_stable_offset"] == lso and len(segments) > 2
    assert sum(s.size for s in segments) == _log_dirs_size(truth, broker, "hang-segments-0")
    hold = held_from_tiering(segments, last_stable_offset=lso)
    holding = max(s.base_offset for s in segments if s.base_offset <= lso)   # the segment holding the LSO
    assert hold.first_held_offset == holding
    uploadable = [s for s in segments if s.base_offset < holding]
    assert uploadable, "a segment below the hang"
    assert sum(s.size for s in uploadable) + hold.held_back_bytes + segments[-1].size == \
        _log_dirs_size(truth, broker, "hang-segments-0")
    # no __remote_log_metadata in this copy: remote storage is not in use there
    assert not remote_storage_in_copy({t["topic"] for t in tables["partition_state"]})
    assert not is_compacted("hang-segments", cleaner_checkpointed=False)


@pytest.mark.parametrize("name, topic", [("tv2", "compacted"), ("kafka-3.9", "compacted"), ("kafka-4.4", "compacted"),
                                         ("kafka-4.4", "compacted-tv2")])
def test_a_compacted_topic_without_a_hang_holds_nothing_back(name, topic):
    """The compacted transactional topics of Kafka 4.1.1, 3.9.2 and 4.4.0 (TV1 and TV2 writes)
    after the cleaner ran, from the cleaner checkpoint each release's broker wrote."""
    root = FIXTURES / name
    truth = _truth(root)
    tables = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"]).tables
    segments, state = _replica(tables, 0, topic)
    assert state["last_stable_offset"] == state["high_watermark"] and len(segments) > 1
    data = (root / "brokers" / "broker-0" / "cleaner-offset-checkpoint").read_bytes()
    checkpoint = next(e.offset for e in parse_offset_checkpoint(data).entries if e.topic == topic)
    hold = held_by_cleaner(segments, last_stable_offset=state["last_stable_offset"],
                           log_start_offset=state["log_start_offset"], log_end_offset=state["log_end_offset"],
                           cleaner_checkpoint=checkpoint)
    assert (hold.held_back_bytes, hold.held_back_segments) == (0, 0)
    assert hold.first_uncleanable_offset == segments[-1].base_offset   # only the active segment stops it
    assert held_from_tiering(segments, last_stable_offset=state["last_stable_offset"]).held_back_bytes == 0


def test_rules_on_plain_rows():
    segments = [Segment(0, 100), Segment(10, 200), Segment(20, 300), Segment(30, 50)]
    # a checkpoint past the log end is reset to the log start, as cleanableOffsets does
    hold = held_by_cleaner(segments, last_stable_offset=15, log_start_offset=0, log_end_offset=35,
                           cleaner_checkpoint=99)
    assert (hold.first_dirty_offset, hold.first_uncleanable_offset, hold.cleanable_bytes) == (0, 10, 100)
    assert (hold.held_back_bytes, hold.held_back_segments, hold.cleaner_at_limit) == (500, 2, False)
    # an LSO in the active segment holds nothing back from either
    assert held_by_cleaner(segments, last_stable_offset=33, log_start_offset=0, log_end_offset=35,
                           cleaner_checkpoint=30).held_back_bytes == 0
    assert held_from_tiering(segments, last_stable_offset=30).held_back_bytes == 0
    # tiering uploads a segment once the next one starts at or below the LSO
    assert held_from_tiering(segments, last_stable_offset=20).first_held_offset == 20
    # min.compaction.lag.ms: the first closed dirty segment whose largest timestamp is within
    # the lag of now stops the cleaner before the LSO would
    stamped = [Segment(0, 100, 1_000), Segment(10, 200, 5_000), Segment(20, 300, 9_000), Segment(30, 50, 9_500)]
    lagged = held_by_cleaner(stamped, last_stable_offset=33, log_start_offset=0, log_end_offset=35,
                             cleaner_checkpoint=None, now_ms=10_000, min_compaction_lag_ms=6_000)
    assert (lagged.lag_limit_offset, lagged.first_uncleanable_offset, lagged.cleanable_bytes) == (10, 10, 100)
    assert lagged.held_back_bytes == 0   # the LSO is in the active segment: the lag holds them, not the LSO
    unknown = held_by_cleaner([Segment(0, 100), *stamped[1:]], last_stable_offset=33, log_start_offset=0,
                              log_end_offset=35, cleaner_checkpoint=None, now_ms=10_000, min_compaction_lag_ms=1)
    assert unknown.first_uncleanable_offset == 0   # no timestamp for the first segment: the lag may hold it
    assert held_by_cleaner([], last_stable_offset=0, log_start_offset=0, log_end_offset=0,
                           cleaner_checkpoint=None) is None
    assert remote_storage_in_copy(["t", "__remote_log_metadata"])
    assert is_compacted("t", False, "compact,delete") and not is_compacted("__consumer_offsets", True, "delete")
    files = [{"kind": "log_segment", "file": "b/t-0/00000000000000000010.log", "size": 5},
             {"kind": "log_segment", "file": "b/t-0/00000000000000000000.log", "size": 7},
             {"kind": "producer_snapshot", "file": "b/t-0/00000000000000000010.snapshot", "size": 9}]
    assert segments_of(files) == [Segment(0, 7), Segment(10, 5)]
    batches = [{"file": "b/t-0/00000000000000000010.log", "max_timestamp": 30},
               {"file": "b/t-0/00000000000000000010.log", "max_timestamp": 20}]
    assert segments_of(files, batches) == [Segment(0, 7), Segment(10, 5, 30)]


def _config_records(log: Path) -> list[tuple]:
    from logscan.format.batch import RecordBatch, iter_records
    from logscan.format.logfile import walk_batches
    from logscan.format.metadata import decode_metadata_record

    buf, out = log.read_bytes(), []
    for batch in walk_batches(buf):
        if isinstance(batch, RecordBatch) and not batch.is_control:
            for rec in iter_records(buf, batch):
                m, _ = decode_metadata_record(rec.value)
                if m.type_name == "CONFIG_RECORD":
                    out.append((m.message.resource_type, m.message.resource_name, m.message.name, m.message.value))
    return out


def test_the_copys_metadata_says_which_topic_is_compacted():
    records = _config_records(RETENTION / "brokers" / "broker-0" / "__cluster_metadata-0" /
                              "00000000000000000000.log")
    configs = topic_configs(records)
    policy = {t: c.get("cleanup.policy") for t, c in configs.items()}
    # the topics' configs as the scenario created them (tools/kafka/retention.py)
    assert policy["hang-compact"] == "compact" and policy["hang-segments"] == "delete"
    assert configs["hang-compact"]["min.compaction.lag.ms"] == "0"
    assert is_compacted("hang-compact", False, policy["hang-compact"])
    assert not is_compacted("hang-segments", False, policy["hang-segments"])
    # a later record wins, a null value removes; a broker-level record is not a topic's
    assert topic_configs([(2, "t", "cleanup.policy", "delete"), (2, "t", "cleanup.policy", "compact"),
                          (2, "t", "segment.ms", "5"), (2, "t", "segment.ms", None),
                          (4, "", "cleanup.policy", "delete")]) == {"t": {"cleanup.policy": "compact"}}


TIERED = FIXTURES / "tiered"


@pytest.mark.parametrize("broker", [0, 1, 2])
def test_tiered_storage_uploaded_what_the_rule_allows(broker):
    """The ``tiered`` cluster (tools/kafka/tiered.py): remote storage on, a hang at offset 25;
    what Kafka's RemoteLogManager uploaded (the notes' ``uploaded``, read from the remote
    storage) is every closed segment the rule does not hold back, and only those."""
    truth = _truth(TIERED)
    tables = scan([TIERED / "brokers"], as_of_ms=truth["recorded_at_ms"]).tables
    segments, state = _replica(tables, broker, "hang-tiered")
    lso = _recorded(truth, "hang-tiered")["last_stable_offset"]
    assert state["last_stable_offset"] == lso
    assert remote_storage_in_copy({t["topic"] for t in tables["partition_state"]})
    hold = held_from_tiering(segments, last_stable_offset=lso)
    held = {s.base_offset for s in segments if hold.first_held_offset is not None
            and hold.first_held_offset <= s.base_offset < segments[-1].base_offset}
    up = truth["scenario_notes"]["tiered_hang"]["uploaded"]
    closed = [(s, nxt) for s, nxt in zip(segments, segments[1:])]
    assert [(u["start_offset"], u["end_offset"], u["size"]) for u in up] == \
        [(s.base_offset, nxt.base_offset - 1, s.size) for s, nxt in closed if s.base_offset not in held]
    assert up and held and hold.held_back_bytes == sum(s.size for s, _ in closed if s.base_offset in held)


def _checkpoints(root: Path) -> dict[tuple, int]:
    out = {}
    for log_dir in sorted((root / "brokers").iterdir()):
        data = (log_dir / "cleaner-offset-checkpoint").read_bytes()
        broker = int(log_dir.name.split("-")[1])
        out.update({(broker, e.topic, e.partition): e.offset for e in parse_offset_checkpoint(data).entries})
    return out


@pytest.mark.parametrize("name", ["retention", "tiered"])
def test_partition_impact_rows(name):
    """impact_rows over a whole real copy, checkpoints and metadata configs read from it: the
    rows fit rows.PARTITION_IMPACT, the hung topics' figures are the rules' and the others
    hold nothing back."""
    from logscan.scan.rows import PARTITION_IMPACT, to_batch
    from logscan.state.retention import impact_rows

    root = FIXTURES / name
    truth = _truth(root)
    tables = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"], keep_batches=True).tables
    configs = topic_configs(_config_records(root / "brokers" / "broker-0" / "__cluster_metadata-0" /
                                            "00000000000000000000.log"))
    topics = {s["topic"] for s in tables["partition_state"]}
    rows = impact_rows(tables["partition_state"], tables["files"], cleaner_checkpoints=_checkpoints(root),
                       configs=configs, remote_storage=remote_storage_in_copy(topics), batches=tables["batches"],
                       as_of_ms=truth["recorded_at_ms"])
    assert to_batch(rows, PARTITION_IMPACT).num_rows == len(tables["partition_state"])
    for r in rows:
        if r["topic"] != "__cluster_metadata":   # every partition kafka-log-dirs lists
            assert r["bytes"] == _log_dirs_size(truth, r["broker"], f"{r['topic']}-{r['partition']}"), r
        if r["topic"] == "hang-compact":
            live = truth["scenario_notes"]["compacted_hang"]["cleaner_checkpoint"][str(r["broker"])]
            assert r["compacted"] and r["cleaner_first_uncleanable_offset"] == live and r["cleaner_at_limit"]
            assert r["cleaner_held_bytes"] > 0 and r["remote_storage"] is False and r["tiering_held_bytes"] is None
        elif r["topic"] == "hang-tiered":
            up = truth["scenario_notes"]["tiered_hang"]["uploaded"]
            active = max(int(f["file"].rsplit("/", 1)[-1].split(".")[0]) for f in tables["files"]
                         if (f["broker"], f["topic"], f["kind"]) == (r["broker"], "hang-tiered", "log_segment"))
            assert r["remote_storage"] and not r["compacted"] and r["cleaner_held_bytes"] is None
            assert r["tiering_first_held_offset"] == up[-1]["end_offset"] + 1
            assert r["bytes"] == sum(u["size"] for u in up) + r["tiering_held_bytes"] + next(
                f["size"] for f in tables["files"] if (f["broker"], f["topic"], f["kind"]) ==
                (r["broker"], "hang-tiered", "log_segment") and f["file"].endswith(f"{active:020d}.log"))
        else:   # no hang: nothing held back
            assert r["cleaner_held_bytes"] in (None, 0) and r["tiering_held_bytes"] in (None, 0), r


@pytest.mark.parametrize("name", ["retention", "tiered"])
def test_the_scans_partition_impact_table_is_the_rules_over_the_copy(name):
    """The scan's partition_impact table (its segments' timestamps from the files rows, the
    cleaner checkpoints from the listing, the configs from the metadata step): the rows
    impact_rows gives over what this test reads of the copy itself, and Kafka's figures."""
    from logscan.state.retention import impact_rows

    root = FIXTURES / name
    truth = _truth(root)
    tables = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"], keep_batches=True).tables
    configs = topic_configs(_config_records(root / "brokers" / "broker-0" / "__cluster_metadata-0" /
                                            "00000000000000000000.log"))
    want = impact_rows(tables["partition_state"], tables["files"], cleaner_checkpoints=_checkpoints(root),
                       configs=configs, remote_storage=name == "tiered", batches=tables["batches"],
                       as_of_ms=truth["recorded_at_ms"])
    key = lambda r: (r["topic"], r["partition"], r["broker"])   # noqa: E731
    assert sorted(tables["partition_impact"], key=key) == sorted(want, key=key)
    held = {r["broker"]: r for r in tables["partition_impact"] if r["topic"] in ("hang-compact", "hang-tiered")}
    assert len(held) == 3
    for broker, r in held.items():
        assert r["bytes"] == _log_dirs_size(truth, broker, f"{r['topic']}-0")
        if name == "retention":   # where Kafka's cleaner stopped, live
            live = truth["scenario_notes"]["compacted_hang"]["cleaner_checkpoint"][str(broker)]
            assert r["cleaner_checkpoint"] == r["cleaner_first_uncleanable_offset"] == live and r["cleaner_held_bytes"]
        else:   # the first segment Kafka's RemoteLogManager did not upload
            assert r["tiering_first_held_offset"] == truth["scenario_notes"]["tiered_hang"]["uploaded"][-1][
                "end_offset"] + 1 and r["tiering_held_bytes"]


def test_the_summary_says_the_bytes_the_hang_holds_back():
    """`logscan scan`'s summary on the retention cluster: hang-compact-0's held bytes, which are
    its kafka-log-dirs size less what the cleaner cleaned below the checkpoint Kafka wrote live
    and the active segment; hang-segments-0 (delete policy, no remote storage) holds nothing."""
    import io

    from logscan.scan.summary import table_figures, write_figures

    truth = _truth(RETENTION)
    result = scan([RETENTION / "brokers"], as_of_ms=truth["recorded_at_ms"])
    fig = table_figures(result.tables, result.as_of_ms)
    (row,) = fig.held_rows
    segments, _ = _replica(result.tables, 0, "hang-compact")
    live = truth["scenario_notes"]["compacted_hang"]["cleaner_checkpoint"]["0"]
    held = _log_dirs_size(truth, 0, "hang-compact-0") - sum(s.size for s in segments if s.base_offset < live) \
        - segments[-1].size
    assert (row["topic"], row["replicas"], row["cleaner_held_bytes"], row["tiering_held_bytes"]) == \
        ("hang-compact", 3, held, 0)
    assert fig.held_bytes == 3 * held
    out = io.StringIO()
    write_figures(fig, out, max_transaction_timeout_ms=15 * 60_000, width=200)
    text = out.getvalue()
    assert f"Bytes held back by LSOs: {3 * held} B on the replicas of 1 partition" in text
    section = text[text.index("Bytes held back by LSOs"):]
    line = next(line for line in section.splitlines() if line.startswith("  hang-compact-0 "))
    assert line.split()[1:] == [str(held), "B", "in", str(row["cleaner_held_segments"]), "segments", "-", "3",
                                str(3 * held), "B"]



def test_the_segments_newest_timestamps_serve_min_compaction_lag():
    """files.max_timestamp (each segment's newest batch timestamp, which decode notes as it
    walks; -1 for a segment the cleaner emptied, as Kafka's largestTimestamp) is what the
    batches table gives, so the impact step's min.compaction.lag.ms figures are the rule's over
    the batches. tv2's compacted topic (its own lag 0), from the log start (no checkpoint), with
    a lag its last two closed segments are within: the cleaner stops at the first of them."""
    from logscan.scan import pipeline
    from logscan.state.retention import impact_rows

    root = FIXTURES / "tv2"
    as_of = _truth(root)["recorded_at_ms"]
    tables = scan([root / "brokers"], as_of_ms=as_of, keep_batches=True).tables
    newest: dict[str, int] = {}
    for b in tables["batches"]:
        newest[b["file"]] = max(newest.get(b["file"], -1), b["max_timestamp"])
    segments = [f for f in tables["files"] if f["kind"] == "log_segment"]
    assert segments and all(f["max_timestamp"] == newest.get(f["file"], -1) for f in segments)
    mine = sorted((f["file"], f["max_timestamp"]) for f in segments if (f["broker"], f["topic"]) == (0, "compacted"))
    assert len(mine) == 4 and mine[0][1] == -1   # emptied by the cleaner; the last is the active one
    lag = as_of - mine[2][1] + 1
    configs = [{"topic": "compacted", "name": "min.compaction.lag.ms", "value": str(lag)},
               {"topic": "compacted", "name": "cleanup.policy", "value": "compact"}]
    got = list(pipeline.impact(tables["partition_state"], pipeline.by_replica(tables["files"]), {}, configs, as_of))
    want = impact_rows(tables["partition_state"], tables["files"], cleaner_checkpoints={},
                       configs={"compacted": {c["name"]: c["value"] for c in configs}}, remote_storage=False,
                       batches=[{**f, "max_timestamp": newest.get(f["file"], -1)} for f in segments], as_of_ms=as_of)
    key = lambda r: (r["topic"], r["partition"], r["broker"])   # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
    base = int(mine[2][0].rsplit("/", 1)[-1].split(".")[0])
    assert {r["cleaner_first_uncleanable_offset"] for r in got if r["topic"] == "compacted"} == {base}
