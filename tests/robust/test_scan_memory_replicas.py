"""What the single-process scan holds per replica (issue 33 item 1: memory grows with the
copy's layout, not its size; this measures the layout's part).

Two copies of make bench's generator (tools/bench/gen_cluster.py) of the same size per replica:
300 and 3,000 partitions of 3 replicas (900 and 9,000 replicas). `logscan scan --format json`
runs in a subprocess as in test_scan_memory_flat (peak RssAnon sampled, a hard RLIMIT_DATA),
and the growth of its peak from the small to the large copy, per replica added, must stay under
PER_REPLICA_KIB. It held each replica's listing row (every file of it, a duplicate of the
listing) and the listing itself to the end as well: on make bench's 1000m-10000p copy the peak
went from 211 to 141 MiB (100m-1000p: 46.5 to 39.7 MiB), ~6.1 KiB per replica before, ~3.8
after; then, until the partition step, each replica's partition_state row (~2 KiB) and open
transactions (~1 KiB each), now spooled by partition: on this test's copies 37.9 -> 75.4 MiB
before (4.6 KiB per replica), 36.8 -> 56.2 MiB after (2.4 KiB). What is left per replica: its
listing (~0.9 KiB, read before the scan starts and let go replica by replica), the summary's
and the steps after assess's row (pipeline.SERVED_COLUMNS), where each spool keeps its runs.
Heavy: 10,000 replica folders written and scanned.
"""

from __future__ import annotations

import pytest

from .test_scan_memory_flat import _generate, _scan

pytestmark = pytest.mark.heavy

#: The peak's growth per replica added that is still what the layout needs (measured ~2.4 KiB;
#: 4.6 KiB while the state rows and open transactions were held to the partition step).
PER_REPLICA_KIB = 3.5
PARTITIONS = (300, 3000)


def test_memory_per_replica_is_what_the_layout_needs(tmp_path_factory):
    peaks, replicas = {}, {}
    for partitions in PARTITIONS:
        copy = tmp_path_factory.mktemp(f"copy-{partitions}p")
        manifest = _generate_layout(copy, partitions)
        status, peak, objects, stderr = _scan(copy, tmp_path_factory.mktemp(f"work-{partitions}p"))
        assert status == 4 and "MemoryError" not in stderr, stderr
        assert ({(c["topic"], c["partition"], c["producer_id"]) for c in objects if c["hanging"]}
                == {(h["topic"], h["partition"], h["producer_id"]) for h in manifest["hanging"]})
        peaks[partitions], replicas[partitions] = peak, 3 * partitions
    small, large = PARTITIONS
    per_replica = (peaks[large] - peaks[small]) / (replicas[large] - replicas[small])
    assert per_replica < PER_REPLICA_KIB, (peaks, f"{per_replica:.2f} KiB per replica")


def _generate_layout(out, partitions: int) -> dict:
    import json
    import subprocess
    import sys

    from .bigfile import REPO

    subprocess.run([sys.executable, "-m", "tools.bench.gen_cluster", "--out", str(out), "--size-mb",
                    str(partitions // 10), "--partitions", str(partitions), "--batch-kib", "1", "--codecs", "none"],
                   cwd=REPO, check=True, capture_output=True)
    return json.loads((out / "manifest.json").read_text())
