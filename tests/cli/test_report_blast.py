"""`logscan report` (HTML and --format md) names what the open transactions hold back: the
consumer groups of the `offsets` cluster, as `kafka-consumer-groups --describe --offsets`
reported them live, and the bytes the `retention` cluster's hang keeps from the log cleaner.
The tables are the local executor's (`logscan scan --output DIR --executor local`: no JVM);
the Spark job's are the same rows (tests/spark/test_scan.py)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _truth(name: str) -> dict:
    return json.loads((FIXTURES / name / "truth" / "truth.json").read_text())


@pytest.fixture(scope="module", params=["offsets", "retention"])
def report(request, tmp_path_factory):
    """(cluster name, the HTML page, the Markdown) of a local scan's tables."""
    name = request.param
    out = tmp_path_factory.mktemp(name) / "tables"
    res = CliRunner().invoke(main, ["scan", str(FIXTURES / name / "brokers"), "--output", str(out), "--executor",
                                    "local", "--as-of", str(_truth(name)["recorded_at_ms"]), "--no-progress"])
    assert res.exit_code == 4, res.output   # each cluster has a hanging transaction
    page = out.parent / "r.html"
    res = CliRunner().invoke(main, ["report", "--tables", str(out), "--out", str(page)])
    assert res.exit_code == 0, res.output
    md = CliRunner().invoke(main, ["report", "--tables", str(out), "--format", "md", "--out", "-"])
    assert md.exit_code == 0, md.output
    return name, html.unescape(page.read_text()), md.stdout


def _section(text: str) -> str:
    """The page's or the Markdown's section on what the open transactions hold back."""
    start = text.index("What the open transactions hold back")
    ends = [i for i in (text.find("</section>", start), text.find("\n## ", start)) if i > 0]
    return text[start:min(ends)]


def _lags(truth: dict) -> dict[str, int]:
    notes = truth["scenario_notes"]["committed_offsets"]
    return {r["GROUP"]: int(r["LAG"]) for r in truth["consumer_groups"]["offsets"]["rows"]
            if (r["TOPIC"], int(r["PARTITION"])) == (notes["topic"], 0)}


def test_the_report_names_the_groups_and_the_bytes_held_back(report):
    name, page, md = report
    truth = _truth(name)
    if name == "offsets":
        lags = _lags(truth)
        for text in (page, md):
            blast = _section(text)
            for group in ("offs-stuck", "offs-beyond", "offs-txn"):
                assert group in blast, group
            assert "offs-plain" not in blast   # its committed offset is below the LSO
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
                for line in _section(md).splitlines()
                if line.startswith("| offs-")}
        assert set(rows) == {"offs-stuck", "offs-beyond", "offs-txn"}
        for group, cells in rows.items():
            assert cells[6] == str(lags[group]), cells   # kafka-consumer-groups' LAG
        assert rows["offs-stuck"][4:6] == ["hanging", "`no_coordinator_record`"]
        assert rows["offs-txn"][2] == "pending commit" and rows["offs-txn"][4] == "open"
    else:
        (b,) = [b for b in truth["log_dirs"]["brokers"] if b["broker"] == 0]
        size = next(p["size"] for d in b["logDirs"] for p in d["partitions"] if p["partition"] == "hang-compact-0")
        for text in (page, md):
            blast = _section(text)
            assert "hang-compact-0" in blast and "hang-segments" not in blast
        (row,) = [[c.strip() for c in line.split("|")[1:-1]] for line in _section(md).splitlines()
                  if line.startswith("| hang-compact-0 |")]
        held, segments, replicas, total = int(row[1]), int(row[2]), int(row[5]), int(row[6])
        assert 0 < held < size and segments >= 1 and replicas == 3 and total == 3 * held
        assert f"Bytes held back: **{total} B**" in md
