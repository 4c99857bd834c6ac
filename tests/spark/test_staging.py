"""Staging folders of catalog runs (spark_jobs.staging): a run removes the folders of runs
that are gone, never a live run's. No Spark: the runs here are real processes holding a
StagingRun (its marker and heartbeat) as the job's driver does, killed with SIGKILL; the job
itself killed and run again is tests/spark/test_catalog.py's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_jobs import staging
from spark_jobs.staging import MARKER, StagingRun

REPO = Path(__file__).resolve().parents[2]
#: Generous bound for a loaded machine: hitting it is a failure, not a timing.
START_TIMEOUT_S = 60

HOLDER = """
import sys, threading
from spark_jobs.staging import StagingRun
run = StagingRun(sys.argv[1], "held")
run.start()
from spark_jobs.staging import _fs
fs, path = _fs(sys.argv[1])
with fs.open_output_stream(path + "/part-0.parquet") as out:
    out.write(b"staged")
print("ready", flush=True)
threading.Event().wait()
"""


class Holder:
    """A process holding a run's staging folder under ``base`` (started, then waiting)."""

    def __init__(self, base: str, name: str, **env):
        self.root = f"{base}/run-{name}"
        env = {**os.environ, "PYTHONPATH": str(REPO), **env}
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, self.root], stdout=subprocess.PIPE,
                                     env=env, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(START_TIMEOUT_S)


def _runs(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir()) if base.exists() else []


def test_a_live_runs_folder_is_kept_and_a_killed_ones_removed_by_the_next_run(tmp_path):
    base = tmp_path / "staging"
    live, killed = Holder(str(base), "live"), Holder(str(base), "killed")
    try:
        killed.kill()
        marker = json.loads((base / "run-killed" / MARKER).read_text())
        assert marker["pid"] == killed.proc.pid and marker["scan_id"] == "held"
        run = StagingRun(str(base / "run-next"), "next")
        assert run.start() == [str(base / "run-killed")]
        assert _runs(base) == ["run-live", "run-next"]   # the live one kept, files and all
        assert (base / "run-live" / "part-0.parquet").read_bytes() == b"staged"
        run.end()
        assert _runs(base) == ["run-live"]
    finally:
        live.kill()
    run = StagingRun(str(base / "run-after"), "after")
    assert run.start() == [str(base / "run-live")]   # gone now
    run.end()
    assert _runs(base) == []


def _marker(base: Path, name: str, age_s: float, **fields) -> Path:
    folder = base / name
    folder.mkdir(parents=True)
    if fields:
        (folder / MARKER).write_text(json.dumps(fields))
    for p in [*folder.iterdir(), folder]:
        then = time.time() - age_s
        os.utime(p, (then, then))
    return folder


def test_a_run_elsewhere_is_gone_when_its_marker_was_not_renewed_for_the_limit(tmp_path):
    base = tmp_path / "staging"
    elsewhere = {"host": "worker-7", "pid": 1, "start_ticks": 5, "boot_id": "another-boot", "pid_ns": "pid:[1]"}
    _marker(base, "run-renewed", staging.GONE_AFTER_S / 2, **elsewhere)
    _marker(base, "run-stale", staging.GONE_AFTER_S + 60, **elsewhere)
    _marker(base, "run-old-unmarked", staging.GONE_AFTER_S + 60)
    _marker(base, "run-young-unmarked", 1)
    _marker(base, "not-a-run", staging.GONE_AFTER_S * 10)
    run = StagingRun(str(base / "run-me"))
    assert sorted(run.start()) == [str(base / "run-old-unmarked"), str(base / "run-stale")]
    assert _runs(base) == ["not-a-run", "run-me", "run-renewed", "run-young-unmarked"]
    run.end()


def test_a_process_id_used_again_is_not_the_run(tmp_path):
    base = tmp_path / "staging"
    me = staging.this_process()
    if "start_ticks" not in me:
        pytest.skip("no /proc: a run is known gone by its marker's age only")
    # this very process's pid, but another start: the run that wrote it is gone
    _marker(base, "run-reused", 0, **{**me, "start_ticks": me["start_ticks"] - 1})
    _marker(base, "run-same", 0, **me)
    run = StagingRun(str(base / "run-me"))
    assert run.start() == [str(base / "run-reused")]
    run.end()
    assert _runs(base) == ["run-same"]


def test_a_live_run_renews_its_marker(tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "HEARTBEAT_S", 0.05)
    run = StagingRun(str(tmp_path / "run-beating"))
    run.start()
    marker = tmp_path / "run-beating" / MARKER
    then = time.time() - staging.GONE_AFTER_S * 2
    os.utime(marker, (then, then))
    deadline = time.monotonic() + START_TIMEOUT_S
    while marker.stat().st_mtime < then + 1:
        assert time.monotonic() < deadline, "the marker was never renewed"
        time.sleep(0.05)
    run.end()
    assert not (tmp_path / "run-beating").exists()
