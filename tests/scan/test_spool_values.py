"""Spool.add reads a row's values in one call (an itemgetter of its names) and keeps the file's
length itself: a row lacking a name (or with names besides them) keeps None for it, as
row.get gives it, in add and extend alike; one name, or none (tuples), kept as they were; and
interleaved keys over many small chunks each come back whole, where their chunks were written."""

from __future__ import annotations

import random

from logscan.scan.spool import SpoolFolder


def test_a_row_lacking_a_name_keeps_none_for_it(tmp_path):
    with SpoolFolder(str(tmp_path)) as folder:
        s = folder.spool("s", ("a", "b", "c"))
        s.add(1, {"a": 1, "b": 2, "c": 3, "extra": 9})
        s.add(1, {"c": 5, "a": 4})
        s.extend(2, [{"b": 7}, {"a": 1, "b": 2, "c": 3}])
        s.close()
        assert list(s.rows(1)) == [{"a": 1, "b": 2, "c": 3}, {"a": 4, "b": None, "c": 5}]
        assert list(s.rows(2)) == [{"a": None, "b": 7, "c": None}, {"a": 1, "b": 2, "c": 3}]


def test_one_name_and_plain_tuples_come_back_as_added(tmp_path):
    with SpoolFolder(str(tmp_path)) as folder:
        one, plain = folder.spool("one", ("a",)), folder.spool("plain", None)
        one.add("k", {"a": (1, 2)})
        one.add("k", {})
        plain.add("k", (1, "x", None))
        one.close(), plain.close()
        assert list(one.rows("k")) == [{"a": (1, 2)}, {"a": None}]
        assert list(plain.rows("k")) == [(1, "x", None)]


def test_interleaved_keys_over_many_chunks_each_come_back_whole(tmp_path):
    rng = random.Random(3)
    want: dict[int, list] = {}
    with SpoolFolder(str(tmp_path)) as folder:
        s = folder.spool("s", ("k", "n", "text"), chunk_rows=3)
        for n in range(2000):
            k = rng.randrange(7)
            row = {"k": k, "n": n, "text": "x" * rng.randrange(300)}
            s.add(k, row)
            want.setdefault(k, []).append(row)
        s.close()
        assert sorted(s.keys()) == sorted(want)
        for k, rows in want.items():
            assert list(s.rows(k)) == rows


def test_a_spool_file_cut_short_is_a_located_error(tmp_path):
    """A chunk is read at once, its length known: a file cut short under the spool (nothing but
    this process writes it) says which spool and where, never a marshal error."""
    import os

    import pytest

    with SpoolFolder(str(tmp_path)) as folder:
        s = folder.spool("s", ("a", "b"), chunk_rows=2)
        for n in range(5):
            s.add("k", {"a": n, "b": "x" * 50})
        s.close()
        os.truncate(s.path, os.path.getsize(s.path) - 10)
        with pytest.raises(OSError, match=r"s\.spool: .* bytes of a chunk at byte \d+ read"):
            list(s.rows("k"))
