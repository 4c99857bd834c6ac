"""Property: whatever happens to a segment's bytes, `logscan dump` neither crashes nor loses a
batch that the damage did not touch, and its exit status says whether something was wrong."""

from __future__ import annotations

import io
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logscan.dump import EXIT_DATA, EXIT_OK, DumpOptions, Dumper
from logscan.format import compression
from logscan.testing.encoder import Rec, encode_batch

T0 = 1_700_000_000_000
BATCHES = [
    encode_batch([Rec(b"value-%d" % i * (i + 1), b"k%d" % i, (("h", b"x"),), T0 + i)] * 2,
                 base_offset=2 * i, codec=(compression.NONE, compression.GZIP, compression.LZ4,
                                           compression.ZSTD, compression.SNAPPY, compression.NONE)[i])
    for i in range(6)
]
SEGMENT = b"".join(BATCHES)
STARTS = [sum(len(b) for b in BATCHES[:i]) for i in range(len(BATCHES))]

damage = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, len(SEGMENT) - 1), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, len(SEGMENT) - 1), st.just(0)),
    st.tuples(st.just("zero"), st.integers(0, len(SEGMENT) - 1), st.integers(1, 200)),
    st.tuples(st.just("insert"), st.integers(0, len(SEGMENT) - 1), st.integers(1, 40)),
)


def outside_crc(at: int) -> bool:
    """BaseOffset and PartitionLeaderEpoch are not covered by the v2 CRC: changing them
    gives another valid batch (Kafka cannot tell either)."""
    start = max(s for s in STARTS if s <= at)
    return at - start < 8 or 12 <= at - start < 16


def apply(kind: str, at: int, arg: int) -> bytes:
    data = bytearray(SEGMENT)
    if kind == "flip":
        data[at] ^= arg
    elif kind == "cut":
        del data[at:]
    elif kind == "zero":
        data[at:at + arg] = bytes(min(arg, len(data) - at))
    else:
        data[at:at] = bytes((at * 7 + i) & 0xFF for i in range(arg))
    return bytes(data)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage, st.booleans())
def test_damage_never_crashes_nor_loses_untouched_batches(tmp_path, dmg, deep):
    kind, at, arg = dmg
    data = apply(kind, at, arg)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    status = Dumper(out, err, DumpOptions(deep_iteration=deep)).run([str(path)])
    printed = [int(m) for m in re.findall(r"^baseOffset: (\d+)", out.getvalue(), re.M)]
    untouched_before = [2 * i for i, s in enumerate(STARTS) if s + len(BATCHES[i]) <= at]
    assert printed[:len(untouched_before)] == untouched_before
    # an insert in the first 16 bytes shifts a header so that a copy with another base
    # offset starts a little later: also a valid batch
    span = (range(at, min(at + arg, len(SEGMENT))) if kind == "zero" else
            range(max(at - 8, 0), at + 1) if kind == "insert" else range(at, at + 1))
    if kind != "cut" and any(outside_crc(p) for p in span):
        return  # a base offset or leader epoch changed: a valid batch, unordered offsets
    assert printed == sorted(set(printed))
    if data == SEGMENT or (kind == "cut" and at in STARTS):
        assert status == EXIT_OK  # whole batches only (or empty): a valid segment
    else:
        assert status in (EXIT_OK, EXIT_DATA)
        if status == EXIT_OK:
            # only possible when the change left every batch valid (e.g. a flip in the
            # leader epoch, which the CRC does not cover)
            assert len(printed) == len(BATCHES) and "isvalid: false" not in out.getvalue()
    if kind in ("flip", "zero") and status == EXIT_DATA:
        assert "logscan: " in err.getvalue()
