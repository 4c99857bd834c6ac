"""Segments larger than this process's address space (an RLIMIT_AS such as the one
spark.executor.pyspark.memory sets): the scan and the dump read them a window at a time,
whole, and never read a prefix as if the file ended there (which would show as a cut that is
not in the file)."""

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from logscan.logdir.segment import Finding
from logscan.testing.encoder import Rec, encode_batch

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


def test_dump_reads_a_file_larger_than_its_address_space(big_log):
    """The dump reads a window at a time too (issue 33): the 2 GiB of zeros are read to
    --max-bytes' default (2^31 - 1) and said so, never taken for a cut file."""
    run = _limited(f"import sys; from logscan.cli import main; sys.argv = ['logscan', 'dump', {str(big_log)!r}]; main()")
    assert run.returncode == 1, run.stderr
    assert "cannot map" not in run.stderr and "truncated" not in run.stderr
    assert f"byte 0: {2**31 - 1} zero bytes up to byte {2**31 - 1}, where --max-bytes stops the read" in run.stderr
    assert f"raise the limit with --max-bytes {SIZE}" in run.stderr


def _scan_under_limit(path: Path, limit: int = LIMIT) -> list[str]:
    run = _limited(f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
                   "from logscan.scan.replica import read_segment\n"
                   f"out = read_segment({str(path)!r}, 0, is_txn_log=False)\n"
                   "print(out.batches, out.facts[-1].last_offset if out.facts else None)\n"
                   "for f in out.findings: print(f.position, f.reason, f.length, f.message)")
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def _batches(count: int, size: int) -> list[bytes]:
    per = size // 1024
    return [encode_batch([Rec(bytes(1000)) for _ in range(per)], base_offset=i * per) for i in range(count)]


def test_the_scan_reads_a_clean_segment_larger_than_its_address_space(tmp_path):
    """192 MiB of batches under a 128 MiB limit: every batch read, nothing reported."""
    batches = _batches(4, 256 << 10)
    log = tmp_path / "big-0" / "00000000000000000000.log"
    log.parent.mkdir()
    n = (192 << 20) // len(batches[0])
    with open(log, "wb") as fh:
        for i in range(n):
            fh.write(batches[i % len(batches)])
    assert log.stat().st_size > 128 << 20
    lines = _scan_under_limit(log, 128 << 20)
    assert lines == [f"{n} {(n - 1) % len(batches) * 256 + 255}"], lines[:3]


def test_the_scan_reads_a_zero_filled_segment_larger_than_its_address_space(big_log):
    """A preallocated segment of zeros: one zero-fill finding for all of it, as one walk
    of the whole file gives, not an io finding."""
    assert _scan_under_limit(big_log) == ["0 None", f"0 zero-fill {SIZE} {SIZE} zero bytes where entries should be"]


def test_the_scan_resumes_after_a_zero_hole_larger_than_its_address_space(big_log):
    """Batches at the start and 1.5 GiB further: both read, the hole reported between them."""
    head, tail = _batches(2, 4096)
    with open(big_log, "r+b") as fh:
        fh.write(head)
        fh.seek(3 * LIMIT // 2)
        fh.write(tail)
    hole = 3 * LIMIT // 2 - len(head)
    assert _scan_under_limit(big_log) == [
        "2 7",
        f"{len(head)} zero-fill {hole} {hole} zero bytes where entries should be, resuming at byte {3 * LIMIT // 2}",
        f"{3 * LIMIT // 2 + len(tail)} zero-fill {SIZE - 3 * LIMIT // 2 - len(tail)} "
        f"{SIZE - 3 * LIMIT // 2 - len(tail)} zero bytes where entries should be"]


def test_damage_is_stepped_over_within_the_address_space(big_log):
    """Garbage after the first batch: resynchronising searches the rest of the file (2 GiB,
    twice the limit) a window at a time, as the walk does, so the findings are those of one
    walk of the whole file: the bad size field, then one region to the end."""
    head, = _batches(1, 4096)
    with open(big_log, "r+b") as fh:
        fh.write(head + b"\xff" * 100)
    assert _scan_under_limit(big_log) == [
        "1 3", f"{len(head) + 8} corrupt None Found record size -1 smaller than minimum record overhead (14)",
        f"{len(head)} skipped {SIZE - len(head)} skipped {SIZE - len(head)} unreadable bytes"]


def test_without_the_limit_the_file_maps(big_log):
    """The same file maps whole without the limit: the finding above is the limit's doing."""
    from logscan.logdir.segment import open_segment

    with open_segment(str(big_log)) as seg:
        assert seg.size == SIZE and seg.unread_bytes == 0


# --- the scan's opens: regular files only (issue 33) ---------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("opener", ["LogWindows", "SegmentFile", "read_small_file"])
@pytest.mark.parametrize("make", ["fifo", "link", "folder"])
def test_the_scans_opens_take_a_regular_file_only(tmp_path, opener, make):
    """A FIFO is not waited on (the test would hang), a link is not followed, even to a
    regular file, and a folder is not read: each is a NotRegularFile saying what it is."""
    from logscan.logdir.segment import LogWindows, NotRegularFile, SegmentFile, io_finding, read_small_file

    (tmp_path / "real.log").write_bytes(b"\0" * 100)
    path = tmp_path / "00000000000000000000.log"
    {"fifo": lambda: os.mkfifo(path), "link": lambda: path.symlink_to("real.log"), "folder": path.mkdir}[make]()
    open_it = {"LogWindows": lambda: LogWindows(str(path)).__enter__(),
               "SegmentFile": lambda: SegmentFile(str(path), regular_only=True).__enter__(),
               "read_small_file": lambda: read_small_file(path, 1 << 20)}[opener]
    with pytest.raises(NotRegularFile) as e:
        open_it()
    what = {"fifo": "a FIFO (named pipe)", "link": "a symbolic link", "folder": "a folder"}[make]
    reason = {"fifo": "not-regular", "link": "link", "folder": "io"}[make]
    assert io_finding(str(path), e.value) == Finding(str(path), -1, reason, f"not read: {what}, not a regular file")


def test_a_regular_file_swapped_for_a_link_after_the_check_is_not_followed(tmp_path, monkeypatch):
    """O_NOFOLLOW: the lstat saw a regular file, the open meets a link (a race, or a copy
    changing under the scan) and fails rather than follow it."""
    from logscan.logdir import segment

    path = tmp_path / "00000000000000000000.log"
    (tmp_path / "secret").write_bytes(b"secret")
    path.symlink_to(tmp_path / "secret")
    regular = os.lstat(tmp_path / "secret")
    monkeypatch.setattr(segment.os, "lstat", lambda p: regular)
    with pytest.raises(OSError) as e:
        segment.read_small_file(path, 1 << 20)
    assert e.value.errno == errno.ELOOP
