"""logscan._native's facts_v2: the scan's per-batch facts of a run of batches, as BatchFact objects
(a run of few) or in bulk, a column per field (compiled.batch_facts), held to the reference
(logscan.scan.replica.batch_fact over the Python walk) field for field from any start; and
segment_fact_tables, the segment read through it, held to iter_segment's facts and findings
on every segment of the real-broker fixtures, through windows of any size, damaged, and in
pure Python. read_segment, which reads a segment's facts alone through it (as objects), is
held to the same. The fuzz target ``native`` compares the columns and the objects with the
reference too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logscan.format import compiled
from logscan.format.batch import RecordBatch
from logscan.format.control import COMMIT, LEADER_CHANGE, encode_control_key
from logscan.format.logfile import walk_batches
from logscan.logdir import segment
from logscan.scan.replica import (FACT_TABLE_COLUMNS, INT64_MIN, ReplicaRead, facts_to_table, iter_segment,
                                  read_segment, segment_fact_columns, segment_fact_tables)
from logscan.state.facts import BatchFact
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch, legacy_message
from tools.fuzz.targets import compiled_facts_key, reference_fact, reference_facts_key

from tests.format.test_native import REPO, T0, _batch


@pytest.fixture
def facts_v2():
    if compiled.facts_v2 is None:
        pytest.skip("logscan._native's facts_v2 is not in use (LOGSCAN_PURE_PYTHON, or a build before it)")
    return compiled.facts_v2


def _parts() -> list[bytes]:
    """Batches whose facts cover the edges: -1 ids, the int types' ends, a sequence that wraps
    past INT32_MAX, markers (CreateTime and LogAppendTime), an emptied control batch."""
    return [
        _batch(0),
        _batch(2**40, producer_id=2**62, producer_epoch=32767, base_sequence=2**31 - 2, transactional=True,
               partition_leader_epoch=2**31 - 1),
        end_txn_marker_batch(commit=False, coordinator_epoch=3, base_offset=2**40 + 3, producer_id=2**62,
                             producer_epoch=32767, timestamp=T0),
        _batch(2**40 + 4, n=40, codec=1, producer_id=7, producer_epoch=0, base_sequence=0),
        end_txn_marker_batch(commit=True, coordinator_epoch=-5, base_offset=2**40 + 44, producer_id=7,
                             producer_epoch=0, timestamp=T0 + 9, log_append_time=T0 + 99),
        encode_batch([], base_offset=2**40 + 45, transactional=True, control=True, producer_id=7,
                     producer_epoch=0),
        *(_batch(2**40 + 46 + 5 * i, n=1 + i % 5, producer_id=9, producer_epoch=1, base_sequence=5 * i)
          for i in range(20)),
    ]


def test_columns_are_the_reference_facts(facts_v2):
    buf = b"".join(_parts())
    for base in (0, 7, 2**40):
        arrays, count, stop = compiled.batch_facts(buf, 0, len(buf), base, 1 << 62)
        assert (count, stop) == (len(_parts()), len(buf))
        assert compiled_facts_key(arrays, count) == _reference(buf, base)


def _reference(buf, base: int = 0) -> list[tuple]:
    """The reference's facts of every entry of ``buf`` (the walk in pure Python), as
    compiled_facts_key gives the columns' rows."""
    with compiled.pure_python():
        entries = list(walk_batches(buf, base=base))
    assert all(type(b) is RecordBatch and b.crc_valid for b in entries)
    return reference_facts_key(buf, entries, base)


def _stopping(head: bytes) -> list[bytes]:
    """``head`` followed by each kind of entry a compiled run stops before (a control batch
    other than one marker record, a last offset past 64 bits, a legacy entry, a failed CRC,
    the tail)."""
    leader_change = encode_batch([Rec(b"\x00\x00\x00\x00", encode_control_key(LEADER_CHANGE), (), T0)],
                                 base_offset=9, control=True)
    two_markers = encode_batch([Rec(b"\x00\x00\x00\x00\x00\x05", encode_control_key(COMMIT), (), T0)] * 2,
                               base_offset=9, control=True, transactional=True, producer_id=1, producer_epoch=0)
    bad_crc = bytearray(_batch(9))
    bad_crc[-1] ^= 1
    return [*(head + tail + _batch(99) for tail in (leader_change, two_markers, _batch(2**63 - 2, n=3),
                                                     legacy_message(9, b"v", magic=1), bytes(bad_crc))),
            head + _batch(9)[:-1]]


def test_a_run_stops_where_the_reference_makes_the_fact_another_way(facts_v2):
    """Before a batch the compiled step does not read as the reference does, with the facts
    before it."""
    head = b"".join(_parts()[:3])
    for buf in _stopping(head):
        arrays, count, stop = compiled.batch_facts(buf, 0, len(buf), 0, 1 << 62)
        assert (count, stop) == (3, len(head))
        assert compiled_facts_key(arrays, count) == _reference(head)
    arrays, count, stop = compiled.batch_facts(head, 0, len(head), 0, 2)
    assert (count, stop) == (2, len(_parts()[0]) + len(_parts()[1]))


def _reference_objects(buf) -> list[BatchFact]:
    """The reference's facts of every entry of ``buf`` (batch_fact over the walk in pure Python)."""
    with compiled.pure_python():
        entries = list(walk_batches(buf))
    assert all(type(b) is RecordBatch and b.crc_valid for b in entries)
    return [reference_fact(buf, b)[0] for b in entries]


def test_fact_objects_are_the_reference_facts(facts_v2):
    """facts_v2's BatchFacts of a run (asked for objects below more rows than it has) are the
    reference's, field for field and of its class, from any batch's start, with the largest
    max timestamp among them; at most ``limit``."""
    parts = _parts()
    buf = b"".join(parts)
    starts = [sum(map(len, parts[:i])) for i in range(len(parts) + 1)]
    for i, start in enumerate(starts):
        facts, count, stop, top = facts_v2(buf, start, len(buf), 0, 1 << 62, 1 << 62, BatchFact)
        assert (count, stop) == (len(parts) - i, len(buf))
        assert facts == _reference_objects(buf[start:]) and all(type(f) is BatchFact for f in facts)
        assert top == max((f.max_timestamp for f in facts), default=-2**63)
    facts, count, stop, _ = facts_v2(buf, starts[2], len(buf), 0, 2, 1 << 62, BatchFact)
    assert (facts, count, stop) == (_reference_objects(buf[starts[2]:])[:2], 2, starts[4])


def test_a_run_is_handed_on_as_objects_or_columns_by_its_rows(facts_v2):
    """facts_v2 decides once it has walked: fewer rows than ``few``, BatchFact objects; as many
    or more, the columns (the same facts); the same run and stop either way, from any start;
    no objects without a class to make them of."""
    parts = _parts()
    buf = b"".join(parts)
    for i in range(len(parts)):
        start = sum(map(len, parts[:i]))
        rows = len(parts) - i
        objects, count, stop, top = facts_v2(buf, start, len(buf), 7, 1 << 62, rows + 1, BatchFact)
        assert type(objects) is list and (count, stop) == (rows, len(buf))
        columns, *same = facts_v2(buf, start, len(buf), 7, 1 << 62, rows, BatchFact)
        assert type(columns) is tuple and same == [count, stop, top]
        arrays = compiled.joined_arrays([columns])
        assert list(zip(*(arrays[name].tolist() for name, _ in compiled.FACT_COLUMNS))) == \
            _reference(buf[start:], start + 7)
        assert objects == _reference_objects(buf[start:])
    assert facts_v2(buf, 0, len(buf), 0, 1 << 62)[:3] == facts_v2(buf, 0, len(buf), 0, 1 << 62, 0, BatchFact)[:3]
    with pytest.raises(TypeError):
        facts_v2(buf, 0, len(buf), 0, 1 << 62, 5)
    assert facts_v2(buf, len(buf), len(buf), 0, 1 << 62, 5, BatchFact) == ([], 0, len(buf), -2**63)


def test_a_run_of_fact_objects_stops_where_the_columns_stop(facts_v2):
    head = b"".join(_parts()[:3])
    for buf in _stopping(head):
        facts, count, stop, _ = facts_v2(buf, 0, len(buf), 0, 1 << 62, 1 << 62, BatchFact)
        assert (facts, count, stop) == (_reference_objects(head), 3, len(head))


def test_joined_columns_are_each_runs_in_order(facts_v2):
    """joined_arrays over several runs: the rows of each, in order, one array a column."""
    parts = _parts()
    buf = b"".join(parts)
    cut = sum(map(len, parts[:5]))
    first, n1, _, _ = facts_v2(buf, 0, cut, 0, 1 << 62)
    second, n2, _, _ = facts_v2(buf, cut, len(buf), 0, 1 << 62)
    whole = compiled.fact_arrays(buf, 0, len(buf), 0, 1 << 62)[0]
    joined = compiled.joined_arrays([first, second])
    assert (n1, n2) == (5, len(parts) - 5)
    assert {name: a.tolist() for name, a in joined.items()} == {name: a.tolist() for name, a in whole.items()}


def _rows(tables) -> list[tuple]:
    out = []
    for t in tables:
        d = t.to_pydict()
        out += [tuple(d[name][i] for name, _ in FACT_TABLE_COLUMNS) for i in range(t.num_rows)]
    return out


def _same_as_iter_segment(path: Path, window=None) -> int:
    got, ref = ReplicaRead(), ReplicaRead()
    rows = _rows(segment_fact_tables(str(path), 0, out=got, window=window))
    # (a last offset below -2^63 is held as -2^63: INT64_MIN)
    expected = [(entry.position, fact[0], max(fact[1], INT64_MIN), *fact[2:])
                for fact, entry in iter_segment(str(path), 0, is_txn_log=False, out=ref, window=window)]
    assert rows == expected, path
    assert got.findings == ref.findings, path
    assert (got.batches, got.first_offset, got.max_timestamp, got.bytes_read) == \
        (ref.batches, ref.first_offset, ref.max_timestamp, ref.bytes_read), path
    return len(rows)


def _fixture_logs() -> list[Path]:
    return sorted(p for p in (REPO / "fixtures").glob("*/brokers/*/*/*.log")
                  if p.stat().st_size and "__transaction_state" not in str(p) and "__consumer_offsets" not in str(p))


@pytest.mark.parametrize("pure", [False, True])
def test_every_real_segment_gives_iter_segments_facts(pure):
    logs = _fixture_logs()
    assert len(logs) > 100
    if pure:
        with compiled.pure_python():
            assert sum(_same_as_iter_segment(p) for p in logs) > 1000
    else:
        assert sum(_same_as_iter_segment(p) for p in logs) > 1000


def _read_segment_same_as_iter_segment(path: Path) -> int:
    """read_segment's facts, findings and counts are iter_segment's in pure Python (the
    reference's walk, a batch at a time)."""
    got, ref = read_segment(str(path), 0, is_txn_log=False), ReplicaRead()
    with compiled.pure_python():
        expected = [fact for fact, _ in iter_segment(str(path), 0, is_txn_log=False, out=ref)]
    assert got.facts == expected, path
    assert got.findings == ref.findings, path
    assert (got.batches, got.first_offset, got.max_timestamp, got.bytes_read) == \
        (ref.batches, ref.first_offset, ref.max_timestamp, ref.bytes_read), path
    return len(expected)


def test_read_segment_gives_the_reference_facts_of_every_real_segment(facts_v2):
    assert sum(_read_segment_same_as_iter_segment(p) for p in _fixture_logs()) > 1000


@pytest.mark.parametrize("window", [64, 300, 5000])
def test_read_segment_gives_the_reference_facts_through_windows_and_damage(facts_v2, tmp_path, monkeypatch, window):
    """The cases of the table path below, read by read_segment through windows of ``window``
    bytes (LogWindows' own, which read_segment reads through)."""
    monkeypatch.setattr(segment, "LOG_WINDOW_BYTES", window)
    for i, buf in enumerate(_damaged_cases()):
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(buf)
        assert _read_segment_same_as_iter_segment(path) > 0


def _damaged_cases() -> list[bytes]:
    """Window edges through headers and batches, a batch larger than a window, and damage:
    a failed CRC, a size grown over the next batch, zero fill, a legacy entry, a cut tail,
    a batch whose last offset passes 2^63-1 and one whose sum falls below -2^63."""
    parts = _parts()
    parts.insert(4, legacy_message(7, b"v", b"k", magic=0))
    clean = b"".join(parts)
    flipped = bytearray(clean)
    flipped[len(parts[0]) + 30] ^= 4
    grown = bytearray(clean)
    at = len(parts[0]) + 8
    grown[at:at + 4] = (int.from_bytes(grown[at:at + 4], "big") + 90).to_bytes(4, "big")
    return [clean, clean[:-7], clean + bytes(300), clean[:400] + b"\xff" * 50 + clean[400:], bytes(flipped),
            bytes(grown), clean + _batch(2**63 - 2) + _batch(5),
            clean + _batch(-2**63, last_offset_delta=-3) + _batch(5)]


@pytest.mark.parametrize("window", [64, 300, 5000])
def test_windows_of_any_size_and_damage_give_iter_segments_facts(tmp_path, window):
    """_damaged_cases through windows of ``window`` bytes."""
    for i, buf in enumerate(_damaged_cases()):
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(buf)
        assert _same_as_iter_segment(path, window) > 0


def test_a_reference_table_holds_what_the_compiled_one_does(facts_v2, tmp_path):
    """facts_to_table (the reference's facts as a table) and the compiled columns make equal
    tables, schema included."""
    path = tmp_path / "0.log"
    path.write_bytes(b"".join(_parts()))
    compiled_tables = list(segment_fact_tables(str(path), 0, out=ReplicaRead()))
    pairs = [(f, e.position) for f, e in iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead())]
    reference = facts_to_table([f for f, _ in pairs], [p for _, p in pairs])
    assert len(compiled_tables) == 1 and compiled_tables[0].equals(reference)


def test_a_file_that_shrinks_under_the_read_gives_iter_segments_finding(tmp_path, monkeypatch):
    """A window that cannot be read (the file shorter than when it was opened): the reference
    walk from there reports it, located, as iter_segment does."""
    path = tmp_path / "0.log"
    path.write_bytes(b"".join(_parts() * 3))
    cut = path.stat().st_size // 2
    real = segment._read_into

    def shrunk(fd, view, start, size):
        if start + len(view) > cut:
            raise segment.FileShrank(f"read 0 of {len(view)} bytes at {start}: the file is shorter", start, size)
        real(fd, view, start, size)

    monkeypatch.setattr(segment, "_read_into", shrunk)
    for window in (300, 2000):  # (a window of the whole file: no row, and the same finding)
        assert _same_as_iter_segment(path, window) > 0
        with monkeypatch.context() as m:
            m.setattr(segment, "LOG_WINDOW_BYTES", window)  # read_segment reads through LogWindows' own
            assert _read_segment_same_as_iter_segment(path) > 0
    assert _same_as_iter_segment(path) == 0


def test_a_segment_of_few_batches_is_handed_on_as_fact_objects(facts_v2, tmp_path, monkeypatch):
    """segment_fact_columns asks the compiled step for objects while the rows in all stay below
    replica.BULK_ROWS (the rows its reader feeds one at a time) and its window reaches the
    segment's end: FactRows of the walk's facts, no column made until one is read; a segment
    of more, or read through smaller windows, in bulk (FactColumns)."""
    from logscan.scan import replica
    from logscan.state.columns import FactColumns, FactRows

    path = tmp_path / "0.log"
    path.write_bytes(b"".join(_parts()))
    expected = [f for f, _ in iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead())]
    monkeypatch.setattr(replica, "BULK_ROWS", len(expected) + 1)
    (few,) = segment_fact_columns(str(path), 0, out=ReplicaRead())
    assert type(few) is FactRows and few.facts() == expected and all(type(f) is BatchFact for f in few.facts())
    assert not {name for name, _ in FACT_TABLE_COLUMNS} & set(vars(few))
    monkeypatch.setattr(replica, "BULK_ROWS", len(expected))
    (many,) = segment_fact_columns(str(path), 0, out=ReplicaRead())
    assert type(many) is FactColumns and many.facts() == expected
    monkeypatch.setattr(replica, "BULK_ROWS", len(expected) + 1)
    windowed = list(segment_fact_columns(str(path), 0, out=ReplicaRead(), window=len(_parts()[0]) + 1))
    assert type(windowed[0]) is FactColumns and [f for c in windowed for f in c.facts()] == expected
