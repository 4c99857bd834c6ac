"""The whole scan (``logscan.scan.local.scan``) and both commands on damaged copies.

One representative damage of each kind is put into a segment of a one-partition copy of a
real broker's log dir. The scan must name the file, the byte and the reason, and rebuild
the same partition state as from the undamaged copy whenever the damage spares the batches
that state comes from; `logscan scan` and `logscan dump` must exit 1 and print the located
line; nothing may crash (a traceback on stderr fails the test).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from logscan.format import compression
from logscan.scan.local import scan

from .harness import (COUNT_AT, CRC_AT, LENGTH_AT, MAGIC_AT, REAL_LOGS, append,
                      mini_cluster, overwrite, patch_record, rebuilt_batch, reference, replace_batch,
                      report_window, run_cli, set_int32, truncate, xor)
from .test_record_damage import bomb_payload


def _damages():
    """(id, log, make(ref) -> (damage, shift), spares_the_log_end)"""
    def batch(ref, k):
        return ref.spans[k if k >= 0 else len(ref.spans) + k]

    def mid(ref):
        return batch(ref, (len(ref.spans) - 1) // 2)  # never the last one

    return [
        ("cut-in-last-header", "txn", lambda r: (truncate(r.data, batch(r, -1)[0] + 30), 0), False),
        ("cut-short-tail", "txnlog", lambda r: (truncate(r.data, batch(r, -1)[0] + 9), 0), False),
        ("zero-tail", "codecs", lambda r: (append(r.data, bytes(8192), "8 KiB zeros"), 0), True),
        ("random-tail", "offsets", lambda r: (append(r.data, bytes(range(256)) * 3, "768 bytes"), 0), True),
        ("crc-flip", "txn", lambda r: (xor(r.data, mid(r)[0] + CRC_AT + 2, 0x10), 0), True),
        ("length-negative", "txnlog", lambda r: (set_int32(r.data, mid(r)[0] + LENGTH_AT, -7, "length -7"), 0), True),
        ("length-past-2GiB", "codecs", lambda r: (set_int32(r.data, mid(r)[0] + LENGTH_AT, 2**31 + 5, "length 2^31+5"), 0), True),
        ("length-past-file", "txn", lambda r: (set_int32(r.data, mid(r)[0] + LENGTH_AT, len(r.data), "length = file size"), 0), True),
        ("magic-7", "offsets", lambda r: (overwrite(r.data, mid(r)[0] + MAGIC_AT, b"\x07", "magic 7"), 0), True),
        ("count-huge", "txn", lambda r: (set_int32(r.data, mid(r)[0] + COUNT_AT, 2**31 - 1, "count 2^31-1"), 0), True),
        ("txnlog-value-v99", "txnlog", lambda r: (patch_record(r.data, mid(r)[0], 0, "value", struct.pack(">h", 99), "value version 99"), 0), True),
        ("zstd-bomb-in-txnlog", "txnlog", lambda r: replace_batch(r.data, mid(r)[0], rebuilt_batch(
            r.data, mid(r)[0], bomb_payload(compression.ZSTD, compression.DEFAULT_MAX_OUTPUT + 1), codec=compression.ZSTD),
            "zstd bomb"), True),
    ]


DAMAGES = _damages()


@pytest.mark.parametrize("name,log,make,spares_end", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_scan_locates_damage_and_keeps_the_partition_state(tmp_path, name, log, make, spares_end):
    ref = reference(REAL_LOGS[log], tmp_path)
    clean_root, clean_part = mini_cluster(tmp_path / "clean", REAL_LOGS[log].parent)
    before = scan([clean_root])
    assert before.findings == []

    root, part = mini_cluster(tmp_path / "damaged", REAL_LOGS[log].parent)
    damage, shift = make(ref)
    segment = part / REAL_LOGS[log].name
    segment.write_bytes(damage.data)
    after = scan([root])

    lo, hi = report_window(ref, damage)
    located = [f for f in after.findings if f.path == str(segment) and lo <= f.position <= hi + max(shift, 0)]
    assert located, (damage, after.findings)
    assert all(f.reason and f.message for f in located)
    # besides, only what the copy now lacks when the damage took the log's end with it: the
    # broker's checkpoint and snapshot name offsets past it (an incomplete copy, issue 36)
    assert all(f.path == str(segment) or (f.path == str(part) and f.reason == "incomplete" and not spares_end)
               for f in after.findings), after.findings
    (rep_before,), (rep_after,) = before.tables["partition_state"], after.tables["partition_state"]
    if spares_end:
        assert rep_after["log_end_offset"] == rep_before["log_end_offset"]
        assert rep_after["high_watermark"] == rep_before["high_watermark"]

    # and the command: exit status 1 (damage), the located line on stdout, no traceback
    cli = run_cli("scan", str(root))
    assert "Traceback" not in cli.stderr, cli.stderr
    assert cli.returncode == 1, (cli.returncode, cli.stdout[-2000:], cli.stderr[-2000:])
    assert any(line.strip().startswith(f"logscan: {segment}: byte ") for line in cli.stdout.splitlines()), cli.stdout


@pytest.mark.parametrize("name,log,make,spares_end", DAMAGES[:10], ids=[d[0] for d in DAMAGES[:10]])
def test_dump_command_exit_status_and_located_line(tmp_path, name, log, make, spares_end):
    ref = reference(REAL_LOGS[log], tmp_path)
    damage, _ = make(ref)
    target = tmp_path / REAL_LOGS[log].parent.name / REAL_LOGS[log].name
    target.parent.mkdir(parents=True)
    target.write_bytes(damage.data)
    for args in (["dump", str(target)], ["dump", "--deep-iteration", str(target)]):
        cli = run_cli(*args)
        assert "Traceback" not in cli.stderr, cli.stderr
        assert cli.returncode == 1, (args, cli.returncode, cli.stderr[-2000:])
        lines = [l for l in cli.stderr.splitlines() if l.startswith("logscan: ")]
        assert lines and all(l.startswith(f"logscan: {target}: byte ") for l in lines), lines
    # stdout keeps kafka-dump-log's shape: every line a known kind
    kinds = ("Dumping ", "Log starting offset", "baseOffset:", "| offset:", "Found ")
    assert all(l.startswith(kinds) for l in run_cli("dump", "--deep-iteration", str(target)).stdout.splitlines())


def test_a_batch_failing_its_crc_opens_no_phantom_transaction(tmp_path):
    ref = reference(REAL_LOGS["txn"], tmp_path)
    clean = scan([mini_cluster(tmp_path / "clean", REAL_LOGS["txn"].parent)[0]])
    root, part = mini_cluster(tmp_path / "damaged", REAL_LOGS["txn"].parent)
    producer_id_low_byte = ref.spans[0][0] + 50  # ProducerId is bytes 43..50 of the header
    (part / REAL_LOGS["txn"].name).write_bytes(xor(ref.data, producer_id_low_byte, 0x40).data)
    result = scan([root])
    # the damage is reported where it is, and only the damaged batch is left out
    assert [(Path(f.path).name, f.position, f.length, f.reason) for f in result.findings] == [
        (REAL_LOGS["txn"].name, *ref.spans[0], "crc")]
    [damaged], [undamaged] = result.tables["partition_state"], clean.tables["partition_state"]
    assert damaged["log_end_offset"] == undamaged["log_end_offset"]
    producers = [{p["producer_id"] for p in r.tables["producer_state"]} for r in (result, clean)]
    assert producers[0] <= producers[1]
    assert damaged["open_transactions"] == undamaged["open_transactions"] == 0
    assert damaged["last_stable_offset"] == undamaged["last_stable_offset"]


@pytest.mark.parametrize("tail", ["cut", "zeros"])
def test_a_bad_tail_is_a_corruption_with_its_length(tmp_path, tail):
    """The corruptions table says how many bytes are bad: a segment cut inside its last batch
    (the part of that batch still there) or extended by zeros (the zeros)."""
    from logscan.scan.rows import finding_row

    ref = reference(REAL_LOGS["txn"], tmp_path)
    root, part = mini_cluster(tmp_path / tail, REAL_LOGS["txn"].parent)
    last, size = ref.spans[-1]
    data = ref.data[:last + size // 2] if tail == "cut" else ref.data + bytes(4096)
    (part / REAL_LOGS["txn"].name).write_bytes(data)
    result = scan([root])
    want = (last, size // 2, "truncated") if tail == "cut" else (len(ref.data), 4096, "zero-fill")
    # (a cut last batch also leaves the log end below the broker's checkpoint: "incomplete")
    damage = [f for f in result.findings if f.reason != "incomplete"]
    assert [(f.position, f.length, f.reason) for f in damage] == [want]
    assert [f.path for f in result.findings if f.reason == "incomplete"] == ([str(part)] if tail == "cut" else [])
    row = finding_row(damage[0], {"broker": 0, "topic": "t", "partition": 0})
    assert (row["position"], row["length"], row["reason"]) == want
