"""A segment that shrinks while the walk reads past damage in it (issue 33).

After damage the walk has to find where the next entry starts, which may be anywhere further
on; it used to map the whole rest of the log for that and walk on in that one mapping. A
follower truncating its active segment (or a copy being rewritten) under such a mapping kills
the process with SIGBUS at the first page past the new end: the dump (whose windows are
otherwise read) and the scan alike. The resync and the walk after it now read a window at a
time as well, so the bytes that went missing are a located ``shrank`` finding and everything
read before the cut is reported as from the untouched file.

The segment is made of the real batches of the tv2 cluster's codecs-0 (one per codec) under
increasing offsets: 64 KiB of them, 300 bytes of garbage, then 10 MiB more (past the 8 MiB
below which even the old rest-of-the-log window was read rather than mapped). It is cut, to
1 MiB past the garbage, when the first batch after the garbage is printed (the dump) or read
(the scan): a fixed point of the walk, so nothing depends on timing. Subprocesses, as a
SIGBUS kills whatever process meets it.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap

import pytest

from logscan.dump import EXIT_DATA
from logscan.logdir.segment import LOG_WINDOW_BYTES
from logscan.testing.encoder import with_base_offset

from .bigfile import real_batches
from .harness import REPO, batch_spans

MiB = 1 << 20
GARBAGE = 300
#: The dump's windows (logscan.dump.options.DUMP_WINDOW_BYTES) are the scan's.
WINDOW = LOG_WINDOW_BYTES


def _batches_until(size: int, offset: int) -> tuple[bytes, int]:
    batches = real_batches()
    out = bytearray()
    while len(out) < size:
        out += with_base_offset(batches[offset // 5 % len(batches)], offset)
        offset += 5
    return bytes(out), offset


@pytest.fixture
def segment(tmp_path):
    """(path, where the garbage starts, where the walk resumes after it, the size it is cut to)."""
    head, offset = _batches_until(64 << 10, 0)
    tail, _ = _batches_until(10 * MiB, offset)
    garbage = bytes(random.Random(33).randbytes(GARBAGE))
    path = tmp_path / "codecs-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(head + garbage + tail)
    resume = len(head) + GARBAGE
    return path, len(head), resume, resume + MiB


def _first_unread(path, resume: int) -> int:
    """Where the read fails: the window from ``resume`` is read whole before the cut, and the
    next one starts at the first batch it did not hold whole."""
    data = path.read_bytes()
    return next(p for p, size in batch_spans(data[resume:]) if p + size > WINDOW) + resume


_DUMP = textwrap.dedent("""
    import sys
    from logscan.cli import main
    from logscan.dump.sinks import TextSink

    path, after, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    printed = TextSink.batch

    def batch(self, b):
        if b.position > after and not getattr(TextSink, "cut", False):
            TextSink.cut = True
            with open(path, "r+b") as f:
                f.truncate(size)
        printed(self, b)

    TextSink.batch = batch
    main(["dump", "--deep-iteration", path])
""")


def test_the_dump_never_dies_of_sigbus_in_the_resync_after_damage(segment):
    path, damage, resume, cut = segment
    first_unread = _first_unread(path, resume)
    spans = batch_spans(path.read_bytes()[resume:])
    proc = subprocess.run([sys.executable, "-c", _DUMP, str(path), str(damage), str(cut)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert proc.returncode == EXIT_DATA, proc.stderr[-2000:]
    assert path.stat().st_size == cut
    findings = [line for line in proc.stderr.splitlines() if line.startswith("logscan: ")]
    size = resume + spans[-1][0] + spans[-1][1]
    assert findings[-1] == (f"logscan: {path}: byte {first_unread}: the file shrank while it was read ({size} "
                            f"bytes when opened, {cut} now: a follower truncating its active segment?); the "
                            f"{size - first_unread} bytes from here on are not read"), findings
    # the damage itself, then the shrink: nothing else
    assert [f.split(": ")[2] for f in findings] == [f"byte {damage + 8}", f"byte {damage}", f"byte {first_unread}"]
    # every batch before the first unread byte is printed, as from the untouched file
    printed = [int(line.split("position: ")[1].split()[0]) for line in proc.stdout.splitlines()
               if line.startswith("baseOffset:")]
    whole = [p for p, _ in batch_spans(path.read_bytes()[:damage])] + [resume + p for p, _ in spans]
    assert printed == [p for p in whole if p < first_unread]


_SCAN = textwrap.dedent("""
    import json, sys
    from logscan.scan.replica import read_segment

    path, after, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    read, cut = [], []

    def on_fact(fact, entry):
        if entry.position > after and not cut:
            cut.append(True)
            with open(path, "r+b") as f:
                f.truncate(size)
        read.append(entry.position)

    out = read_segment(path, 0, is_txn_log=False, on_fact=on_fact)
    print(json.dumps({"read": read, "findings": [[f.position, f.reason, f.length, f.message] for f in out.findings]}))
""")


def test_the_scan_never_dies_of_sigbus_in_the_resync_after_damage(segment):
    """The scan's reader (logscan.scan.replica.read_segment, both executors' unit of work): the
    batches before the first unread byte are read, the damage and the shrink are findings."""
    path, damage, resume, cut = segment
    first_unread = _first_unread(path, resume)
    data = path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", _SCAN, str(path), str(damage), str(cut)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    whole = [p for p, _ in batch_spans(data[:damage])] + [resume + p for p, _ in batch_spans(data[resume:])]
    assert got["read"] == [p for p in whole if p < first_unread]
    reasons = [(position, reason) for position, reason, _, _ in got["findings"]]
    assert reasons[-2:] == [(damage, "skipped"), (first_unread, "shrank")], reasons
    _, _, length, message = got["findings"][-1]
    assert length == len(data) - first_unread
    assert f"({len(data)} bytes when opened, {cut} now" in message
