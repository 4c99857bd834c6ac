"""`logscan report --format md`'s renderer on its own: text from a copied (possibly hostile)
disk shows as itself, never as markup, a table row stays one row, and a command's fence holds."""

from __future__ import annotations

import re

from logscan.report.markdown import block, code, render_markdown, text

from .test_report_page import _data

HOSTILE = "a|b <script>x</script> **bold** [l](http://x) `tick` ```fence\nnew line\x1b[31m &amp;"


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_text_from_the_copy_shows_as_itself():
    rendered = text(HOSTILE)
    assert "\n" not in rendered and "\x1b" not in rendered   # made printable: one line, no escape sequence
    assert "<script>" not in rendered and "**" not in rendered and "](" not in rendered.replace("\\]", "")
    assert _unescaped_pipes(rendered) == 0 and "\\&amp;" in rendered
    assert text("- item") == "\\- item" and text("1. item") == "1\\. item" and text("# h") == "\\# h"
    assert code("a`b") == "``a`b``" and code("`") == "`` ` ``" and _unescaped_pipes(code("x|y")) == 0
    fenced = block(["run ```this```"], "sh")
    assert fenced.startswith("````sh\n") and fenced.endswith("\n````\n")


def test_a_hostile_candidate_stays_in_its_row():
    candidate = {"broker": 1, "topic": "t", "partition": 0, "producer_id": 7, "producer_epoch": 0, "start_offset": 3,
                 "last_timestamp": 1_795_389_209_747, "age_ms": 3_600_000, "hanging": True,
                 "reason": "no_coordinator_record", "evidence": HOSTILE, "transactional_id": None}
    rows = [{"broker": 1, "topic": "t", "partition": 0, "file": f"/copies/{HOSTILE}.log", "position": 4096,
             "length": None, "reason": "crc", "message": HOSTILE}]
    page = render_markdown(_data(candidates=[candidate], plans=None, corruptions=rows,
                                 counts={"corruptions": 1, "hanging_candidates": 1}))
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", page)   # a code span shows <script> as text
    assert "<script>" not in outside_code and "<script>" in page and "\x1b" not in page
    for title, columns in (("## Hanging transactions", 9), ("## Corruptions", 6)):
        section = page[page.index(title):].split("\n\n")[1:3]
        table = next(part for part in section if part.startswith("|"))
        assert {_unescaped_pipes(line) for line in table.splitlines()} == {columns + 1}, table
    assert "1 hanging transaction** holds back" in page and "no abort_plans table" in page


def test_nothing_hanging_says_so():
    page = render_markdown(_data())
    assert "**No hanging transaction.** Every last stable offset is at its high watermark." in page
    assert "None: every file read cleanly." in page and "## Abort plans" not in page
