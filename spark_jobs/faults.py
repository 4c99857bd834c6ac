"""Named stopping points for proving the job's crash safety (tests/spark/test_output_safety.py).

With ``LOGSCAN_PAUSE_AT=<step>`` in the environment, the job (driver or Python worker) that
reaches that step touches the file ``LOGSCAN_PAUSE_FILE`` and then waits forever, so a test
can SIGKILL the whole job at a known point instead of guessing one with sleeps. Steps:

* ``decode``: in every decode task, before it reads a byte;
* ``write:<table>``: in every task writing ``<table>``, after it handed all its rows to the
  Delta writer (data files exist in the table's folder) and before the task ends, so the
  table's commit is never made.

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
    """``fn`` (a mapInArrow function), pausing before it starts when ``step`` is asked for."""
    if not asked(step):
        return fn

    def paused(batches: Iterator) -> Iterator:
        pause()
        yield from fn(batches)

    return paused


def at_end(step: str) -> Callable[[Iterator], Iterator]:
    """A pass-through mapInArrow function that pauses after its last batch."""
    def paused(batches: Iterator) -> Iterator:
        yield from batches
        pause()

    return paused
