"""Damaged files other than segment bytes: producer snapshots and indexes cut short, files
that are not Kafka's in a partition folder, files that cannot be read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logscan.dump import EXIT_DATA, EXIT_IO
from logscan.scan.local import scan

from .harness import (REAL_INDEX, REAL_LOGS, REAL_SNAPSHOT, REAL_TIMEINDEX, REAL_TXNINDEX,
                      REPO, dump_json, mini_cluster, run_cli)



def _first_offsets(result) -> list[int]:
    """The first offsets of the (single) replica's transaction spans, in the order they left the replay."""
    return [s["first_offset"] for s in result.tables["txn_spans"]]

def _place(tmp: Path, source: Path, data: bytes) -> Path:
    target = tmp / source.parent.name / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _segment_head_gone(tmp: Path) -> tuple[Path, Path]:
    """A copy of straddle-0 whose segments below offset 13 were deleted (retention): the
    scan must seed producer state from the newest snapshot at or below 13."""
    root, part = mini_cluster(tmp, REAL_SNAPSHOT.parent)
    for f in part.iterdir():
        if f.suffix in (".log", ".index", ".timeindex", ".txnindex") and int(f.stem) < 13:
            f.unlink()
    return root, part


# --- producer snapshots ----------------------------------------------------------------------

def test_snapshot_cut_at_every_byte_dump(tmp_path):
    data = REAL_SNAPSHOT.read_bytes()
    problems = []
    for cut in range(len(data)):
        path = _place(tmp_path, REAL_SNAPSHOT, data[:cut])
        run = dump_json(path)
        located = [f for f in run.findings if f["file"] == str(path) and 0 <= f["position"] <= cut]
        if run.status != EXIT_DATA or not located:
            problems.append((cut, run.status, run.findings))
    assert problems == []


@pytest.mark.parametrize("snapshot", ["00000000000000000013.snapshot", "00000000000000000022.snapshot"])
@pytest.mark.parametrize("cut", [0, 1, 6, 10, 33, 55])
def test_snapshot_cut_short_scan(tmp_path, snapshot, cut):
    """The seed snapshot (13) and the newest one (22) cut short: the scan names the file and
    the byte, and still rebuilds the partition from what it has."""
    clean = scan([_segment_head_gone(tmp_path / "clean")[0]])
    root, part = _segment_head_gone(tmp_path / "damaged")
    snap = part / snapshot
    snap.write_bytes(snap.read_bytes()[:cut])
    result = scan([root])
    mine = [f for f in result.findings if f.path == str(snap)]
    assert mine and all(0 <= f.position <= cut and f.reason for f in mine), result.findings
    assert [f for f in result.findings if f.path != str(snap)] == []
    assert result.tables["partition_state"][0]["log_end_offset"] == clean.tables["partition_state"][0]["log_end_offset"]
    cli = run_cli("scan", str(root))
    assert "Traceback" not in cli.stderr and cli.returncode == 1, cli.stderr[-2000:]
    assert f"logscan: {snap}: byte " in cli.stdout


# --- indexes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("index", [REAL_INDEX, REAL_TIMEINDEX], ids=["index", "timeindex"])
def test_index_cut_short_with_sanity_check(tmp_path, index):
    data = index.read_bytes()
    assert len(data) >= 24  # real entries to cut through
    _place(tmp_path, index.with_suffix(".log"), index.with_suffix(".log").read_bytes())
    problems = []
    entry = 8 if index.suffix == ".index" else 12
    # (below one whole entry kafka-dump-log prints "is empty." and checks nothing: see
    # test_index_cut_short_plain_dump)
    for cut in range(entry + 1, len(data)):
        if cut % entry == 0:
            continue
        path = _place(tmp_path, index, data[:cut])
        run = dump_json(path, index_sanity_check=True)
        if run.status != EXIT_DATA or not any(f["file"] == str(path) and 0 <= f["position"] <= cut
                                              for f in run.findings):
            problems.append((cut, run.status, run.findings))
    assert problems == []


@pytest.mark.parametrize("index", [REAL_INDEX, REAL_TIMEINDEX], ids=["index", "timeindex"])
def test_index_cut_short_plain_dump(tmp_path, index):
    data = index.read_bytes()
    _place(tmp_path, index.with_suffix(".log"), index.with_suffix(".log").read_bytes())
    for cut in (len(data) - 3, 3):
        path = _place(tmp_path, index, data[:cut])
        for sanity in (False, True):
            run = dump_json(path, index_sanity_check=sanity)
            assert run.status == EXIT_DATA and any(f["position"] >= 0 for f in run.findings), run.findings


def test_txnindex_cut_at_every_byte(tmp_path):
    data = REAL_TXNINDEX.read_bytes()
    assert len(data) >= 34
    problems = []
    for cut in range(1, len(data)):
        path = _place(tmp_path, REAL_TXNINDEX, data[:cut])
        run = dump_json(path)
        if run.status != EXIT_DATA or not any(0 <= f["position"] <= cut for f in run.findings):
            problems.append((cut, run.status, run.findings))
    assert problems == []


@pytest.mark.parametrize("victim", [REAL_INDEX, REAL_TIMEINDEX, REAL_TXNINDEX],
                         ids=["index", "timeindex", "txnindex"])
def test_scan_is_not_misled_by_an_index_cut_short(tmp_path, victim):
    """The scan rebuilds everything from the segments; a cut index changes nothing in it."""
    clean = scan([mini_cluster(tmp_path / "clean", victim.parent)[0]])
    root, part = mini_cluster(tmp_path / "damaged", victim.parent)
    (part / victim.name).write_bytes(victim.read_bytes()[:-3])
    result = scan([root])
    assert result.tables["partition_state"] == clean.tables["partition_state"]
    assert [f for f in result.findings if f.path != str(part / victim.name)] == clean.findings


# --- files that are not Kafka's -------------------------------------------------------------

def _foreign_contents() -> dict[str, bytes]:
    return {
        "text": (REPO / "README.md").read_bytes()[:20_000],
        "elf": Path(sys.executable).resolve().read_bytes()[:50_000],
        "json": b'{"not": "a segment", "offsets": [0, 1, 2]}\n' * 50,
        "zeros-and-text": bytes(4096) + b"#!/bin/sh\nexit 0\n",
    }


@pytest.mark.parametrize("kind", sorted(_foreign_contents()))
def test_foreign_file_named_like_a_segment(tmp_path, kind):
    """A file that is not a segment under a segment's name, next to a real segment: both
    commands name it, at byte 0 (or where its garbage starts), and the real segment is read
    as before."""
    source = REAL_LOGS["txn"]
    clean = scan([mini_cluster(tmp_path / "clean", source.parent)[0]])
    root, part = mini_cluster(tmp_path / "damaged", source.parent)
    foreign = part / "00000000000000000500.log"
    foreign.write_bytes(_foreign_contents()[kind])
    result = scan([root])
    assert result.findings and {f.path for f in result.findings} == {str(foreign)}, result.findings
    assert all(f.position >= 0 and f.reason for f in result.findings)
    assert result.tables["partition_state"][0]["high_watermark"] == clean.tables["partition_state"][0]["high_watermark"]
    assert _first_offsets(result) == _first_offsets(clean)

    run = dump_json(foreign)
    assert run.status == EXIT_DATA and run.batches == []
    assert run.findings and all(f["file"] == str(foreign) and f["position"] >= 0 for f in run.findings)
    cli = run_cli("scan", str(root))
    assert "Traceback" not in cli.stderr and cli.returncode == 1 and f"logscan: {foreign}: byte " in cli.stdout


def test_foreign_files_beside_the_segments_change_nothing(tmp_path):
    """Editor backups, core dumps, NFS leftovers and stray folders in a partition folder: not
    Kafka's files, not read as segments; the scan's result is the undamaged one."""
    source = REAL_LOGS["txn"]
    clean = scan([mini_cluster(tmp_path / "clean", source.parent)[0]])
    root, part = mini_cluster(tmp_path / "damaged", source.parent)
    (part / "notes.txt").write_text("copied at 03:00 by ops\n")
    (part / "core.4242").write_bytes(os.urandom(10_000))
    (part / ".nfs0000000001").write_bytes(source.read_bytes()[:100])
    (part / "00000000000000000000.log.swp").write_bytes(source.read_bytes())
    (part / "lost+found").mkdir()
    result = scan([root])
    assert result.tables["partition_state"] == clean.tables["partition_state"]
    assert result.findings == clean.findings == []
    for f in ("notes.txt", "core.4242"):
        cli = run_cli("dump", str(part / f))
        assert "Traceback" not in cli.stderr and cli.returncode in (0, 1), cli.stderr


# --- files that cannot be read ----------------------------------------------------------------

def _unreadable_runner() -> list[str]:
    """A prefix under which chmod 000 really denies reading. As root, DAC checks are skipped
    (CAP_DAC_OVERRIDE); setpriv drops that capability from the child, so the kernel refuses
    the read exactly as it would for an ordinary user."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: chmod 000 cannot be enforced")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def _run_cli_as(prefix: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "logscan.cli", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))


def _unreadable_copy(tmp_path: Path, prefix: list[str]) -> tuple[Path, Path]:
    root, part = mini_cluster(tmp_path, REAL_LOGS["txn"].parent)
    shutil.copytree(REAL_LOGS["codecs"].parent, root / "broker-0" / REAL_LOGS["codecs"].parent.name)
    segment = part / REAL_LOGS["txn"].name
    segment.chmod(0)
    probe = subprocess.run([*prefix, sys.executable, "-c", f"open({str(segment)!r}, 'rb')"],
                           capture_output=True, text=True)
    assert "PermissionError" in probe.stderr, "the test cannot make the file unreadable"
    return root, segment


def test_unreadable_segment_scan(tmp_path):
    prefix = _unreadable_runner()
    root, segment = _unreadable_copy(tmp_path, prefix)
    try:
        scanned = _run_cli_as(prefix, "scan", str(root))
        assert "Traceback" not in scanned.stderr and scanned.returncode == 1, scanned.stderr
        assert f"logscan: {segment}: file: " in scanned.stdout, scanned.stdout
        assert scanned.stdout.startswith("Scanned 2 replicas"), scanned.stdout[:200]
    finally:
        segment.chmod(0o644)


def test_unreadable_segment_dump(tmp_path):
    prefix = _unreadable_runner()
    root, segment = _unreadable_copy(tmp_path, prefix)
    try:
        dump = _run_cli_as(prefix, "dump", str(segment))
        assert "Traceback" not in dump.stderr
        assert dump.returncode == EXIT_IO, dump.stderr
        assert dump.stderr.splitlines()[-1].startswith(f"logscan: {segment}: file: cannot read file")
    finally:
        segment.chmod(0o644)


def test_directory_in_place_of_a_segment(tmp_path):
    """What chmod cannot do for root, a directory does for everyone: open() fails."""
    root, part = mini_cluster(tmp_path, REAL_LOGS["txn"].parent)
    clean = scan([root])
    (part / "00000000000000000900.log").mkdir()
    result = scan([root])
    assert [(f.path, f.position, f.reason) for f in result.findings] == [
        (str(part / "00000000000000000900.log"), -1, "io")]
    # (the log end is at least the unreadable segment's base offset, by Kafka's naming)
    assert result.tables["partition_state"][0]["high_watermark"] == clean.tables["partition_state"][0]["high_watermark"]
    assert _first_offsets(result) == _first_offsets(clean)
    dump = run_cli("dump", str(part / "00000000000000000900.log"))
    assert "Traceback" not in dump.stderr and dump.returncode == EXIT_IO
    cli = run_cli("scan", str(root))
    assert "Traceback" not in cli.stderr and cli.returncode == 1
    assert f"logscan: {part / '00000000000000000900.log'}: file: " in cli.stdout
