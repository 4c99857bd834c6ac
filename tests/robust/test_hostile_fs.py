"""A hostile copy's file system: links, FIFOs and folders the scan may not read (issue 33).

The real `hanging` cluster (Kafka 4.1.1) is copied and one thing in it is made hostile: a
dangling symbolic link or a link loop named like a segment, a segment replaced by a link to
a file outside the copy, a FIFO named like a segment or a producer snapshot, a partition
folder or a broker folder that cannot be listed. Each must be a located finding (the path,
a reason, a sentence) while every other replica is scanned as in the untouched copy; no
traceback, no wait, and no byte from outside the copy in any finding or table.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import struct
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.local import scan
from logscan.state import hanging

from .harness import REPO, run_cli

HANGING = REPO / "fixtures" / "hanging"
AS_OF = json.loads((HANGING / "truth" / "truth.json").read_text())["recorded_at_ms"]
#: Longer than the fixture's hanging transactions are old: `logscan scan` then exits 1 when
#: it finds damage (with the default timeout it exits 4, hanging transactions, as the
#: untouched copy does: the README's table puts 4 before 1).
PAST_THE_HANGS = str(24 * 3600 * 1000)
HOSTILE = ("hang", 0)      # the partition made hostile, on broker 1
BROKER = 1

#: The outside file's bytes: a batch header's base offset and a length no segment here has,
#: then text; a scan that reads them puts the length or the text into a finding or a row.
OUTSIDE_LENGTH = 0x5EC2E7
OUTSIDE_TEXT = b"OUTSIDE-THE-COPY"
OUTSIDE_BYTES = bytes(8) + struct.pack(">i", OUTSIDE_LENGTH) + OUTSIDE_TEXT * 8
OUTSIDE_TRACES = (str(OUTSIDE_LENGTH), f"{OUTSIDE_LENGTH:x}", OUTSIDE_TEXT.decode(), OUTSIDE_TEXT.hex())


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "brokers"
    shutil.copytree(HANGING / "brokers", copy)
    return copy


def _partition(copy: Path, broker: int = BROKER) -> Path:
    return copy / f"broker-{broker}" / f"{HOSTILE[0]}-{HOSTILE[1]}"


def tables(result) -> dict[str, list]:
    """Every table of a scan as rows."""
    return result.tables


def _by_replica(result, table: str) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for row in tables(result)[table]:
        out.setdefault((row["broker"], row["topic"], row["partition"]), []).append(row)
    return out


def _findings(result, copy: Path, touched: Callable[[tuple], bool]) -> set[tuple]:
    return {(Path(r["file"]).relative_to(copy), r["position"], r["reason"]) for r in tables(result)["corruptions"]
            if r["broker"] is not None and not touched((r["broker"], r["topic"], r["partition"]))}


#: partition_state's columns that count and compare a partition's replicas in the copy.
ACROSS_REPLICAS = ("replicas", "replica_differences")


def _untouched(result, touched: Callable[[tuple], bool], drop: tuple[str, ...] = ()) -> dict[str, dict]:
    """The partition states, hanging candidates, producers and spans of every replica
    ``touched`` spares (without the columns ``drop``)."""
    return {table: {k: [{c: v for c, v in row.items() if c not in drop} for row in rows]
                    for k, rows in _by_replica(result, table).items() if not touched(k)}
            for table in ("partition_state", "hanging_candidates", "producer_state", "txn_spans")}


@pytest.fixture(scope="module")
def reference():
    return scan([HANGING / "brokers"], as_of_ms=AS_OF)


def _in_partition(key: tuple) -> bool:
    return (key[1], key[2]) == HOSTILE


def _on_broker(key: tuple) -> bool:
    return key[0] == BROKER


#: The columns of a hanging_candidates row that say its verdict.
VERDICT = ("reason", "hanging", "evidence")


def _same_or_withheld(got: dict, whole: dict) -> None:
    """Without a whole broker, the partitions and coordinator partitions it last led are held by
    followers only: a hanging verdict resting on them is withheld (tests/scan/test_leader_absent.py),
    every other one stands."""
    assert got.keys() == whole.keys()
    withheld = 0
    for key in whole:
        assert len(got[key]) == len(whole[key]), key
        for g, w in zip(got[key], whole[key]):
            assert {c: v for c, v in g.items() if c not in VERDICT} == {c: v for c, v in w.items() if c not in VERDICT}
            if g != w:
                assert (w["hanging"], g["hanging"]) == (True, None), (g, w)
                assert g["reason"] in (hanging.PARTITION_NOT_IN_COPY, hanging.COORDINATOR_NOT_IN_COPY), g
                withheld += 1
    assert withheld


def _check(copy: Path, named: Path, reason: str, touched: Callable[[tuple], bool], reference) -> None:
    """The library and `logscan scan` on ``copy``: a finding for ``named`` with ``reason``, no
    traceback, and every replica ``touched`` spares as in the untouched copy (when a whole
    broker is touched, each partition has one replica fewer to count and compare)."""
    result = scan([copy], as_of_ms=AS_OF)
    mine = [f for f in result.findings if f.path == str(named)]
    assert [(f.reason, f.position) for f in mine] == [(reason, -1)], result.findings
    assert mine[0].message and "\n" not in mine[0].message
    drop = ACROSS_REPLICAS if touched is _on_broker else ()
    whole = _untouched(reference, touched, drop)
    assert whole["partition_state"] and whole["hanging_candidates"]
    got = _untouched(result, touched, drop)
    if touched is _on_broker:
        _same_or_withheld(got.pop("hanging_candidates"), whole.pop("hanging_candidates"))
    assert got == whole
    # The other replicas' findings (the fixture's cut follower) stay as they were.
    assert _findings(result, copy, touched) == _findings(reference, HANGING / "brokers", touched)

    run = CliRunner().invoke(main, ["scan", str(copy), "--no-progress",
                                    "--max-transaction-timeout-ms", PAST_THE_HANGS])
    assert run.exception is None or isinstance(run.exception, SystemExit), run.output
    assert "Traceback" not in run.output
    assert run.exit_code == 1, run.output
    assert f"logscan: {named}: file: {mine[0].message}" in run.output


def test_a_dangling_link_named_like_a_segment(tmp_path, reference):
    copy = _copy(tmp_path)
    link = _partition(copy) / "00000000000000000099.log"
    link.symlink_to("00000000000000000098.log")
    _check(copy, link, "link", _in_partition, reference)


def test_a_link_loop_named_like_a_segment(tmp_path, reference):
    copy = _copy(tmp_path)
    link = _partition(copy) / "00000000000000000099.log"
    link.symlink_to("loop-back")
    (_partition(copy) / "loop-back").symlink_to(link.name)  # a name the scan never reads: no finding
    _check(copy, link, "link", _in_partition, reference)


def test_a_segment_linked_out_of_the_copy_is_never_read(tmp_path, reference):
    copy = _copy(tmp_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(OUTSIDE_BYTES)
    segment = _partition(copy) / "00000000000000000000.log"
    size = segment.stat().st_size
    segment.unlink()
    segment.symlink_to(outside)
    _check(copy, segment, "link", _in_partition, reference)

    result = scan([copy], as_of_ms=AS_OF, keep_batches=True)
    assert result.bytes_read == reference.bytes_read - size
    text = repr(result.findings) + repr(tables(result))
    assert [t for t in OUTSIDE_TRACES if t in text] == []
    assert str(outside) not in repr(tables(result)["files"])


def test_a_link_out_of_the_copy_is_followed_when_asked(tmp_path):
    """follow_links=True reads what the link leads to, as the untouched copy's own file."""
    from logscan.scan.listing import list_copy

    copy = _copy(tmp_path)
    segment = _partition(copy) / "00000000000000000000.log"
    outside = tmp_path / "kept-elsewhere.log"
    shutil.move(segment, outside)
    segment.symlink_to(outside)
    refused = list_copy([copy])
    assert [(f.path, f.reason) for _, f in refused.findings if f.path == str(segment)] == [(str(segment), "link")]
    followed = list_copy([copy], follow_links=True)
    assert [f for _, f in followed.findings if f.path == str(segment)] == []
    (listed,) = [r for r in followed.replicas if (r.replica.broker, r.replica.topic, r.replica.partition)
                 == (BROKER, *HOSTILE)]
    assert listed.replica.segments == [(0, str(outside))]
    # the option, from every entry point: the scan and the plan read the moved segment
    for command in ("scan", "plan"):
        asked = CliRunner().invoke(main, [command, str(copy), "--as-of", str(AS_OF), "--follow-links",
                                          "--format", "json"])
        plain = CliRunner().invoke(main, [command, str(_copy(tmp_path / command)), "--as-of", str(AS_OF),
                                          "--format", "json"])
        assert (asked.exit_code, asked.stdout) == (plain.exit_code, plain.stdout), command
    from spark_jobs.scan import list_inputs, parse_args

    assert parse_args([str(copy), "--output", str(tmp_path / "t"), "--follow-links"]).follow_links
    assert [u["file"] for u in list_inputs([copy], follow_links=True).units if u["file"] == str(outside)] == [
        str(outside)]


def _fifo_case(tmp_path, reference, name: str) -> None:
    copy = _copy(tmp_path)
    fifo = _partition(copy) / name
    os.mkfifo(fifo)
    # In a child first, with a deadline: a scan that opens the FIFO waits for a writer forever.
    run = run_cli("scan", str(copy), "--no-progress", "--max-transaction-timeout-ms", PAST_THE_HANGS, timeout=60)
    assert "Traceback" not in run.stderr and run.returncode == 1, run.stderr
    _check(copy, fifo, "not-regular", _in_partition, reference)
    (finding,) = [f for f in scan([copy], as_of_ms=AS_OF).findings if f.path == str(fifo)]
    assert "FIFO" in finding.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_segment(tmp_path, reference):
    _fifo_case(tmp_path, reference, "00000000000000000099.log")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_a_producer_snapshot(tmp_path, reference):
    _fifo_case(tmp_path, reference, "00000000000000000099.snapshot")


def _deny(monkeypatch, folder: Path) -> None:
    """``folder`` as a chmod 000 folder is for any user but root (the tests run as root): it
    cannot be listed, and nothing under it can be opened or stat'ed."""
    where = str(folder)

    def denied(path) -> bool:
        p = os.fspath(path)
        p = p.decode() if isinstance(p, bytes) else p
        return p == where or p.startswith(where + os.sep)

    def guard(real, listing: bool):
        def call(path=".", *args, **kw):
            if denied(path) and (listing or os.fspath(path) != where):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return real(path, *args, **kw)
        return call

    monkeypatch.setattr(os, "scandir", guard(os.scandir, True))
    monkeypatch.setattr(os, "listdir", guard(os.listdir, True))
    monkeypatch.setattr(os, "open", guard(os.open, True))
    monkeypatch.setattr(os, "stat", guard(os.stat, False))
    monkeypatch.setattr(os, "lstat", guard(os.lstat, False))


def test_an_unreadable_partition_folder(tmp_path, reference, monkeypatch):
    copy = _copy(tmp_path)
    _deny(monkeypatch, _partition(copy))
    _check(copy, _partition(copy), "io", _in_partition, reference)


def test_an_unreadable_broker_folder(tmp_path, reference, monkeypatch):
    copy = _copy(tmp_path)
    _deny(monkeypatch, copy / f"broker-{BROKER}")
    _check(copy, copy / f"broker-{BROKER}", "io", _on_broker, reference)


def test_an_unreadable_segment_file(tmp_path, reference, monkeypatch):
    copy = _copy(tmp_path)
    segment = _partition(copy) / "00000000000000000000.log"
    _deny(monkeypatch, segment)
    _check(copy, segment, "io", _in_partition, reference)


def _permissions_hold(tmp_path: Path) -> bool:
    """Whether a chmod 000 folder stops this process listing it: not for root with its
    capabilities (CAP_DAC_OVERRIDE); for root without them, as for any other user, e.g.
    ``capsh --drop=cap_dac_override,cap_dac_read_search -- -c 'pytest ...'``."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0)
    try:
        os.listdir(probe)
        return False
    except PermissionError:
        return True
    finally:
        probe.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("which", ["partition", "broker"])
def test_a_chmod_000_folder(tmp_path, reference, which):
    if not _permissions_hold(tmp_path):
        pytest.skip("this process reads a chmod 000 folder (root): the monkeypatched tests stand in for it")
    copy = _copy(tmp_path)
    folder = _partition(copy) if which == "partition" else copy / f"broker-{BROKER}"
    folder.chmod(0)
    try:
        _check(copy, folder, "io", _in_partition if which == "partition" else _on_broker, reference)
    finally:
        folder.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("name", ["replication-offset-checkpoint", "log-start-offset-checkpoint",
                                  "recovery-point-offset-checkpoint", "meta.properties"])
@pytest.mark.parametrize("make", ["fifo", "folder", "link-out", "dangling"])
def test_a_broker_level_file_that_is_no_regular_file(tmp_path, name, make):
    """The broker-level files the listing reads by name: never waited on, never followed out
    of the copy; the broker's replicas are still listed."""
    from logscan.scan.listing import list_copy

    copy = _copy(tmp_path)
    path = copy / f"broker-{BROKER}" / name
    path.unlink()
    if make == "fifo":
        os.mkfifo(path)
    elif make == "folder":
        path.mkdir()
    elif make == "link-out":
        (tmp_path / "outside").write_bytes(b"0\n1\nhang 0 99\n")
        path.symlink_to(tmp_path / "outside")
    else:
        path.symlink_to("nowhere")
    run = run_cli("scan", str(copy), "--no-progress", "--max-transaction-timeout-ms", PAST_THE_HANGS, timeout=60)
    assert "Traceback" not in run.stderr and run.returncode == 1, run.stderr
    listing = list_copy([copy])
    mine = [f for _, f in listing.findings if f.path == str(path)]
    assert [f.reason for f in mine] == [{"fifo": "not-regular", "folder": "io"}.get(make, "link")]
    assert len([r for r in listing.replicas if r.replica.broker == BROKER]) == 10
    assert 99 not in {c for r in listing.replicas
                      for c in (r.hw_checkpoint, r.log_start_checkpoint, r.recovery_point_checkpoint)}
