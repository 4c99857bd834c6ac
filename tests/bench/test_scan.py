"""The Spark scan benchmark (tools/bench/scan.py): its fits and verdicts say what the figures
say, and a whole run on tiny copies (one Spark session, local[2]) prints every figure and
target, with every Spark scan checked complete and the Python workers found and sampled.
No timing is asserted: speed is `make bench`'s."""

from __future__ import annotations

import re

import pytest

from tools.bench import scan as bench
from spark_jobs.session import DELTA_LIBS


def test_linear_fit_recovers_a_line():
    a, b, r2 = bench.linear_fit([10, 100, 1000], [2 + 0.5 * x for x in (10, 100, 1000)])
    assert (round(a, 9), round(b, 9), round(r2, 9)) == (2, 0.5, 1)


def test_growth_tells_linear_from_superlinear():
    xs = [10, 100, 1000]
    assert bench.growth(xs, [5 + 0.1 * x for x in xs])[0] is True           # fixed + per unit
    assert bench.growth(xs, [5 + 0.001 * x * x for x in xs])[0] is False    # quadratic
    # Flat lower step (fixed cost dominates), then proportional: still linear.
    assert bench.growth(xs, [30, 29, 290])[0] is True
    assert bench.growth(xs, [30, 29, 400])[0] is False


def test_parse_size():
    assert bench.parse_size("1g") == 1 << 30
    assert bench.parse_size("512m") == 512 << 20
    assert bench.parse_size("4096") == 4096


def test_copies_and_the_single_process_figures(tmp_path):
    tiny = bench.Copy.make(bench.copy_set(2, 4), tmp_path)
    assert tiny.files == len(list(tiny.path.rglob("*.log")))
    assert tiny.bytes == sum(p.stat().st_size for p in tiny.path.rglob("*.log"))
    assert tiny.replicas == 12
    mem = bench.Copy.make(bench.memory_set(2), tmp_path)
    assert len(list(mem.path.glob("broker-1/bench-000-0/*.log"))) == 1
    biggest, n = bench.largest_batch(mem.path)
    assert 0.85 * 16384 <= biggest <= 16384
    assert n == mem.batches
    assert bench.local_scan(tiny) > 0 and bench.local_decode(tiny) > 0


@pytest.mark.spark
@pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")), reason="Delta jars missing: run `make delta-jars`")
def test_a_whole_run_on_tiny_copies(tmp_path, capsys):
    # Copies shared between series are scanned once (4m-10p is the tiny, bench, size and
    # partition copy at once; 4m-2p the partition and the few-files copy), which keeps this to
    # one session of nine scans.
    assert bench.main(["--cores", "2", "--bench", "4:10", "--sizes-mb", "1,2,4", "--partitions-at", "10",
                       "--partition-counts", "2,5,10", "--size-at-mb", "4", "--files-mb", "4",
                       "--memory-mb", "2,4", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "INVALID" not in out and "FAILED" not in out and "!!" not in out, out
    run = re.search(r"spark local\[2\], scan of the copy .* peak RssAnon (\d+) MiB, VmHWM (\d+) MiB; "
                    r"JVM VmHWM (\d+) MiB", out)
    assert run and all(int(v) > 0 for v in run.groups()), out
    targets = out.split("Targets (issue 7):")[1].splitlines()[1:]
    names = ["overhead per file", "within 2x of the single-process", "near-linear with cores",
             "spark time linear in size", "single time linear in size", "spark time linear in partitions",
             "single time linear in partitions", "peak memory per task"]
    for name in names:
        (line,) = [t for t in targets if name in t]
        assert re.match(r"\s+\[(    met|NOT met|    n/a)\]", line), line
    assert "[    n/a] near-linear with cores: one core count" in out
    # The memory-limit run needs a file larger than the limit: not at this size, and it says so.
    assert "limit run skipped" in out
