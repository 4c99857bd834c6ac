"""`logscan scan` and `logscan plan` hold no table of the scan: the summary is tallied and the
printed rows spooled as the scan makes them (summary.SummarySink), so their peak memory stays
flat as the copy's damage grows (issue 33 item 2).

The copies hold the real batches of ``fixtures/tv2/.../codecs-0`` under increasing offsets,
each with its CRC broken (one located finding per batch, as the scan reports them), cut into
segments of 1 MiB as a broker rolls them: ~12,000 findings in 4 MiB, ~196,000 in 64 MiB. Both
commands run in a subprocess under RLIMIT_DATA (bigfile.probe). Before the sink, every
corruptions row was kept in a list until the summary read it: the large copy's scan peaked
~100 MiB higher than the small one's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from logscan.testing.encoder import with_base_offset

from .bigfile import MiB, probe, real_batches
from .test_memory import SCAN_LIMIT

#: Growth of the peak anonymous memory from the small copy to the large one that is noise.
NOISE_KIB = 8 * 1024
SEGMENT_BYTES = 1 * MiB
SIZES_MIB = (4, 64)


def _damaged_copy(root: Path, size: int) -> int:
    """A one-broker copy of codecs-0 whose segments hold ``size`` bytes of batches, each with
    a broken CRC; returns how many batches (findings) it holds."""
    shutil.rmtree(root, ignore_errors=True)
    part = root / "broker-0" / "codecs-0"
    part.mkdir(parents=True)
    batch = real_batches(1)[0]
    offset, written = 0, 0
    while written < size:
        segment, base = bytearray(), offset
        while len(segment) < SEGMENT_BYTES:
            damaged = bytearray(with_base_offset(batch, offset))
            damaged[40] ^= 0xFF  # a byte the CRC-32C covers
            segment += damaged
            offset += 1
        (part / f"{base:020d}.log").write_bytes(segment)
        written += len(segment)
    return offset


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("summary-memory")
    return {size: (tmp / f"copy-{size}", _damaged_copy(tmp / f"copy-{size}", size * MiB)) for size in SIZES_MIB}


@pytest.mark.parametrize("command", ["scan", "plan"])
def test_peak_memory_is_flat_in_the_damage_found(copies, command, tmp_path):
    peaks = {}
    for size, (copy, findings) in copies.items():
        run = probe([command, str(copy), "--no-progress"], SCAN_LIMIT, tmp_path)
        assert not run.out_of_memory and "Traceback" not in run.stderr_tail, run.stderr_tail
        if command == "scan":
            assert run.returncode == 1, (run.returncode, run.stderr_tail)
            assert f"Damage: {findings} located findings" in run.stdout_head.replace("\n  ", " "), run.stdout_head
        else:
            assert run.returncode == 0, (run.returncode, run.stderr_tail)
        peaks[size] = run.peak_anon_kib
    small, large = (peaks[s] for s in SIZES_MIB)
    assert large - small < NOISE_KIB, (f"peak anonymous memory {small} KiB at {SIZES_MIB[0]} MiB of damaged "
                                       f"batches, {large} KiB at {SIZES_MIB[1]} MiB")
