"""logscan.scan.spool: rows kept on disk in runs by key, read back in order."""

from __future__ import annotations

import os
from operator import itemgetter
from pathlib import Path

import pytest

from logscan.scan import spool as S
from logscan.scan.spool import SpoolFolder

NAMES = ("broker", "offset", "partitions")


def _row(broker: int, offset: int) -> dict:
    return {"broker": broker, "offset": offset, "partitions": [{"topic": "t", "partition": offset % 3}],
            "extra": "not a column"}


def test_each_key_gets_back_its_rows_in_the_order_added_across_chunks(monkeypatch):
    monkeypatch.setattr(S, "CHUNK_ROWS", 3)
    with SpoolFolder() as folder:
        s = folder.spool("t", NAMES, order=itemgetter("offset"))
        for i in range(10):
            s.add("a", _row(1, i))
        for i in range(4):
            s.add("b", _row(2, i))
        for i in range(10, 12):   # a key's second run
            s.add("a", _row(1, i))
        s.close()
        assert s.keys() == ["a", "b"]
        assert [r["offset"] for r in s.rows("a")] == list(range(12))
        assert list(s.rows("b")) == [{k: _row(2, i)[k] for k in NAMES} for i in range(4)]
        assert list(s.rows("missing")) == []
        path = folder.path
    assert not os.path.exists(path)


def test_a_run_out_of_order_comes_back_sorted(monkeypatch):
    monkeypatch.setattr(S, "CHUNK_ROWS", 2)
    with SpoolFolder() as folder:
        s = folder.spool("t", NAMES, order=itemgetter("offset"))
        for i in (0, 5, 3, 9, 1):
            s.add("a", _row(1, i))
        for i in (0, 1):
            s.add("b", _row(1, i))
        s.close()
        assert [r["offset"] for r in s.rows("a")] == [0, 1, 3, 5, 9]
        assert [r["offset"] for r in s.rows("b")] == [0, 1]


def test_a_spool_is_made_to_be_written_once(tmp_path):
    with SpoolFolder(str(tmp_path)) as folder:
        folder.spool("t", NAMES)
        with pytest.raises(FileExistsError):
            folder.spool("t", NAMES)
        assert oct(os.stat(folder.path).st_mode & 0o777) == "0o700"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("rows", [0, 5, 7, 8, 9, 40, 123])
def test_sorted_gives_what_sorted_gives_holding_a_run_at_a_time(monkeypatch, rows):
    # runs of 4 rows merged 2 at a time: 123 rows take 31 runs and five merge passes
    monkeypatch.setattr(S, "SORT_RUN_ROWS", 4)
    monkeypatch.setattr(S, "SORT_FAN_IN", 2)
    monkeypatch.setattr(S, "MERGE_CHUNK_ROWS", 3)
    given = [{"key": (i * 7919) % 11, "seq": i, "partitions": [{"topic": "t", "partition": i % 3}]}
             for i in range(rows)]
    with SpoolFolder() as folder:
        got = list(folder.sorted(iter(given), key=itemgetter("key")))
        # equal keys keep the order they came in (sorted() is stable)
        assert got == sorted(given, key=itemgetter("key"))
        assert sorted(os.listdir(folder.path)) == []   # each sort's spools are gone once read


@pytest.mark.parametrize("rows", [0, 7, 9, 123])
def test_sorted_takes_tuples_and_gives_them_back_as_tuples(monkeypatch, rows):
    monkeypatch.setattr(S, "SORT_RUN_ROWS", 4)
    monkeypatch.setattr(S, "SORT_FAN_IN", 2)
    monkeypatch.setattr(S, "MERGE_CHUNK_ROWS", 3)
    given = [(f"id-{(i * 7919) % 11}", i % 2, (i * 31) % 17) for i in range(rows)]
    with SpoolFolder() as folder:
        assert list(folder.sorted(iter(given), key=None)) == sorted(given)
        got = list(folder.sorted(iter(given), key=itemgetter(0)))
        assert got == sorted(given, key=itemgetter(0))   # stable among equal keys
        assert all(type(t) is tuple for t in got)
        assert sorted(os.listdir(folder.path)) == []


def test_the_history_is_the_same_sorted_on_disk(monkeypatch):
    from logscan.scan import pipeline
    from logscan.scan.local import scan

    monkeypatch.setattr(S, "SORT_RUN_ROWS", 2)
    monkeypatch.setattr(S, "SORT_FAN_IN", 2)
    monkeypatch.setattr(S, "MERGE_CHUNK_ROWS", 1)
    root = Path(__file__).resolve().parents[2] / "fixtures" / "tv2" / "brokers"
    t = scan([root]).tables
    loaded = {(r["broker"], r["partition"]) for r in t["coordinator_state"]}
    served = pipeline.served_keys(t["partition_state"])
    # any order: the step puts them in its own
    records = [r for r in t["txn_log"] if (r["broker"], r["partition"]) in loaded][::-1]
    spans = [s for s in t["txn_spans"] if (s["broker"], s["topic"], s["partition"]) in served][::-1]
    with SpoolFolder() as folder:
        on_disk = pipeline.history(records, spans, order=folder.sorted)
    assert on_disk == pipeline.history(records, spans) == t["transactional_id_history"]
    assert on_disk and any(r["duration_p50_ms"] is not None for r in on_disk)


def _sources_in_chunks(size: int) -> list[list[tuple]]:
    """Three sources' rows ((offset, source) keys, each source in order), cut into chunks of
    ``size`` rows, sorted by their first rows' keys, as the Spark job's sort hands them over."""
    sources = [[(o, s) for o in range(s, 60, 1 + s)] for s in range(3)]
    chunks = [rows[i:i + size] for rows in sources for i in range(0, len(rows), size)]
    return sorted(chunks, key=lambda c: c[0])


@pytest.mark.parametrize("size", [1, 2, 5, 100])
def test_merge_chunks_gives_every_row_in_order_holding_a_chunk_per_source(size):
    chunks = _sources_in_chunks(size)
    want = sorted(r for c in chunks for r in c)
    taken = 0

    def handed():
        nonlocal taken
        for c in chunks:
            taken += len(c)
            yield list(c)

    got = []
    for row in S.merge_chunks(handed(), key=lambda r: r):
        got.append(row)
        assert taken - len(got) <= 4 * size   # held: a chunk per source at most, and the one coming in
    assert got == want


def test_merge_chunks_refuses_rows_out_of_order():
    chunks = _sources_in_chunks(2)
    with pytest.raises(ValueError, match="chunks out of order"):
        list(S.merge_chunks([chunks[1], chunks[0], *chunks[2:]], key=lambda r: r))
    with pytest.raises(ValueError, match="rows out of order in a chunk"):
        list(S.merge_chunks([chunks[0][::-1], *chunks[1:]], key=lambda r: r))


def test_pack_gives_back_the_values():
    values = [(1, "COMMIT", None, -5), (2**40, "ABORT", 3, 0)]
    assert S.unpack(S.pack(values)) == values
