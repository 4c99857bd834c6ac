"""v0/v1 message sets in the scan: a log dir upgraded from an old message format still holds
them (Kafka 4 reads them, never writes them). They carry no producer state, but they are
batches of the log: rows of `batches` and part of the log's offsets. Kafka's own
kafka-dump-log on the same file is the reference for their offsets, counts and CRCs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from logscan.scan.local import scan
from logscan.testing.encoder import Rec, encode_batch
from tests.dump.corpus import legacy_batches
from tests.kafkajava import dump_log, requires_kafka

ENTRY = re.compile(r"^offset: (\d+) position: (\d+) \w+: -?\d+ size: (\d+) magic: (\d) "
                   r"compresscodec: (\w+) crc: (\d+) isvalid: (\w+)$")
REAL_BROKER = Path(__file__).resolve().parents[2] / "fixtures" / "tv2" / "brokers" / "broker-0"
RECORD = re.compile(r"^\| offset: (\d+) ")


def _copy(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    broker = tmp_path / "copy" / "broker-0"
    log = broker / "legacy-0" / "00000000000000000000.log"
    log.parent.mkdir(parents=True)
    shutil.copy(REAL_BROKER / "meta.properties", broker / "meta.properties")
    log.write_bytes(data)
    return tmp_path / "copy", log


def _damage(result) -> list:
    """The findings but the copy's lack of `__cluster_metadata-0` (one log dir of a KRaft node
    holding one partition: the leaders cannot be read, an 'incomplete' finding at its
    meta.properties)."""
    return [f for f in result.findings if Path(f.path).name != "meta.properties"]


def _kafka_entries(log: Path) -> list[dict]:
    """Per entry, what kafka-dump-log --deep-iteration prints: the entry line, then its records."""
    out, err, code = dump_log("--deep-iteration", "--files", str(log))
    assert code == 0, err
    entries = []
    for line in out.splitlines():
        if m := ENTRY.match(line):
            last, pos, size, magic, codec, crc, valid = m.groups()
            entries.append({"last_offset": int(last), "position": int(pos), "size_in_bytes": int(size),
                            "magic": int(magic), "compression_type": codec, "crc": int(crc),
                            "crc_valid": valid == "true", "offsets": []})
        elif m := RECORD.match(line):
            entries[-1]["offsets"].append(int(m.group(1)))
    assert entries and all(e["offsets"] for e in entries)
    return entries


@requires_kafka
def test_legacy_entries_are_batches_with_kafkas_offsets(tmp_path):
    root, log = _copy(tmp_path, b"".join(legacy_batches()))
    result = scan([root], keep_batches=True)
    assert _damage(result) == []
    rows = sorted(result.tables["batches"], key=lambda r: r["position"])
    want = _kafka_entries(log)
    got = [{k: r[k] for k in ("last_offset", "position", "size_in_bytes", "magic", "compression_type",
                              "crc", "crc_valid")} for r in rows]
    assert got == [{k: v for k, v in e.items() if k != "offsets"} for e in want]
    assert [(r["base_offset"], r["records_count"]) for r in rows] == [
        (e["offsets"][0], len(e["offsets"])) for e in want]
    assert all(r["producer_id"] == -1 and not r["is_transactional"] and r["partition_leader_epoch"] is None
               for r in rows)
    (replica,) = result.tables["partition_state"]
    assert replica["log_end_offset"] == want[-1]["last_offset"] + 1
    assert replica["open_transactions"] == 0


@requires_kafka
def test_a_v2_batch_after_the_legacy_ones_continues_the_log(tmp_path):
    """The upgrade case: old entries, then v2 batches appended by a newer broker."""
    legacy = b"".join(legacy_batches())
    root, log = _copy(tmp_path, legacy)
    last = _kafka_entries(log)[-1]["last_offset"]
    log.write_bytes(legacy + encode_batch([Rec(b"k", b"v2 after upgrade")], base_offset=last + 1))
    result = scan([root], keep_batches=True)
    assert _damage(result) == []
    magics = [r["magic"] for r in sorted(result.tables["batches"], key=lambda r: r["position"])]
    assert magics[-1] == 2 and set(magics[:-1]) <= {0, 1}
    assert result.tables["partition_state"][0]["log_end_offset"] == last + 2
