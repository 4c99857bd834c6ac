"""Real fixture files, the damage done to them, and what `logscan dump` and the scan make of it.

Every damaged input starts as a file a real Kafka 4.1.1 broker wrote (``fixtures/*/brokers``).
The undamaged file is dumped and scanned first: that is the reference. A ``Damage`` knows
which bytes it changed, so a check can tell the batches the damage touched from the ones it
did not, and demand that every untouched batch comes out exactly as in the reference (same
position, same header, same records), that the damage is reported at a byte inside the
batch it hit, and that nothing crashed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from logscan.dump import EXIT_DATA, EXIT_OK, DumpOptions, Dumper
from logscan.format.batch import BATCH_HEADER
from logscan.format.errors import DecodeError
from logscan.format.logfile import walk_batches
from logscan.scan.replica import read_segment

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BROKER = FIXTURES / "tv2" / "brokers" / "broker-0"

#: Real segments, each chosen for what it holds (fixtures/README.md has the scenarios).
REAL_LOGS = {
    # 31 uncompressed batches of TransactionLogValue v1 records (transaction.version 2)
    "txnlog": BROKER / "__transaction_state-2" / "00000000000000000000.log",
    # one batch per codec: none, gzip, snappy, lz4, zstd, then a transactional zstd batch + COMMIT
    "codecs": BROKER / "codecs-0" / "00000000000000000000.log",
    # transactional data batches with COMMIT/ABORT control batches
    "txn": BROKER / "txn-a-0" / "00000000000000000000.log",
    # a transactional offset commit and its marker
    "offsets": BROKER / "__consumer_offsets-2" / "00000000000000000000.log",
}
REAL_SNAPSHOT = BROKER / "straddle-0" / "00000000000000000022.snapshot"
# (small segments have empty indexes: one entry per index.interval.bytes = 4 KiB)
REAL_INDEX = BROKER / "__cluster_metadata-0" / "00000000000000000000.index"
REAL_TIMEINDEX = BROKER / "__cluster_metadata-0" / "00000000000000000000.timeindex"
REAL_TXNINDEX = BROKER / "straddle-0" / "00000000000000000019.txnindex"
#: The broker-level files the scan reads beside the partition folders.
BROKER_FILES = ("meta.properties", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                "recovery-point-offset-checkpoint")

#: Where a v2 batch keeps its fields (DefaultRecordBatch); the CRC covers [21, end).
LENGTH_AT, MAGIC_AT, CRC_AT, ATTRIBUTES_AT, COUNT_AT, RECORDS_AT = 8, 16, 17, 21, 57, 61


# --- damage ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Damage:
    """Damaged bytes; ``[lo, hi)`` are the original's bytes that changed or went missing
    (``hi`` may pass the original's end for appended bytes)."""

    data: bytes
    lo: int
    hi: int
    label: str

    def __repr__(self) -> str:  # pytest ids and failure messages stay short
        return f"Damage({self.label}, bytes [{self.lo}, {self.hi}))"


def batch_spans(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of every batch of an undamaged segment."""
    spans = []
    for entry in walk_batches(data):
        assert not isinstance(entry, DecodeError), f"reference file is damaged: {entry}"
        spans.append((entry.position, entry.size_in_bytes))
    return spans


def truncate(data: bytes, at: int) -> Damage:
    return Damage(data[:at], at, len(data), f"cut at byte {at}")


def append(data: bytes, tail: bytes, label: str) -> Damage:
    return Damage(data + tail, len(data), len(data) + len(tail), label)


def overwrite(data: bytes, at: int, new: bytes, label: str) -> Damage:
    out = bytearray(data)
    out[at:at + len(new)] = new
    return Damage(bytes(out), at, at + len(new), label)


def xor(data: bytes, at: int, mask: int) -> Damage:
    return overwrite(data, at, bytes([data[at] ^ mask]), f"byte {at} ^ {mask:#04x}")


def set_int32(data: bytes, at: int, value: int, label: str) -> Damage:
    return overwrite(data, at, struct.pack(">I", value & 0xFFFFFFFF), label)


def reseal(data: bytes, pos: int) -> bytes:
    """The segment with the v2 batch at ``pos`` given a correct CRC: damage the CRC cannot
    see, as when the producer itself wrote bad records (or a bug wrote them)."""
    size = struct.unpack_from(">i", data, pos + LENGTH_AT)[0] + 12
    out = bytearray(data)
    struct.pack_into(">I", out, pos + CRC_AT, crc32c(bytes(out[pos + ATTRIBUTES_AT:pos + size])))
    return bytes(out)


def replace_batch(data: bytes, pos: int, new_batch: bytes, label: str) -> tuple[Damage, int]:
    """Put ``new_batch`` where the batch at ``pos`` was; returns the damage and the shift of
    every later byte."""
    size = struct.unpack_from(">i", data, pos + LENGTH_AT)[0] + 12
    out = data[:pos] + new_batch + data[pos + size:]
    return Damage(out, pos, pos + size, label), len(new_batch) - size


# --- running logscan ------------------------------------------------------------------------

@dataclass
class DumpRun:
    status: int
    batches: list[dict]                    # JSON batch objects, in output order
    records: dict[int, list[dict]]         # batch position -> its record objects
    findings: list[dict]                   # {"file", "position", "reason", "message"}
    stderr_text: list[str] = field(default_factory=list)

    def batch_at(self, position: int) -> dict | None:
        return next((b for b in self.batches if b["position"] == position), None)


def dump_json(path: Path, **options) -> DumpRun:
    """`logscan dump --deep-iteration --format json PATH` in process, as the CLI sets it up
    (the internal-topic decoder picked from the folder name)."""
    out, err = io.StringIO(), io.StringIO()
    opts = dict(deep_iteration=True, auto_decoder=True)
    opts.update(options)
    status = Dumper(out, err, DumpOptions(**opts), json=True).run([str(path)])
    batches, records, current = [], {}, None
    for line in out.getvalue().splitlines():
        obj = json.loads(line)
        obj.pop("file", None)
        if obj["type"] == "batch":
            batches.append(obj)
            current = obj["position"]
            records[current] = []
        elif obj["type"] == "record":
            records[current].append(obj)
    findings, text = [], []
    for line in err.getvalue().splitlines():
        if line.startswith("{"):
            findings.append(json.loads(line))
        else:
            text.append(line)
    return DumpRun(status, batches, records, findings, text)


def scan_read(path: Path):
    """The scan's reader over one segment (``logscan.scan.replica.read_segment``)."""
    partition_dir = path.parent.name
    topic, _, partition = partition_dir.rpartition("-")
    return read_segment(str(path), int(partition), is_txn_log=topic == "__transaction_state")


def run_cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logscan.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=str(REPO)))


# --- where a damaged file lives -------------------------------------------------------------

def mini_cluster(tmp: Path, source_partition: Path) -> tuple[Path, Path]:
    """A copy of one broker's log dir holding only ``source_partition`` (and the broker-level
    checkpoints): what the scan reads. Returns (root, the copied partition folder). Without
    meta.properties (the folder's name gives the broker id): a KRaft node's log dir copied
    without `__cluster_metadata-0` is an 'incomplete' finding of its own (the leaders cannot be
    read: tests/scan/test_absent_replica.py), which the damage tests here do not make."""
    broker_src = source_partition.parent
    broker = tmp / "copy" / broker_src.name
    broker.mkdir(parents=True)
    for name in BROKER_FILES:
        if name != "meta.properties" and (broker_src / name).exists():
            shutil.copy(broker_src / name, broker / name)
    part = broker / source_partition.name
    shutil.copytree(source_partition, part)
    return tmp / "copy", part


def place(tmp: Path, source: Path, data: bytes) -> Path:
    """Write ``data`` under the same partition folder and file name as ``source``."""
    target = tmp / "dumped" / source.parent.name / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


# --- the checks -----------------------------------------------------------------------------

@dataclass
class Reference:
    """What logscan makes of the undamaged file."""

    source: Path
    data: bytes
    spans: list[tuple[int, int]]
    dump: DumpRun
    facts: list


_REFERENCES: dict[Path, Reference] = {}


def reference(source: Path, tmp: Path) -> Reference:
    if source not in _REFERENCES:
        data = source.read_bytes()
        path = place(tmp, source, data)
        dump = dump_json(path)
        assert dump.status == EXIT_OK and dump.findings == [], dump.findings
        read = scan_read(path)
        assert read.findings == [], read.findings
        _REFERENCES[source] = Reference(source, data, batch_spans(data), dump, read.facts)
    return _REFERENCES[source]


def touched(ref: Reference, damage: Damage) -> list[int]:
    """Indexes of the reference batches whose bytes the damage changed or removed."""
    return [i for i, (p, s) in enumerate(ref.spans) if p < damage.hi and damage.lo < p + s]


def report_window(ref: Reference, damage: Damage) -> tuple[int, int]:
    """Where a finding about ``damage`` may point: from the start of the first batch it hit
    (or the damage itself, past the last batch) to the end of the damage or of that batch."""
    hit = touched(ref, damage)
    if not hit:
        return damage.lo, max(damage.hi, damage.lo + 1)
    p, s = ref.spans[hit[0]]
    return p, max(damage.hi, p + s)


@dataclass
class Outcome:
    dump: DumpRun
    read: object  # ReplicaRead
    problems: list[str]


def check_log_damage(ref: Reference, damage: Damage, tmp: Path, *, shift: int = 0,
                     dump_options: dict | None = None, scan_sees: bool = True,
                     must_report: bool = True) -> Outcome:
    """Dump and scan-read the damaged segment; list every way they fall short.

    ``shift``: how far bytes after ``damage.hi`` moved (a replaced batch of another size).
    ``scan_sees=False``: damage the scan does not look at by design (records of a data
    batch under a valid CRC: the scan reads headers, control and __transaction_state
    records only), so only "nothing lost, nothing crashed" is asked of it.
    ``must_report=False``: the change may leave valid data (a flipped byte inside a value
    under a resealed CRC); findings, if any, must still point into the damaged batch.
    Crashes are not caught here: an exception fails the test with its traceback.
    """
    path = place(tmp, ref.source, damage.data)
    problems: list[str] = []
    dump = dump_json(path, **(dump_options or {}))
    read = scan_read(path)
    hit = set(touched(ref, damage))
    lo, hi = report_window(ref, damage)
    changed = damage.data != ref.data

    # 1. every untouched batch, before and after the damage, comes out as before
    for i, (p, s) in enumerate(ref.spans):
        if i in hit:
            continue
        at = p if p + s <= damage.lo else p + shift
        want, got = ref.dump.batch_at(p), dump.batch_at(at)
        if got is None:
            problems.append(f"dump lost the good batch at byte {p} (offset {want['base_offset']})")
            continue
        if {**got, "position": p} != want or dump.records[at] != ref.dump.records[p]:
            problems.append(f"dump changed the good batch at byte {p}")
    missing = _not_in_order([f for i, f in enumerate(ref.facts) if i not in hit], read.facts)
    if missing:
        problems.append(f"scan lost good batches at offsets {[f.base_offset for f in missing]}")

    # 2. the damage is reported: this file, a byte inside the batch it hit
    if changed and must_report and not _benign(ref, damage):
        if dump.status != EXIT_DATA:
            problems.append(f"dump exit status {dump.status}, expected {EXIT_DATA}")
        if not any(f["file"] == str(path) and lo <= f["position"] <= hi for f in dump.findings):
            problems.append(f"dump reported nothing in bytes [{lo}, {hi}]: {dump.findings}")
        if scan_sees and not any(f.path == str(path) and lo <= f.position <= hi for f in read.findings):
            problems.append(f"scan reported nothing in bytes [{lo}, {hi}]: {read.findings}")
    # 3. and nothing is reported elsewhere (positions after the damage move by ``shift``;
    #    -1 is a remark about the whole file, such as "empty file"). A header read from the
    #    last damaged bytes may name its size or magic field, up to 16 bytes further on.
    shifted_hi = hi + max(shift, 0) + MAGIC_AT
    for f in dump.findings:
        if f["file"] != str(path) or not f["message"] or not f["reason"] \
                or not (lo <= f["position"] <= shifted_hi or f["position"] == -1):
            problems.append(f"dump finding outside [{lo}, {shifted_hi}]: {f}")
    for f in read.findings:
        if f.path != str(path) or not f.message or not f.reason \
                or not (lo <= f.position <= shifted_hi or f.position == -1):
            problems.append(f"scan finding outside [{lo}, {shifted_hi}]: {f}")
    return Outcome(dump, read, problems)


def _not_in_order(wanted: list, got: list) -> list:
    """The items of ``wanted`` not found, in order, in ``got``."""
    missing, j = [], 0
    for item in wanted:
        k = next((k for k in range(j, len(got)) if got[k] == item), None)
        if k is None:
            missing.append(item)
        else:
            j = k + 1
    return missing


def _benign(ref: Reference, damage: Damage) -> bool:
    """A cut exactly between batches leaves a valid (shorter) segment."""
    return len(damage.data) == damage.lo and damage.hi == len(ref.data) and (
        damage.lo == 0 or any(p + s == damage.lo for p, s in ref.spans))



# --- batches with a payload of our choosing -------------------------------------------------

def rebuilt_batch(data: bytes, pos: int, payload: bytes, *, codec: int | None = None,
                  records_count: int | None = None) -> bytes:
    """The real batch at ``pos`` with its records replaced by ``payload`` (already compressed
    when ``codec`` says so), every other header field kept, length and CRC made right."""
    fields = list(BATCH_HEADER.unpack_from(data, pos))
    fields[1] = BATCH_HEADER.size - 12 + len(payload)
    if codec is not None:
        fields[5] = (fields[5] & ~0x07) | codec
    if records_count is not None:
        fields[12] = records_count
    head = bytearray(BATCH_HEADER.pack(*fields))
    struct.pack_into(">I", head, CRC_AT, crc32c(payload, crc32c(bytes(head[ATTRIBUTES_AT:]))))
    return bytes(head) + payload


def record_layout(data: bytes, pos: int) -> list[dict]:
    """Where each record of the uncompressed batch at ``pos`` keeps its fields (DefaultRecord:
    length varint, attributes, timestampDelta varlong, offsetDelta varint, key and value as
    varint length + bytes): ``{"start", "key_at", "key", "value_at", "value"}``."""
    from logscan.format.primitives import read_varint, read_varlong
    count = struct.unpack_from(">i", data, pos + COUNT_AT)[0]
    out, at = [], pos + RECORDS_AT
    for _ in range(count):
        length, p = read_varint(data, at)
        end = p + length
        _, p = read_varlong(data, p + 1)
        _, p = read_varint(data, p)
        key_len, key_at = read_varint(data, p)
        key = data[key_at:key_at + key_len] if key_len >= 0 else None
        value_len, value_at = read_varint(data, key_at + max(key_len, 0))
        value = data[value_at:value_at + value_len] if value_len >= 0 else None
        out.append({"start": at, "key_at": key_at, "key": key, "value_at": value_at, "value": value})
        at = end
    return out


def patch_record(data: bytes, pos: int, index: int, field_name: str, new_prefix: bytes,
                 label: str) -> Damage:
    """Overwrite the first bytes of record ``index``'s key or value in the uncompressed batch
    at ``pos`` (lengths unchanged) and reseal the batch's CRC: the bytes a writer produced,
    not damage on disk."""
    at = record_layout(data, pos)[index][f"{field_name}_at"]
    d = overwrite(data, at, new_prefix, label)
    return Damage(reseal(d.data, pos), d.lo, d.hi, label)
