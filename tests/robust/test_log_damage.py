"""Damaged copies of real segments: `logscan dump` and the scan's reader must keep every
batch the damage did not touch (same position, header and records as in the undamaged
file), report the damage at a byte of the batch it hit, and never crash.

Each test damages one real file in many ways (every cut point of a batch header, every CRC
and length byte, ...) and collects every shortfall before asserting, so one failure message
lists all the inputs that go wrong.
"""

from __future__ import annotations

import random

import pytest

from .harness import (COUNT_AT, CRC_AT, LENGTH_AT, MAGIC_AT, REAL_LOGS, Damage, append,
                      check_log_damage, overwrite, reference, set_int32, truncate, xor)

LOGS = sorted(REAL_LOGS)
HEADER = 61


def _some(spans: list, most: int = 6) -> list:
    """At most ``most`` batches spread over the file, the first and the last included: the
    damage tests run per batch, and the long files would make them slow for nothing new."""
    if len(spans) <= most:
        return spans
    step = (len(spans) - 1) / (most - 1)
    return [spans[round(i * step)] for i in range(most)]


def _positions(ref, which: str) -> list[int]:
    n = len(ref.spans)
    return {"first": [0], "middle": [n // 2], "last": [n - 1]}[which]


def _run(ref, damages, tmp_path, **kw) -> list[str]:
    problems = []
    for damage in damages:
        outcome = check_log_damage(ref, damage, tmp_path, **kw)
        problems += [f"{damage!r}: {p}" for p in outcome.problems]
    return problems


@pytest.mark.parametrize("which", ["first", "middle", "last"])
@pytest.mark.parametrize("log", LOGS)
def test_cut_at_every_byte_of_a_batch_header(tmp_path, log, which):
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = []
    for k in _positions(ref, which):
        p, s = ref.spans[k]
        damages += [truncate(ref.data, at) for at in range(p, p + min(HEADER, s) + 1)]
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("log", LOGS)
def test_cut_inside_the_records(tmp_path, log):
    ref = reference(REAL_LOGS[log], tmp_path)
    rnd = random.Random(log)
    damages = [truncate(ref.data, rnd.randrange(p + HEADER, p + s)) for p, s in ref.spans if s > HEADER]
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("size", [1, 16, 17, 18, 61, 4096, 1 << 20])
@pytest.mark.parametrize("log", LOGS)
def test_zero_filled_tail(tmp_path, log, size):
    """A preallocated segment (log.preallocate) or a file extended by a crash."""
    ref = reference(REAL_LOGS[log], tmp_path)
    assert _run(ref, [append(ref.data, bytes(size), f"{size} zero bytes appended")], tmp_path) == []


@pytest.mark.parametrize("log", LOGS)
def test_zero_filled_from_the_middle_of_each_batch(tmp_path, log):
    """The broker died with dirty pages: the file has its length but zeros from some byte on."""
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = []
    for p, s in _some(ref.spans):
        at = p + s // 2
        damages.append(overwrite(ref.data, at, bytes(len(ref.data) - at), f"zeros from byte {at}"))
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("log", LOGS)
def test_random_tail(tmp_path, log, seed):
    """Garbage after the last batch (a copy from a file system that reused blocks)."""
    ref = reference(REAL_LOGS[log], tmp_path)
    rnd = random.Random(seed)
    size = rnd.choice([5, 17, 100, 3000, 70_000])
    assert _run(ref, [append(ref.data, rnd.randbytes(size), f"{size} random bytes (seed {seed})")],
                tmp_path) == []


@pytest.mark.parametrize("log", LOGS)
def test_random_bytes_over_a_batch(tmp_path, log):
    """Each batch in turn overwritten by random bytes: the batches on either side survive."""
    ref = reference(REAL_LOGS[log], tmp_path)
    rnd = random.Random(log)
    damages = [overwrite(ref.data, p, rnd.randbytes(s), f"random bytes over the batch at {p}")
               for p, s in _some(ref.spans)]
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("log", LOGS)
def test_flipped_crc_bytes(tmp_path, log):
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = [xor(ref.data, p + CRC_AT + i, mask)
               for p, _ in _some(ref.spans) for i in range(4) for mask in (0x01, 0xFF)]
    outcome_problems = _run(ref, damages, tmp_path)
    assert outcome_problems == []
    # the batch itself is still shown, marked invalid, as kafka-dump-log shows it
    p, _ = ref.spans[0]
    out = check_log_damage(ref, xor(ref.data, p + CRC_AT, 0x01), tmp_path)
    assert out.dump.batch_at(p)["is_valid"] is False
    assert any(f["position"] == p and f["reason"] == "crc" for f in out.dump.findings)
    assert any(f.position == p and f.reason == "crc" for f in out.read.findings)


@pytest.mark.parametrize("log", LOGS)
def test_flipped_length_bytes_that_shrink_or_overflow(tmp_path, log):
    """Length flips that make the batch shorter than it is, or longer than the file."""
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = []
    for p, s in _some(ref.spans):
        length = s - 12
        for i in range(4):
            for mask in (0x01, 0x10, 0x80, 0xFF):
                d = xor(ref.data, p + LENGTH_AT + i, mask)
                new = int.from_bytes(d.data[p + LENGTH_AT:p + LENGTH_AT + 4], "big", signed=True)
                if new < length or p + 12 + new > len(ref.data):
                    damages.append(d)
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("log", LOGS)
def test_flipped_length_bytes_that_grow_inside_the_file(tmp_path, log):
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = []
    for p, s in _some(ref.spans):
        for i in range(2, 4):
            for mask in (0x01, 0x02, 0x10, 0x80):
                d = xor(ref.data, p + LENGTH_AT + i, mask)
                new = int.from_bytes(d.data[p + LENGTH_AT:p + LENGTH_AT + 4], "big", signed=True)
                if new > s - 12 and p + 12 + new <= len(ref.data):
                    damages.append(d)
    assert damages
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("magic", [0, 1, 3, 0x7F, 0x80, 0xFF])
@pytest.mark.parametrize("log", LOGS)
def test_wrong_magic(tmp_path, log, magic):
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = [overwrite(ref.data, p + MAGIC_AT, bytes([magic]), f"magic {magic} at {p}")
               for p, _ in _some(ref.spans)]
    assert _run(ref, damages, tmp_path) == []


def test_scan_reports_a_batch_read_as_a_legacy_message(tmp_path):
    """With magic 0 a v2 batch frames as a v0 message (with a wrong CRC); the dump prints it
    as isvalid false, the scan must say so too rather than pass over it."""
    ref = reference(REAL_LOGS["codecs"], tmp_path)
    p, _ = ref.spans[0]  # frames as a v0 message: its size and key/value lengths happen to fit
    damages = [overwrite(ref.data, p + MAGIC_AT, b"\x00", f"magic 0 at {p}")]
    assert _run(ref, damages, tmp_path) == []


#: Length values, as functions of the file's size: negative, too small for a header, the
#: file's size, twice it, and past 2 GiB (an unsigned reading of the int32 field).
ABSURD_LENGTHS = {
    "-1": lambda size: -1, "-2^31": lambda size: -2**31, "0": lambda size: 0, "13": lambda size: 13,
    "48": lambda size: 48, "file size": lambda size: size, "2x file size": lambda size: 2 * size,
    "2^31-1": lambda size: 2**31 - 1, "2^31": lambda size: 2**31, "2^32-1": lambda size: 2**32 - 1,
}


@pytest.mark.parametrize("length", sorted(ABSURD_LENGTHS))
@pytest.mark.parametrize("log", LOGS)
def test_absurd_length(tmp_path, log, length):
    ref = reference(REAL_LOGS[log], tmp_path)
    value = ABSURD_LENGTHS[length](len(ref.data))
    damages = [set_int32(ref.data, p + LENGTH_AT, value, f"length {length} at {p}")
               for p, _ in _some(ref.spans)]
    assert _run(ref, damages, tmp_path) == []


@pytest.mark.parametrize("count", [-1, 0, 2, 2**31 - 1, -2**31])
@pytest.mark.parametrize("log", LOGS)
def test_absurd_records_count(tmp_path, log, count):
    """RecordsCount is inside the CRC: a bad count is a CRC failure; the dump still shows the
    batch (isvalid false), and records iteration stops with a located error, not a crash."""
    ref = reference(REAL_LOGS[log], tmp_path)
    damages = [set_int32(ref.data, p + COUNT_AT, count, f"records count {count} at {p}")
               for p, _ in _some(ref.spans)]
    damages = [d for d in damages if d.data != ref.data]
    assert _run(ref, damages, tmp_path) == []
