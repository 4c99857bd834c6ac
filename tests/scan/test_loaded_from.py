"""producer_state.loaded_from (issue 32 item 2): which source gave each row, by the broker's
loading rules (LogLoader, ProducerStateManager: the newest snapshot within the log, then the
batches from its offset on), on the compacted topics of the real Kafka 4.4.0 and 3.9.2
clusters. What each row should say is read from Kafka's own kafka-dump-log text of the
snapshot and segment files (truth/dump), never from logscan's decode.

As recorded (clean shutdown) every replica has its shutdown snapshot at the log end: the
broker loads it and replays nothing, so every row is 'snapshot'. A broker killed before its
shutdown leaves only the snapshots taken at segment rolls: without the log-end snapshot the
broker loads the one at the last segment's base and replays that segment over it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from logscan.scan.local import scan
from logscan.state.producer_state import FROM_BATCHES, FROM_SNAPSHOT, FROM_SNAPSHOT_AND_BATCHES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: The clusters with a compacted transactional topic after the cleaner ran, and those topics.
COMPACTED = {"kafka-4.4": ("compacted", "compacted-tv2"), "kafka-3.9": ("compacted",)}
_DESCRIBE = ("producer_id", "producer_epoch", "coordinator_epoch", "last_sequence", "last_timestamp",
             "current_txn_start_offset")
_BATCH = re.compile(r"^baseOffset: \d+ lastOffset: \d+ count: (\d+) .*?producerId: (-?\d+) ")
_ENTRY = re.compile(r"^producerId: (\d+) ")


def _truth(name: str) -> dict:
    return json.loads((FIXTURES / name / "truth" / "truth.json").read_text())


def _described(truth: dict, broker: int, topic: str) -> list[tuple]:
    """describe-producers as the live broker printed it (truth.json)."""
    [part] = [p for p in truth["partitions"] if p["topic"] == topic and p["partition"] == 0]
    return sorted((int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
                   int(r["LastSequence"]), int(r["LastTimestamp"]),
                   None if r["CurrentTransactionStartOffset"] in ("None", "") else int(r["CurrentTransactionStartOffset"]))
                  for r in part["producers"][str(broker)]["rows"])


def _rows(result, broker: int, topic: str) -> dict[int, dict]:
    return {r["producer_id"]: r for r in result.tables["producer_state"]
            if (r["broker"], r["topic"], r["partition"]) == (broker, topic, 0)}


def _dump(name: str, broker: int, topic: str, file: str) -> list[str]:
    return (FIXTURES / name / "truth" / "dump" / f"broker-{broker}" / f"{topic}-0" / f"{file}.txt").read_text().splitlines()


def _live(folder: Path, suffix: str) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in folder.iterdir() if p.name.endswith(suffix))


def _expected(name: str, broker: int, topic: str, folder: Path) -> tuple[int, dict[int, str]]:
    """(the snapshot a broker loads from ``folder``, producer id -> loaded_from) by Kafka's
    rule, from kafka-dump-log's text: the newest snapshot at a segment base; its producers;
    the producers of the batches from its offset on that carry records (an emptied control
    batch, count 0, gives nothing)."""
    bases = _live(folder, ".log")
    loaded = max(o for o in _live(folder, ".snapshot") if o in bases)
    held = {int(m.group(1)) for line in _dump(name, broker, topic, f"{loaded:020d}.snapshot")
            for m in [_ENTRY.match(line)] if m}
    replayed = {int(m.group(2)) for base in bases if base >= loaded
                for line in _dump(name, broker, topic, f"{base:020d}.log")
                for m in [_BATCH.match(line)] if m and int(m.group(1)) > 0 and int(m.group(2)) >= 0}
    return loaded, {pid: (FROM_SNAPSHOT_AND_BATCHES if pid in replayed else FROM_SNAPSHOT) if pid in held
                    else FROM_BATCHES for pid in held | replayed}


@pytest.mark.parametrize("name", sorted(COMPACTED))
def test_a_clean_shutdown_copy_is_loaded_from_its_log_end_snapshot(name):
    truth = _truth(name)
    result = scan([FIXTURES / name / "brokers"], as_of_ms=truth["recorded_at_ms"])
    assert {r["loaded_from"] for r in result.tables["producer_state"]} == {FROM_SNAPSHOT}
    for topic in COMPACTED[name]:
        for broker in range(3):
            rows = _rows(result, broker, topic)
            assert sorted(tuple(r[c] for c in _DESCRIBE) for r in rows.values()) == _described(truth, broker, topic)


@pytest.mark.parametrize("name", sorted(COMPACTED))
def test_without_the_shutdown_snapshot_the_last_segment_is_replayed_over_the_roll_snapshot(name, tmp_path):
    truth = _truth(name)
    copy = tmp_path / "brokers"
    shutil.copytree(FIXTURES / name / "brokers", copy)
    sources = set()
    for topic in COMPACTED[name]:
        for broker in range(3):
            folder = copy / f"broker-{broker}" / f"{topic}-0"
            end = max(_live(folder, ".snapshot"))
            assert end not in _live(folder, ".log")   # the shutdown snapshot, at the log end
            (folder / f"{end:020d}.snapshot").unlink()
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    for topic in COMPACTED[name]:
        for broker in range(3):
            folder = copy / f"broker-{broker}" / f"{topic}-0"
            _, want = _expected(name, broker, topic, folder)
            rows = _rows(result, broker, topic)
            assert {pid: r["loaded_from"] for pid, r in rows.items()} == want, (broker, topic)
            sources.update(want.values())
            # The state loaded so is the one the live broker described.
            assert sorted(tuple(r[c] for c in _DESCRIBE) for r in rows.values()) == _described(truth, broker, topic)
    # Both kinds of row occur: a producer with batches after the roll snapshot, one without.
    assert {FROM_SNAPSHOT, FROM_SNAPSHOT_AND_BATCHES} <= sources, sources


def test_without_any_snapshot_the_rows_come_from_the_batches_and_the_emptied_marker_gives_nothing(tmp_path):
    # Kafka 4.4.0's compacted TV2 topic: the cleaner left producer 5 (txn-compact-tv2) only its
    # ABORT marker as an empty batch. From the batches alone its row is ProducerStateEntry.empty,
    # and the row says it came from the batches, where the live broker had its snapshot's values.
    name, topic = "kafka-4.4", "compacted-tv2"
    truth = _truth(name)
    copy = tmp_path / "brokers"
    shutil.copytree(FIXTURES / name / "brokers", copy)
    for broker in range(3):
        for snapshot in (copy / f"broker-{broker}" / f"{topic}-0").glob("*.snapshot"):
            snapshot.unlink()
    result = scan([copy], as_of_ms=truth["recorded_at_ms"])
    for broker in range(3):
        rows = _rows(result, broker, topic)
        assert {r["loaded_from"] for r in rows.values()} == {FROM_BATCHES}
        described = {r[0]: r for r in _described(truth, broker, topic)}
        emptied = [pid for pid, r in rows.items() if tuple(r[c] for c in _DESCRIBE) != described[pid]]
        assert len(emptied) == 1 and tuple(rows[emptied[0]][c] for c in _DESCRIBE)[1:] == (-1, -1, -1, -1, None)
        assert described[emptied[0]][1:3] != (-1, -1)
