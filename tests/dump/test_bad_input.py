"""Damaged files: every good batch before and after is printed, each problem is reported on
stderr with the file and byte position, and the exit status says something was wrong."""

from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import sys
import threading
import tracemalloc

import pytest

from logscan.dump import EXIT_DATA, EXIT_IO, EXIT_OK, EXIT_PIPE, DumpOptions, Dumper
from logscan.format import compression
from logscan.testing.encoder import Rec, encode_batch

from .kafkatool import REPO

T0 = 1_700_000_000_000


def batches(n: int = 3, first: int = 0) -> list[bytes]:
    return [encode_batch([Rec(b"value-%d" % i, b"k%d" % i, (), T0 + i)], base_offset=first + i)
            for i in range(n)]


def dump(path, **opts) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    status = Dumper(out, err, DumpOptions(**opts)).run([str(path)])
    return status, out.getvalue().splitlines(), err.getvalue().splitlines()


def batch_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("baseOffset:")]


def offsets(lines: list[str]) -> list[int]:
    return [int(re.match(r"baseOffset: (\d+)", l).group(1)) for l in batch_lines(lines)]


def write(tmp_path, data: bytes, name: str = "00000000000000000000.log"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def findings(err: list[str], path) -> list[str]:
    own = [l for l in err if l.startswith("logscan: ")]
    assert all(l.startswith(f"logscan: {path}: ") for l in own), own
    return own


def test_clean_file_exits_zero(tmp_path):
    p = write(tmp_path, b"".join(batches()))
    status, out, err = dump(p, deep_iteration=True)
    assert status == EXIT_OK and offsets(out) == [0, 1, 2] and err == []


def test_truncated_tail(tmp_path):
    data = b"".join(batches())
    p = write(tmp_path, data[:-10])
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 1]
    last = len(b"".join(batches(2)))
    assert out[-1] == f"Found {len(data) - 10 - last} invalid bytes at the end of {p.name}"
    assert findings(err, p) == [f"logscan: {p}: byte {last}: last batch is truncated: "
                                f"{len(data) - 10 - last} bytes left of a longer batch"]


@pytest.mark.parametrize("cut", range(1, 17))
def test_short_tail_below_header_size(tmp_path, cut):
    p = write(tmp_path, b"".join(batches(1)) + b"\x00" * 0 + b"\x07" * cut)
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0]
    assert out[-1] == f"Found {cut} invalid bytes at the end of {p.name}"


def test_zero_filled_tail(tmp_path):
    good = b"".join(batches())
    p = write(tmp_path, good + b"\x00" * 4096)
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert out[-1] == f"Found 4096 invalid bytes at the end of {p.name}"
    (line,) = findings(err, p)
    assert f"byte {len(good)}:" in line and "zero bytes" in line


def test_zero_region_between_batches(tmp_path):
    """A zero-filled hole (a preallocated segment appended to after a crash) is one finding,
    and the batches after it are dumped at their real positions."""
    bs = batches()
    p = write(tmp_path, bs[0] + bytes(1000) + bs[1] + bs[2])
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert f"position: {len(bs[0]) + 1000} " in batch_lines(out)[1]
    assert not any(line.startswith("Found ") for line in out)
    (line,) = findings(err, p)
    assert line == (f"logscan: {p}: byte {len(bs[0])}: 1000 zero bytes where entries should be, "
                    f"resuming at byte {len(bs[0]) + 1000}")


def test_bad_crc_is_printed_invalid_and_dump_goes_on(tmp_path):
    bs = batches()
    middle = bytearray(bs[1])
    middle[-3] ^= 0x01  # inside the value: structure intact, CRC broken
    p = write(tmp_path, bs[0] + bytes(middle) + bs[2])
    status, out, err = dump(p, deep_iteration=True)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert "isvalid: false" in batch_lines(out)[1]
    (line,) = findings(err, p)
    assert f"byte {len(bs[0])}:" in line and "CRC" in line


@pytest.mark.parametrize("magic", [3, 7, 127])
def test_wrong_magic_skips_to_next_batch(tmp_path, magic):
    bs = batches()
    bad = bytearray(bs[1])
    bad[16] = magic
    p = write(tmp_path, bs[0] + bytes(bad) + bs[2])
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 2]
    own = findings(err, p)
    assert any(f"byte {len(bs[0]) + 16}:" in l and f"magic {magic}" in l for l in own)
    assert any("resuming at byte" in l for l in own)


@pytest.mark.parametrize("length", [-1, 0, 13, 2**31 - 1, 10_000])
def test_absurd_length(tmp_path, length):
    bs = batches()
    bad = bytearray(bs[1])
    struct.pack_into(">i", bad, 8, length)
    p = write(tmp_path, bs[0] + bytes(bad) + bs[2])
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 2]
    assert any(f"byte {len(bs[0]) + 8}:" in l for l in findings(err, p))


def test_corrupt_record_inside_valid_looking_batch(tmp_path):
    bs = batches()
    bad = encode_batch([Rec(b"x", None, (), T0)], base_offset=1, records_count=5)
    p = write(tmp_path, bs[0] + bad + bs[2])
    status, out, err = dump(p, deep_iteration=True)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert any(f"byte {len(bs[0])}" in l or "premature EOF" in l for l in findings(err, p))


def test_decompression_bomb(tmp_path):
    bomb = encode_batch([Rec(b"\x00" * (4 << 20), None, (), T0)], base_offset=1, codec=compression.GZIP)
    bs = batches()
    p = write(tmp_path, bs[0] + bomb + bs[2])
    status, out, err = dump(p, deep_iteration=True, max_decompressed=1 << 20)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert [l for l in out if l.startswith("| offset: 1 ")] == []
    assert any(l.startswith("| offset: 2 ") for l in out)  # the dump went on after the bomb
    (line,) = findings(err, p)
    assert f"byte {len(bs[0]) + 61}:" in line


def test_empty_file_is_fine_but_said(tmp_path):
    p = write(tmp_path, b"")
    status, out, err = dump(p)
    assert status == EXIT_OK
    assert out == [f"Dumping {p}", "Log starting offset: 0"]
    assert findings(err, p) == [f"logscan: {p}: file: empty file, no batches"]


def test_non_kafka_file(tmp_path):
    p = write(tmp_path, b"#!/bin/sh\necho this is not a kafka log segment at all\n" * 20)
    status, out, err = dump(p)
    assert status == EXIT_DATA and batch_lines(out) == []
    own = findings(err, p)
    assert own[-1].startswith(f"logscan: {p}: byte 0: no valid batch")
    assert "not a Kafka log segment" in own[-1]


def test_missing_file_exit_io(tmp_path):
    status, out, err = dump(tmp_path / "00000000000000000000.log")
    assert status == EXIT_IO
    assert "cannot read file" in err[-1]


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    p = write(tmp_path, b"".join(batches()))
    p.chmod(0)
    status, out, err = dump(p)
    assert status == EXIT_IO


def test_directory_named_like_a_segment(tmp_path):
    d = tmp_path / "00000000000000000000.log"
    d.mkdir()
    status, out, err = dump(d)
    assert status == EXIT_IO and err[-1].startswith(f"logscan: {d}: file: cannot read file")


def test_fifo_is_read_without_mmap(tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    data = b"".join(batches())

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(data)

    t = threading.Thread(target=feed)
    t.start()
    status, out, err = dump(fifo)
    t.join()
    assert status == EXIT_OK and offsets(out) == [0, 1, 2]


def test_closed_pipe(tmp_path):
    template = encode_batch([Rec(b"v" * 100, b"k", (), T0)] * 5)
    from logscan.testing.encoder import bulk_segment
    p = write(tmp_path, b"".join(bulk_segment(template, 20000)))
    proc = subprocess.run(
        f"{sys.executable} -m logscan.cli dump --deep-iteration {p} | head -3; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert len(proc.stdout.splitlines()) == 3
    assert b"Traceback" not in proc.stderr and b"Error" not in proc.stderr
    assert proc.returncode == EXIT_PIPE


def test_memory_does_not_grow_with_file_size(tmp_path):
    """Python allocations stay bounded: batch payloads are never copied whole."""
    from logscan.testing.encoder import bulk_segment
    template = encode_batch([Rec(b"x" * 1000, b"k", (), T0)] * 50)

    def peak(count: int) -> int:
        p = write(tmp_path, b"".join(bulk_segment(template, count)), f"{count:020d}.log")
        tracemalloc.start()
        Dumper(io.StringIO(), io.StringIO(), DumpOptions()).run([str(p)])
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(200), peak(2000)  # ~10 MB and ~100 MB
    # the output StringIO grows with the batch count (one line per batch); the rest must not
    line = 400
    assert large - small < 1800 * line + (2 << 20)


def test_index_without_its_log(tmp_path):
    from logscan.format.index import encode_offset_index
    p = write(tmp_path, encode_offset_index(0, [(2, 0), (5, 300)]), "00000000000000000000.index")
    status, out, err = dump(p)
    assert out[1:] == ["offset: 2 position: 0", "offset: 5 position: 300"]
    assert status == EXIT_DATA and "cannot read the segment's log" in findings(err, p)[0]


def test_index_entry_pointing_past_the_log(tmp_path):
    from logscan.format.index import encode_offset_index
    write(tmp_path, b"".join(batches()))
    p = write(tmp_path, encode_offset_index(0, [(0, 0), (9, 10_000)]), "00000000000000000000.index")
    status, out, err = dump(p)
    assert out[1:] == ["offset: 0 position: 0", "offset: 9 position: 10000"]
    (line,) = findings(err, p)
    assert line.startswith(f"logscan: {p}: byte 8: ") and "outside" in line


def test_corrupt_producer_snapshot(tmp_path):
    from logscan.format.snapshot import encode_producer_snapshot
    good = encode_producer_snapshot([(1, 0, 5, 10, 5, T0, 0, -1)])
    p = write(tmp_path, good[:-1] + bytes([good[-1] ^ 1]), "00000000000000000011.snapshot")
    status, out, err = dump(p)
    assert status == EXIT_DATA and out == [f"Dumping {p}"]  # as kafka-dump-log: no entries
    assert err[0].startswith("Snapshot is corrupt (CRC is no longer valid)")
    assert findings(err, p)[0].startswith(f"logscan: {p}: byte 2: ")
    cut = write(tmp_path, good[:30], "00000000000000000012.snapshot")
    status, out, err = dump(cut)
    assert status == EXIT_DATA and err[0].startswith("Snapshot failed schema validation")


def test_txnindex_unknown_version_and_partial_entry(tmp_path):
    from logscan.format.index import encode_aborted_txns
    # AbortedTxn.version() reads the first byte of the int16 version field
    data = (encode_aborted_txns([(1, 0, 5, 0)]) + encode_aborted_txns([(2, 6, 9, 6)], version=0x300)
            + b"\x00" * 5)
    p = write(tmp_path, data, "00000000000000000000.txnindex")
    status, out, err = dump(p)
    assert out[1:] == ["version: 0 producerId: 1 firstOffset: 0 lastOffset: 5 lastStableOffset: 0"]
    own = findings(err, p)
    assert status == EXIT_DATA and own[0].startswith(f"logscan: {p}: byte 34: ")
    assert own[1].startswith(f"logscan: {p}: byte 68: ") and "5 trailing bytes" in own[1]


def test_bad_name_is_reported_not_fatal(tmp_path):
    p = write(tmp_path, b"".join(batches()), "segment.log")
    status, out, err = dump(p)
    assert status == EXIT_DATA and offsets(out) == [0, 1, 2]
    assert "does not start with a base offset" in findings(err, p)[0]
