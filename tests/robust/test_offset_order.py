"""Lies under a valid CRC about offsets, control types and coordinator states (issue 33 item 3).

Each case rewrites real files of the hanging cluster (fixtures/hanging: written by Kafka 4.1.1
brokers) in a copy, the CRC kept valid where it covers the change, and scans the copy with the
local executor: the lie is a located finding (file, byte, reason), the replica's state is what
Kafka's recovery would keep (the replay stops at the batch it refuses), and no abort plan rests
on a replica whose log breaks Kafka's rules. hang-0 holds, on each of the three brokers:

    byte 0    offsets 0-1  producer 0, transactional, never closed (no coordinator record: hanging)
    byte 111  offset 2     producer 2, transactional
    byte 190  offset 3     producer 2's COMMIT marker
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.format.batch import decode_batch_header, iter_records
from logscan.format.logfile import walk_batches
from logscan.scan import local

from .harness import CRC_AT, FIXTURES, LENGTH_AT, reseal

CLUSTER = FIXTURES / "hanging" / "brokers"
BROKERS = ("broker-0", "broker-1", "broker-2")
SEGMENT = "00000000000000000000"
LAST_DELTA_AT = 23  # lastOffsetDelta (int32), covered by the CRC
AS_OF = "2026-12-01T00:00:00Z"  # past every timeout of the fixture


@pytest.fixture()
def copy(tmp_path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(CLUSTER, root)
    return root


def _scan(root: Path):
    from logscan.scan.pipeline import parse_as_of
    return local.scan([root], as_of_ms=parse_as_of(AS_OF))


def _rows(result, table: str, topic: str = "hang", partition: int = 0) -> list[dict]:
    return sorted((r for r in result.tables[table] if r["topic"] == topic and r["partition"] == partition),
                  key=lambda r: r.get("broker", -1))


def _state(result, broker: int = 0) -> dict:
    return next(r for r in _rows(result, "partition_state") if r["broker"] == broker)


def _offsets(state: dict) -> tuple:
    return (state["log_start_offset"], state["log_end_offset"], state["high_watermark"],
            state["last_stable_offset"], state["open_transactions"], state["producers"])


def _findings(result, reason: str) -> list[tuple[str, int, str]]:
    return sorted((str(Path(f.path).relative_to(f.path.split("/copy/")[0] + "/copy")), f.position, f.reason)
                  for f in result.findings if f.reason == reason)


def _set_int64(path: Path, at: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, at, value)
    path.write_bytes(bytes(data))


def _set_int32_sealed(path: Path, batch_at: int, at: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, batch_at + at, value)
    path.write_bytes(reseal(bytes(data), batch_at))


def _each_hang0(root: Path):
    for broker in BROKERS:
        yield root / broker / "hang-0"


def test_the_fixture_plans_an_abort_of_hang0(copy):
    """The honest copy: what the lies below must not keep (or make) as a plan."""
    result = _scan(copy)
    state = _state(result)
    assert _offsets(state) == (0, 4, 4, 0, 1, 2) and state["log_fault"] is None
    assert [(p["producer_id"], p["start_offset"]) for p in _rows(result, "abort_plans")] == [(0, 0)]


# --- a segment named 100 holding offsets 0-3 --------------------------------------------------

def _rename_to_100(root: Path) -> None:
    for part in _each_hang0(root):
        for f in part.glob(f"{SEGMENT}.*"):
            f.rename(part / f"00000000000000000100{f.suffix}")


def test_batches_below_their_segments_base_are_not_replayed(copy):
    """LogSegment.recover refuses a batch whose last offset is below its segment's base
    (ensureOffsetInRange), and a broker that skips recovery never reads it: log start, LEO,
    HW and LSO stay at the segment's base, no open transaction, no producer."""
    _rename_to_100(copy)
    result = _scan(copy)
    assert _findings(result, "segment-base") == [
        (f"{b}/hang-0/00000000000000000100.log", 0, "segment-base") for b in BROKERS]
    for broker in range(3):
        state = _state(result, broker)
        assert _offsets(state) == (100, 100, 100, 100, 0, 0)
        assert state["log_fault"].startswith("segment-base at byte 0 of ")
    assert _rows(result, "hanging_candidates") == [] and _rows(result, "abort_plans") == []
    assert all(r["end_marker_offset"] is None for r in _rows(result, "txn_spans")) and not _rows(result, "txn_spans")
    # the other partitions are scanned as before
    assert {(p["topic"], p["partition"]) for p in result.tables["abort_plans"]} == (
        {(p["topic"], p["partition"]) for p in _scan_plans_of_fixture()} - {("hang", 0)})


_FIXTURE_PLANS: list = []


def _scan_plans_of_fixture() -> list:
    if not _FIXTURE_PLANS:
        _FIXTURE_PLANS.extend(_scan(CLUSTER).tables["abort_plans"])
    return _FIXTURE_PLANS


def test_logscan_plan_prints_no_abort_resting_on_the_segment_named_100(copy):
    """End to end: `logscan plan` on the copy whose hang-0 segment is named 100 prints no
    command for hang-0 (before: an abort of producer 0 at offset 0, below the log start 100
    the lie gave), and `logscan scan` shows the finding."""
    runner = CliRunner()
    before = runner.invoke(main, ["plan", str(copy), "--as-of", AS_OF, "--no-progress"])
    assert "--topic hang --partition 0 --start-offset 0" in before.output
    _rename_to_100(copy)
    after = runner.invoke(main, ["plan", str(copy), "--as-of", AS_OF, "--no-progress"])
    assert after.exception is None or isinstance(after.exception, SystemExit), after.exception
    assert "--topic hang --partition 0 " not in after.output
    assert "--topic hang --partition 1 " in after.output  # the other hanging partitions still are
    scanned = runner.invoke(main, ["scan", str(copy), "--as-of", AS_OF, "--no-progress"])
    assert "hang-0/00000000000000000100.log: byte 0: batch at offsets 0 to 1 lies below its segment" in scanned.output


# --- overlapping segments, offsets going backwards, a lastOffsetDelta too far, negative -------

def _split_at_111(root: Path, *, second_base: int) -> None:
    """hang-0's segment cut in two where Kafka could have rolled it: [0-1] and [2][3] (the
    second named ``second_base``)."""
    for part in _each_hang0(root):
        data = (part / f"{SEGMENT}.log").read_bytes()
        (part / f"{SEGMENT}.log").write_bytes(data[:111])
        (part / f"{second_base:020d}.log").write_bytes(data[111:])


def test_a_split_segment_scans_as_the_whole_one(copy):
    """The cut itself is no fault: the same state and plan as the fixture."""
    _split_at_111(copy, second_base=2)
    result = _scan(copy)
    assert _offsets(_state(result)) == (0, 4, 4, 0, 1, 2) and _state(result)["log_fault"] is None
    assert [(p["producer_id"], p["start_offset"]) for p in _rows(result, "abort_plans")] == [(0, 0)]


def test_a_segment_starting_at_or_below_the_previous_ones_last_offset(copy):
    """The second segment's first batch made [1-2] (base offset 1, lastOffsetDelta 1): it
    overlaps the first segment's [0-1]. The replay stops there: the log is [0-1]."""
    _split_at_111(copy, second_base=2)
    for part in _each_hang0(copy):
        seg = part / f"{2:020d}.log"
        _set_int64(seg, 0, 1)
        _set_int32_sealed(seg, 0, LAST_DELTA_AT, 1)
    result = _scan(copy)
    assert _findings(result, "overlap") == [(f"{b}/hang-0/{2:020d}.log", 0, "overlap") for b in BROKERS]
    state = _state(result)
    assert _offsets(state) == (0, 2, 2, 0, 1, 1) and state["log_fault"].startswith("overlap at byte 0")
    _no_plan_from_hang0(result)


def test_a_batch_reaching_the_next_segments_base(copy):
    """The first segment's batch [0-1] made [0-2] (lastOffsetDelta 2) while the next segment
    starts at 2: Kafka rolls a segment at the log end offset, never so."""
    _split_at_111(copy, second_base=2)
    for part in _each_hang0(copy):
        _set_int32_sealed(part / f"{SEGMENT}.log", 0, LAST_DELTA_AT, 2)
    result = _scan(copy)
    assert _findings(result, "overlap") == [(f"{b}/hang-0/{SEGMENT}.log", 0, "overlap") for b in BROKERS]
    state = _state(result)
    assert _offsets(state) == (0, 0, 0, 0, 0, 0) and state["log_fault"] is not None
    _no_plan_from_hang0(result)


def _no_plan_from_hang0(result) -> None:
    assert _rows(result, "abort_plans") == []
    for c in _rows(result, "hanging_candidates"):
        assert c["hanging"] is None and c["reason"] == "log_fault", c


def test_offsets_going_backwards_inside_a_segment(copy):
    """The COMMIT at byte 190 given base offset 1 (the base offset is outside the CRC): below
    the previous batch's last offset 2. The replay stops there: producer 2's transaction stays
    open as far as the kept log goes, and neither it nor producer 0's is planned."""
    for part in _each_hang0(copy):
        _set_int64(part / f"{SEGMENT}.log", 190, 1)
    result = _scan(copy)
    assert _findings(result, "offset-order") == [(f"{b}/hang-0/{SEGMENT}.log", 190, "offset-order") for b in BROKERS]
    state = _state(result)
    assert _offsets(state) == (0, 3, 3, 0, 2, 2) and "backwards" in state["log_fault"]
    _no_plan_from_hang0(result)
    assert {c["producer_id"] for c in _rows(result, "hanging_candidates")} == {0, 2}


def test_a_last_offset_delta_running_past_the_next_base_offset(copy):
    """The first batch's lastOffsetDelta made 2 (CRC resealed): [0-2], and the next batch
    starts at 2."""
    for part in _each_hang0(copy):
        _set_int32_sealed(part / f"{SEGMENT}.log", 0, LAST_DELTA_AT, 2)
    result = _scan(copy)
    assert _findings(result, "offset-order") == [(f"{b}/hang-0/{SEGMENT}.log", 111, "offset-order") for b in BROKERS]
    state = _state(result)
    assert _offsets(state) == (0, 3, 3, 0, 1, 1) and "lastOffsetDelta runs past" in state["log_fault"]
    _no_plan_from_hang0(result)


def test_a_negative_base_offset(copy):
    for part in _each_hang0(copy):
        _set_int64(part / f"{SEGMENT}.log", 0, -5)
    result = _scan(copy)
    assert _findings(result, "offset-order") == [(f"{b}/hang-0/{SEGMENT}.log", 0, "offset-order") for b in BROKERS]
    state = _state(result)
    assert _offsets(state) == (0, 0, 0, 0, 0, 0) and "negative base offset -5" in state["log_fault"]
    assert state["copy_gap"] is None  # the batches past the fault are in the copy
    _no_plan_from_hang0(result)


def test_one_lying_replica_leaves_the_others_plan(copy):
    """Only broker 0's hang-0 lies: its state is not trusted, the honest replicas' plan stands."""
    _set_int64(copy / "broker-0" / "hang-0" / f"{SEGMENT}.log", 190, 1)
    result = _scan(copy)
    assert _state(result, 0)["log_fault"] is not None
    assert _state(result, 1)["log_fault"] is None and _state(result, 2)["log_fault"] is None
    assert [(p["broker"], p["producer_id"], p["start_offset"]) for p in _rows(result, "abort_plans")] == [(1, 0, 0)]


# --- control record types ---------------------------------------------------------------------

#: The type field of the COMMIT's key: batch header (61), then the record's length, attributes,
#: timestampDelta, offsetDelta and key length (one byte each here), then the key's version.
TYPE_AT = 190 + 61 + 5 + 2


@pytest.mark.parametrize("type_id, label", [(7, "UNKNOWN(7)"), (2, "LEADER_CHANGE(2)"), (6, "KRAFT_VOTERS(6)")])
def test_a_producer_owned_control_batch_of_another_type(copy, type_id, label):
    """Producer 2's COMMIT given another record type (CRC resealed): Kafka's
    ProducerAppendInfo.append reads it as an end marker and throws, so the log does not load.
    A located finding; the replay stops there (producer 2's transaction left open, unplanned)."""
    for part in _each_hang0(copy):
        seg = part / f"{SEGMENT}.log"
        data = bytearray(seg.read_bytes())
        assert struct.unpack_from(">h", data, TYPE_AT)[0] == 1  # COMMIT
        struct.pack_into(">h", data, TYPE_AT, type_id)
        seg.write_bytes(reseal(bytes(data), 190))
    result = _scan(copy)
    assert _findings(result, "control-type") == [(f"{b}/hang-0/{SEGMENT}.log", 190, "control-type") for b in BROKERS]
    assert all(label in f.message and "ProducerAppendInfo.append" in f.message
               for f in result.findings if f.reason == "control-type")
    state = _state(result)
    assert _offsets(state) == (0, 3, 3, 0, 2, 2) and state["log_fault"].startswith("control-type at byte 190")
    _no_plan_from_hang0(result)


# --- __transaction_state ----------------------------------------------------------------------

def _txn_state_record(root: Path) -> tuple[str, int, int, int]:
    """(partition folder, batch position, byte of TransactionStatus, offset) of the first
    non-tombstone record in a __transaction_state segment of broker 0."""
    for part in sorted((root / "broker-0").glob("__transaction_state-*")):
        data = (part / f"{SEGMENT}.log").read_bytes()
        for batch in walk_batches(data):
            if batch.is_control:
                continue
            for rec in iter_records(data, batch):
                if rec.value is None:
                    continue
                at = data.index(bytes(rec.value), batch.position + 61)
                return part.name, batch.position, at + 2 + 8 + 2 + 4, rec.offset  # version, pid, epoch, timeout
    raise AssertionError("no __transaction_state record")


def test_an_unknown_transaction_status(copy):
    """A coordinator record's transactionStatus made 9 (CRC resealed) in every copy of its
    partition: TransactionState.fromId throws and TransactionStateManager.loadTransactionMetadata
    stops loading the partition there. A located finding; the records from it on are not loaded;
    the verdicts that rest on the coordinator (hang-0: no record names producer 0) cannot stand."""
    name, batch_at, status_at, offset = _txn_state_record(copy)
    for broker in BROKERS:
        seg = copy / broker / name / f"{SEGMENT}.log"
        if not seg.exists():
            continue
        data = bytearray(seg.read_bytes())
        if data[status_at] > 7 or decode_batch_header(bytes(data), batch_at)[0].position != batch_at:
            continue
        data[status_at] = 9
        seg.write_bytes(reseal(bytes(data), batch_at))
    result = _scan(copy)
    found = _findings(result, "txn-state")
    assert (f"broker-0/{name}/{SEGMENT}.log", batch_at, "txn-state") in found
    assert all(f"offset {offset}" in f.message for f in result.findings if f.reason == "txn-state")
    partition = int(name.rsplit("-", 1)[1])
    assert not any(r["partition"] == partition and r["offset"] >= offset for r in result.tables["coordinator_state"])
    assert any("unknown transactionStatus" in (r["copy_gap"] or "")
               for r in _rows(result, "partition_state", "__transaction_state", partition))
    assert _rows(result, "abort_plans") == []
    assert {c["reason"] for c in _rows(result, "hanging_candidates")} == {"coordinator_not_in_copy"}
