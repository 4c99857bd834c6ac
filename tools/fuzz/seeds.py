"""Seed inputs for each fuzz target, cut from the real-broker fixtures (``fixtures/*/brokers``).

Every seed is in the form its target reads (``tools/fuzz/targets.py``): whole batches,
whole segments, key/value pairs joined by ``targets._split``'s rule, whole files. Legacy
v0/v1 entries come from logscan's test encoder, since Kafka 4.x never writes them.

    python -m tools.fuzz.seeds DIR        # writes DIR/<target>/<n>.bin for every target
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Iterator

from logscan.format.batch import iter_records
from logscan.format.errors import DecodeError
from logscan.format.logfile import walk_batches

from .targets import NAMES

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
MAX_PER_TARGET = 400
MAX_SEED_BYTES = 64 * 1024


def _files(pattern: str) -> list[Path]:
    return sorted(p for p in FIXTURES.glob(f"*/brokers/*/{pattern}") if p.is_file())


def _batches(path: Path):
    data = path.read_bytes()
    for entry in walk_batches(data):
        if not isinstance(entry, DecodeError):
            yield data, entry


def _joined(key: bytes | None, value: bytes | None) -> bytes:
    """The inverse of targets._split."""
    if value is None:
        return b"\xff" + (key or b"")
    if key is None:
        return b"\xfe" + value
    key = key[:0xFD]
    return bytes([len(key)]) + key + value


def _records(pattern: str, control: bool | None = None) -> Iterator[bytes]:
    for path in _files(pattern):
        for data, b in _batches(path):
            if control is not None and b.is_control != control:
                continue
            try:
                for r in iter_records(data, b):
                    yield _joined(r.key, r.value)
            except DecodeError:
                continue


def seeds(target: str) -> Iterator[bytes]:
    if target == "batch":
        for path in _files("*/*.log"):
            for data, b in _batches(path):
                yield bytes(data[b.position:b.next_position])
    elif target in ("walk", "windows", "native"):
        for i, path in enumerate(_files("*/*.log")):
            data = path.read_bytes()
            if 0 < len(data) <= MAX_SEED_BYTES:
                # windows: the first bytes pick the window size, its alignment, a search start;
                # native: the first byte picks the walk's options
                yield {"walk": b"", "windows": bytes([i % 256, (i * 7) % 256, (i * 31) % 256]),
                       "native": bytes([i % 256])}[target] + data
    elif target == "legacy":
        from logscan.format import compression
        from logscan.testing.encoder import legacy_message, legacy_wrapper
        yield legacy_message(0, b"v0 value", b"k", magic=0)
        yield legacy_message(1, None, b"key", magic=1, timestamp=1_700_000_000_000)
        for codec in (compression.GZIP, compression.SNAPPY, compression.LZ4):
            for magic in (0, 1):
                yield legacy_wrapper([(b"a", b"1", 1), (None, b"2", 2)], offset=4, magic=magic, codec=codec)
    elif target == "control":
        yield from _records("*/*.log", control=True)
    elif target == "txnlog":
        yield from _records("__transaction_state-*/*.log", control=False)
    elif target == "offsets":
        yield from _records("__consumer_offsets-*/*.log", control=False)
    elif target == "metadata":
        for path in _files("__cluster_metadata-*/*.log"):
            for data, b in _batches(path):
                if b.is_control:
                    continue
                for r in iter_records(data, b):
                    if r.value is not None:
                        yield r.value
    elif target == "snapshot":
        yield from (p.read_bytes() for p in _files("*/*.snapshot"))
    elif target == "index":
        for suffix in ("index", "timeindex", "txnindex"):
            yield from (p.read_bytes() for p in _files(f"*/*.{suffix}") if p.stat().st_size)
    elif target == "checkpoint":
        for name in ("*-checkpoint", "meta.properties", ".kafka_cleanshutdown", "*/partition.metadata",
                     "*/leader-epoch-checkpoint"):
            yield from (p.read_bytes() for p in _files(name) if p.stat().st_size)
    elif target == "compression":
        for path in _files("codecs-*/*.log"):
            for data, b in _batches(path):
                if b.compression:
                    magic_bits = 2 << 3
                    yield bytes([b.compression | magic_bits]) + bytes(data[b.position + 61:b.next_position])
    elif target == "replay":
        import random
        for i in range(40):  # the first byte: the seed state, the floor, the cut (targets.replay)
            yield bytes([i * 37 % 256]) + random.Random(i).randbytes(3 * (5 + i))
    else:
        raise KeyError(target)


def distinct_seeds(target: str, limit: int = MAX_PER_TARGET) -> list[bytes]:
    """Up to ``limit`` distinct seeds (the three brokers of a cluster hold the same bytes)."""
    out, seen = [], set()
    for seed in seeds(target):
        digest = hashlib.sha1(seed).digest()
        if digest in seen or len(seed) > MAX_SEED_BYTES:
            continue
        seen.add(digest)
        out.append(seed)
        if len(out) >= limit:
            break
    return out


def write_corpus(root: Path, targets: list[str] | None = None) -> dict[str, int]:
    """Write each target's seeds as files under ``root/<target>/``; ``all`` gets every seed
    prefixed with its target's selector byte (targets.run_all)."""
    counts = {}
    for name in targets or NAMES + ["all"]:
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        if name == "all":
            batch = [bytes([NAMES.index(t)]) + s for t in NAMES for s in distinct_seeds(t, 60)]
        else:
            batch = distinct_seeds(name)
        for seed in batch:
            (d / f"seed-{hashlib.sha1(seed).hexdigest()[:16]}").write_bytes(seed)
        counts[name] = len(batch)
    return counts


if __name__ == "__main__":
    print(write_corpus(Path(sys.argv[1])))
