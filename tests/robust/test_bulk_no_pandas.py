"""The bulk decode (replica.segment_fact_tables, ReplicaAnalyser.feed_table: the replay over
fact tables) never imports pandas. pyarrow imports it on its first conversion of Python
objects or to numpy (pa.array, pa.scalar, a Python value given to a compute function,
Array.to_numpy): ~27 MiB of anonymous memory a scan without --output never needed, which made
tests/robust/test_scan_memory_flat.py fail once the scan's decode went on the bulk path (issue
37). Run in a fresh interpreter: this process has imported pandas long ago."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Every fixture replica with segments (not the coordinator's or the group coordinator's, whose
#: records are decoded per batch), its segments read as fact tables and replayed a table at a
#: time; then whether pandas was imported, and how many rows went through.
SCRIPT = """
import sys
from pathlib import Path
from logscan.logdir.tree import iter_brokers
from logscan.scan.replica import ReplicaAnalyser, ReplicaRead, segment_fact_tables

rows = 0
for root in sorted(Path("fixtures").glob("*/brokers")):
    for broker in iter_brokers([root]):
        for replica in broker.replicas:
            if not replica.segments or replica.topic in ("__transaction_state", "__consumer_offsets"):
                continue
            analyser = ReplicaAnalyser(replica, hw_checkpoint=None, log_start_checkpoint=None)
            for base, path in replica.segments:
                for table in segment_fact_tables(str(path), replica.partition, out=ReplicaRead()):
                    analyser.feed_table(table, base)
                    rows += table.num_rows
            analyser.finish()
print(rows, "pandas" in sys.modules)
"""


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure-python"])
def test_the_bulk_decode_does_not_import_pandas(pure):
    env = {k: v for k, v in os.environ.items() if k != "LOGSCAN_PURE_PYTHON"}
    if pure:
        env["LOGSCAN_PURE_PYTHON"] = "1"
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=dict(env, PYTHONPATH=str(REPO)),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    rows, imported = run.stdout.split()
    assert int(rows) > 1000
    assert imported == "False", "the bulk decode imported pandas"
