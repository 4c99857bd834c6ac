"""The report page's renderer on its own (no Spark): what it says when there is damage,
nothing hanging, or no abort_plans table, and that nothing from the data reaches the page
unescaped (file names and evidence come from a copied, possibly hostile, disk)."""

from __future__ import annotations

import re

from logscan.report import render

HOSTILE = "<script>alert(1)</script>"


def _data(**over) -> dict:
    data = {
        "scan_id": "s1", "tables": "/data/t", "input": f"/copies/{HOSTILE}/",
        "head": {"as_of": 1_795_392_872_000, "replicas": 3, "partitions": 1, "brokers": 3,
                 "open_transactions": 0, "lagging_replicas": 0},
        "counts": {"files": 4, "corruptions": 0, "hanging_candidates": 0},
        "partitions": [{"topic": "t", "partition": 0, "broker": 1, "log_start_offset": 0, "log_end_offset": 9,
                        "high_watermark": 9, "last_stable_offset": 9, "lso_lag": 0, "open_transactions": 0}],
        "spans": [], "candidates": [], "plans": [], "corruptions": [],
    }
    data.update(over)
    return data


def test_nothing_hanging_says_so():
    page = render(_data())
    assert "No hanging transaction." in page and "Every last stable offset is at its high watermark." in page
    assert "No open transaction is older than the maximum transaction timeout" in page
    assert "None: every file read cleanly." in page
    assert HOSTILE not in page and "&lt;script&gt;" in page


def test_corruptions_are_listed_escaped_with_what_is_left_out():
    rows = [{"broker": 1, "topic": "t", "partition": 0, "file": f"/copies/b1/t-0/{HOSTILE}.log", "position": 4096,
             "length": None, "reason": "crc", "message": "batch ending at offset 7 fails its CRC check"}]
    page = render(_data(corruptions=rows, counts={"corruptions": 12}))
    section = re.search(r"<section id=corruptions>.*?</section>", page, re.S).group(0)
    assert "<td class=num>4096</td>" in section and "<td>crc</td>" in section
    assert "fails its CRC check" in section and "11 more" in section
    assert HOSTILE not in page
    assert '<div class="kpi alert"><b>12</b><span>corruptions</span>' in page


def test_hanging_without_an_abort_plans_table_says_how_to_get_plans():
    candidate = {"broker": 1, "topic": "t", "partition": 0, "producer_id": 7, "producer_epoch": 0, "start_offset": 3,
                 "last_timestamp": 1_795_389_209_747, "age_ms": 3_600_000, "hanging": True,
                 "reason": "no_coordinator_record", "evidence": HOSTILE, "transactional_id": None}
    page = render(_data(candidates=[candidate], plans=None))
    assert "1 hanging transaction</b> holds back" in page
    assert "no abort_plans table" in page and "logscan plan COPY --bootstrap-server" in page
    assert HOSTILE not in page
