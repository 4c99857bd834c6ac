"""The report page's renderer on its own (no Spark): what it says when there is damage,
nothing hanging, or no abort_plans table, and that nothing from the data reaches the page
unescaped (file names and evidence come from a copied, possibly hostile, disk)."""

from __future__ import annotations

import html
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
    assert "<td class=num>4096</td>" in section and "<td class=text>crc</td>" in section
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


def _partition(i: int, lag: int) -> dict:
    return {"topic": "t", "partition": i, "broker": 1, "log_start_offset": 0, "log_end_offset": 9,
            "high_watermark": 9, "last_stable_offset": 9 - lag, "lso_lag": lag, "open_transactions": 1}


def test_a_subset_says_so_and_how_to_see_all():
    from logscan.report.data import queries

    shown = [_partition(i, 100 - i) for i in range(40)]
    data = _data(partitions=shown, head={**_data()["head"], "partitions": 303},
                 counts={"corruptions": 0, "hanging_candidates": 0, "partitions_with_lag": 290},
                 queries=queries("/data/my tables", "s1"))
    page = render(data)
    lag = re.search(r"<section id=lag-section>.*?</section>", page, re.S).group(0)
    assert "Drawn: the partitions with the largest LSO lag, 40 of 290. All of them: <code>logscan sql --tables " \
           "&#x27;/data/my tables&#x27; &#x27;SELECT topic" in lag
    timeline = re.search(r"<section id=timeline-section>.*?</section>", page, re.S)
    assert timeline is None or "Drawn:" not in timeline.group(0)   # no spans: nothing drawn there
    # nothing cut: no note
    assert "Drawn:" not in render(_data(counts={"corruptions": 0, "partitions_with_lag": 0}))


def test_lagging_followers_are_named_with_what_lagging_means():
    follower = {"topic": "t", "partition": 0, "broker": 2, "leader": 1, "leader_in_copy": True,
                "log_end_offset": 4, "leader_log_end_offset": 5, "last_stable_offset": 0,
                "leader_last_stable_offset": 5, "open_transactions": 1, "leader_open_transactions": 0,
                "incomplete": True}
    page = render(_data(followers=[follower], counts={"corruptions": 0, "followers": 1}))
    section = re.search(r"<section id=followers>.*?</section>", page, re.S).group(0)
    assert "A follower whose log ends before its leader&#x27;s" in section and "not a hang" in section
    assert "<td>t-0</td><td class=num>2</td><td class=num>1</td><td class=num>4 / 5</td>" in section
    assert "incomplete copy" in section
    assert '<div class="kpi"><b>1</b><span>lagging followers</span>' in page
    assert "<section id=followers>" not in render(_data())


def test_copy_all_plans_copies_the_shell_quoted_commands_and_nothing_else():
    quoted = "kafka-transactions.sh --bootstrap-server 'b 1:9092' abort --topic t --partition 0 --start-offset 3"
    plan = {"topic": "t", "partition": 0, "producer_id": 7, "producer_epoch": 0, "start_offset": 3,
            "reason": "no_coordinator_record", "risk": "low", "command": quoted, "command_explicit": None,
            "preconditions": [], "effects": []}
    illegal = {**plan, "topic": "t$(x)", "command": "kafka-transactions.sh ... --topic 't$(x)'"}
    page = render(_data(plans=[plan, illegal]))
    pre = re.search(r"<pre id=cmdall>(.*?)</pre>", page, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]*>", "", pre)) == quoted     # the topic Kafka could not name: left out
    assert "<span class=w>&#x27;b</span> <span class=w>1:9092&#x27;</span>" in pre   # breaks at spaces only
    assert "copyCmd('cmdall',this)\">copy all plans</button>" in page
