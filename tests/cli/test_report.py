"""`logscan report`: the HTML page of a scan, checked as a document and as pixels in a real
headless Chromium (Debian's package; `make test` installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")
from logscan.cli import main  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

from .conftest import truth  # noqa: E402

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
RED = (0xD6, 0x28, 0x28)      # open spans, lag bars held back by an open transaction
GREEN = (0x2E, 0x7D, 0x32)    # committed spans


@pytest.fixture(scope="module")
def report(tables, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "r.html"
    res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--out", str(out), "--master", "local[2]"])
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.stdout
    return out


def _hanging_live() -> set[tuple[str, int, int, int]]:
    return {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"]))
            for rec in truth()["find_hanging"].values() for r in rec["rows"]}


def test_page_is_self_contained_and_names_every_hanging_transaction(report):
    html = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page must not fetch anything"
    live = _hanging_live()
    assert live
    for topic, partition, pid, start in live:
        row = re.search(rf"<tr><td>{topic}-{partition}</td>.*?</tr>", html, re.S)
        assert row, (topic, partition)
        assert f"<td class=num>{pid}</td>" in row.group(0) and f"<td class=num>{start}</td>" in row.group(0)
    for reason in ("no_coordinator_record", "partition_not_in_transaction", "coordinator_moved_on"):
        assert reason in html
    assert html.count('class="span open"') >= len(live)   # every open span drawn and highlighted
    assert "<svg id=lag" in html and "<svg id=timeline" in html


def test_missing_tables_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["report", "--tables", str(tmp_path)])
    assert res.exit_code == 2 and "no Delta tables" in res.output


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={cwd / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make test installs Debian's package)")
def test_renders_in_headless_chromium(report, tmp_path):
    from PIL import Image

    dom = _chromium("--dump-dom", report.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The browser's DOM (after parsing) still holds the candidates and the drawn spans.
    for topic, partition, pid, _ in _hanging_live():
        assert f"{topic}-{partition}" in dom.stdout
    assert dom.stdout.count('class="span open"') >= len(_hanging_live())

    png = tmp_path / "shot.png"
    shot = _chromium("--window-size=1400,1300", f"--screenshot={png}", "--hide-scrollbars", report.as_uri(),
                     cwd=tmp_path)
    assert shot.returncode == 0 and png.is_file(), shot.stderr[-2000:]
    img = Image.open(png).convert("RGB")
    assert img.size == (1400, 1300)
    colors = {color: n for n, color in img.getcolors(maxcolors=1 << 24)}
    # Not blank: a real page has many colors, and the drawn bars/spans are there in quantity.
    assert len(colors) > 200
    assert colors.get(RED, 0) > 20_000, "open spans and held-back LSO bars must be drawn in red"
    # The dark header band is at the top, the page background below it.
    assert img.getpixel((700, 10)) == (0x1D, 0x24, 0x33)
