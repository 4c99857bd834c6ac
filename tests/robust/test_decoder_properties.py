"""Properties of every decoder, over arbitrary bytes and over mutated real inputs.

The decoders' contract (logscan/format/errors.py): a value, or a DecodeError located inside
the input; never another exception. ``tools/fuzz/targets.py`` states it once per decoder
(batch, legacy, walk, windows, native, control, txnlog, offsets, metadata, snapshot, index,
checkpoint, compression) and the atheris fuzzer runs the same targets. The last property is the
walker's: whatever happens to some bytes of a real segment, every batch outside them is
still read, by `logscan dump` and by the scan.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tools.fuzz.seeds import distinct_seeds
from tools.fuzz.targets import NAMES, TARGETS

from .harness import LENGTH_AT, REAL_LOGS, Damage, check_log_damage, reference

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.lru_cache(maxsize=None)
def _seeds(name: str) -> tuple[bytes, ...]:
    return tuple(distinct_seeds(name, 80))


@pytest.mark.parametrize("name", NAMES)
def test_arbitrary_bytes(name):
    @FAST
    @given(st.binary(max_size=512))
    def prop(data):
        TARGETS[name](data)

    prop()


@st.composite
def mutated(draw, seeds: tuple[bytes, ...]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete", "splice"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "set" and data:
            # boundary values where a length, count or version lives
            value = draw(st.sampled_from([b"\x00", b"\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00",
                                          b"\xff\xff\xff\xff", b"\x00\x63", b"\x01"]))
            data[at:at + len(value)] = value
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif kind == "splice":
            other = draw(st.sampled_from(seeds))
            data[at:] = other[draw(st.integers(0, max(len(other) - 1, 0))):]
    return bytes(data)


@pytest.mark.parametrize("name", NAMES)
def test_mutated_real_inputs(name):
    seeds = _seeds(name)
    assert seeds, f"no real seeds for {name}"

    @FAST
    @given(mutated(seeds))
    def prop(data):
        TARGETS[name](data)

    prop()


@pytest.mark.parametrize("name", NAMES)
def test_real_inputs_decode(name):
    """The unmutated seeds, cut from real brokers' files, are all read without a finding
    where a finding would mean logscan misreads Kafka (every target passes on them)."""
    for seed in _seeds(name):
        TARGETS[name](seed)


# --- the walker never loses a good batch -------------------------------------------------------

@st.composite
def segment_damage(draw):
    log = draw(st.sampled_from(sorted(REAL_LOGS)))
    kind = draw(st.sampled_from(["flip", "zero", "random", "cut"]))
    at = draw(st.integers(0, 4000))
    width = draw(st.integers(1, 300))
    return log, kind, at, width, draw(st.binary(min_size=300, max_size=300)), draw(st.integers(1, 255))


def _apply(ref, kind, at, width, noise, mask) -> Damage:
    data = bytearray(ref.data)
    at %= len(data)
    if kind == "cut":
        return Damage(bytes(data[:at]), at, len(data), f"cut at {at}")
    hi = min(at + (1 if kind == "flip" else width), len(data))
    if kind == "flip":
        data[at] ^= mask
    elif kind == "zero":
        data[at:hi] = bytes(hi - at)
    else:
        data[at:hi] = noise[:hi - at]
    return Damage(bytes(data), at, hi, f"{kind} [{at}, {hi})")


def _grows_a_length_inside_the_file(ref, damage: Damage) -> bool:
    """The known gap (test_log_damage.GROWN_LENGTH_SWALLOWS): a length field made larger but
    still inside the file makes the walker skip the good batches it covers."""
    for p, s in ref.spans:
        if damage.lo < p + LENGTH_AT + 4 and p + LENGTH_AT < damage.hi and p + LENGTH_AT + 4 <= len(damage.data):
            new = int.from_bytes(damage.data[p + LENGTH_AT:p + LENGTH_AT + 4], "big", signed=True)
            if new > s - 12 and p + 12 + new <= len(damage.data):
                return True
    return False


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(segment_damage())
def test_dump_and_scan_keep_every_untouched_batch(tmp_path, case):
    log, kind, at, width, noise, mask = case
    ref = reference(REAL_LOGS[log], tmp_path)
    damage = _apply(ref, kind, at, width, noise, mask)
    assume(not _grows_a_length_inside_the_file(ref, damage))
    outcome = check_log_damage(ref, damage, tmp_path, must_report=False)
    assert outcome.problems == []
    # a flipped byte outside the two fields the CRC does not cover is always reported
    if kind != "cut" and damage.data != ref.data:
        starts = [p for p, _ in ref.spans if p <= damage.lo]
        offset_in_batch = damage.lo - max(starts) if starts else -1
        if kind == "flip" and not (0 <= offset_in_batch < 8 or 12 <= offset_in_batch < 16):
            assert outcome.dump.findings and outcome.read.findings, damage
