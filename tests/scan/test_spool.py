"""logscan.scan.spool: rows kept on disk in runs by key, read back in order."""

from __future__ import annotations

import os
from operator import itemgetter

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
