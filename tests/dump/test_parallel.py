"""The second process of a batch-level dump (logscan.dump.parallel) changes nothing but speed:
stdout, stderr and the exit status are those of the one-process dump, whatever the file holds
past its middle and whether or not the parent's walk meets the child's start."""

from __future__ import annotations

import io
import os

import pytest

from logscan.dump import DumpOptions, Dumper
from logscan.format.logfile import find_next_entry
from logscan.testing.encoder import Rec, encode_batch, legacy_message

T0 = 1_700_000_000_000

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def batch(offset: int, payload: bytes = b"") -> bytes:
    return encode_batch([Rec(b"value-%d" % offset + payload, b"k", (), T0 + offset)],
                        base_offset=offset, producer_id=7, producer_epoch=1, base_sequence=offset)


def segment(n: int = 40) -> list[bytes]:
    return [batch(i) for i in range(n)]


def dump_both(tmp_path, data: bytes, **opts):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    runs = []
    for parallel in (None, 0):
        out, err = io.StringIO(), io.StringIO()
        status = Dumper(out, err, DumpOptions(parallel_min_bytes=parallel, **opts)).run([str(path)])
        runs.append((status, out.getvalue(), err.getvalue()))
    return runs


def assert_same(tmp_path, data: bytes, **opts) -> tuple[int, str, str]:
    one, two = dump_both(tmp_path, data, **opts)
    assert two == one
    return one


def test_clean_segment(tmp_path):
    status, out, err = assert_same(tmp_path, b"".join(segment()))
    assert status == 0 and out.count("baseOffset:") == 40 and err == ""


def test_lines_copied_as_bytes_under_a_text_stream(tmp_path):
    """The command's stdout is a TextIOWrapper: the child's bytes go to its buffer, in order."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(segment()))
    outs = []
    for parallel in (None, 0):
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        Dumper(out, io.StringIO(), DumpOptions(parallel_min_bytes=parallel)).run([str(path)])
        out.flush()
        outs.append(raw.getvalue())
    assert outs[1] == outs[0] and outs[0].count(b"baseOffset:") == 40


def test_crc_mismatch_past_the_middle(tmp_path):
    parts = segment()
    bad = bytearray(parts[30])
    bad[-1] ^= 0xFF
    parts[30] = bytes(bad)
    status, out, err = assert_same(tmp_path, b"".join(parts))
    assert status == 1 and "isvalid: false" in out and "CRC" in err


@pytest.mark.parametrize("tail", [b"\x00" * 300, b"\x01" * 10, b"junk" * 40])
def test_tails(tmp_path, tail):
    status, out, err = assert_same(tmp_path, b"".join(segment()) + tail)
    assert status == 1 and "Found" in out


def test_damage_and_resync_past_the_middle(tmp_path):
    parts = segment()
    parts[28] = b"\xee" * 50 + parts[28][50:]
    status, out, err = assert_same(tmp_path, b"".join(parts))
    assert status == 1 and out.count("baseOffset:") == 39 and "skipped" in err


def test_legacy_entry_past_the_middle(tmp_path):
    parts = segment()
    parts.insert(30, legacy_message(29, b"old", magic=1, timestamp=T0))
    status, out, _ = assert_same(tmp_path, b"".join(parts))
    assert "offset: 29 position:" in out


def test_child_start_inside_a_payload_is_dropped(tmp_path):
    """A whole valid batch stored in a record value right after the middle: the resync
    search takes it for the child's start, the parent's walk never meets it."""
    head = b"".join(segment(20))
    inner = batch(1000)
    outer = batch(20, payload=inner * 40)
    rest = b"".join(batch(i) for i in range(21, 25))
    data = head + outer + rest
    middle = len(data) // 2
    assert len(head) < find_next_entry(data, middle, len(data)) < len(head) + len(outer)
    status, out, err = assert_same(tmp_path, data)
    assert status == 0 and "baseOffset: 1000" not in out and out.count("baseOffset:") == 25


def test_only_batch_level_text_dumps_fork(tmp_path):
    """Records, --max-bytes and JSON keep to one process and print the same."""
    data = b"".join(segment())
    assert_same(tmp_path, data, deep_iteration=True)
    assert_same(tmp_path, data, max_bytes=len(data) - 7)
    path = tmp_path / "x" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(data)
    out = io.StringIO()
    Dumper(out, io.StringIO(), DumpOptions(parallel_min_bytes=0), json=True).run([str(path)])
    assert out.getvalue().count('"type":"batch"') == 40


def test_the_command_turns_the_second_process_on(tmp_path, monkeypatch):
    """`logscan dump` asks for the second process; the library default leaves it off."""
    from click.testing import CliRunner

    import logscan.cli as cli
    from logscan.dump.options import PARALLEL_MIN_BYTES

    seen = []

    class Recorder(Dumper):
        def __init__(self, out, err, options, **kw):
            seen.append(options)
            super().__init__(out, err, options, **kw)

    monkeypatch.setattr(cli, "Dumper", Recorder)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(segment(3)))
    result = CliRunner().invoke(cli.main, ["dump", str(path)])
    assert result.exit_code == 0, result.output
    assert [o.parallel_min_bytes for o in seen] == [PARALLEL_MIN_BYTES] and PARALLEL_MIN_BYTES > 0
    assert DumpOptions().parallel_min_bytes is None
