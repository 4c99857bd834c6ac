"""JVM spellings and orders the dump must reproduce, and the bounded pair spool."""

from __future__ import annotations

import io
import os

from logscan.dump.javaisms import (java_absolute_path, java_file_name, java_file_str,
                                   java_string_hash, optional_long, scala_hashmap_order)
from logscan.dump.spool import PairSpool
from logscan.dump.report import EndOfRunReport


def test_java_string_hash_matches_known_values():
    # values of String.hashCode computed by the JVM
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31  # the famous Integer.MIN_VALUE
    assert java_string_hash("\u00e9\U0001F600") == (233 * 31 * 31 + 0xD83D * 31 + 0xDE00)


def test_scala_hashmap_order_is_bucket_then_hash():
    keys = [f"/data/topic-{i}/00000000000000000000.log" for i in range(6)]
    order = scala_hashmap_order(keys)
    assert sorted(order) == sorted(keys)

    def improved(k):
        h = java_string_hash(k) & 0xFFFFFFFF
        return h ^ (h >> 16)
    assert [improved(k) & 15 for k in order] == sorted(improved(k) & 15 for k in keys)
    assert scala_hashmap_order(keys[::-1]) == order  # insertion order does not matter
    assert scala_hashmap_order(keys + keys[:2]) == order  # duplicates are one entry


def test_file_spellings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert java_file_str("a//b///c/") == "a/b/c"
    assert java_file_name("x/y/00000000000000000000.log") == "00000000000000000000.log"
    assert java_absolute_path("x/../y.log") == f"{os.getcwd()}/x/../y.log"
    assert java_absolute_path("/abs//p") == "/abs/p"
    assert optional_long(None) == "OptionalLong.empty" and optional_long(5) == "OptionalLong[5]"


def test_pair_spool_orders_and_spills_to_disk():
    spool = PairSpool()
    n = 100_000  # 1.6 MB of pairs: past the in-memory limit
    for i in range(n):
        spool.append(i, i + 2)
    assert spool.count == n
    forward = list(spool)
    assert forward[0] == (0, 2) and forward[-1] == (n - 1, n + 1) and len(forward) == n
    backward = list(spool.newest_first())
    assert backward == forward[::-1]
    spool.append(-1, -2)
    assert next(iter(spool.newest_first())) == (-1, -2)
    spool.close()


def test_end_of_run_report_text():
    err = io.StringIO()
    report = EndOfRunReport(err)
    report.index_mismatch("/a.index").append(4, 2)
    report.index_mismatch("/a.index").append(8, 6)
    gaps = report.non_consecutive("/a.log")
    gaps.append(3, 5)
    gaps.append(7, 9)
    report.non_consecutive("/b.log")  # no gap: not printed at all
    report.time_not_found("/a.timeindex").append(30, -1)
    report.print()
    assert err.getvalue().splitlines() == [
        "Mismatches in :/a.index",
        "  Index offset: 8, log offset: 6",
        "  Index offset: 4, log offset: 2",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 30, found log offset: -1",
        "Non-consecutive offsets in /a.log",
        "  7 is followed by 9",
        "  3 is followed by 5",
    ]
    report.close()
