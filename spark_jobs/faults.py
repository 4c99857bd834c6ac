"""Named stopping points for proving the job's crash safety (tests/spark/test_output_safety.py).

With ``LOGSCAN_PAUSE_AT=<step>`` in the environment, the job (driver or Python worker) that
reaches that step touches the file ``LOGSCAN_PAUSE_FILE`` and then waits forever, so a test
can SIGKILL the whole job at a known point instead of guessing one with sleeps. Steps:

* ``decode``: in every decode task, before it reads a byte;
* ``write:<table>``: on the driver, between the writing of ``<table>``'s data files (in its
  folder, named by no version yet; for catalog tables, in the run's staging folder) and its
  Delta commit, the tables committed before it (scan.commit_order) done: the write has begun
  and its commit never comes.

Without the variable nothing is wrapped: the job's plan is the same as without this module.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Iterator

PAUSE_AT = "LOGSCAN_PAUSE_AT"
PAUSE_FILE = "LOGSCAN_PAUSE_FILE"


def asked(step: str) -> bool:
    return os.environ.get(PAUSE_AT) == step


def pause() -> None:
    """Say we are here, then wait to be killed."""
    Path(os.environ[PAUSE_FILE]).touch()
    threading.Event().wait()


def at_start(step: str, fn: Callable[[Iterator], Iterator]) -> Callable[[Iterator], Iterator]:
    """``fn`` (a mapInArrow function, or what a data source's reader reads a partition with),
    pausing before it starts when ``step`` is asked for (checked where it is called: the
    decode's in the task)."""
    if not asked(step):
        return fn

    def paused(batches: Iterator) -> Iterator:
        pause()
        yield from fn(batches)

    return paused
