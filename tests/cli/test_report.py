"""`logscan report`: the HTML page of a scan, checked as a document and as pixels in a real
headless Chromium (Debian's package; `make test` installs it).

The pixel checks look at each chart alone (the page with every other section taken out) and
measure what the browser drew: one red bar per partition whose LSO an open transaction holds
back, bar lengths in the ratio of the LSO lags Kafka reported, and one open span per partition
with an open transaction, each running up to the same as-of line.
The fixture tables come from the Spark job; the report reads them without Spark (its session
builders are made to fail while it runs)."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")
from logscan.cli import main  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402

from .conftest import BOOTSTRAP, HANGING, plans, truth  # noqa: E402

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="chromium not installed (make test installs Debian's package)")
RED = (0xD6, 0x28, 0x28)      # open spans, lag bars held back by an open transaction
INK = (0x1D, 0x24, 0x33)      # the header band, the as-of line
WIDTH = 1400
LAG_BAR_PX = 480              # the longest lag bar (logscan/report/html.py _lag_chart), drawn at full size
NARROW = 800                  # a narrow window: the page must still fit it


def _no_spark(*args, **kwargs):
    raise AssertionError("logscan report started a Spark session")


@pytest.fixture(scope="module")
def report(tables, tmp_path_factory) -> Path:
    """The page of the fixture tables, written with Spark's session builders made to fail."""
    from pyspark.sql import SparkSession

    from spark_jobs import console, session

    out = tmp_path_factory.mktemp("report") / "r.html"
    assert SparkSession.getActiveSession() is None   # the tables' scan stopped its session
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(session, "build_session", _no_spark)
        patch.setattr(console, "build_session", _no_spark)
        patch.setattr(SparkSession.Builder, "getOrCreate", _no_spark)
        res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.stdout
    assert SparkSession.getActiveSession() is None
    return out


def _hanging_live() -> set[tuple[str, int, int, int]]:
    return {(r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["StartOffset"]))
            for rec in truth()["find_hanging"].values() for r in rec["rows"]}


def test_page_is_self_contained_and_names_every_hanging_transaction(report):
    html = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page must not fetch anything"
    assert "@import" not in html and "url(" not in html
    live = _hanging_live()
    assert live
    for topic, partition, pid, start in live:
        row = re.search(rf"<tr class=txn><td>{topic}-{partition}</td>.*?</tr>", html, re.S)
        assert row, (topic, partition)
        assert f"<td class=num>{pid}</td>" in row.group(0) and f"<td class=num>{start}</td>" in row.group(0)
    for reason in ("no_coordinator_record", "partition_not_in_transaction", "coordinator_moved_on"):
        assert reason in html
    assert html.count('class="span open"') >= len(live)   # every open span drawn and highlighted
    assert "<svg id=lag" in html and "<svg id=timeline" in html
    # The header says which scan, when and of what.
    assert re.search(r"<dt>scan id</dt><dd>scan-[0-9a-f]{16}</dd>", html)
    assert f"<dt>input</dt><dd>{HANGING / 'brokers'}/</dd>" in html
    assert "<dt>as of</dt><dd>" + _utc(truth()["recorded_at_ms"]) + "</dd>" in html


def _utc(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _pre_texts(html: str) -> dict[str, str]:
    """Each <pre id=...>'s text (what its copy button copies: the element's textContent)."""
    return {m.group(1): htmllib.unescape(re.sub(r"<[^>]*>", "", m.group(2)))
            for m in re.finditer(r"<pre id=\"?(\w+)\"?>(.*?)</pre>", html, re.S)}


def test_abort_plans_are_logscan_plans_commands_with_copy_buttons(report):
    html = report.read_text()
    made = plans()
    texts = _pre_texts(html)
    assert len(made) == len(_hanging_live()) and all(BOOTSTRAP in p["command"] for p in made)
    for p in made:
        for command in (p["command"], p["command_explicit"]):
            (cmd_id,) = [i for i, t in texts.items() if t == command]
            assert f"<button type=button onclick=\"copyCmd('{cmd_id}',this)\">copy</button>" in html, command
        assert p["preconditions"][0] in html and p["effects"][1] in html
    # One button copies every plan's command, one per line, as `logscan plan` prints them
    assert texts["cmdall"] == "\n".join(p["command"] for p in sorted(
        made, key=lambda p: (p["topic"], p["partition"], p["producer_id"], p["start_offset"])))
    assert """onclick="copyCmd('cmdall',this)">copy all plans</button>""" in html


def test_missing_tables_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["report", "--tables", str(tmp_path)])
    assert res.exit_code == 2 and "no Delta tables" in res.output
    res = CliRunner().invoke(main, ["report", "--tables", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such folder" in res.output


def test_an_out_path_that_cannot_be_written_is_a_usage_error_before_the_tables_are_read(tables, tmp_path):
    """--out in a missing folder, or naming a folder: one line naming it, exit 2 (issue 34: it
    was a traceback after the tables were read)."""
    for out, says in ((tmp_path / "missing-dir" / "r.html", "does not exist (create it first)"),
                      (tmp_path, "is a folder")):
        res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--out", str(out)])
        assert res.exit_code == 2 and says in res.output and "Traceback" not in res.output, res.output
    # checked first: a wrong --out with wrong tables names the --out
    res = CliRunner().invoke(main, ["report", "--tables", str(tmp_path / "nope"),
                                    "--out", str(tmp_path / "missing-dir" / "r.html")])
    assert res.exit_code == 2 and "missing-dir" in res.output


def test_unknown_scan_id_says_how_to_list_them(tables, tmp_path):
    res = CliRunner().invoke(main, ["report", "--tables", str(tables), "--scan-id", "nope",
                                    "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "no rows for scan id 'nope'" in res.output and "DISTINCT scan_id" in res.output
    assert not (tmp_path / "r.html").exists()


def test_every_logscan_sql_command_the_page_prints_runs(tables):
    """The page's "All of them" commands, run as printed (their scan id: the fixture scan's);
    the followers' one says each difference in words, naming the other replica."""
    import shlex

    from logscan.report.data import queries

    scan_id = json.loads(CliRunner().invoke(main, ["sql", "--tables", str(tables), "--format", "json",
                                                   "SELECT scan_id FROM scans"]).stdout)["scan_id"]
    answers = {}
    for name, command in queries(str(tables), scan_id).items():
        args = shlex.split(command)
        assert args[:2] == ["logscan", "sql"]
        res = CliRunner().invoke(main, [*args[1:], "--format", "json"])
        assert res.exit_code == 0, (name, res.output)
        answers[name] = [json.loads(line) for line in res.stdout.splitlines()]
    assert answers["followers"], "the fixture has a lagging follower"
    assert all(r["replica_differences"].startswith("vs broker ") for r in answers["followers"])
    assert any("log_end_offset" in r["replica_differences"] for r in answers["followers"])


# --- in the browser --------------------------------------------------------------------------

def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={cwd / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def _screenshot(page: Path, tmp_path: Path, height: int = 1300, width: int = WIDTH):
    from PIL import Image

    png = page.with_suffix(f".{width}.png")
    shot = _chromium(f"--window-size={width},{height}", f"--screenshot={png}", "--hide-scrollbars",
                     page.as_uri(), cwd=tmp_path)
    assert shot.returncode == 0 and png.is_file(), shot.stderr[-2000:]
    img = Image.open(png).convert("RGB")
    assert img.size == (width, height)
    return img


def _only(html: str, section: str) -> str:
    """The page with <main> holding nothing but one section."""
    kept = re.search(rf"<section id={section}>.*?</section>", html, re.S)
    assert kept, section
    return html[:html.index("<main>") + len("<main>")] + kept.group(0) + html[html.index("</main>"):]


def _bars(img, color) -> list[tuple[int, int, int]]:
    """Horizontal bars of ``color``: (first row, x where the longest run starts, its length) per
    group of adjacent rows holding a run of at least 30 pixels (longer than a legend swatch)."""
    px = img.load()
    rows = []
    for y in range(img.height):
        best, start, run_start = (0, 0), None, 0
        for x in range(img.width + 1):
            inside = x < img.width and px[x, y] == color
            if inside and start is None:
                start = x
            if not inside and start is not None:
                if x - start > best[0]:
                    best, run_start = (x - start, start), start
                start = None
        rows.append((y, best[1], best[0]) if best[0] >= 30 else None)
    bars, current = [], None
    for row in rows + [None]:
        if row is None:
            if current:
                bars.append(max(current, key=lambda r: r[2]))
            current = None
        else:
            current = (current or []) + [row]
    return bars


@needs_chromium
def test_renders_in_headless_chromium(report, tmp_path):
    dom = _chromium("--dump-dom", report.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The browser's DOM (after parsing) still holds the candidates, the commands, the spans.
    for topic, partition, pid, _ in _hanging_live():
        assert f"<td>{topic}-{partition}</td>" in dom.stdout
    texts = _pre_texts(dom.stdout)
    for p in plans():
        assert p["command"] in texts.values()
    assert dom.stdout.count("copyCmd(") >= 2 * len(_hanging_live())
    assert dom.stdout.count('class="span open"') >= len(_hanging_live())

    whole = _screenshot(report, tmp_path)
    assert len(whole.getcolors(maxcolors=1 << 24)) > 200           # a real page, not a blank one
    assert whole.getpixel((WIDTH // 2, 10)) == INK                 # the header band


@needs_chromium
def test_lag_bars_are_drawn_in_the_ratio_of_kafkas_lso_lags(report, tmp_path):
    page = tmp_path / "lag.html"
    page.write_text(_only(report.read_text(), "lag-section"))
    bars = _bars(_screenshot(page, tmp_path, 700), RED)
    # Kafka's own numbers, recorded from the live cluster: HW minus read_committed end offset.
    lags = sorted((p["high_watermark"] - p["last_stable_offset"] for p in truth()["partitions"]
                   if p["high_watermark"] > p["last_stable_offset"]), reverse=True)
    assert len(bars) == len(lags), bars
    assert len({x for _, x, _ in bars}) == 1                       # bars share their left edge
    widths = [w for _, _, w in bars]                               # drawn top down, largest lag first
    for width, lag in zip(widths, lags):
        assert abs(width - LAG_BAR_PX * lag / lags[0]) <= 3, (widths, lags)


@needs_chromium
def test_open_spans_run_to_the_as_of_line(report, tmp_path):
    page = tmp_path / "timeline.html"
    page.write_text(_only(report.read_text(), "timeline-section"))
    img = _screenshot(page, tmp_path, 700)
    spans = _bars(img, RED)
    # Kafka's own describe-producers on each leader: partitions with a transaction still open.
    open_partitions = {(p["topic"], p["partition"]) for p in truth()["partitions"]
                       if any(r["CurrentTransactionStartOffset"] not in ("-1", "None")
                              for r in p["producers"][str(p["leader"])]["rows"])}
    assert open_partitions and len(spans) == len(open_partitions), spans
    ends = {x + w for _, x, w in spans}
    assert max(ends) - min(ends) <= 2, spans                       # all open up to the same moment
    # The dashed as-of line is drawn where they end, in the ink color, across the rows.
    as_of_x = max(ends)
    column = [img.getpixel((x, y)) for y in range(spans[0][0] - 30, spans[-1][0] + 30)
              for x in range(as_of_x - 3, as_of_x + 4)]
    assert column.count(INK) >= 20


#: Run in the page once it has loaded (a copy of the report with this script added): measures
#: the layout and presses "copy all plans", with a clipboard that keeps what it is given, then
#: writes what it found into <body data-probe data-copied> for --dump-dom to show.
PROBE = """
window.addEventListener('load', () => {
  const b = document.body, out = {viewport: window.innerWidth, page: document.documentElement.scrollWidth};
  out.scrolled = [...document.querySelectorAll('.wide, pre')].filter(e => e.getClientRects().length &&
                                                                        e.scrollWidth > e.clientWidth + 1).length;
  out.split = [...document.querySelectorAll('pre .w')].filter(w =>
      new Set([...w.getClientRects()].map(r => Math.round(r.top))).size > 1).map(w => w.textContent);
  out.words = document.querySelectorAll('pre .w').length;
  out.svgs = [...document.querySelectorAll('svg')].map(s => [s.getBoundingClientRect().width,
                                                             s.parentElement.clientWidth]);
  Object.defineProperty(navigator, 'clipboard', {value: {writeText: t => { b.dataset.copied = t;
                                                                           return Promise.resolve(); }}});
  document.execCommand = () => { b.dataset.copied = document.querySelector('body > textarea').value; return true; };
  document.querySelector('button.copyall').click();
  b.dataset.probe = JSON.stringify(out);
});
"""


@needs_chromium
@pytest.mark.parametrize("width", [NARROW, WIDTH])
def test_the_page_fits_the_window_commands_wrap_at_spaces_and_copy_all_copies_every_plan(report, tmp_path, width):
    page = tmp_path / "probe.html"
    page.write_text(report.read_text().replace("</head>", f"<script>{PROBE}</script></head>", 1))
    dom = _chromium(f"--window-size={width},2000", "--virtual-time-budget=3000", "--dump-dom", page.as_uri(),
                    cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    probe = json.loads(htmllib.unescape(re.search(r'data-probe="([^"]*)"', dom.stdout).group(1)))
    assert probe["viewport"] == width and probe["page"] <= width, probe      # no sideways scrolling
    assert probe["scrolled"] == 0, probe          # no table nor command wider than its box
    assert probe["words"] > 0 and probe["split"] == [], probe                # lines break at spaces only
    assert len(probe["svgs"]) == 2 and all(w <= room + 1 for w, room in probe["svgs"]), probe  # charts scale
    copied = htmllib.unescape(re.search(r'data-copied="([^"]*)"', dom.stdout).group(1))
    assert copied.splitlines() == [p["command"] for p in sorted(
        plans(), key=lambda p: (p["topic"], p["partition"], p["producer_id"], p["start_offset"]))]


@needs_chromium
def test_lag_bars_keep_their_ratio_at_a_narrow_width(report, tmp_path):
    page = tmp_path / "lag.html"
    page.write_text(_only(report.read_text(), "lag-section"))
    img = _screenshot(page, tmp_path, 700, width=NARROW)
    bars = _bars(img, RED)
    lags = sorted((p["high_watermark"] - p["last_stable_offset"] for p in truth()["partitions"]
                   if p["high_watermark"] > p["last_stable_offset"]), reverse=True)
    assert len(bars) == len(lags), bars
    widths = [w for _, _, w in bars]
    assert widths[0] < LAG_BAR_PX                                  # scaled down to the window
    for width, lag in zip(widths, lags):
        assert abs(width - widths[0] * lag / lags[0]) <= 3, (widths, lags)
