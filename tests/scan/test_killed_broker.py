"""A broker killed with SIGKILL and copied as the crash left it (issue 32 item 4), on the real
`pending` cluster (Kafka 4.1.1): its node was killed before the coordinators' EndTxn and never
restarted, so its log dir has no clean-shutdown producer snapshots, no
`.kafka_cleanshutdown`, and its active segments' indexes are still preallocated. Right before
the kill the harness recorded that node's own describe-producers of the two partitions the
scenario wrote (nothing reached it afterwards). kafka-dump-log 4.1.1 was run on every file of
its copy too; tests/dump/test_fixtures.py compares `logscan dump` with those recorded dumps.

The scan must read the crashed copy without a finding, and rebuild that node's producer state
equal to what it described, loaded the way a broker restarting from this copy would: from the
batches (no snapshot at the log end), which producer_state.loaded_from says."""

from __future__ import annotations

import json
from pathlib import Path

from logscan.scan.local import scan
from logscan.state.producer_state import FROM_SNAPSHOT

PENDING = Path(__file__).resolve().parents[2] / "fixtures" / "pending"
TRUTH = json.loads((PENDING / "truth" / "truth.json").read_text())
NOTES = TRUTH["scenario_notes"]["markers_pending"]
_DESCRIBE = ("producer_id", "producer_epoch", "coordinator_epoch", "last_sequence", "last_timestamp",
             "current_txn_start_offset")


def _row(r: dict) -> tuple:
    start = r["CurrentTransactionStartOffset"]
    return (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]),
            int(r["LastSequence"]), int(r["LastTimestamp"]), None if start in ("None", "") else int(start))


def test_the_copy_is_a_crashed_brokers():
    assert NOTES["stop"] == "SIGKILL" and TRUTH["stopped_brokers"] == [NOTES["stopped_broker"]]
    killed = PENDING / "brokers" / f"broker-{NOTES['stopped_broker']}"
    assert not (killed / ".kafka_cleanshutdown").exists()
    assert all((PENDING / "brokers" / f"broker-{b}" / ".kafka_cleanshutdown").exists()
               for b in range(3) if b != NOTES["stopped_broker"])
    # a crash leaves the active segment's index at its preallocated size (the harness's
    # log.index.size.max.bytes, 4096), where a clean stop trims it to its entries
    sizes = {b: (PENDING / "brokers" / f"broker-{b}" / f"{NOTES['topic']}-0" / "00000000000000000000.index").stat().st_size
             for b in range(3)}
    assert sizes.pop(NOTES["stopped_broker"]) == 4096 and all(s < 4096 for s in sizes.values()), sizes


def test_the_killed_brokers_producer_state_is_what_it_described_before_the_kill():
    result = scan([PENDING / "brokers"], as_of_ms=TRUTH["recorded_at_ms"])
    assert [f.line() for f in result.findings] == []
    killed = NOTES["stopped_broker"]
    described = NOTES["stopped_broker_producers"]
    assert sorted(described) == sorted([NOTES["topic"], NOTES["done_topic"]])
    for topic, rows in described.items():
        ours = [r for r in result.tables["producer_state"] if (r["broker"], r["topic"], r["partition"]) == (killed, topic, 0)]
        assert rows and sorted(tuple(r[c] for c in _DESCRIBE) for r in ours) == sorted(map(_row, rows)), topic
        # no snapshot at the log end: a restarting broker replays the batches
        assert {r["loaded_from"] for r in ours} and FROM_SNAPSHOT not in {r["loaded_from"] for r in ours}
