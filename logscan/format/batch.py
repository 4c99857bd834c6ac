"""Magic v2 record batches (``DefaultRecordBatch``) and their records (``DefaultRecord``).

The header is decoded and its CRC-32C checked over a memoryview slice, never a copy; the
records are decoded lazily, and a compressed batch is decompressed only when its records
are iterated. Validation follows DefaultRecordBatch/DefaultRecord of Kafka 4.1 (messages
quoted), so a batch Kafka's consumer would reject is rejected here, at the same place.

Well-formed records are decoded by a compiled step when logscan was installed with its
extension module (``compiled.records_iter``, a record a ``next()``; ``compiled.records_v2``
for first_record): it stops before any record the Python loop below would report, or would
compute past 64 bits, and that loop reads it, so every error is still the loop's.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from . import compiled, compression
from .errors import CorruptRecordError, TruncatedInput, UnknownMagic
from .primitives import java_long, java_utf8


def _load_crc32c():
    """``crc32c.crc32c``, the C function, without running the crc32c package's ``__init__``.

    That ``__init__`` computes ``__version__`` with ``importlib.metadata`` (crc32c 2.x), which
    costs 25-45 ms at every start: a tenth of what `logscan dump` needs for a whole 1 GiB
    segment. The extension module is loaded the way the import system would load it and
    registered under its own name, so a later ``import crc32c`` reuses it. Any surprise in
    the package's layout falls back to the plain import.
    """
    import sys

    if "crc32c" in sys.modules:
        return sys.modules["crc32c"].crc32c
    try:
        import importlib.machinery as machinery
        import importlib.util

        package = machinery.PathFinder.find_spec("crc32c")
        for location in (package.submodule_search_locations or []) if package else []:
            finder = machinery.FileFinder(location, (machinery.ExtensionFileLoader,
                                                     machinery.EXTENSION_SUFFIXES))
            spec = finder.find_spec("crc32c._crc32c")
            if spec is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[spec.name] = module
                return module.crc32c
    except (ImportError, OSError, AttributeError):
        pass
    from crc32c import crc32c
    return crc32c


#: CRC-32C (Castagnoli) of a buffer, optionally continuing from a previous value.
crc32c = _load_crc32c()

# DefaultRecordBatch (magic 2):
#   BaseOffset int64, Length int32 (bytes after this field), PartitionLeaderEpoch int32
#   (not covered by the CRC: the leader rewrites it), Magic int8, CRC uint32 (CRC-32C of
#   Attributes..end), Attributes int16, LastOffsetDelta int32, BaseTimestamp int64,
#   MaxTimestamp int64, ProducerId int64, ProducerEpoch int16, BaseSequence int32,
#   RecordsCount int32, then the records (one compressed stream when a codec is set).
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
LOG_OVERHEAD = 12  # offset + length: the framing every magic shares
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = CRC_OFFSET + 4  # CRC coverage starts here
RECORD_BATCH_OVERHEAD = BATCH_HEADER.size  # 61
MAGIC_VALUE_V2 = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1


def _java_int(value: int) -> int:
    """Wrap like Java int arithmetic: corrupt deltas can overflow."""
    return (value + 0x80000000) % 0x100000000 - 0x80000000


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from INT32_MAX to 0."""
    if 0 <= sequence <= INT32_MAX - increment:
        return sequence + increment  # no wrap and within int32: nearly every batch, once per batch
    if sequence > INT32_MAX - increment:
        return _java_int(increment - (INT32_MAX - sequence) - 1)
    return _java_int(sequence + increment)


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence, the inverse of increment_sequence."""
    if sequence < decrement:
        return _java_int(INT32_MAX - _java_int(decrement - sequence) + 1)
    return _java_int(sequence - decrement)


class RecordBatch(NamedTuple):
    """One v2 batch header, at ``position`` in the buffer. A NamedTuple rather than a frozen
    dataclass: a segment has a batch every few KiB, and building a frozen dataclass cost
    more than checking the batch's CRC."""
    position: int
    base_offset: int
    batch_length: int  # the Length field: bytes after it
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    crc_valid: bool

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def next_position(self) -> int:
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def codec(self) -> str:
        return compression.codec_name(self.compression)

    @property
    def timestamp_type(self) -> str:
        return timestamp_type_name(self.attributes)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: the cleaner stores the tombstone/marker horizon in BaseTimestamp."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def is_valid(self) -> bool:
        """DefaultRecordBatch.isValid(): what kafka-dump-log prints as ``isvalid``."""
        return self.crc_valid


def timestamp_type_name(attributes: int) -> str:
    """kafka-dump-log's name of a v2 batch's timestamp type, from its attributes."""
    return "LogAppendTime" if attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


_new_tuple = tuple.__new__  # NamedTuple's own __new__ adds a Python call per batch


def decode_batch_header(buf, pos: int, end: int | None = None, *,
                        verify_crc: bool = True) -> tuple[RecordBatch, int]:
    """Decode the 61-byte header of the v2 batch at ``pos``; returns (batch, next_pos).

    A CRC mismatch is not an error: the batch comes back with ``crc_valid=False``, as
    kafka-dump-log prints it with ``isvalid: false``. With ``verify_crc=False`` the CRC is
    not computed and ``crc_valid`` is True.
    """
    if end is None:
        end = len(buf)
    if pos + RECORD_BATCH_OVERHEAD <= end:
        fields = BATCH_HEADER.unpack_from(buf, pos)
        length = fields[1]
    elif pos + LOG_OVERHEAD <= end:
        fields = None
        length = struct.unpack_from(">i", buf, pos + 8)[0]
    else:
        raise TruncatedInput("batch log overhead needs 12 bytes", pos,
                             expected=LOG_OVERHEAD, found=max(end - pos, 0))
    if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
        raise CorruptRecordError(
            f"Record batch is corrupt (the size {length + LOG_OVERHEAD} is smaller than the "
            f"minimum allowed overhead {RECORD_BATCH_OVERHEAD})", pos + 8,
            expected=f">= {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}", found=length)
    next_pos = pos + LOG_OVERHEAD + length
    if next_pos > end or fields is None:
        raise TruncatedInput(f"batch of {length + LOG_OVERHEAD} bytes has only {end - pos} left",
                             pos, expected=length + LOG_OVERHEAD, found=end - pos)
    if fields[3] != MAGIC_VALUE_V2:
        raise UnknownMagic(f"expected a magic v2 batch, found magic {fields[3]}", pos + MAGIC_OFFSET,
                           expected=MAGIC_VALUE_V2, found=fields[3])
    crc_valid = True
    if verify_crc:
        mv = buf if type(buf) is memoryview else memoryview(buf)
        crc_valid = crc32c(mv[pos + ATTRIBUTES_OFFSET:next_pos]) == fields[4]
    return _new_tuple(RecordBatch, (pos, *fields, crc_valid)), next_pos


class Record(NamedTuple):
    """One DefaultRecord. A NamedTuple rather than a frozen dataclass: a segment has
    millions of records and tuple construction is several times cheaper."""
    offset: int
    offset_delta: int
    timestamp: int
    timestamp_delta: int
    attributes: int
    sequence: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    size_in_bytes: int


def iter_records(buf, batch: RecordBatch, *, max_decompressed: int = compression.DEFAULT_MAX_OUTPUT,
                 base: int = 0, budget: compression.DecompressionBudget | None = None) -> Iterator[Record]:
    """The batch's records, decoded one by one; decompression happens on first ``next()``.

    ``buf`` may be a window of a larger log: ``buf[0]`` is byte ``base`` of the log, in which
    ``batch.position`` is. Errors are located in the log: absolute positions for uncompressed
    batches; for compressed ones the position of the compressed payload, with the offset
    inside the decompressed stream in the message. ``budget``: the file's decompression
    budget (compression.DecompressionBudget), charged for this batch.
    """
    iterator = compiled.records_iter
    if iterator is None:
        return _decode_records(buf, batch, base, max_decompressed, budget=budget)
    return iterator(_decode_records(buf, batch, base, max_decompressed, budget=budget, stretches=True),
                    tuple, Record)


def first_record(buf, batch: RecordBatch, *, max_decompressed: int = compression.DEFAULT_MAX_OUTPUT,
                 base: int = 0, budget: compression.DecompressionBudget | None = None) -> Record | None:
    """``next(iter_records(buf, batch, ...), None)``: the first record as Kafka's
    ``batch.iterator().next()`` reads a control batch's, the bytes after it unread. Without a
    suspended generator to close: closing one cost more than decoding a marker's record, and
    the scan reads one per COMMIT/ABORT marker."""
    if batch.records_count == 0:
        return None
    (record,) = _decode_records(buf, batch, base, max_decompressed, whole=False, budget=budget)
    return record


def _record_bytes(buf, batch: RecordBatch, count: int, base: int, max_decompressed: int, budget=None,
                  in_place: bool = False) -> tuple[bytes, int, int, int, bool]:
    """The batch's record bytes, decompressed: (data, start, end, origin, compressed), the
    records being data[start:end]; an error at data[i] of an uncompressed batch is at byte
    origin + i of the log, of a compressed one at its payload, origin. ``in_place``: the
    bytes of an uncompressed batch of a bytes ``buf`` are read where they are, not copied."""
    if count < 0:
        raise CorruptRecordError(f"Found invalid record count {count} in magic v2 batch",
                                 batch.position + RECORD_BATCH_OVERHEAD - 4, expected=">= 0", found=count)
    at = batch.position - base  # in buf
    start = at + RECORD_BATCH_OVERHEAD
    end = at + batch.batch_length + LOG_OVERHEAD
    if end > len(buf):
        raise TruncatedInput("batch runs past the end of the buffer", batch.position,
                             expected=batch.size_in_bytes, found=len(buf) - at)
    codec = batch.attributes & COMPRESSION_CODEC_MASK
    if codec == compression.NONE:
        if type(buf) is bytes:
            if in_place and 0 <= start <= end:
                return buf, start, end, base, False
            data = buf[start:end]
        else:
            # One bounded copy of the batch's record bytes: indexing and slicing bytes is several
            # times cheaper than going through a memoryview, and the batch is already in memory.
            data = bytes(memoryview(buf)[start:end])
        return data, 0, len(data), start + base, False
    payload = compression.decompress(codec, memoryview(buf)[start:end], magic=batch.magic,
                                     max_output=max_decompressed, position=start + base, budget=budget)
    return payload, 0, len(payload), start + base, True


def _varint(data, p: int, end: int, max_bytes: int = 5, bits: int = 32) -> tuple[int, int]:
    """Zig-zag varint as ByteUtils reads it: more than ``max_bytes`` bytes is illegal, bits
    past the int32/int64 width are dropped (Java's shifts do that silently).

    Raises IndexError past ``end`` and ValueError when too long; the caller turns both into
    Kafka's "Found invalid record structure". (primitives.read_varint is stricter about the
    dropped bits, so the record path keeps its own reader.)
    """
    if p >= end:
        raise IndexError
    b = data[p]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), p + 1
    raw = b & 0x7F
    shift = 7
    limit = p + max_bytes
    if limit > end:
        limit = end
    for p in range(p + 1, limit):
        b = data[p]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= (1 << bits) - 1
            return (raw >> 1) ^ -(raw & 1), p + 1
        shift += 7
    if shift >= 7 * max_bytes:
        raise ValueError(f"varint longer than {max_bytes} bytes")
    raise IndexError


def _decode_records(buf, batch: RecordBatch, base: int, max_decompressed: int,
                    whole: bool = True, budget=None, stretches: bool = False) -> Iterator[Record]:
    """The batch's records (``whole``: all of them, the bytes after them checked; else the
    first only), read from its record bytes in ``buf`` (see iter_records), decompressed on
    first ``next()``. An empty batch's bytes are not looked at (DefaultRecordBatch.iterator).
    Errors name the file position of the bytes (uncompressed) or of the compressed payload,
    with the byte inside the decompressed stream.

    The loop below is the reference reader of a record, field by field as DefaultRecord
    reads it; where the module is built, the compiled step reads the well-formed records
    (nearly all of them) and this loop only the one it stops before. ``stretches``: for
    compiled.records_iter, which wraps this generator: it yields the records left as one
    stretch, a plain tuple (record bytes, position, their end, records left, base offset,
    base timestamp, base sequence, LogAppendTime or None), which the iterator reads a record a
    ``next()`` (no frame switch here per record), and is sent back (position, records left)
    where it stopped. Else compiled.records_v2 reads them in
    chunks, from 1 doubling, so a reader that stops after a few has not paid for many.
    """
    count = batch.records_count
    if count == 0:
        return
    data, p, end, origin, compressed = _record_bytes(buf, batch, count, base, max_decompressed, budget,
                                                     in_place=stretches)
    base_offset = batch.base_offset
    base_timestamp = batch.base_timestamp
    base_sequence = batch.base_sequence
    log_append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None
    varint = _varint
    new_record = tuple.__new__  # skips NamedTuple's Python-level __new__: half the cost

    def fail(message: str, at: int, **kw) -> CorruptRecordError:
        if compressed:
            return CorruptRecordError(f"{message} (at byte {at} of the decompressed records)", origin, **kw)
        return CorruptRecordError(message, origin + at, **kw)

    native = compiled.records_v2
    chunk = 1
    left = count if whole else 1
    while left > 0:
        if stretches and type(data) is bytes:
            p, left = yield data, p, end, left, base_offset, base_timestamp, base_sequence, log_append_time
            if left == 0:
                break
            # The iterator stopped before a record this loop reads (and reports).
        elif native is not None:
            asked = chunk if chunk < left else left
            records, p = native(data, p, asked, base_offset, base_timestamp, base_sequence, log_append_time, Record)
            left -= len(records)
            yield from records
            if len(records) == asked:
                chunk = min(2 * chunk, compiled.MAX_CHUNK)
                continue
            # The compiled step stopped before a record this loop reads (and reports).
        record_start = p
        try:
            body, p = varint(data, p, end)
        except (IndexError, ValueError):
            raise fail("Incorrect declared batch size, premature EOF reached", record_start,
                       expected="record length varint") from None
        body_end = p + body
        if body < 0 or body_end > end:
            raise fail(f"Invalid record size: expected {body} bytes in record payload, but instead "
                       f"the buffer has only {end - p} remaining bytes", record_start,
                       expected=body, found=end - p)
        body_start = p
        try:
            attributes = data[p]
            timestamp_delta, p = varint(data, p + 1, body_end, 10, 64)
            offset_delta, p = varint(data, p, body_end)
            key, p = _read_bytes(data, p, body_end)
            value, p = _read_bytes(data, p, body_end)
            header_count, p = varint(data, p, body_end)
            if header_count < 0 or header_count > body_end - p:
                raise fail(f"Found invalid number of record headers {header_count}", record_start,
                           expected=f"0..{body_end - p}", found=header_count)
            headers = ()
            if header_count:
                headers, p = _read_headers(data, p, body_end, header_count)
        except (IndexError, ValueError):
            raise fail("Found invalid record structure", record_start,
                       expected=f"record body of {body} bytes") from None
        if headers is None:
            raise fail("Invalid negative header key size", record_start, expected=">= 0")
        if p != body_end:
            raise fail(f"Invalid record size: expected to read {body} bytes in record payload, but "
                       f"instead read {p - body_start}", record_start, expected=body, found=p - body_start)
        yield new_record(Record, (
            base_offset + offset_delta, offset_delta,
            java_long(base_timestamp + timestamp_delta) if log_append_time is None else log_append_time,
            timestamp_delta, attributes - 256 if attributes > 127 else attributes,
            (base_sequence + offset_delta if base_sequence + offset_delta <= INT32_MAX
             else increment_sequence(base_sequence, offset_delta)) if base_sequence >= 0 else NO_SEQUENCE,
            key, value, headers, p - record_start))
        left -= 1
    if whole and p != end:  # not for first_record: Kafka reads no further than it needs
        raise fail("Incorrect declared batch size, records still remaining in file", p,
                   expected="end of records", found=f"{end - p} more bytes")


def _read_bytes(data, p: int, end: int) -> tuple[bytes | None, int]:
    """A varint-length-prefixed byte string; a negative length is null (Utils.readBytes)."""
    n, p = _varint(data, p, end)
    if n < 0:
        return None, p
    if p + n > end:
        raise IndexError
    return bytes(data[p:p + n]), p + n


def _read_headers(data, p: int, end: int, count: int):
    """(headers, next_pos), or (None, p) for a negative header key size."""
    headers = []
    for _ in range(count):
        key, p = _read_bytes(data, p, end)
        if key is None:
            return None, p
        value, p = _read_bytes(data, p, end)
        # RecordHeader decodes keys with Java's UTF-8 decoder, which substitutes bad bytes.
        headers.append((java_utf8(key), value))
    return tuple(headers), p
