"""A former coordinator's unreplicated tail is not the coordinator's state (issue 36, safety).

When the broker leading a `__transaction_state` partition dies after appending a record its
followers never fetched, a follower becomes leader (a new leader epoch, which it writes to its
leader-epoch-checkpoint at once: Partition.makeLeader) and loads the partition to its own log
end. The dead broker's copy keeps the tail, and reaches further than the new leader's log;
Kafka truncates it when that broker fetches again (OffsetsForLeaderEpoch). Reading the
furthest replica would judge the data partitions against a state no coordinator holds.

Built from the real `hanging` cluster (Kafka 4.1.1): `__transaction_state-0` holds 'hang-ongoing'
as Ongoing (hang-ongoing-0's open transaction is live: coordinator_ongoing, no abort). A follower
gets the former leader's tail, a CompleteAbort the new coordinator never wrote (our encoder:
the one record Kafka had no chance to write here), and the last leader the new epoch entry.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from logscan.format.batch import iter_records
from logscan.format.logfile import walk_batches
from logscan.format.message import encode_message
from logscan.format.txnlog import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE, decode_txnlog_record
from logscan.scan.local import scan
from logscan.state import hanging
from logscan.testing.encoder import Rec, encode_batch

from .copy_shapes import copy_cluster

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging"
TRUTH = json.loads((HANGING / "truth" / "truth.json").read_text())
AS_OF = TRUTH["recorded_at_ms"] + 3_600_000
COORDINATOR = ("__transaction_state", 0)
LIVE = ("hang-ongoing", 0)
COMPLETE_ABORT = 5


def _segment(replica: Path) -> Path:
    return sorted(replica.glob("*.log"))[-1]


def _last_batch(replica: Path):
    buf = _segment(replica).read_bytes()
    return buf, [e for e in walk_batches(buf)][-1]


def _completed_abort(replica: Path) -> bytes:
    """The replica's last record (hang-ongoing's Ongoing) as the CompleteAbort its coordinator
    would append next, in a batch at its log end written in the same leader epoch."""
    buf, batch = _last_batch(replica)
    record = [decode_txnlog_record(r.key, r.value) for r in iter_records(buf, batch)][-1]
    value = {name: record.value[name] for name in record.value}
    stamp = value["transactionLastUpdateTimestampMs"] + 1_000
    value.update(transactionStatus=COMPLETE_ABORT, transactionPartitions=[],
                 transactionLastUpdateTimestampMs=stamp)
    key = struct.pack(">h", 0) + encode_message(TRANSACTION_LOG_KEY, 0, {"transactionalId": record.key["transactionalId"]})
    value_bytes = struct.pack(">h", 1) + encode_message(TRANSACTION_LOG_VALUE, 1, value)
    return encode_batch([Rec(value_bytes, key, timestamp=stamp)], base_offset=batch.last_offset + 1,
                        partition_leader_epoch=batch.partition_leader_epoch)


def _new_epoch(replica: Path) -> None:
    """The replica's leader-epoch-checkpoint with the entry a new leader writes: the next epoch
    from its log end."""
    path = replica / "leader-epoch-checkpoint"
    lines = path.read_text().split("\n")
    entries = [tuple(map(int, line.split())) for line in lines[2:] if line]
    _, batch = _last_batch(replica)
    entries.append((entries[-1][0] + 1, batch.last_offset + 1))
    path.write_text("\n".join(["0", str(len(entries)), *(f"{e} {o}" for e, o in entries)]) + "\n")


def _coordinator_brokers(copy: Path) -> tuple[int, int]:
    """(the last leader of __transaction_state-0, a follower of it) in this copy."""
    leader = scan([copy], as_of_ms=AS_OF, keep=()).leaders[COORDINATOR]["last_leader"]
    follower = min(int(b.name.split("-")[1]) for b in copy.glob("broker-*")
                   if (b / "__transaction_state-0").is_dir() and b.name != f"broker-{leader}")
    return leader, follower


def stale_copy(tmp_path: Path, *, new_epoch: bool) -> Path:
    copy = copy_cluster(HANGING, tmp_path)
    leader, follower = _coordinator_brokers(copy)
    stale = copy / f"broker-{follower}" / "__transaction_state-0"
    tail = _completed_abort(stale)
    with _segment(stale).open("ab") as f:
        f.write(tail)
    if new_epoch:
        _new_epoch(copy / f"broker-{leader}" / "__transaction_state-0")
    return copy


def _verdicts(tables: dict, key: tuple[str, int]) -> set[tuple[str, bool]]:
    return {(c["reason"], c["hanging"]) for c in tables["hanging_candidates"]
            if (c["topic"], c["partition"]) == key}


def _planned(tables: dict) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in tables["abort_plans"]}


def test_the_whole_copy_holds_a_live_transaction():
    tables = scan([HANGING / "brokers"], as_of_ms=AS_OF).tables
    assert _verdicts(tables, LIVE) == {(hanging.COORDINATOR_ONGOING, False)}
    assert LIVE not in _planned(tables)


def test_a_tail_of_the_newest_epoch_is_read(tmp_path):
    """The control: the same tail on a follower of the leader's own epoch is the newest state
    (the leader was copied before it appended more), and it does decide the verdict."""
    tables = scan([stale_copy(tmp_path, new_epoch=False)], as_of_ms=AS_OF).tables
    assert (hanging.COORDINATOR_ONGOING, False) not in _verdicts(tables, LIVE)
    assert LIVE in _planned(tables)


def test_a_former_leaders_unreplicated_tail_is_not_read(tmp_path):
    copy = stale_copy(tmp_path, new_epoch=True)
    result = scan([copy], as_of_ms=AS_OF)
    leader, _ = _coordinator_brokers(copy)
    loaded = {(r["broker"], r["transactional_id"], r["state"]) for r in result.tables["coordinator_state"]
              if r["partition"] == COORDINATOR[1]}
    assert loaded == {(leader, "hang-ongoing", "Ongoing")}
    assert _verdicts(result.tables, LIVE) == {(hanging.COORDINATOR_ONGOING, False)}
    assert LIVE not in _planned(result.tables)
