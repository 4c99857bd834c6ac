"""Large damaged segments made of real batches, and a memory probe for a logscan subprocess.

A big segment repeats the real batches of ``fixtures/tv2/.../codecs-0`` (one per codec, all
from idempotent producers, so the producer state the scan keeps is the same whatever the
size) under increasing offsets, and damages it at a fixed number of places spread over the
file: random bytes, a zero run, a broken CRC, a wrong magic, a negative length, a cut last
batch. What logscan has to keep for such a file is bounded; so must its memory be.

The probe runs the command under a hard ``RLIMIT_DATA`` (the kernel's cap on a process's
private writable memory: heap and anonymous maps, not the read-only file map), so a run that
allocates in proportion to the file dies with MemoryError instead of passing, and samples
the process's anonymous resident memory (``RssAnon``) for the figures in the message.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from logscan.testing.encoder import with_base_offset

from .harness import BROKER, REAL_LOGS, REPO, batch_spans

MiB = 1 << 20
#: Damage sites per file, whatever its size: the point is memory, not the number of findings.
DAMAGE_SITES = 12


def real_batches(limit: int = 5) -> list[bytes]:
    """The first ``limit`` batches of the codecs segment (none, gzip, snappy, lz4, zstd)."""
    data = REAL_LOGS["codecs"].read_bytes()
    return [data[p:p + s] for p, s in batch_spans(data)[:limit]]


def damaged_segment(size: int, seed: int = 1) -> bytes:
    """About ``size`` bytes of real batches with DAMAGE_SITES kinds of damage spread over it."""
    batches = real_batches()
    rnd = random.Random(seed)
    out = bytearray()
    offset = 0
    sites = iter(range(size // (DAMAGE_SITES + 1), size, size // (DAMAGE_SITES + 1)))
    next_site = next(sites)
    kind = 0
    while len(out) < size:
        raw = batches[offset // 5 % len(batches)]
        batch = bytearray(with_base_offset(raw, offset))
        offset += 5
        if len(out) >= next_site:
            kind += 1
            if kind % 5 == 1:
                out += rnd.randbytes(300)          # garbage between batches
            elif kind % 5 == 2:
                out += bytes(4096)                 # a zero run
            elif kind % 5 == 3:
                batch[40] ^= 0xFF                  # CRC mismatch
            elif kind % 5 == 4:
                batch[16] = 0x7F                   # unknown magic
            else:
                batch[8:12] = b"\xff\xff\xff\xf0"  # negative length
            next_site = next(sites, size * 2)
        out += batch
    return bytes(out[:-7])                         # the last batch cut short


def write_copy(root: Path, size: int) -> Path:
    """A one-broker copy holding one partition whose only segment is a big damaged one."""
    shutil.rmtree(root, ignore_errors=True)
    part = root / "broker-0" / "codecs-0"
    part.mkdir(parents=True)
    shutil.copy(BROKER / "meta.properties", root / "broker-0" / "meta.properties")
    log = part / "00000000000000000000.log"
    log.write_bytes(damaged_segment(size))
    return log


@dataclass
class Probe:
    returncode: int
    peak_anon_kib: int
    stderr_tail: str
    stdout_head: str

    @property
    def out_of_memory(self) -> bool:
        return "MemoryError" in self.stderr_tail


def probe(args: list[str], data_limit: int, tmp: Path) -> Probe:
    """Run ``python -m logscan.cli ARGS`` with RLIMIT_DATA = ``data_limit`` bytes."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))

    err_path, out_path = tmp / "probe.stderr", tmp / "probe.stdout"
    with open(err_path, "wb") as err, open(out_path, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "logscan.cli", *args], cwd=REPO,
                                stdout=out, stderr=err, preexec_fn=limit,
                                env=dict(os.environ, PYTHONPATH=str(REPO)))
        peak = 0
        status = Path(f"/proc/{proc.pid}/status")
        while proc.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]))
            except (OSError, ValueError):
                pass  # exited between poll() and the read
            time.sleep(0.003)
    tail = err_path.read_bytes()[-2000:].decode("utf-8", "replace")
    with open(out_path, "rb") as out:
        head = out.read(2000).decode("utf-8", "replace")
    out_path.unlink()
    return Probe(proc.returncode, peak, tail, head)
