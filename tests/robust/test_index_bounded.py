"""`logscan dump` of .index, .timeindex and .txnindex files that are huge or shrink while read
(issue 33).

An index used to be mapped whole, and so was the log its entries point into: an index (or
log) truncated under the dump killed it with SIGBUS at the first page past the new end, and
an index larger than the address space (an active segment's index is preallocated to
segment.index.bytes, and a hostile copy may hold any size) could not be read at all. Both are
read now, never mapped: an index a chunk of whole entries at a time, the sanity check's first
and last entries alone, the log a window from each position an entry names. A file that
shrinks is a located ``shrank`` finding naming that file, exit status 1.

The log is the tv2 cluster's codecs-0 batches (one per codec) under increasing offsets; its
indexes are written the way LogSegment.append writes them (an entry at least every
index.interval.bytes = 4096 bytes of log: the batch's last offset and its position, its max
timestamp and last offset), with the project's encoder; the aborted-transaction index repeats
the real entries of straddle-0's .txnindex. Files are cut at a fixed point of the dump (when
its first entry is printed), so nothing depends on timing.
"""

from __future__ import annotations

import io
import json
import resource
import signal
import subprocess
import sys
import textwrap

import pytest

from logscan.dump import EXIT_DATA, EXIT_OK, DumpOptions, Dumper
from logscan.dump import indexes
from logscan.dump.sinks import JsonSink
from logscan.format import index as idx
from logscan.format.logfile import walk_batches

from .harness import REAL_TXNINDEX, REPO
from .test_resync_shrink import _batches_until

INTERVAL = 4096
#: A chunk the in-process tests read an index in: 408 bytes is a whole number of every
#: index's entries (8, 12, 34).
CHUNK = 408 * 2


@pytest.fixture
def segment(tmp_path):
    return _segment(tmp_path, 1 << 20)


def _segment(tmp_path, size: int) -> dict:
    """A log of ``size`` bytes and its .index, .timeindex and .txnindex (paths by suffix)."""
    data, _ = _batches_until(size, 0)
    folder = tmp_path / "codecs-0"
    folder.mkdir()
    log = folder / "00000000000000000000.log"
    log.write_bytes(data)
    offsets, times, since = [], [], INTERVAL
    for batch in walk_batches(data):
        if since >= INTERVAL:
            offsets.append((batch.last_offset, batch.position))
            times.append((batch.max_timestamp, batch.last_offset))
            since = 0
        since += batch.size_in_bytes
    (folder / "00000000000000000000.index").write_bytes(idx.encode_offset_index(0, offsets))
    (folder / "00000000000000000000.timeindex").write_bytes(idx.encode_time_index(0, times))
    (folder / "00000000000000000000.txnindex").write_bytes(REAL_TXNINDEX.read_bytes() * 200)
    return {p.suffix: p for p in folder.iterdir()}


def _dump(path, monkeypatch=None, cut=None, **options):
    """The JSON dump of ``path`` in process; with ``cut`` = (file, size), that file is cut to
    size when the first entry is printed. (status, entries printed, findings)."""
    if cut is not None:
        target, size = cut
        done = []

        def cutting(method):
            def entry(self, *args):
                if not done:
                    done.append(True)
                    with open(target, "r+b") as f:
                        f.truncate(size)
                method(self, *args)
            return entry

        for name in ("index_entry", "time_index_entry", "txn_entry"):
            monkeypatch.setattr(JsonSink, name, cutting(getattr(JsonSink, name)))
    out, err = io.StringIO(), io.StringIO()
    status = Dumper(out, err, DumpOptions(**options), json=True).run([str(path)])
    entries = [json.loads(line) for line in out.getvalue().splitlines()]
    entries = [e for e in entries if e["type"] in ("index_entry", "time_index_entry", "aborted_txn")]
    # (the repeated batches' timestamps go back at each repeat: the time index's out-of-order
    # warning, a note that does not change the status, is left out)
    findings = [f for f in (json.loads(line) for line in err.getvalue().splitlines() if line.startswith("{"))
                if f["reason"] != "index-mismatch"]
    return status, entries, findings


@pytest.mark.parametrize("suffix", [".index", ".timeindex", ".txnindex"])
def test_an_index_cut_while_read_is_a_located_finding(segment, monkeypatch, suffix):
    """Read in 816-byte chunks, the index is cut to 100 bytes after its first chunk: the
    entries of that chunk are printed as from the untouched file, then one finding at the
    first byte not read."""
    monkeypatch.setattr(indexes, "INDEX_CHUNK_BYTES", CHUNK)
    path = segment[suffix]
    size = path.stat().st_size
    assert size > 2 * CHUNK
    status, reference, findings = _dump(path)
    assert status == EXIT_OK and not findings and len(reference) * (size // len(reference)) == size
    status, entries, findings = _dump(path, monkeypatch, cut=(path, 100))
    assert status == EXIT_DATA
    assert entries == reference[:CHUNK // (size // len(reference))]
    [finding] = findings
    assert (finding["file"], finding["reason"], finding["position"]) == (str(path), "shrank", CHUNK)
    assert f"({size} bytes when opened" in finding["message"]


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_a_log_cut_while_an_index_is_verified_is_a_finding_naming_the_log(segment, monkeypatch, suffix):
    """The log cut to 4 KiB once the first entry is printed: the next entry pointing past the
    cut is a shrank finding naming the log, not the index (and not a SIGBUS)."""
    status, reference, findings = _dump(segment[suffix])
    assert status == EXIT_OK and not findings
    status, entries, findings = _dump(segment[suffix], monkeypatch, cut=(segment[".log"], INTERVAL))
    assert status == EXIT_DATA and entries == reference[:len(entries)] and entries
    assert [(f["file"], f["reason"]) for f in findings] == [(str(segment[".log"]), "shrank")]


_DUMP = textwrap.dedent("""
    import sys
    from logscan.cli import main
    from logscan.dump.sinks import TextSink

    path, size = sys.argv[1], int(sys.argv[2])
    printed = TextSink.index_entry
    done = []

    def entry(self, *args):
        if not done:
            done.append(True)
            with open(path, "r+b") as f:
                f.truncate(size)
        printed(self, *args)

    TextSink.index_entry = entry
    main(["dump", path])
""")


def test_the_command_never_dies_of_sigbus_on_a_shrinking_index(tmp_path):
    """The command as a person runs it, the .index (several pages) cut to 100 bytes when its
    first entry is printed: a whole-file mapping dies of SIGBUS at its second page. The dump
    read the index's first chunk (all of it) before printing, so it prints the index as it
    was when read, verified against the log, and exits 0."""
    path = _segment(tmp_path, 8 << 20)[".index"]
    assert path.stat().st_size > 3 * 4096
    untouched = subprocess.run([sys.executable, "-m", "logscan.cli", "dump", str(path)], cwd=REPO,
                               capture_output=True, text=True, timeout=120)
    assert untouched.returncode == EXIT_OK, untouched.stderr
    proc = subprocess.run([sys.executable, "-c", _DUMP, str(path), "100"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert proc.returncode == EXIT_OK, proc.stderr
    assert proc.stdout == untouched.stdout and path.stat().st_size == 100


LIMIT = 1 << 30  # the address space a Spark worker gets from spark.executor.pyspark.memory=1g


@pytest.mark.parametrize("suffix,args,line", [
    (".index", [], "offset: 0 position: 0"),
    (".index", ["--index-sanity-check"], "passed sanity check."),
    (".timeindex", ["--index-sanity-check"], "passed sanity check."),
])
def test_an_index_larger_than_the_address_space_is_read(tmp_path, suffix, args, line):
    """A preallocated (all zeros) ~2 GiB index under a 1 GiB RLIMIT_AS: the dump reads its
    first entries and the sanity check its first and last, where mapping it failed (cannot
    map: out of address space). Zeros are what an active segment's preallocated index holds
    past its entries; kafka-dump-log stops at the second zero entry."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < LIMIT:
        pytest.skip("this process already runs under a smaller address-space limit")
    folder = tmp_path / "big-0"
    folder.mkdir()
    path = folder / f"00000000000000000000{suffix}"
    with open(path, "wb") as fh:
        fh.truncate(2 * LIMIT - 2 * LIMIT % 24)  # whole entries of 8 and of 12 bytes
    (folder / "00000000000000000000.log").write_bytes(b"")
    code = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))\n"
            f"from logscan.cli import main\nmain(['dump', *{args!r}, {str(path)!r}])")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert "cannot map" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert line in run.stdout, (run.stdout[-500:], run.stderr[-500:])
