"""A fixed memory bound, whatever the size of the damaged input.

Each command runs in a subprocess under a hard RLIMIT_DATA (heap and anonymous memory; the
read-only map of the segment does not count, as page cache is not the process's to keep).
The same limit must hold for an 8 MiB and a 64 MiB damaged segment: a run that allocates in
proportion to its input dies with MemoryError at 64 MiB and fails the test. The sampled peak
of anonymous resident memory must not grow by more than a few MiB either.
"""

from __future__ import annotations

import pytest

from .bigfile import MiB, probe, write_copy
from .test_record_damage import bomb_payload

#: Python, click and logscan's imports take about 15 MiB of data; the dump needs a few more.
#: Well below 15 + 56 MiB, so keeping the 64 MiB file's bytes (or one object per batch of it)
#: cannot fit.
DUMP_LIMIT = 48 * MiB
#: The scan imports numpy and pyarrow (its row schemas), whose BLAS reserves some 100 MiB of
#: writable address space at start-up (RssAnon is ~35 MiB); so its hard cap is looser and
#: the growth check below is what holds it to a fixed size.
SCAN_LIMIT = 256 * MiB
#: Growth of the sampled anonymous peak from 8 to 64 MiB of input that is still noise.
NOISE_KIB = 6 * 1024

@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """size in MiB -> the big segment of a one-partition copy, made once per module."""
    base = tmp_path_factory.mktemp("big")
    made = {}

    def copy(size: int):
        if size not in made:
            made[size] = write_copy(base / f"{size}mib", size * MiB)
        return made[size]

    return copy


def _both(copies, sizes, args_for, limit, tmp_path, first_line):
    runs = {size: probe(args_for(copies(size)), limit, tmp_path) for size in sizes}
    for size, run in runs.items():
        assert not run.out_of_memory, f"{size} MiB: MemoryError under {limit // MiB} MiB\n{run.stderr_tail}"
        assert "Traceback" not in run.stderr_tail, run.stderr_tail
        assert run.returncode == 1 and run.stdout_head.startswith(first_line), (size, run)
        assert run.peak_anon_kib > 0, "no RssAnon sample was read from /proc"
    small, large = sizes
    growth = runs[large].peak_anon_kib - runs[small].peak_anon_kib
    assert growth < NOISE_KIB, f"anonymous memory grew by {growth} KiB from {small} to {large} MiB: {runs}"
    return runs


def test_dump_memory_does_not_grow_with_the_file(copies, tmp_path):
    _both(copies, (8, 64), lambda log: ["dump", str(log)], DUMP_LIMIT, tmp_path, "Dumping ")


def test_deep_dump_memory_does_not_grow_with_the_file(copies, tmp_path):
    """Every record of every codec decoded and printed: 2 and 16 MiB keep the run short (a
    copy of the input would still show as 14 MiB of growth)."""
    _both(copies, (2, 16), lambda log: ["dump", "--deep-iteration", str(log)], DUMP_LIMIT, tmp_path,
          "Dumping ")


def test_scan_memory_does_not_grow_with_the_file(copies, tmp_path):
    _both(copies, (8, 64), lambda log: ["scan", str(log.parents[2])], SCAN_LIMIT, tmp_path, "Scanned ")


def test_the_limit_bites(copies, tmp_path):
    """The bound means something: reading the 64 MiB file whole fails under it, the 8 MiB
    one does not."""
    import subprocess
    import sys

    from .bigfile import REPO

    def read_whole(log) -> subprocess.CompletedProcess:
        code = ("import resource, logscan.cli; "
                f"resource.setrlimit(resource.RLIMIT_DATA, ({DUMP_LIMIT}, {DUMP_LIMIT})); "
                f"open({str(log)!r}, 'rb').read()")
        return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)

    assert read_whole(copies(8)).returncode == 0
    assert "MemoryError" in read_whole(copies(64)).stderr


def test_dump_of_a_gigabyte_bomb_stays_under_the_bound(tmp_path):
    """A 1 KiB zstd payload that inflates to over 1 GiB, dumped with a 16 MiB cap: memory
    stays within the same bound as any other dump."""
    from logscan.format import compression

    from .harness import REAL_LOGS, rebuilt_batch, replace_batch, reference

    ref = reference(REAL_LOGS["codecs"], tmp_path)
    p, _ = ref.spans[4]
    bomb = rebuilt_batch(ref.data, p, bomb_payload(compression.ZSTD, 1 << 30), codec=compression.ZSTD)
    damage, _ = replace_batch(ref.data, p, bomb, "1 GiB zstd bomb")
    log = tmp_path / "codecs-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(damage.data)
    run = probe(["dump", "--deep-iteration", "--max-decompressed-bytes", str(16 * MiB), str(log)],
                DUMP_LIMIT + 16 * MiB, tmp_path)
    assert not run.out_of_memory and "Traceback" not in run.stderr_tail, run.stderr_tail
    assert run.returncode == 1 and f"logscan: {log}: byte {p + 61}: " in run.stderr_tail
