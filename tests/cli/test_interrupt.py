"""Ctrl-C is a status of its own (issue 34): 130, one line on stderr, never click's "Aborted!"
with exit 1, which every command documents as damage found or a failed statement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

import logscan.cli as cli

REPO = Path(__file__).resolve().parents[2]


def test_sigint_while_dump_waits_on_a_fifo_exits_130(tmp_path):
    # A real SIGINT: `logscan dump` of a FIFO blocks in open() until a writer comes.
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "logscan.cli", "dump", str(fifo)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        time.sleep(2.0)   # started and blocked
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == cli.EXIT_INTERRUPTED == 130, err
    assert "logscan: interrupted (Ctrl-C)" in err and "Aborted!" not in err and "Traceback" not in err, err


def test_ctrl_c_during_a_scan_exits_130(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_local_scan", interrupted)
    for command in ("scan", "plan"):
        result = CliRunner().invoke(cli.main, [command, str(REPO / "fixtures" / "hanging" / "brokers")])
        assert result.exit_code == 130, (command, result.output)
        assert "interrupted (Ctrl-C)" in result.output and "Aborted!" not in result.output
