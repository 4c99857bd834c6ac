"""`make bench`: listing a copy of many partition folders in an object store (issue 31).

    python -m tools.bench.listing [--folders 10000,100000] [--quick]

For each size, a copy of that many partition folders (``broker-0/topic-N/``, each holding one
empty ``00000000000000000000.log``, as a log dir's partitions hold their segments) is uploaded
once to a real S3 server on loopback (SeaweedFS, tools/objectstore: its store lives for the run
only), then listed the way the scan lists an input (logscan.logdir.store.Tree: one recursive
listing, pages of ListObjectsV2 inside pyarrow). Printed per size: the listing's wall time,
its S3 requests by type (weed's own request counter, before and after) and keys per LIST
request, against the naive way's request count (a listing per folder: one per partition).

Needs the weed binary (`make objectstore`); without it, says so and exits 0 (the other bench
parts still run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

SIZES = (10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
BUCKET = "logscan-bench-listing"
#: Threads uploading the folders' objects (each PUT waits on the store, not on a core).
UPLOAD_THREADS = 32


def upload_folders(s3, prefix: str, folders: int) -> None:
    """``folders`` partition folders under ``BUCKET/prefix/broker-0``, one empty segment each."""
    fs = s3.filesystem

    def put(i: int) -> None:
        with fs.open_output_stream(f"{BUCKET}/{prefix}/broker-0/topic-{i}/00000000000000000000.log") as out:
            out.write(b"")

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        for _ in pool.map(put, range(folders), chunksize=256):
            pass
    with fs.open_output_stream(f"{BUCKET}/{prefix}/broker-0/meta.properties") as out:
        out.write(b"node.id=0\n")


def list_once(s3, prefix: str) -> dict:
    """One listing of the copy as the scan makes it; its time, entries and S3 requests."""
    from logscan.logdir import store

    uri = s3.uri(BUCKET, prefix)
    store.configure(s3.storage_options)
    try:
        before = s3.request_counts()
        started = time.perf_counter()
        tree = store.Tree(uri)
        tree.load()
        seconds = time.perf_counter() - started
        after = s3.request_counts()
    finally:
        store.configure()
    requests: dict[str, int] = {}
    for (kind, _code), n in after.items():
        grown = n - before.get((kind, _code), 0)
        if grown:
            requests[kind] = requests.get(kind, 0) + grown
    return {"seconds": seconds, "files": len(tree.sizes), "folders": len(tree.folders), "requests": requests}


def measure(sizes, weed) -> list[tuple[int, dict]]:
    from tools.objectstore.server import object_store

    out = []
    with object_store(weed=weed) as s3:
        s3.create_bucket(BUCKET)
        for n in sizes:
            prefix = f"copy-{n}"
            started = time.perf_counter()
            upload_folders(s3, prefix, n)
            print(f"  (uploaded {n:,} folders in {time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
            out.append((n, list_once(s3, prefix)))
    return out


def report(points: list[tuple[int, dict]]) -> list[str]:
    lines = ["Listing a copy in an object store (SeaweedFS on loopback; logscan.logdir.store.Tree: one "
             "recursive listing)",
             f"  {'folders':>9}  {'seconds':>8}  {'LIST':>6}  {'other':>6}  {'keys/LIST':>9}  "
             f"{'a request per folder':>20}"]
    for n, got in points:
        lists = got["requests"].get("LIST", 0)
        other = sum(v for k, v in got["requests"].items() if k != "LIST")
        per = f"{got['files'] / lists:,.0f}" if lists else "-"
        lines.append(f"  {n:>9,}  {got['seconds']:>8.2f}  {lists:>6}  {other:>6}  {per:>9}  {n + 1:>20,}")
    return lines


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.listing", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK", "") not in ("", "0"),
                    help=f"{QUICK_SIZES} folders (also: BENCH_QUICK=1)")
    ap.add_argument("--folders", type=_sizes, help=f"comma list of folder counts (default {SIZES})")
    args = ap.parse_args(argv)
    from tools.objectstore import build

    if not build.built():
        print("Listing from an object store: not measured: SeaweedFS's weed is not built (make objectstore, "
              "or set LOGSCAN_WEED)")
        return 0
    sizes = args.folders or (QUICK_SIZES if args.quick else SIZES)
    print("\n".join(report(measure(sizes, build.weed_path()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
