"""The bulk decode (pipeline.decode's: replica.segment_fact_columns, Replay.feed_columns, the replay
over fact tables) never imports pandas, nor allocates from Arrow's default pool (issue 37).

pyarrow imports pandas on its first conversion of Python objects or to numpy (pa.array,
pa.scalar, a Python value given to a compute function, Array.to_numpy): ~27 MiB of anonymous
memory a scan without --output never needed, which made tests/robust/test_scan_memory_flat.py
fail once the scan's decode went on the bulk path. The first allocation from Arrow's default
pool (mimalloc) makes ~4 MiB more of the process resident: the bulk decode's Arrow steps
allocate from the system allocator (logscan.state.columns.pool). Run in a fresh interpreter:
this process has imported pandas long ago."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Every fixture copy decoded and replayed as `logscan scan` does without --output (a Replay per
#: replica, its units in order, no batches table), every segment in bulk (BULK_MIN_BYTES 0: the
#: fixtures' are below it); then how many segments went through segment_fact_columns, whether
#: pandas was imported, and the most Arrow's default pool held.
SCRIPT = """
import sys
from pathlib import Path
from logscan.scan import pipeline
from logscan.scan.listing import list_copy

pipeline.BULK_MIN_BYTES = 0
read, bulk = pipeline.segment_fact_columns, []
pipeline.segment_fact_columns = lambda path, *a, **k: bulk.append(path) or read(path, *a, **k)
for root in sorted(Path("fixtures").glob("*/brokers")):
    for listed in list_copy([root]).replicas:
        replay = pipeline.Replay(pipeline.replica_info(listed))
        for unit in pipeline.work_units(listed):
            for _ in pipeline.decode(unit, replay, headers=False):
                pass
        for _ in replay.finish():
            pass
import pyarrow as pa
print(len(bulk), "pandas" in sys.modules, pa.default_memory_pool().max_memory())
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure-python"])
def test_the_bulk_decode_neither_imports_pandas_nor_allocates_from_arrows_pool(pure):
    env = {k: v for k, v in os.environ.items() if k != "LOGSCAN_PURE_PYTHON"}
    if pure:
        env["LOGSCAN_PURE_PYTHON"] = "1"
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=dict(env, PYTHONPATH=str(REPO)),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    segments, imported, pooled = run.stdout.split()
    assert int(segments) > 100
    assert imported == "False", "the bulk decode imported pandas"
    assert pooled == "0", f"the bulk decode allocated up to {pooled} bytes from Arrow's default pool"
