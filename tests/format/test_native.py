"""logscan._native: the compiled common step of walk_batches (native/src/lib.rs).

It must take the Python loop's decisions exactly: the same RecordBatch fields, the same place
to stop and hand over to the general step. The fuzz target ``native`` (tools/fuzz/targets.py)
compares the two walks over arbitrary and mutated real bytes (tests/robust); here: the call's
contract, every segment of the real-broker fixtures, and the switch to pure Python.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from logscan.format import compiled
from logscan.format.batch import RecordBatch, decode_batch_header
from logscan.format.logfile import walk_batches
from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch, legacy_message
from tools.fuzz.targets import exact_key

REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000


def test_the_compiled_step_is_built_and_used():
    """make venv builds it (cargo, via setuptools-rust): a failed build must not pass unseen."""
    if os.environ.get("LOGSCAN_PURE_PYTHON"):
        assert compiled.walk_v2 is None and compiled.records_v2 is None and compiled.facts_v2 is None
        assert compiled.fact_v2 is None and compiled.header_v2 is None and compiled.txn_entry_v2 is None
        return
    assert importlib.util.find_spec("logscan._native") is not None, (
        "logscan._native is not built: install cargo (rustup), then reinstall (make venv)")
    from logscan import _native
    assert compiled.walk_v2 is _native.walk_v2 and compiled.records_v2 is _native.records_v2
    assert compiled.facts_v2 is _native.facts_v2
    assert compiled.fact_v2 is _native.fact_v2 and compiled.header_v2 is _native.header_v2
    assert compiled.txn_entry_v2 is _native.txn_entry_v2
    with compiled.pure_python():
        assert (compiled.walk_v2, compiled.records_v2, compiled.facts_v2, compiled.fact_v2, compiled.header_v2,
                compiled.txn_entry_v2) == (None,) * 6
    assert compiled.header_v2 is _native.header_v2


@pytest.fixture
def walk_v2():
    if compiled.walk_v2 is None:
        pytest.skip("logscan._native is not in use (LOGSCAN_PURE_PYTHON)")
    return compiled.walk_v2


def _batch(base_offset: int, n: int = 3, **kw) -> bytes:
    return encode_batch([Rec(b"value-%d" % i, b"k%d" % i, (), T0 + i) for i in range(n)],
                        base_offset=base_offset, **kw)


def _segment() -> list[bytes]:
    """Batches whose fields cover the int types' edges: -1 ids, a high CRC bit, large offsets."""
    parts = [
        _batch(0),
        _batch(2**40, producer_id=2**62, producer_epoch=32767, base_sequence=2**31 - 2, transactional=True,
               partition_leader_epoch=2**31 - 1),
        end_txn_marker_batch(commit=False, coordinator_epoch=3, base_offset=2**40 + 3, producer_id=2**62,
                             producer_epoch=32767, timestamp=T0),
        _batch(2**40 + 4, n=40, codec=1),
    ]
    parts += [_batch(100 + i, n=1 + i % 5) for i in range(40)]
    return parts


def _python(buf, **kw) -> list:
    with compiled.pure_python():
        return [exact_key(x) for x in walk_batches(buf, **kw)]


def _compiled(buf, **kw) -> list:
    return [exact_key(x) for x in walk_batches(buf, **kw)]


def _all(walk_v2, buf, pos=0, end=None, base=0, verify_crc=True, limit=10**6):
    return walk_v2(buf, pos, len(buf) if end is None else end, base, verify_crc, RecordBatch, limit)


def test_fields_are_the_header_decoders(walk_v2):
    buf = b"".join(_segment())
    batches, stop = _all(walk_v2, buf)
    assert stop == len(buf) and len(batches) == len(_segment())
    assert any(b.crc >= 2**31 for b in batches) and any(b.producer_id == -1 for b in batches)
    pos = 0
    for got in batches:
        want, pos = decode_batch_header(buf, pos, len(buf))
        assert type(got) is RecordBatch and got == want
        assert [type(v) for v in got] == [int] * 14 + [bool]


@pytest.mark.parametrize("base", [0, 7, 2**40])
def test_positions_are_shifted_by_base_and_limit_bounds_a_call(walk_v2, base):
    parts = _segment()
    buf = b"".join(parts)
    batches, stop = _all(walk_v2, buf, base=base, limit=5)
    assert len(batches) == 5 and stop == sum(map(len, parts[:5]))
    assert [b.position - base for b in batches] == [sum(map(len, parts[:i])) for i in range(5)]
    rest, end = _all(walk_v2, buf, pos=stop, base=base)
    assert rest[0].position == stop + base and end == len(buf) and len(batches) + len(rest) == len(parts)
    assert _all(walk_v2, buf, limit=0) == ([], 0)


def _stops(walk_v2, tail: bytes, **kw) -> tuple[int, int]:
    """(batches taken, stop position) when ``tail`` follows two good batches."""
    good = _batch(0) + _batch(3)
    batches, stop = walk_v2(good + tail, 0, len(good + tail), 0, True, RecordBatch, 100, **kw)
    return len(batches), stop - len(good)


def test_stops_where_the_python_loop_hands_over(walk_v2):
    bad_crc = bytearray(_batch(6))
    bad_crc[-1] ^= 1
    short_length = bytearray(_batch(6))
    short_length[8:12] = (48).to_bytes(4, "big")
    v1 = legacy_message(6, b"v", b"k", magic=1)
    for tail in (bytes(bad_crc), bytes(short_length), v1, _batch(6)[:-1], bytes(60), bytes(61)):
        assert _stops(walk_v2, tail) == (2, 0), tail[:20]
    # without CRC checks a failed CRC is walked like any batch, as the Python loop does
    got, stop = walk_v2(bytes(bad_crc), 0, len(bad_crc), 0, False, RecordBatch, 10)
    assert stop == len(bad_crc) and got[0].crc_valid is True
    # a negative, an absurd and an end-crossing length
    for length in (-1, 2**31 - 1, len(bad_crc) - 11):
        damaged = bytearray(_batch(6))
        damaged[8:12] = length.to_bytes(4, "big", signed=True)
        assert _stops(walk_v2, bytes(damaged)) == (2, 0)


def test_the_crc_at_every_length_and_alignment(walk_v2):
    """The compiled CRC-32C (SIMD folding, with tails of every length) against the crc32c
    library's: batches from 61 bytes to ~70 KB, each at eight alignments, all accepted; any
    one flipped bit of what a CRC covers, rejected."""
    rng = random.Random(7)
    sizes = [0, 1, 2, 3, 5, 7, 8, 15, 16, 31, 63, 64, 65, 127, 128, 255, 256, 257, 511, 1023, 4097, 70_001]
    for size in sizes:
        value = rng.randbytes(size)
        batch = encode_batch([Rec(value, None, (), T0)] if size else [], base_offset=size)
        for shift in range(8):
            buf = memoryview(bytes(shift) + batch)[shift:]
            assert _all(walk_v2, buf) == ([decode_batch_header(batch, 0, len(batch))[0]], len(batch)), (size, shift)
        for at in (21, 22, len(batch) // 2, len(batch) - 1):
            damaged = bytearray(batch)
            damaged[at] ^= 1 << rng.randrange(8)
            assert _all(walk_v2, bytes(damaged)) == ([], 0), (size, at)


def test_end_is_clamped_and_bad_arguments_raise(walk_v2):
    buf = b"".join(_segment()[:3])
    assert _all(walk_v2, buf, end=len(buf) + 10**9)[1] == len(buf)
    assert _all(walk_v2, buf, end=-5) == ([], 0)
    with pytest.raises(ValueError, match="negative position"):
        _all(walk_v2, buf, pos=-1)
    with pytest.raises(TypeError, match="subclass of tuple"):
        walk_v2(buf, 0, len(buf), 0, True, list, 10)
    with pytest.raises(ValueError, match="contiguous"):
        walk_v2(memoryview(buf)[::2], 0, 10, 0, True, RecordBatch, 10)


def test_every_buffer_kind(walk_v2, tmp_path):
    buf = b"".join(_segment())
    want = _all(walk_v2, buf)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"xyz" + buf)
    assert _all(walk_v2, bytearray(buf)) == want
    assert _all(walk_v2, memoryview(b"xyz" + buf)[3:]) == want
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        mv = memoryview(m)
        got, stop = walk_v2(mv, 3, len(mv), -3, True, RecordBatch, 10**6)
        assert (got, stop - 3) == want
        del got
        mv.release()


def test_no_reference_is_leaked(walk_v2):
    buf = b"".join(_segment())
    _all(walk_v2, buf)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            _all(walk_v2, buf)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 300 walks of 44 batches: a leaked int per batch alone would be ~400 KB
    assert grown < 20_000, grown


def _fixture_logs() -> list[Path]:
    return sorted(p for p in (REPO / "fixtures").glob("*/brokers/*/*/*.log") if p.stat().st_size)


def test_every_real_segment_walks_the_same(walk_v2):
    """Every segment Kafka wrote for the fixtures, whole, with the walk's options."""
    logs = _fixture_logs()
    assert len(logs) > 100
    for path in logs:
        data = path.read_bytes()
        for options in ({}, {"verify_crc": False}, {"start": len(data) // 3, "end": 2 * len(data) // 3}):
            assert _compiled(data, **options) == _python(data, **options), (path, options)


def test_damage_and_mixed_magics_walk_the_same(walk_v2):
    parts = _segment()
    parts.insert(5, legacy_message(7, b"v", b"k", magic=0))
    clean = b"".join(parts)
    cases = [clean, clean[:-7], clean + bytes(300), clean[:400] + b"\xff" * 50 + clean[400:]]
    flipped = bytearray(clean)
    flipped[len(parts[0]) + 30] ^= 4  # the second batch's CRC fails
    grown = bytearray(clean)
    at = len(parts[0]) + 8  # the second batch's length grows over the third
    grown[at:at + 4] = (int.from_bytes(grown[at:at + 4], "big") + 90).to_bytes(4, "big")
    cases += [bytes(flipped), bytes(grown)]
    for buf in cases:
        for options in ({}, {"resync": False}, {"cut": True, "end": len(buf) - 100}, {"more": True, "base": 9}):
            got = _compiled(buf, **options)
            assert got == _python(buf, **options), options
            assert any(k[0] == "RecordBatch" for k in got)


def test_pure_python_is_chosen_by_the_environment():
    """LOGSCAN_PURE_PYTHON=1 runs the whole walk in Python; `logscan dump` prints the same."""
    log = next(p for p in _fixture_logs() if "hang-0" in str(p))
    run = {}
    for pure in ("", "1"):
        env = dict(os.environ, LOGSCAN_PURE_PYTHON=pure)
        probe = subprocess.run([sys.executable, "-c", "from logscan.format import compiled; "
                                "print(compiled.walk_v2 is None and compiled.records_v2 is None)"],
                               env=env, capture_output=True, text=True)
        assert probe.stdout.strip() == str(bool(pure) or importlib.util.find_spec("logscan._native") is None)
        run[pure] = subprocess.run([sys.executable, "-m", "logscan.cli", "dump", "--deep-iteration", str(log)],
                                   env=env, capture_output=True, text=True, check=True).stdout
    assert run[""] == run["1"] and "baseOffset" in run[""]
