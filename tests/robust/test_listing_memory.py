"""A listing costs little per replica (issue 33 item 3).

The scan lists the whole copy before it reads a byte and holds that listing while it reads
(each replica's part let go once it is read), so a copy of 100,000 partitions costs the listing
100,000 times what a replica costs. Measured over such a copy (one broker, each partition a
.log, .index, .timeindex, .snapshot, leader-epoch-checkpoint and partition.metadata, folders of
55 characters): 2,109 bytes a replica with a pathlib.Path per file, 1,805 with a path string per
file, 1,165 with each file's name (shared by the replicas) joined to its folder when asked for.
Here 2,000 such partitions are listed under tracemalloc.
"""

from __future__ import annotations

import gc
import os
import tracemalloc

from logscan.scan.listing import list_copy

PARTITIONS = 2000
FILES = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
         "00000000000000000000.snapshot", "leader-epoch-checkpoint", "partition.metadata")
#: The most a replica may hold (measured with 90-character folders: 1,170 bytes; a Path per
#: file: 2,114).
MAX_BYTES_PER_REPLICA = 1600


def test_a_listed_replica_holds_little(tmp_path):
    broker = tmp_path / "broker-0"
    broker.mkdir()
    (broker / "meta.properties").write_text("version=0\nbroker.id=0\n")
    for i in range(PARTITIONS):
        folder = broker / f"topic-with-a-typical-name-{i // 100}-{i % 100}"
        folder.mkdir()
        for name in FILES:
            (folder / name).touch()
    gc.collect()
    tracemalloc.start()
    try:
        listing = list_copy([tmp_path])
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(listing.replicas) == PARTITIONS
    assert held / PARTITIONS < MAX_BYTES_PER_REPLICA, f"{held / PARTITIONS:.0f} bytes a replica"
    # what it holds reads as the files' paths
    (r,) = [x.replica for x in listing.replicas if x.replica.topic == "topic-with-a-typical-name-3" and
            x.replica.partition == 7]
    assert r.segments == [(0, os.path.join(r.path, FILES[0]))]
    assert r.indexes == [(0, os.path.join(r.path, FILES[1])), (0, os.path.join(r.path, FILES[2]))]
    assert r.snapshots == [(0, os.path.join(r.path, FILES[3]))] and r.txn_indexes == []
