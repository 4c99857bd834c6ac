"""The machine's own limits and the outside decoders, measured in the same run as logscan.

Every figure logscan reports is printed next to these anchors so that ratios, not absolute
numbers from another day, carry the claim.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path

import crc32c

READ_CHUNK = 8 << 20
#: Reads that keep a file in the page cache: Linux leaves a page read once on its inactive
#: list, which this machine keeps to a few GB; a second read moves it to the active list
#: (tools/bench/scan.py warm has the figures).
CACHE_PASSES = 2


def walk_kind() -> str:
    """Which common step logscan's walks take in this process, for the figures' labels."""
    from logscan.format import compiled

    if compiled.walk_v2 is not None:
        return "its common step compiled (logscan._native)"
    return "pure Python (logscan._native is not built or LOGSCAN_PURE_PYTHON is set)"


def records_kind() -> str:
    """Which common step logscan's record reads take in this process, for the figures' labels."""
    from logscan.format import compiled

    return "compiled step" if compiled.records_v2 is not None else "pure Python"


def best_of(runs: int, fn):
    """Run ``fn`` ``runs`` times; return (best seconds, last result)."""
    return best_of_each(runs, {None: fn})[None]


def best_of_each(runs: int, fns: dict):
    """Run each of ``fns`` (name -> function) ``runs`` times, in rounds of one run of each, so
    that a slow spell of the machine hits them alike; return {name: (best seconds, last result)}."""
    best = {name: (float("inf"), None) for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            result = fn()
            best[name] = (min(best[name][0], time.perf_counter() - t0), result)
    return best


def page_cache_read(path: Path) -> int:
    """Read the file into one reused buffer: the floor for any decoder of these bytes."""
    buf = bytearray(READ_CHUNK)
    view = memoryview(buf)
    total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            total += n
    return total


def recache(path: Path) -> None:
    """Drop the file's pages from the page cache, then read it back in (CACHE_PASSES times:
    this machine drops a page read once soon). On this VM pages cached long before can read two to three
    times slower than freshly cached ones (the 16 KiB curve segment, cached for a day: 6 GB/s,
    then 17.7 GB/s once recached, 2026-11-24), which a figure would charge to the code."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    for _ in range(CACHE_PASSES):
        page_cache_read(path)


def page_cache_read_crc32c(path: Path) -> int:
    """Read + CRC32C over every byte: the ceiling for a batch walk that verifies CRCs."""
    buf = bytearray(READ_CHUNK)
    view = memoryview(buf)
    crc = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            crc = crc32c.crc32c(view[:n], crc)
    return crc


def command_times(cmd: list[str], check: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of it and its children) of one command,
    output discarded. On a machine others load, the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def kafka_dump_log_times(jars: Path, path: Path, *options: str, check: bool = True) -> tuple[float, float]:
    """(wall, CPU) seconds of Kafka's own kafka-dump-log (4.1.1 still ships the Scala tool) on
    ``path``, output discarded."""
    cmd = ["java", "-cp", f"{jars}/*", "kafka.tools.DumpLogSegments", "--files", str(path), *options]
    return command_times(cmd, check=check)


def kafka_dump_log(jars: Path, path: Path, *options: str, check: bool = True) -> float:
    """Wall time of kafka-dump-log on ``path``, output discarded."""
    return kafka_dump_log_times(jars, path, *options, check=check)[0]


def kafka_dump_log_output(jars: Path, path: Path, *options: str) -> bytes:
    """What kafka-dump-log prints on stdout for ``path`` (the same command as timed)."""
    cmd = ["java", "-cp", f"{jars}/*", "kafka.tools.DumpLogSegments", "--files", str(path), *options]
    return subprocess.run(cmd, capture_output=True, check=True).stdout


def empty_segment() -> Path:
    """An empty segment file: dumping it costs a tool's start-up and nothing else."""
    empty = Path(os.environ.get("TMPDIR", "/tmp")) / "logscan-bench-empty" / "00000000000000000000.log"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    return empty


def jvm_startup(jars: Path) -> float:
    """kafka-dump-log on an empty file: what the JVM costs before any byte is read.

    (Kafka 4.1.1's tool exits 1 on an empty file after printing its header; the time is
    still the start-up cost.)"""
    return kafka_dump_log(jars, empty_segment(), check=False)


def kafka_python_records(batches: list[bytes]) -> int:
    """kafka-python's pure-Python DefaultRecordBatch over the same batches."""
    from kafka.record.default_records import DefaultRecordBatch

    n = 0
    for raw in batches:
        for record in DefaultRecordBatch(raw):
            record.key, record.value  # touch what a consumer touches
            n += 1
    return n


def has_aiokafka() -> bool:
    """Whether aiokafka's compiled (Cython) records are installed (`.[dev]` installs them)."""
    try:
        import aiokafka.record._crecords  # noqa: F401
    except ImportError:
        return False
    return True


def aiokafka_records(batches: list[bytes]) -> int:
    """aiokafka's compiled (Cython) DefaultRecordBatch: the fast end of Python decoders."""
    from aiokafka.record._crecords import DefaultRecordBatch

    n = 0
    for raw in batches:
        for record in DefaultRecordBatch(raw):
            record.key, record.value
            n += 1
    return n
