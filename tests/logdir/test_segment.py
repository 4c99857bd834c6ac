"""A regular file too large to map in this process's address space is an io finding, never a
prefix read as if the file ended there (which would show as a cut that is not in the file)."""

import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIMIT = 1 << 30  # the address space a Spark worker gets from spark.executor.pyspark.memory=1g
SIZE = 2 * LIMIT


def _limited(code: str) -> subprocess.CompletedProcess:
    prelude = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))\n"
    return subprocess.run([sys.executable, "-c", prelude + code], cwd=REPO, capture_output=True, text=True)


@pytest.fixture
def big_log(tmp_path) -> Path:
    """A sparse 2 GiB segment: no disk blocks, but more than the limit can map."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < LIMIT:
        pytest.skip("this process already runs under a smaller address-space limit")
    log = tmp_path / "big-0" / "00000000000000000000.log"
    log.parent.mkdir()
    with open(log, "wb") as fh:
        fh.truncate(SIZE)
    return log


def test_dump_says_it_cannot_map_the_file(big_log):
    run = _limited(f"import sys; from logscan.cli import main; sys.argv = ['logscan', 'dump', {str(big_log)!r}]; main()")
    assert run.returncode == 3, run.stderr
    assert f"cannot map its {SIZE} bytes: out of address space" in run.stderr
    assert "truncated" not in run.stderr and "zero" not in run.stderr


def test_scan_reports_an_io_finding_for_the_whole_file(big_log):
    run = _limited("from logscan.scan.replica import read_segment\n"
                   f"out = read_segment({str(big_log)!r}, 0, is_txn_log=False)\n"
                   "for f in out.findings: print(f.position, f.reason, f.message)")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("-1 io ") and "cannot map" in lines[0], lines


def test_without_the_limit_the_file_maps(big_log):
    """The same file maps whole without the limit: the finding above is the limit's doing."""
    from logscan.logdir.segment import open_segment

    with open_segment(str(big_log)) as seg:
        assert seg.size == SIZE and seg.unread_bytes == 0
