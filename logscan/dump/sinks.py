"""Where dump output goes: kafka-dump-log's text lines, or one JSON object per item.

The dumper decides *what* to print (Kafka's rules); a sink decides *how*. ``TextSink``
reproduces kafka-dump-log 4.1.1 character for character (field names, order, Java's spelling
of booleans and ``OptionalLong``, the stray ``}`` after a legacy record's crc). ``JsonSink``
writes one JSON object per line, each with a ``type`` and the ``file`` it came from, for
scripts (``jq``); values are numbers/booleans/null rather than Java's text.
"""

from __future__ import annotations

from typing import TextIO

from logscan.format.batch import RecordBatch
from logscan.format.compression import codec_name

from .javaisms import java_bool, optional_long


def size_of(data) -> int:
    """Record.keySize/valueSize: -1 for null."""
    return -1 if data is None else len(data)


def max_timestamp(b) -> int:
    """RecordBatch.maxTimestamp; a legacy entry's is its (outer) message timestamp."""
    return b.max_timestamp if b.magic >= 2 else b.timestamp


#: kafka-dump-log's indent for record lines (DumpLogSegments.RecordIndent).
RECORD_INDENT = "|"

_TEMPLATES_LIMIT = 4096  # distinct (producer, epoch, leader epoch, attributes) remembered


def _v2_templates(b, delete_horizon_ms: int | None) -> tuple[str, str]:
    """The %-templates (valid, invalid) of a v2 batch line like ``b``: the numbers that change
    from batch to batch are left as %d, the text that depends only on the producer, the
    attributes and the delete horizon is written in."""
    fixed = (f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
             f"partitionLeaderEpoch: {b.partition_leader_epoch} "
             f"isTransactional: {java_bool(b.is_transactional)} isControl: {java_bool(b.is_control)} "
             f"deleteHorizonMs: {optional_long(delete_horizon_ms)} ")
    head = ("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d "
            + fixed.replace("%", "%%") + f"position: %d {b.timestamp_type}: %d size: %d "
            f"magic: {b.magic} compresscodec: {b.codec.replace('%', '%%')} crc: %d isvalid: ")
    return head + "true\n", head + "false\n"


def _producer_templates(producer_id: int, producer_epoch: int, leader_epoch: int,
                        attributes: int) -> tuple[str, str] | None:
    """``_v2_templates`` for the batches of one producer with one set of attributes; None
    when each batch carries its own delete horizon (KIP-534) into its line."""
    probe = RecordBatch(0, 0, 0, leader_epoch, 2, 0, attributes, 0, 0, 0, producer_id,
                        producer_epoch, 0, 0, True)
    return None if probe.has_delete_horizon else _v2_templates(probe, None)


class TextSink:
    """kafka-dump-log's text, line for line."""

    def __init__(self, out: TextIO, *, snapshot_trailing_space: bool = True, legacy_crc_brace: bool = True,
                 payload_prefix: bool = False):
        """``snapshot_trailing_space``: a producer snapshot entry without batch metadata ends
        with a space; ``legacy_crc_brace``: a v0/v1 record's ``crc: N`` is followed by a stray
        ``}`` (both in kafka-dump-log 3.9.2 and 4.1.1, not in 4.4.0's); ``payload_prefix``: the
        payload of a record printed without metadata or key starts the line with ``| ``
        (4.4.0; the Scala tool prints `` payload:`` there)."""
        self.out = out
        self._payload_prefix = payload_prefix
        self._snapshot_trailing_space = snapshot_trailing_space
        self._legacy_end = "}" if legacy_crc_brace else ""
        self._templates: dict[tuple, tuple[str, str] | None] = {}
        self._last_key: tuple | None = None  # consecutive batches mostly share a producer
        self._last_templates: tuple[str, str] | None = None

    def begin_file(self, shown: str) -> None:
        self.out.write(f"Dumping {shown}\n")

    def log_start(self, base_offset: int) -> None:
        self.out.write(f"Log starting offset: {base_offset}\n")

    def snapshot_start(self, end_offset: int | None, epoch: int | None) -> None:
        if end_offset is None:
            self.out.write("KRaft bootstrap snapshot\n")
        else:
            self.out.write(f"Snapshot end offset: {end_offset}, epoch: {epoch}\n")

    def batch(self, b) -> None:
        """One batch line. The hot path of `logscan dump`: a segment holds a batch every
        few KiB, so a v2 line is one %-format of numbers from the header tuple into a
        template holding the text that depends only on the producer and the attributes."""
        if b.__class__ is not RecordBatch:
            self._legacy_batch(b)
            return
        (position, base_offset, length, leader_epoch, _, crc, attributes, last_delta, _,
         max_ts, producer_id, producer_epoch, base_sequence, count, valid) = b
        key = (producer_id, producer_epoch, leader_epoch, attributes)
        if key == self._last_key:
            templates = self._last_templates
        else:
            if key not in self._templates:
                if len(self._templates) >= _TEMPLATES_LIMIT:
                    self._templates.clear()
                self._templates[key] = _producer_templates(*key)
            templates = self._templates[key]
            self._last_key, self._last_templates = key, templates
        if templates is None:
            templates = _v2_templates(b, b.delete_horizon_ms)
        self.out.write(templates[0 if valid else 1] % (
            base_offset, base_offset + last_delta, count, base_sequence, b.last_sequence,
            position, max_ts, length + 12, crc))

    def _legacy_batch(self, b) -> None:
        self.out.write(
            f"offset: {b.last_offset} position: {b.position} {b.timestamp_type}: {b.timestamp} "
            f"size: {b.size_in_bytes} magic: {b.magic} compresscodec: {b.codec} "
            f"crc: {b.crc} isvalid: {java_bool(b.is_valid)}\n")

    def record(self, b, r, *, metadata: bool, control_text: str | None,
               data: tuple[str | None, str | None] | None) -> None:
        # Mirrors DumpLogSegments.dumpLog: the prefix moves from "| " to " " after the first
        # printed field, so with --skip-record-metadata a record without key starts with
        # " payload:" (no indent) and a control record prints an empty line.
        parts = []
        prefix = RECORD_INDENT + " "
        if metadata:
            parts.append(f"{prefix}offset: {r.offset} {b.timestamp_type}: {r.timestamp} "
                         f"keySize: {size_of(r.key)} valueSize: {size_of(r.value)}")
            prefix = " "
            if b.magic >= 2:
                parts.append(f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]")
            else:
                parts.append(f" isValid: {java_bool(r.is_valid)} crc: {r.crc}{self._legacy_end}")
            if control_text is not None:
                parts.append(control_text)
        if data is not None:
            key, payload = data
            if key is not None:
                parts.append(f"{prefix}key: {key}")
                prefix = " "
            if payload is not None:
                parts.append(f"{prefix if self._payload_prefix else ' '}payload: {payload}")
        parts.append("\n")
        self.out.write("".join(parts))

    def invalid_bytes(self, count: int, name: str) -> None:
        self.out.write(f"Found {count} invalid bytes at the end of {name}\n")

    def index_empty(self, shown: str) -> None:
        self.out.write(f"{shown} is empty.\n")

    def sanity_passed(self, shown: str) -> None:
        self.out.write(f"{shown} passed sanity check.\n")

    def index_entry(self, offset: int, position: int) -> None:
        self.out.write(f"offset: {offset} position: {position}\n")

    def time_index_entry(self, timestamp: int, offset: int) -> None:
        self.out.write(f"timestamp: {timestamp} offset: {offset}\n")

    def txn_entry(self, e) -> None:
        from logscan.format.index import format_aborted_txn
        self.out.write(format_aborted_txn(e) + "\n")

    def snapshot_entry(self, e) -> None:
        from logscan.format.snapshot import format_snapshot_entry
        line = format_snapshot_entry(e)
        if not self._snapshot_trailing_space and line.endswith(" "):
            line = line[:-1]
        self.out.write(line + "\n")

    def extra(self, kind: str, text: str, fields: dict) -> None:
        """Lines for files kafka-dump-log does not read (checkpoints, meta.properties)."""
        self.out.write(text + "\n")


class JsonSink:
    """One JSON object per line: ``{"type": "batch"|"record"|..., "file": ..., ...}``."""

    def __init__(self, out: TextIO):
        import json

        self.out = out
        self.file = None
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def _emit(self, obj: dict) -> None:
        self.out.write(self._dumps(obj) + "\n")

    def begin_file(self, shown: str) -> None:
        self.file = shown
        self._emit({"type": "file", "file": shown})

    def log_start(self, base_offset: int) -> None:
        self._emit({"type": "log", "file": self.file, "base_offset": base_offset})

    def snapshot_start(self, end_offset, epoch) -> None:
        self._emit({"type": "snapshot", "file": self.file, "end_offset": end_offset,
                    "epoch": epoch, "bootstrap": end_offset is None})

    def batch(self, b) -> None:
        obj = {"type": "batch", "file": self.file, "position": b.position, "magic": b.magic,
               "last_offset": b.last_offset}
        if b.magic >= 2:
            obj.update({
                "base_offset": b.base_offset, "count": b.records_count,
                "base_sequence": b.base_sequence, "last_sequence": b.last_sequence,
                "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                "partition_leader_epoch": b.partition_leader_epoch,
                "is_transactional": b.is_transactional, "is_control": b.is_control,
                "delete_horizon_ms": b.delete_horizon_ms})
        obj.update({"timestamp_type": b.timestamp_type, "max_timestamp": max_timestamp(b),
                    "size": b.size_in_bytes, "compresscodec": b.codec, "crc": b.crc,
                    "is_valid": b.is_valid})
        self._emit(obj)

    def record(self, b, r, *, metadata: bool, control_text, data) -> None:
        obj = {"type": "record", "file": self.file, "offset": r.offset}
        if metadata:
            obj.update({"timestamp_type": b.timestamp_type, "timestamp": r.timestamp,
                        "key_size": size_of(r.key), "value_size": size_of(r.value)})
            if b.magic >= 2:
                obj.update({"sequence": r.sequence, "header_keys": [k for k, _ in r.headers]})
            else:
                obj.update({"is_valid": r.is_valid, "crc": r.crc})
            if control_text is not None:
                obj["control"] = control_text.strip()
        if data is not None:
            obj["key"], obj["payload"] = data
        self._emit(obj)

    def invalid_bytes(self, count: int, name: str) -> None:
        self._emit({"type": "invalid_bytes", "file": self.file, "count": count})

    def index_empty(self, shown: str) -> None:
        self._emit({"type": "index_empty", "file": self.file})

    def sanity_passed(self, shown: str) -> None:
        self._emit({"type": "sanity_passed", "file": self.file})

    def index_entry(self, offset: int, position: int) -> None:
        self._emit({"type": "index_entry", "file": self.file, "offset": offset,
                    "position": position})

    def time_index_entry(self, timestamp: int, offset: int) -> None:
        self._emit({"type": "time_index_entry", "file": self.file, "timestamp": timestamp,
                    "offset": offset})

    def txn_entry(self, e) -> None:
        self._emit({"type": "aborted_txn", "file": self.file, "version": e.version,
                    "producer_id": e.producer_id, "first_offset": e.first_offset,
                    "last_offset": e.last_offset, "last_stable_offset": e.last_stable_offset})

    def snapshot_entry(self, e) -> None:
        obj = {"type": "producer_entry", "file": self.file, "producer_id": e.producer_id,
               "producer_epoch": e.producer_epoch, "coordinator_epoch": e.coordinator_epoch,
               "current_txn_first_offset": (e.current_txn_first_offset
                                            if e.current_txn_first_offset >= 0 else None),
               "last_timestamp": e.timestamp}
        if e.last_offset >= 0:
            obj.update({"first_sequence": e.first_sequence, "last_sequence": e.last_sequence,
                        "last_offset": e.last_offset, "offset_delta": e.offset_delta})
        self._emit(obj)

    def extra(self, kind: str, text: str, fields: dict) -> None:
        self._emit({"type": kind, "file": self.file, **fields})
