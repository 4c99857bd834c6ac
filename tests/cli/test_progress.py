"""Progress bars: drawn on stderr for a person at a terminal, never anywhere else.

The commands run as subprocesses with stderr on a pipe (a script, CI) and on a pseudo
terminal (a person): the first must print exactly what `--no-progress` prints, the second
must draw bytes, files and rate while stdout stays byte for byte the same."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from logscan import progress

from .conftest import HANGING

BROKERS = HANGING / "brokers"
SEGMENTS = sorted(str(p) for p in BROKERS.glob("broker-*/*/*.log"))
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "logscan.cli", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}


def _piped(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(*args), capture_output=True, env=_env(), timeout=300)


def _on_terminal(args: list[str], tmp_path: Path, *, stdout_too: bool = False) -> tuple[int, bytes, bytes]:
    """Runs with stderr (and optionally stdout) on a pseudo terminal; returns (status,
    stdout bytes, everything the terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    out_path = tmp_path / "stdout"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(_cmd(*args), stdin=subprocess.DEVNULL, stdout=slave if stdout_too else out,
                                stderr=slave, env=_env())
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:          # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    status = proc.wait(timeout=300)
    return status, out_path.read_bytes(), bytes(seen)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> list[str]:
    """The fixture's segments plus one with a zero-filled tail (a finding on stderr)."""
    folder = tmp_path_factory.mktemp("damaged") / "hang-0"
    folder.mkdir()
    bad = folder / "00000000000000000000.log"
    shutil.copyfile(BROKERS / "broker-1" / "hang-0" / "00000000000000000000.log", bad)
    with open(bad, "ab") as f:
        f.write(bytes(4096))
    return [*SEGMENTS, str(bad)]


def test_piped_dump_is_unchanged(damaged):
    default = _piped(["dump", "--deep-iteration", *damaged])
    quiet = _piped(["dump", "--deep-iteration", "--no-progress", *damaged])
    assert default.returncode == quiet.returncode == 1        # the zero-filled tail
    assert default.stdout == quiet.stdout and default.stderr == quiet.stderr
    assert b"zero bytes" in default.stderr and not ANSI.search(default.stderr) and b"\r" not in default.stderr


def test_piped_scan_is_unchanged():
    default = _piped(["scan", str(BROKERS)])
    quiet = _piped(["scan", "--no-progress", str(BROKERS)])
    assert default.returncode == quiet.returncode == 4         # the fixture's hanging transactions
    assert default.stdout == quiet.stdout and default.stderr == quiet.stderr == b""


def test_dump_draws_bytes_files_and_rate_on_a_terminal(damaged, tmp_path):
    status, stdout, terminal = _on_terminal(["dump", "--deep-iteration", *damaged], tmp_path)
    piped = _piped(["dump", "--deep-iteration", *damaged])
    assert status == 1 and stdout == piped.stdout
    text = ANSI.sub(b"", terminal).decode()
    # The bar's last frame: every file and byte counted, a rate.
    total = sum(os.path.getsize(p) for p in damaged)
    assert f"{len(damaged)}/{len(damaged)} files" in text
    assert re.search(r"(\d+\.\d+)/\1 kB", text) and f"{total / 1000:.1f}/" in text
    assert re.search(r"[\d.]+ [kMG]?B/s", text)
    # A finding written while the bar is up arrives whole, on a line of its own.
    finding = next(line for line in piped.stderr.decode().splitlines() if "zero bytes" in line)
    assert finding in text.replace("\r\n", "\n").splitlines()


def test_no_progress_and_stdout_on_the_terminal_draw_nothing(damaged, tmp_path):
    _, _, quiet = _on_terminal(["dump", "--no-progress", *damaged], tmp_path)
    assert b"files" not in quiet and b"zero bytes" in quiet
    # The lines themselves are the progress when stdout is the same terminal.
    _, _, shared = _on_terminal(["dump", *SEGMENTS[:3]], tmp_path, stdout_too=True)
    assert b"baseOffset" in shared and b"/3 files" not in shared


def test_scan_draws_a_bar_over_every_segment(tmp_path):
    status, stdout, terminal = _on_terminal(["scan", str(BROKERS)], tmp_path)
    assert status == 4 and stdout == _piped(["scan", str(BROKERS)]).stdout
    assert f"{len(SEGMENTS)}/{len(SEGMENTS)} files" in ANSI.sub(b"", terminal).decode()


def test_scan_moves_its_bar_through_the_on_file_callback(monkeypatch):
    import io

    from rich.console import Console

    from logscan.scan import pipeline

    bars, original = [], pipeline.decode

    class Recording(progress.Bar):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, console=Console(file=io.StringIO(), force_terminal=True), **kwargs)
            bars.append(self)
            assert pipeline.decode is original  # nothing is wrapped

    monkeypatch.setattr(progress, "Bar", Recording)
    result = progress.scan([BROKERS], enabled=True)
    (bar,) = bars
    assert bar.files_done == bar.total_files == len(SEGMENTS)
    assert bar.bytes_done == result.bytes_read == sum(os.path.getsize(p) for p in SEGMENTS)
    assert progress.scan([BROKERS], enabled=False).bytes_read == result.bytes_read and len(bars) == 1


def test_wanted_only_for_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    with open(tmp_path / "f", "w") as f:
        assert not progress.wanted(False, stderr=f)
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty, open(tmp_path / "g", "w") as f:
            assert progress.wanted(False, stderr=tty)
            assert not progress.wanted(True, stderr=tty)
            assert progress.wanted(False, output_on_stdout=True, stderr=tty, stdout=f)
            assert not progress.wanted(False, output_on_stdout=True, stderr=tty, stdout=tty)
    finally:
        os.close(master)
        os.close(slave)
