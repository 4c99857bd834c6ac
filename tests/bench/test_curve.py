"""The batch-size curve (tools/bench/curve.py) on tiny segments: each size's segment is what it
says (batches of that size, every one counted by both of logscan's walks), the per-batch CRC32C
pass and the bare Python loop count the same batches and catch a damaged CRC, and the report
prints a row per size, the 16 KiB target and what bounds it. No timing is asserted: speed is
`make bench`'s."""

from __future__ import annotations

import json
import re

import pytest

from logscan.format import compiled as compiled_steps
from tools.bench import curve


def test_sizes_take_kib_or_bytes():
    assert curve._sizes("256B,1,16") == [0.25, 1, 16]
    assert [curve._kib(k) for k in (0.25, 1, 1024)] == ["256 B", "1 KiB", "1 MiB"]
    for bad in ("100B", "3", "x", ""):
        with pytest.raises(Exception, match="sizes: a comma-separated subset"):
            curve._sizes(bad)


def test_segments_have_the_asked_batch_size(tmp_path):
    for kib in (0.25, 1, 16, 256):
        seg = curve.curve_segment(kib, 2, tmp_path)
        manifest = json.loads((seg.parents[2] / "manifest.json").read_text())
        batches = curve.walk(seg)
        assert batches == curve.scan_unit(seg)
        assert batches == manifest["totals"]["batches"] + manifest["totals"]["markers"]
        data = seg.read_bytes()
        sizes, codecs, pos = [], set(), 0
        while pos < len(data):
            size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
            codecs.add(data[pos + 22] & 7)
            if not data[pos + 22] & 0x20:  # markers are small control batches
                sizes.append(size)
            pos += size
        assert codecs == {0}
        assert all(0.85 * kib * 1024 <= s <= kib * 1024 for s in sizes), (kib, min(sizes), max(sizes))


def test_the_python_column_walks_without_the_compiled_step(tmp_path, monkeypatch):
    seg = curve.curve_segment(16, 4, base=tmp_path)
    batches = curve.walk(seg)
    calls = []

    def compiled(buf, pos, *args):  # takes no batch: the walk's general step reads each one
        calls.append(pos)
        return [], pos

    monkeypatch.setattr(compiled_steps, "walk_v2", compiled)
    assert curve.walk(seg, compiled=False) == batches and calls == []
    assert compiled_steps.walk_v2 is compiled
    assert curve.walk(seg) == batches and len(calls) == batches


def test_crc_per_batch_and_the_bare_loop_count_every_batch(tmp_path):
    seg = curve.curve_segment(16, 4, base=tmp_path)
    batches = curve.walk(seg)
    assert batches > 100
    assert curve.bare_walk(seg) == batches
    with curve.crc_spans(seg) as (slices, crcs):
        assert len(slices) == len(crcs) == batches
        assert sum(len(piece) for piece in slices) == seg.stat().st_size - batches * curve.CRC_START
        assert curve.crc_per_batch(slices, crcs) == batches
    data = seg.read_bytes()
    assert curve.compiled_walk(data, check_crc=False) == curve.compiled_walk(data, check_crc=True) == batches


def test_a_damaged_crc_is_caught(tmp_path):
    seg = curve.curve_segment(16, 4, base=tmp_path)
    data = bytearray(seg.read_bytes())
    pos = 0
    for _ in range(7):  # into the 8th batch
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    data[end - 1] ^= 0x01  # the last byte the batch's CRC covers
    bad = tmp_path / "damaged" / seg.name
    bad.parent.mkdir()
    bad.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match=f"CRC mismatch in the batch at byte {pos}$"):
        curve.bare_walk(bad)
    with curve.crc_spans(bad) as (slices, crcs), pytest.raises(SystemExit, match="CRC mismatch in batch 7:"):
        curve.crc_per_batch(slices, crcs)
    with pytest.raises(SystemExit, match="does not walk clean"):
        curve.walk(bad)
    with pytest.raises(SystemExit, match="aiokafka: CRC mismatch in batch 7 "):
        curve.compiled_walk(bytes(data), check_crc=True)
    assert curve.compiled_walk(bytes(data), check_crc=False) == curve.walk(seg)  # the walk alone checks nothing


def test_segments_are_cached(tmp_path, capsys):
    seg = curve.curve_segment(4, 1, tmp_path)
    stamp = seg.stat().st_mtime_ns
    assert curve.curve_segment(4, 1, tmp_path) == seg
    assert seg.stat().st_mtime_ns == stamp
    assert "up to date" in capsys.readouterr().err


def test_report_has_every_size_and_the_target(tmp_path, capsys):
    assert curve.main(["--size-mb", "1", "--sizes-kib", "1,16,1024", "--runs", "1", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for label in ("1 KiB", "16 KiB", "1 MiB"):
        assert re.search(rf"^\s+{label}\s+\d+ \|", out, re.M), label
    targets = [line for line in out.splitlines() if "16 KiB batches >= 70%" in line and "batch-level decode" in line]
    assert len(targets) == 3
    assert len([line for line in out.splitlines() if re.match(r"\s+\[(    met|NOT met)\] .* at 1 KiB batches >= 5 M", line)]) == 2
    assert all(re.match(r"\s+\[(    met|NOT met)\]", line) for line in targets)
    assert re.search(r"^\s+16 KiB\s+\d+ \|(\s+\d+\.\d\d){3} \|\s+\d+\.\d\d\s+\d+% \|\s+\d+\.\d\d\s+\d+% \|", out, re.M)
    lines = out.splitlines()
    at = lines.index(targets[-1])
    assert re.match(r"  the ceiling of a per-batch CRC32C check with the crc32c library, no walk: \d+% at 16 KiB \(",
                    lines[at + 1])
    assert re.match(r"  the bare Python walk\+check loop .*: \d+% at 16 KiB \(", lines[at + 2])
    assert re.match(r"  a compiled walker, aiokafka's: walks at \d+\.\d\d us per batch; with its own CRC32C \d+% "
                    r"\(\d+\.\d\d GB/s: .*projects to \d+%$", lines[at + 3])
    head = lines.index(next(line for line in lines if line.startswith("Compiled walker (aiokafka's")))
    rows = lines[head + 6:head + 9]
    for label, row in zip(("1 KiB", "16 KiB", "1 MiB"), rows):
        assert re.match(rf"^\s+{label} \|\s+\d+\.\d\s+\d+\.\d\d \|\s+\d+\.\d\d\s+\d+% \|\s+\d+%$", row), row


def test_the_projection_adds_the_compiled_walk_to_the_crc_in_large_calls():
    # 8 MiB calls take 0.3 s, the compiled walk 0.1 s: a walker doing both reaches 75% of the calls alone.
    p = curve.Point(16, 10**9, 1000, 0.1, 0.2, 0.2, 0.5, 0.3, 0.6, 0.7, 0.75, 0.8, t_compiled=0.1, t_compiled_crc=0.9)
    assert p.compiled_projection == pytest.approx(0.75)
    (row,) = [line for line in curve.compiled_table([p]) if line.startswith("   16 KiB |")]
    assert row.split("|")[1].split() == ["10.0", "100.00"]  # GB/s, us per batch
    assert row.split("|")[2].split() == ["1.11", "22%"]  # own CRC: 0.2 s limit / 0.9 s
    assert row.split("|")[3].split() == ["75%"]


def test_without_aiokafka_the_compiled_rows_say_so():
    p = curve.Point(16, 10**9, 1000, 0.1, 0.2, 0.2, 0.5, 0.3, 0.6, 0.7, 0.75, 0.8)
    assert curve.compiled_table([p])[1] == "  aiokafka: not installed"
    assert curve.why(p)[-1] == "  a compiled walker (aiokafka): not installed"


def test_report_without_the_target_size_says_so(tmp_path, capsys):
    curve.main(["--size-mb", "1", "--sizes-kib", "4", "--runs", "1", "--work", str(tmp_path)])
    out = capsys.readouterr().out
    assert "[    n/a] 16 KiB batches not in this run" in out
    assert "the ceiling of a per-batch" not in out


def test_every_size_is_held_to_the_best_limit_of_the_run():
    # Same bytes and times at two sizes, but the 16 KiB limit measured twice as slow (another
    # process on the core): its ratios must not come out twice as good.
    def point(kib, t_limit):
        return curve.Point(kib, 10**9, 1000, 0.1, t_limit, t_limit, 0.1, 0.1, 0.2, 0.4, 0.45, 0.5)

    fast, slow = point(4, 0.1), point(16, 0.2)
    lines = curve.report([fast, slow], 256, 1)
    assert "the best of every size in this run: 10.00 GB/s" in lines[1]
    assert slow.ratio(slow.t_walk) == fast.ratio(fast.t_walk) == pytest.approx(0.25)
    (target,) = [line for line in lines if "walk_batches, the dump's walk" in line]
    assert "25% (2.50 of 10.00 GB/s)" in target


def test_rounds_go_across_the_sizes_and_keep_each_best(tmp_path, monkeypatch):
    # A slow spell of the machine lasting one size's rounds would have set that size's row
    # alone: the rounds take each size in turn, and each figure keeps its best.
    calls = []
    slow = {(1, 16): 9.0}   # (round, size): the whole round slow
    names = ["read", "read_crc", "mmap_crc", "crc_batch", "crc_chunks", "bare", "walk", "walk_python", "scan"]

    def one_round(seg):
        kib = int(seg.name)
        r = sum(1 for _, k in calls if k == kib) + 1
        calls.append((r, kib))
        return {name: (slow.get((r, kib), 1.0) + r / 100, 10 if name == "read" else 7) for name in names}

    monkeypatch.setattr(curve, "curve_segment", lambda kib, size_mb, base: base / f"{kib}")
    monkeypatch.setattr(curve.anchors, "recache", lambda seg: None)
    monkeypatch.setattr(curve, "one_round", one_round)
    points = curve.measure([4, 16], 1, 3, tmp_path)
    assert calls == [(1, 4), (1, 16), (2, 4), (2, 16), (3, 4), (3, 16)]
    p4, p16 = points
    assert (p4.kib, p4.nbytes, p4.batches, p4.t_walk) == (4, 10, 7, 1.01)
    assert p16.t_walk == p16.t_read == 1.02   # its slow first round (9.01 s) left out


def test_an_error_of_the_walk_is_the_error_raised(tmp_path, monkeypatch):
    # Not the BufferError of closing a mapping the failed walk's frame still held slices of.
    seg = curve.curve_segment(1, 1, tmp_path)

    def broken(*args):
        raise RuntimeError("the walk failed")

    monkeypatch.setattr(compiled_steps, "walk_v2", broken)
    with pytest.raises(RuntimeError, match="the walk failed"):
        curve.walk(seg)
    monkeypatch.undo()
    assert curve.walk(seg) == curve.scan_unit(seg)


def test_issue_37s_targets_are_printed_for_the_scans_unit_and_the_bulk_path():
    def point(kib, batches, t_scan, t_bulk):
        return curve.Point(kib, 10**9, batches, 0.1, 0.2, 0.2, 0.1, 0.1, 0.2, 0.4, 0.45, t_scan,
                           t_tables=t_bulk, t_tables_replay=t_bulk, t_scan_replay=t_scan)

    lines = curve.bulk_targets([point(0.25, 10**6, 1.0, 0.1), point(1, 10**6, 0.1, 1.0), point(16, 1000, 0.5, 0.25)])
    assert lines == [
        "Targets (issue 37):",
        "  [NOT met] read_segment, the scan's unit at 256 B batches >= 5 M batches/s: 1.00 M",
        "  [    met] fact tables + replay, the bulk path at 256 B batches >= 5 M batches/s: 10.00 M",
        "  [    met] read_segment, the scan's unit at 1 KiB batches >= 5 M batches/s: 10.00 M",
        "  [NOT met] fact tables + replay, the bulk path at 1 KiB batches >= 5 M batches/s: 1.00 M",
        "  [NOT met] read_segment, the scan's unit at 16 KiB batches >= 70% of the limit: 40% (2.00 of 5.00 GB/s)",
        "  [    met] fact tables + replay, the bulk path at 16 KiB batches >= 70% of the limit: 80% (4.00 of 5.00 GB/s)"]
