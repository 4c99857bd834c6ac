"""`logscan dump` of a segment that shrinks while it is read (issue 33 item 2).

A follower truncating its active segment (or a copy being rewritten) makes a file shorter
under a reader. A mapping of the old length then kills the process with SIGBUS at the first
page past the new end; the dump reads its windows instead (logscan.logdir.segment.LogWindows),
and the bytes that went missing are a located finding, exit status 1 as for a cut file. The file is a real one a Kafka broker wrote (the `pending` cluster's
metadata log, 15,646 bytes in 80-odd batches); it is truncated at a fixed point of the dump,
when its first batch is printed, so nothing depends on timing.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from logscan.dump import EXIT_DATA, EXIT_OK
from logscan.dump.sinks import JsonSink

from .harness import REPO, batch_spans, dump_json

REAL = REPO / "fixtures" / "pending" / "brokers" / "broker-0" / "__cluster_metadata-0" / "00000000000000000000.log"


def _copy(tmp_path):
    target = tmp_path / "__cluster_metadata-0" / REAL.name
    target.parent.mkdir()
    shutil.copy(REAL, target)
    return target


def _truncate_at_first_batch(monkeypatch, path, size: int) -> None:
    """The file is cut to ``size`` bytes when the dump prints its first batch."""
    printed = JsonSink.batch
    done = []

    def batch(self, b):
        if not done:
            done.append(True)
            with open(path, "r+b") as f:
                f.truncate(size)
        printed(self, b)

    monkeypatch.setattr(JsonSink, "batch", batch)


def _first_unread(window: int, cut: int) -> int:
    """Where the dump's read fails when the file is cut to ``cut`` bytes after its first
    window: each window starts at the first batch the one before did not hold whole, and
    the first window reaching past ``cut`` comes back short."""
    spans = batch_spans(REAL.read_bytes())
    pos = 0
    while True:
        stop = pos + window
        if pos > 0 and stop > cut:
            return pos
        pos = next(p for p, size in spans if p + size > stop)


def test_the_reference_is_several_windows_long():
    spans = batch_spans(REAL.read_bytes())
    assert len(spans) > 20 and spans[-1][0] + spans[-1][1] == REAL.stat().st_size > 8192


@pytest.mark.parametrize("window", [2048, 4096])
def test_a_segment_cut_while_read_is_a_located_finding(tmp_path, monkeypatch, window):
    """Windows of ``window`` bytes: the first is read whole, then the file is cut to 5,000
    bytes; the first window reaching past that comes back short. Everything read before the cut is
    printed as from the untouched file, records included, and the rest is one finding at
    the first byte not read."""
    reference = dump_json(REAL, window_bytes=window)
    assert reference.status == EXIT_OK and not reference.findings
    path = _copy(tmp_path)
    _truncate_at_first_batch(monkeypatch, path, 5000)
    run = dump_json(path, window_bytes=window)

    first_unread = _first_unread(window, 5000)
    read = [b for b in reference.batches if b["position"] < first_unread]
    assert run.batches == read
    assert {p: run.records[p] for p in run.records} == {b["position"]: reference.records[b["position"]] for b in read}
    assert run.status == EXIT_DATA
    [finding] = run.findings
    assert finding["reason"] == "shrank" and finding["position"] == first_unread
    assert finding["file"] == str(path)
    assert finding["length"] == REAL.stat().st_size - first_unread
    assert f"{REAL.stat().st_size} bytes when opened, 5000 now" in finding["message"]


def test_a_segment_cut_to_nothing_is_a_finding_at_its_first_unread_byte(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    _truncate_at_first_batch(monkeypatch, path, 0)
    run = dump_json(path, window_bytes=1024)
    assert run.status == EXIT_DATA
    assert [f["reason"] for f in run.findings] == ["shrank"]
    assert run.findings[0]["position"] == run.batches[-1]["position"] + next(
        size for pos, size in batch_spans(REAL.read_bytes()) if pos == run.batches[-1]["position"])


_SCRIPT = textwrap.dedent("""
    import sys
    from logscan.cli import main
    from logscan.dump.sinks import TextSink

    path, size = sys.argv[1], int(sys.argv[2])
    printed = TextSink.batch
    done = []

    def batch(self, b):
        if not done:
            done.append(True)
            with open(path, "r+b") as f:
                f.truncate(size)
        printed(self, b)

    TextSink.batch = batch
    main(["dump", "--deep-iteration", path])
""")


def test_the_command_never_dies_of_sigbus(tmp_path):
    """The command as a person runs it (text, default windows), the file cut to 100 bytes
    once the first batch is printed: a whole-file mapping dies of SIGBUS at the next page.
    The dump reads the 15 KB in one window before it prints, so it prints the file as it
    was when read, whole, and exits 0."""
    path = _copy(tmp_path)
    untouched = subprocess.run([sys.executable, "-m", "logscan.cli", "dump", "--deep-iteration", str(path)],
                               cwd=REPO, capture_output=True, text=True, timeout=120)
    assert untouched.returncode == EXIT_OK
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(path), "100"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert proc.returncode == EXIT_OK, proc.stderr
    assert proc.stdout == untouched.stdout
    assert path.stat().st_size == 100
