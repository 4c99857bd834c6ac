"""Timestamps no calendar holds, under a valid CRC (issue 33): a producer that wrote its
CreateTime in microseconds, or int64 max. Kafka stores such a batch; logscan reads it, says
where it is, and keeps it out of the scan's "now" (which would make every open transaction
look old and leave the Delta tables' as_of unreadable).

Made from the real hanging cluster: the last batch of every replica of hang-0 (producer 2's
COMMIT marker; producer 0's open transaction there is left as it was) rewritten with the CRC
recomputed, as a broker would have stored it.
"""

import shutil
import struct
from pathlib import Path

import crc32c
import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.format.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, RecordBatch
from logscan.format.logfile import walk_batches
from logscan.scan.local import scan

HANGING = Path(__file__).resolve().parents[2] / "fixtures" / "hanging" / "brokers"
#: maxTimestamp's place in a v2 batch header: after BaseOffset .. BaseTimestamp.
MAX_TIMESTAMP_AT = struct.calcsize(">qiibIhiq")


def _future_copy(tmp_path: Path, timestamp) -> list[tuple[Path, int]]:
    copy = tmp_path / "brokers"
    shutil.copytree(HANGING, copy)
    changed = []
    for log in sorted(copy.glob("*/hang-0/*.log")):
        data = bytearray(log.read_bytes())
        last = [b for b in walk_batches(bytes(data)) if isinstance(b, RecordBatch)][-1]
        at = last.position
        struct.pack_into(">q", data, at + MAX_TIMESTAMP_AT, timestamp(last.max_timestamp))
        end = at + 12 + last.batch_length
        struct.pack_into(">I", data, at + CRC_OFFSET, crc32c.crc32c(bytes(data[at + ATTRIBUTES_OFFSET:end])))
        log.write_bytes(bytes(data))
        changed.append((log, at))
    assert len(changed) == 3
    return changed


@pytest.mark.parametrize("timestamp", [lambda ms: ms * 1000, lambda ms: 2**63 - 1], ids=["microseconds", "int64-max"])
def test_a_timestamp_past_any_calendar_is_a_finding_and_not_the_scans_now(tmp_path, timestamp):
    clean = scan([HANGING])
    changed = _future_copy(tmp_path, timestamp)
    result = scan([tmp_path / "brokers"])
    found = [(Path(f.path), f.position) for f in result.findings if f.reason == "timestamp"]
    assert found == changed
    assert all("past the scan's clock" in f.message for f in result.findings if f.reason == "timestamp")
    # the batch still counts as read (Kafka stored it), its time does not make the scan's now
    assert result.as_of_ms == clean.as_of_ms
    assert [c["reason"] for c in result.tables["hanging_candidates"]] == [
        c["reason"] for c in clean.tables["hanging_candidates"]]
    states = {(s["broker"], s["topic"], s["partition"]): s for s in result.tables["partition_state"]}
    assert all(s["max_timestamp"] <= clean.as_of_ms for s in states.values())
    # the summary prints (it died on `year 58863 is out of range`), the finding located
    out = CliRunner().invoke(main, ["scan", str(tmp_path / "brokers")])
    assert out.exit_code == 4 and isinstance(out.exception, SystemExit), out.output
    assert f"logscan: {changed[0][0]}: byte {changed[0][1]}: maxTimestamp" in out.output


@pytest.mark.parametrize("text", ["99999999999999999", "-1"])
def test_an_as_of_past_the_calendar_is_a_usage_error(text):
    out = CliRunner().invoke(main, ["scan", str(HANGING), "--as-of", text])
    assert out.exit_code == 2 and "out of range" in out.output
