"""Walking the entries of a whole ``.log`` buffer, as ``FileLogInputStream`` does, but on.

This is the one walker of logscan: the scan (``logscan.scan.replica``) and `logscan dump`
both read a segment with ``walk_batches``, and the dump's index checks frame entries with
``kafka_entries``; Kafka's framing rules are written down here once.

Kafka reads a segment entry by entry (FileLogInputStream.nextBatch, Kafka 4.1): 12 bytes
of offset and size, the magic at byte 16 decides v2 batch or v0/v1 message, so formats may
be mixed. It stops quietly when at most 17 bytes are left (HEADER_SIZE_UP_TO_MAGIC) or when
the entry runs past the end, and throws CorruptRecordException at a size below 14.
kafka-dump-log then prints "Found N invalid bytes at the end" for what was not read.
A forensic tool must see past that, so ``walk_batches`` stops where Kafka stops but yields
a *finding* (a DecodeError instance, not raised) where Kafka would stop or die, and goes on:

- a partial last entry, or at most 17 trailing bytes -> one ``TruncatedTail``;
- a zero-filled region (a preallocated segment, ``log.preallocate``) -> one
  ``ZeroFilledRegion``, however long;
- a size < 14, a size past the end with a valid entry further on, an unknown magic or an
  undecodable header -> the located cause, then one ``SkippedRegion`` up to the next
  plausible entry (magic at +16, sane size, valid CRC);
- a CRC-failed entry with a valid entry inside its claimed extent -> the entry, then one
  ``OverlongEntry`` (at its size field) saying where the walk resumes.

A CRC mismatch is not a walk error: the batch is yielded with ``crc_valid=False``, as
kafka-dump-log prints it (isValid false). Kafka then jumps past the claimed size; but a
damaged size field is one way to fail the CRC (which then covers the wrong bytes), so a
failed entry's extent is not believed blindly: if a genuine entry (whole, CRC valid, a
higher offset) starts inside it, the walk yields an ``OverlongEntry`` naming the size field
and resumes there, so a grown size does not swallow the good batches it covers.
Undamaged segments never take this path: their walk is Kafka's, entry for entry.
The buffer is never copied whole: headers are read in place, CRCs are computed over
memoryview slices, the resync search copies at most one window at a time.

The common step (a whole v2 batch with a sane size and, when checked, a valid CRC) runs in
compiled code when logscan was installed with its extension module (``compiled.walk_v2``,
built from native/ by cargo): a batch then costs its CRC-32C (crc-fast's, folded with the
CPU's carry-less multiply) and its ``RecordBatch``, instead of about a microsecond of Python
beyond a ``crc32c`` call. Everything else, and every finding, is decided by the Python below,
which is also the whole walk where the module is missing or ``LOGSCAN_PURE_PYTHON=1`` is set:
both walks yield the same items (tests/format/test_native.py and the fuzz target ``native``
hold them to it).

A log need not be one buffer either: ``walk_windows`` reads it through windows of a source
(logscan.logdir.segment.LogWindows maps them from a file), so a segment larger than the
address space a process may use (a Spark worker's RLIMIT_AS) is read whole. Each window is
walked with ``more=True``: whole entries, then a ``WindowEnd`` where the next step needs
bytes past the window, and the walk goes on from there in the next one. The items are the
ones a walk of the whole log yields. Damage is stepped over through windows as well (the
general step below, then the resync search a window at a time), so no window is larger than
the window, the largest entry or a resync candidate: a reader that reads its windows rather
than maps them (LogWindows) holds a few MiB whatever the log, and a file that shrinks under
it is a located finding (LogShrank), never a SIGBUS.
"""

from __future__ import annotations

import dataclasses
import errno
import re
import struct
import zlib
from typing import Iterator, Optional, Union

from . import compiled
from .batch import BATCH_HEADER, RecordBatch, crc32c, decode_batch_header
from .errors import CorruptRecordError, DecodeError, TruncatedInput, UnknownMagic
from .legacy import LegacyBatch, decode_legacy_entry

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_OFFSET = 16
_INT32 = struct.Struct(">i")
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: FileLogInputStream's floor for all magics
MIN_V2_SIZE = BATCH_HEADER.size - LOG_OVERHEAD  # 49: DefaultRecordBatch.RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
_V2_CRC_START = 21  # the batch CRC covers attributes..end
_OFFSET_SIZE = struct.Struct(">qi")
_SIZE = struct.Struct(">i")
_CRC = struct.Struct(">I")
RESYNC_WINDOW = 1 << 20
#: The first window find_entry reads (then twice as much each time, up to its window).
RESYNC_FIRST_WINDOW = 64 << 10
# A resync candidate claiming more than this is not believed: checking its CRC would cost a
# pass over up to the whole file for every random match in a garbage region.
RESYNC_MAX_ENTRY_SIZE = 128 * 1024 * 1024

# Where an entry might start: a non-negative size (byte 8 < 0x80) and either magic 2 with the
# unused high attribute byte 0, or magic 0/1 with attribute bits 4-7 clear.
_CANDIDATE = re.compile(rb"(?=.{8}[\x00-\x7f].{7}(?:\x02.{4}\x00|[\x00\x01][\x00-\x0f]))", re.S)
_NONZERO = re.compile(rb"[^\x00]")
_ZEROS = bytes(RESYNC_WINDOW)


Entry = Union[RecordBatch, LegacyBatch]


class TruncatedTail(TruncatedInput):
    """The segment ends inside an entry (kafka-dump-log: "Found N invalid bytes at the end")."""

    def __init__(self, message: str, position: int, length: int, expected=None):
        super().__init__(message, position, expected=expected, found=length)
        self.length = length


class SkippedRegion(CorruptRecordError):
    """Bytes the walk could not read as entries and stepped over while resynchronising."""

    reason = "skipped"

    def __init__(self, message: str, position: int, length: int):
        super().__init__(message, position, expected="log entries", found=f"{length} unreadable bytes")
        self.length = length


class OverlongEntry(CorruptRecordError):
    """A CRC-failed entry claims more bytes than it has: a valid entry starts inside its
    claimed extent, at ``resume_at``, and the walk goes on from there (the entry itself was
    yielded just before, as kafka-dump-log prints it)."""

    def __init__(self, message: str, entry_position: int, claimed_size: int, resume_at: int):
        super().__init__(message, entry_position + 8, found=claimed_size,
                         expected=f"<= {resume_at - entry_position - LOG_OVERHEAD}")
        self.resume_at = resume_at
        self.length = 4  # the damaged size field


class ZeroFilledRegion(SkippedRegion):
    """Zero bytes where entries should be: a preallocated or zero-extended segment."""

    reason = "zero-fill"


class WindowEnd:
    """Where the walk of a window of a log (``more=True``) stopped, because what comes next
    depends on bytes past the window: ``needed`` bytes from ``position`` (a log position)
    would let it decide, or, when None, the entry there is damaged and deciding where the
    walk resumes may take bytes anywhere after it (walk_windows then steps through windows:
    _general_step)."""

    __slots__ = ("position", "needed")

    def __init__(self, position: int, needed: Optional[int]):
        self.position = position
        self.needed = needed

    def __repr__(self) -> str:
        return f"WindowEnd({self.position}, {self.needed})"


def _at(item, base: int):
    """``item`` (an entry or a finding of a window) located in the log: ``base`` added."""
    if not base:
        return item
    if isinstance(item, RecordBatch):
        return item._replace(position=item.position + base)
    if isinstance(item, LegacyBatch):
        return dataclasses.replace(item, position=item.position + base)
    item.position += base
    if isinstance(item, OverlongEntry):
        item.resume_at += base
    return item


def walk_batches(buf, start: int = 0, end: int | None = None, *, verify_crc: bool = True,
                 resync: bool = True, cut: bool = False, base: int = 0,
                 more: bool = False) -> Iterator[Entry | DecodeError]:
    """Yield every entry in ``buf[start:end]`` in order, and findings where there are none.

    With ``resync=False`` the walk stops after its first finding, as Kafka's reader would.
    ``cut=True`` says ``end`` is a cut through the log (kafka-dump-log ``--max-bytes``), not
    its end: an entry crossing it ends the walk with a TruncatedTail, as Kafka stops there,
    instead of being taken for a damaged size and looked past.

    ``buf`` may be a window of a larger log: ``buf[0]`` is byte ``base`` of the log, and the
    positions of what is yielded (and in messages) are log positions. ``more=True`` says the
    log goes on past ``end``: the walk yields the whole entries a walk of the log would and
    stops with a :class:`WindowEnd` where the next step needs bytes past the window, or at
    the first damage (resynchronising may need bytes anywhere after it).
    """
    mv = buf if type(buf) is memoryview else memoryview(buf)
    end = len(mv) if end is None else min(end, len(mv))
    # Locals for the loop below: it runs once per batch of every segment read.
    unpack_header, new_batch, batch_class, crc = BATCH_HEADER.unpack_from, tuple.__new__, RecordBatch, crc32c
    last_header, min_size, crc_start = end - BATCH_HEADER.size, MIN_V2_SIZE, _V2_CRC_START
    native = compiled.walk_v2 if mv.c_contiguous and mv.format == "B" else None
    chunk = 1
    pos = start
    while True:
        # The common case, one header unpack per batch: a whole v2 batch with a sane size.
        # Anything else (legacy entries, damage, the tail) takes the general step below.
        while native is not None and pos <= last_header:
            batches, pos = native(mv, pos, end, base, verify_crc, batch_class, chunk)
            yield from batches
            if len(batches) < chunk:
                break  # the compiled step stopped where the Python one would
            chunk = min(2 * chunk, compiled.MAX_CHUNK)
        while native is None and pos <= last_header:
            fields = unpack_header(mv, pos)
            next_pos = pos + LOG_OVERHEAD + fields[1]
            if fields[3] != 2 or fields[1] < min_size or next_pos > end:
                break
            if verify_crc and crc(mv[pos + crc_start:next_pos]) != fields[4]:
                break  # a failed CRC: the general step checks the claimed extent
            yield new_batch(batch_class, (pos + base, *fields, True))
            pos = next_pos
        if more:
            step = _window_step(mv, pos, end, verify_crc)
            if type(step) is WindowEnd:
                step.position += base
                yield step
                return
            entry, pos = step
            yield _at(entry, base)
            continue
        if pos >= end:
            return
        left = end - pos
        if left <= HEADER_SIZE_UP_TO_MAGIC:
            yield _at(_tail_finding(mv, pos, end, f"{left} bytes at the end are too few for an entry header"), base)
            return
        _, size = _OFFSET_SIZE.unpack_from(mv, pos)
        magic = mv[pos + MAGIC_OFFSET]
        cause: DecodeError | None = None
        if size == 0 and not any(mv[pos:pos + HEADER_SIZE_UP_TO_MAGIC]):
            cause = None  # zero fill: reported as one region below, no separate cause
        elif size < MIN_ENTRY_SIZE:
            cause = CorruptRecordError(
                f"Found record size {size} smaller than minimum record overhead ({MIN_ENTRY_SIZE})",
                pos + 8, expected=f">= {MIN_ENTRY_SIZE}", found=size)
        elif size > left - LOG_OVERHEAD:
            target = find_next_entry(mv, pos + 1, end) if resync and not cut else None
            if target is None:
                yield _at(TruncatedTail(f"entry of {size + LOG_OVERHEAD} bytes is truncated: only "
                                        f"{left} bytes left", pos, left, expected=size + LOG_OVERHEAD), base)
                return
            cause = CorruptRecordError(f"entry size {size} runs past the next readable entry",
                                       pos + 8, expected=f"<= {target - pos - LOG_OVERHEAD}", found=size)
        else:
            try:
                if magic == 2:
                    entry, pos = decode_batch_header(mv, pos, end, verify_crc=verify_crc)
                elif magic in (0, 1):
                    entry, pos = decode_legacy_entry(mv, pos, end, verify_crc=verify_crc)
                else:
                    raise UnknownMagic(f"Unknown magic {magic} (expected 0, 1 or 2)", pos + MAGIC_OFFSET,
                                       expected="0, 1 or 2", found=magic)
            except DecodeError as e:
                cause = e
            else:
                resume = (_entry_inside(mv, entry, end)
                          if resync and verify_crc and not entry.crc_valid else None)
                yield _at(entry, base)
                if resume is not None:
                    claimed = entry.size_in_bytes
                    yield _at(OverlongEntry(
                        f"entry at byte {entry.position + base} fails its CRC and claims {claimed} bytes, "
                        f"but a valid entry starts inside them at byte {resume + base}: its size field "
                        f"is damaged; resuming at byte {resume + base}",
                        entry.position, claimed - LOG_OVERHEAD, resume), base)
                    pos = resume
                continue
        if not resync:
            yield _at(cause if cause is not None else _region_finding(mv, pos, end, base=base), base)
            return
        if cause is not None:
            yield _at(cause, base)
        pos = yield from _skip(mv, pos, end, base)


#: Bytes a windowed read maps at a time (more when one entry is larger).
WINDOW_BYTES = 64 << 20


class WindowUnmappable(DecodeError):
    """A window of the log could not be mapped (an address-space limit such as
    spark.executor.pyspark.memory's RLIMIT_AS): the log is not read from here on."""

    reason = "io"

    def __init__(self, message: str, position: int, length: int):
        super().__init__(message, position, found=f"{length} unread bytes")
        self.length = length


def walk_windows(source, start: int = 0, *, window: int | None = None, verify_crc: bool = True,
                 cut: bool = False) -> Iterator[tuple[Entry | DecodeError, object]]:
    """walk_batches over a whole log read through windows of ``source`` (``source.size``;
    ``source.map(start, stop)`` gives a window covering those log bytes, with ``buf``,
    ``base`` and ``close()``): yields each item with the window it was read from (None for a
    finding read through several), the items exactly those of one walk of the whole log.
    ``window``: the bytes read at a time (default: the source's ``window_bytes``, else
    WINDOW_BYTES). No window is larger than that, the largest entry, or a resync candidate
    (RESYNC_MAX_ENTRY_SIZE): damage and the search for where the walk resumes after it are
    read a window at a time too, so the rest of the log is never held (nor mapped) at once.
    ``cut``: ``source.size`` is a cut through the log (walk_batches' ``cut``), not its end.

    A window that cannot be had (an address-space limit, a read error, a file that shrank
    under the reader: the source's ``current_size()`` is below ``size``) ends the walk with a
    located WindowUnmappable (LogShrank), the first byte not accounted for."""
    window = _window_of(source, window)
    size = source.size
    pos, needed = start, 0
    while pos < size:
        stop = min(size, pos + max(window, needed))
        try:
            win = source.map(pos, stop)
        except OSError as e:
            yield _unreadable(source, pos, e, stop), None
            return
        final = win.base + len(win.buf) >= size
        walk = walk_batches(win.buf, pos - win.base, base=win.base, more=not final, verify_crc=verify_crc,
                            cut=cut and final)
        stopped = None
        try:
            for item in walk:
                if type(item) is WindowEnd:
                    stopped = item
                    break
                yield item, win
        finally:
            walk.close()
            win.close()
        if stopped is None:
            return
        at, needed = stopped.position, stopped.needed
        if needed is not None and at + needed <= size and not (at == pos and at + needed <= stop):
            pos = at  # an entry crossing the window's end: a window from it, as large as it
            continue
        # Damage, an entry running past the log's end, or no progress in a window this size:
        # walk_batches' general step, read through windows.
        step = _general_step(source, at, window, verify_crc, cut)
        done = at  # the first byte the items so far do not account for
        try:
            while True:
                try:
                    item, win = next(step)
                except StopIteration as stop_step:
                    resume = stop_step.value
                    break
                yield item, win
                done = _accounted(item, done)
        except OSError as e:
            step.close()
            yield _unreadable(source, done, e), None
            return
        finally:
            step.close()
        if resume is None:
            return
        pos, needed = resume, 0


class LogShrank(WindowUnmappable):
    """The log is shorter than when its reader opened it (a follower truncating its active
    segment, a copy being rewritten): the bytes from ``position`` are not read. A mapping
    would have died of SIGBUS there; a read comes back short, and says so here."""

    reason = "shrank"


def _window_of(source, window: int | None) -> int:
    return window or getattr(source, "window_bytes", WINDOW_BYTES)


def _unreadable(source, pos: int, error: OSError, stop: int | None = None) -> WindowUnmappable:
    """The finding that ends a walk at ``pos``, where a window of ``source`` failed."""
    size = source.size
    current = getattr(source, "current_size", None)
    try:
        now = current() if current is not None else None
    except OSError:
        now = None
    if now is not None and now < size:
        return LogShrank(f"the file shrank while it was read ({size} bytes when opened, {now} now: a follower "
                         f"truncating its active segment?); the {size - pos} bytes from here on are not read",
                         pos, size - pos)
    hint = (" (raise the memory limit, e.g. spark.executor.pyspark.memory)"
            if error.errno == errno.ENOMEM else "")
    what = f"bytes {pos}..{stop}" if stop is not None else f"the bytes from {pos}"
    return WindowUnmappable(f"cannot map {what} of the log: {error.strerror or error}; "
                            f"the {size - pos} bytes from here are not read{hint}", pos, size - pos)


def _accounted(item, done: int) -> int:
    """Where the bytes a walk's items account for end, once ``item`` is yielded."""
    if isinstance(item, (RecordBatch, LegacyBatch)):
        return item.position + item.size_in_bytes
    if isinstance(item, (SkippedRegion, TruncatedTail)):
        return item.position + item.length
    return done


def _bytes_at(source, pos: int, n: int) -> bytes:
    win = source.map(pos, pos + n)
    try:
        at = pos - win.base
        return win.buf[at:at + n].tobytes()
    finally:
        win.close()


_UNSEARCHED = object()


def _general_step(source, pos: int, window: int, verify_crc: bool, cut: bool):
    """walk_batches' general step (resync on) at ``pos`` of the log ``source`` holds, read
    through windows: yields what that step yields, each item with the window holding it (an
    entry's own window, or None), and returns where the walk goes on (None: nowhere). It
    reads an entry header, the entry (if it fits in the log), and the windows the search for
    the next entry reads."""
    size = source.size
    left = size - pos
    head = _bytes_at(source, pos, min(left, HEADER_SIZE_UP_TO_MAGIC))
    if left <= HEADER_SIZE_UP_TO_MAGIC:
        yield (ZeroFilledRegion(f"{left} zero bytes where entries should be", pos, left) if not any(head) else
               TruncatedTail(f"{left} bytes at the end are too few for an entry header", pos, left)), None
        return None
    _, length = _OFFSET_SIZE.unpack_from(head)
    magic = head[MAGIC_OFFSET]
    if length == 0 and not any(head):
        region, resume = _zero_region(source, pos, window)
        yield region, None
        return resume
    target = _UNSEARCHED
    if length < MIN_ENTRY_SIZE:
        cause = CorruptRecordError(f"Found record size {length} smaller than minimum record overhead "
                                   f"({MIN_ENTRY_SIZE})", pos + 8, expected=f">= {MIN_ENTRY_SIZE}", found=length)
    elif length > left - LOG_OVERHEAD:
        target = None if cut else find_entry(source, pos + 1, window=window)
        if target is None:
            yield TruncatedTail(f"entry of {length + LOG_OVERHEAD} bytes is truncated: only {left} bytes left",
                                pos, left, expected=length + LOG_OVERHEAD), None
            return None
        cause = CorruptRecordError(f"entry size {length} runs past the next readable entry", pos + 8,
                                   expected=f"<= {target - pos - LOG_OVERHEAD}", found=length)
    elif magic not in (0, 1, 2):
        cause = UnknownMagic(f"Unknown magic {magic} (expected 0, 1 or 2)", pos + MAGIC_OFFSET,
                             expected="0, 1 or 2", found=magic)
    else:
        win = source.map(pos, pos + LOG_OVERHEAD + length)
        try:
            at = pos - win.base
            decode = decode_batch_header if magic == 2 else decode_legacy_entry
            try:
                entry, _ = decode(win.buf, at, at + LOG_OVERHEAD + length, verify_crc=verify_crc)
            except DecodeError as e:
                cause, entry = _at(e, win.base), None
            else:
                yield _at(entry, win.base), win
        finally:
            win.close()
        if entry is not None:
            claimed = entry.size_in_bytes
            resume = (_entry_inside_windows(source, pos, pos + claimed, window)
                      if verify_crc and not entry.crc_valid else None)
            if resume is None:
                return pos + claimed
            yield OverlongEntry(f"entry at byte {pos} fails its CRC and claims {claimed} bytes, but a valid entry "
                                f"starts inside them at byte {resume}: its size field is damaged; resuming at "
                                f"byte {resume}", pos, claimed - LOG_OVERHEAD, resume), None
            return resume
    yield cause, None
    if target is _UNSEARCHED:
        target = find_entry(source, pos + 1, window=window)
    yield _windowed_region(source, pos, target, window), None
    return target


def _entry_inside_windows(source, pos: int, claimed_end: int, window: int) -> int | None:
    """_entry_inside for the CRC-failed entry at ``pos`` of a log read through windows."""
    offset = _OFFSET_SIZE.unpack_from(_bytes_at(source, pos, 8) + bytes(4))[0]
    at = pos + 1
    while True:
        found = find_entry(source, at, before=claimed_end, window=window)
        if found is None or _OFFSET_SIZE.unpack_from(_bytes_at(source, found, 8) + bytes(4))[0] > offset:
            return found
        at = found + 1


def _zero_region(source, pos: int, window: int) -> tuple[DecodeError, int | None]:
    """walk_batches' finding for the unreadable region at ``pos`` whose entry header is all
    zeros (a tail too short for a header, or the region up to the next entry), and where
    the walk resumes (None: nowhere), read through windows."""
    size = source.size
    if size - pos <= HEADER_SIZE_UP_TO_MAGIC:
        return ZeroFilledRegion(f"{size - pos} zero bytes where entries should be", pos, size - pos), None
    target = find_entry(source, pos + 1, window=window)
    return _windowed_region(source, pos, target, window), target


def _windowed_region(source, pos: int, target: int | None, window: int) -> SkippedRegion:
    """_region_finding for bytes [pos, target or the log's end) read through windows."""
    stop = source.size if target is None else target
    zero = True
    at = pos
    while zero and at < stop:
        win = source.map(at, min(stop, at + window))
        try:
            zero = _first_nonzero(win.buf, at - win.base, len(win.buf)) is None
            at = win.base + len(win.buf)
        finally:
            win.close()
    return _region(pos, stop, zero, target is not None)


def find_entry(source, pos: int, *, before: int | None = None, window: int | None = None) -> int | None:
    """find_next_entry(log, pos, size, before=before) over a log read through windows of
    ``source`` (see walk_windows), reading one window at a time."""
    window = _window_of(source, window)
    size, needed = source.size, 0
    # The next entry is most often close (a few bytes of garbage, a damaged batch): the first
    # window is small, and each next one twice as large, up to ``window``.
    span = min(window, RESYNC_FIRST_WINDOW)
    while pos + HEADER_SIZE_UP_TO_MAGIC <= size and (before is None or pos < before):
        win = source.map(pos, min(size, pos + max(span, needed)))
        span = min(window, 2 * span)
        try:
            end = len(win.buf)
            found = find_next_entry(win.buf, pos - win.base, end, more=win.base + end < size,
                                    before=None if before is None else before - win.base, log_end=size - win.base)
        finally:
            win.close()
        if type(found) is not WindowEnd:
            return None if found is None else found + win.base
        at = found.position + win.base
        if found.needed > span:
            # A candidate claiming more than a window: its checksum is computed through
            # windows, so deciding it holds a window, not the entry it claims to be.
            if _plausible_through_windows(source, at, window):
                return at
            pos, needed = at + 1, 0
            continue
        # No progress in a window this size: search the rest at once rather than loop.
        needed = size - at if at == pos and at + found.needed <= win.base + end else found.needed
        pos = at
    return None


def _plausible_through_windows(source, pos: int, window: int) -> bool:
    """_plausible_entry for the candidate at ``pos`` (its size already checked against
    RESYNC_MAX_ENTRY_SIZE and the log's end by find_next_entry), its checksum computed a
    window at a time."""
    head = _bytes_at(source, pos, min(source.size - pos, 26))
    if len(head) < 26:
        return False
    _, size = _OFFSET_SIZE.unpack_from(head)
    stop = pos + LOG_OVERHEAD + size
    if head[MAGIC_OFFSET] == 2:
        if size < MIN_V2_SIZE:
            return False
        checksum, start, stored = crc32c, pos + _V2_CRC_START, _CRC.unpack_from(head, 17)[0]
    else:
        key_at = pos + (18 if head[MAGIC_OFFSET] == 0 else 26)
        if key_at + 4 > stop:
            return False
        key = _INT32.unpack_from(_bytes_at(source, key_at, 4))[0]
        value_at = key_at + 4 + max(key, 0)
        if key < -1 or value_at + 4 > stop:
            return False
        value = _INT32.unpack_from(_bytes_at(source, value_at, 4))[0]
        if value < -1 or value_at + 4 + max(value, 0) != stop:
            return False
        checksum, start, stored = zlib.crc32, pos + MAGIC_OFFSET, _CRC.unpack_from(head, 12)[0]
    crc = 0
    while start < stop:
        win = source.map(start, min(stop, start + window))
        try:
            crc = checksum(win.buf[start - win.base:], crc)
            start = win.base + len(win.buf)
        finally:
            win.close()
    return crc == stored


class BufferWindows:
    """A log held in one buffer, handed out as windows (base aligned down to ``granularity``,
    as mmap offsets are): walk_windows over it is what a mapped file gives, which the tests
    use to put window edges anywhere."""

    def __init__(self, buf, granularity: int = 1):
        self._mv = buf if type(buf) is memoryview else memoryview(buf)
        self.size = len(self._mv)
        self.granularity = granularity

    def map(self, start: int, stop: int) -> "BufferWindow":
        base = start - start % self.granularity
        return BufferWindow(self._mv[base:stop], base)


class BufferWindow:
    """Bytes [base, base + len(buf)) of a log held in memory."""

    __slots__ = ("buf", "base")

    def __init__(self, buf: memoryview, base: int):
        self.buf, self.base = buf, base

    def close(self) -> None:
        self.buf.release()


def kafka_entries(buf, pos: int, end: int) -> Iterator[tuple[int, int]]:
    """(position, size in bytes) of each entry from ``pos`` by FileLogInputStream's rules
    alone: no header is decoded, the walk stops where Kafka stops and raises a
    CorruptRecordError where Kafka throws (a size below 14). kafka-dump-log's index checks
    read the log this way from an index entry's position."""
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        size = _SIZE.unpack_from(buf, pos + 8)[0]
        if size < MIN_ENTRY_SIZE:
            raise CorruptRecordError(f"Found record size {size} smaller than minimum record "
                                     f"overhead ({MIN_ENTRY_SIZE})", pos + 8,
                                     expected=f">= {MIN_ENTRY_SIZE}", found=size)
        if pos > end - LOG_OVERHEAD - size:
            return
        yield pos, LOG_OVERHEAD + size
        pos += LOG_OVERHEAD + size


def _window_step(mv: memoryview, pos: int, end: int, verify_crc: bool):
    """The general step of a window walk (``more=True``) at ``pos``: a whole, checksum-valid
    v0/v1 entry and where the walk goes on, or the WindowEnd to stop at. Everything else
    (an entry crossing the window's end, damage) is decided by a walk that can see on."""
    left = end - pos
    if left < BATCH_HEADER.size:
        return WindowEnd(pos, BATCH_HEADER.size)
    _, size = _OFFSET_SIZE.unpack_from(mv, pos)
    if size >= MIN_ENTRY_SIZE and size > left - LOG_OVERHEAD:
        return WindowEnd(pos, LOG_OVERHEAD + size)
    if size >= MIN_ENTRY_SIZE and mv[pos + MAGIC_OFFSET] in (0, 1):
        try:
            entry, next_pos = decode_legacy_entry(mv, pos, end, verify_crc=verify_crc)
        except DecodeError:
            return WindowEnd(pos, None)
        if entry.crc_valid:
            return entry, next_pos
    return WindowEnd(pos, None)


def _skip(mv: memoryview, pos: int, end: int, base: int = 0):
    """Yield one finding for the unreadable bytes from ``pos``; return where to go on."""
    target = find_next_entry(mv, pos + 1, end)
    stop = end if target is None else target
    yield _at(_region_finding(mv, pos, stop, resumes=target is not None, base=base), base)
    return stop


def _region_finding(mv: memoryview, pos: int, stop: int, *, resumes: bool = False,
                    base: int = 0) -> SkippedRegion:
    return _region(pos, stop, _first_nonzero(mv, pos, stop) is None, resumes, base)


def _region(pos: int, stop: int, zero: bool, resumes: bool, base: int = 0) -> SkippedRegion:
    """The finding for bytes [pos, stop) of a buffer that is byte ``base`` of the log on."""
    then = f", resuming at byte {stop + base}" if resumes else ""
    if zero:
        return ZeroFilledRegion(f"{stop - pos} zero bytes where entries should be{then}", pos, stop - pos)
    return SkippedRegion(f"skipped {stop - pos} unreadable bytes{then}", pos, stop - pos)


def _tail_finding(mv: memoryview, pos: int, end: int, message: str) -> DecodeError:
    if _first_nonzero(mv, pos, end) is None:
        return ZeroFilledRegion(f"{end - pos} zero bytes where entries should be", pos, end - pos)
    return TruncatedTail(message, pos, end - pos)


def _first_nonzero(mv: memoryview, pos: int, end: int) -> int | None:
    while pos < end:
        stop = min(end, pos + RESYNC_WINDOW)
        chunk = mv[pos:stop].tobytes()
        # A whole zero chunk is told by one memcmp (some GB/s; the regex alone does 150 MB/s).
        if chunk != (_ZEROS if len(chunk) == RESYNC_WINDOW else bytes(len(chunk))):
            return pos + _NONZERO.search(chunk).start()
        pos = stop
    return None


def _entry_inside(mv: memoryview, entry: Entry, end: int) -> int | None:
    """Where a whole, checksum-valid entry with a higher offset than the CRC-failed
    ``entry`` starts inside ``entry``'s claimed extent, if one does. The offset rule keeps a
    batch that merely sits in a record's bytes (a log segment produced as a value) from
    being taken: offsets only grow along a log."""
    offset = _OFFSET_SIZE.unpack_from(mv, entry.position)[0]
    claimed_end = entry.position + entry.size_in_bytes
    at = entry.position + 1
    while True:
        found = find_next_entry(mv, at, end, before=claimed_end)
        if found is None or _OFFSET_SIZE.unpack_from(mv, found)[0] > offset:
            return found
        at = found + 1


def find_next_entry(buf, pos: int, end: int, *, before: int | None = None,
                    more: bool = False, log_end: int | None = None) -> int | None | WindowEnd:
    """The first position >= ``pos`` (and < ``before``, if given) where a whole,
    checksum-valid entry ending by ``end`` starts (the resync search: it may also find a
    batch stored inside another one's payload).

    ``more=True`` says the log goes on past ``end`` (``buf`` is a window, positions are the
    window's): a WindowEnd is returned at the first place the search cannot decide without
    bytes past ``end`` (a candidate whose entry would cross it, or the window's last bytes),
    so searching on from there in a larger or later window finds what a search of the whole
    log finds. With ``before`` too, the search is decided (None) once every position below
    ``before`` has been looked at with a whole entry header's bytes after it. ``log_end``
    (with ``more``; in the window's positions): where the log ends, so that a candidate whose
    entry would run past it is passed over at once, never read to decide it."""
    mv = buf if type(buf) is memoryview else memoryview(buf)
    limit = end if before is None else min(end, before)
    # With more: from here on an entry header may be cut by the window's end.
    tail = end - BATCH_HEADER.size if more else end
    origin = pos
    while pos < limit and pos + HEADER_SIZE_UP_TO_MAGIC <= end:
        stop = min(limit, pos + RESYNC_WINDOW)
        window = mv[pos:min(end, stop + 21)].tobytes()  # lookahead so the pattern can match up to stop
        next_pos = stop
        at = 0
        while True:
            m = _CANDIDATE.search(window, at)
            if m is None or pos + m.start() >= stop:
                break
            candidate = pos + m.start()
            if candidate >= tail:
                return WindowEnd(candidate, BATCH_HEADER.size)
            if more:
                size = _SIZE.unpack_from(mv, candidate + 8)[0]
                if MIN_ENTRY_SIZE <= size <= RESYNC_MAX_ENTRY_SIZE and candidate + LOG_OVERHEAD + size > end:
                    if log_end is None or candidate + LOG_OVERHEAD + size <= log_end:
                        return WindowEnd(candidate, LOG_OVERHEAD + size)
                    at = m.start() + 1  # it would run past the log's end: not an entry, nothing to read
                    continue
            if _plausible_entry(mv, candidate, end):
                return candidate
            at = m.start() + 1
            if not any(window[m.start():m.start() + HEADER_SIZE_UP_TO_MAGIC]):
                # A zero run: an entry starts at most 11 bytes before its first non-zero
                # byte (the size field), so jump there instead of trying every position.
                # (an entry starting before ``limit`` has its size field below limit + 12)
                nonzero = _first_nonzero(mv, candidate, min(end, limit + 12))
                if nonzero is None:
                    return (WindowEnd(max(candidate, tail), BATCH_HEADER.size)
                            if more and limit + 12 > end else None)
                jump = max(candidate + 1, nonzero - 11)
                if jump >= stop:
                    next_pos = jump
                    break
                at = jump - pos
        pos = next_pos
    return WindowEnd(max(origin, tail), BATCH_HEADER.size) if more and limit > tail else None


def _plausible_entry(mv: memoryview, pos: int, end: int) -> bool:
    _, size = _OFFSET_SIZE.unpack_from(mv, pos)
    stop = pos + LOG_OVERHEAD + size
    if size < MIN_ENTRY_SIZE or size > RESYNC_MAX_ENTRY_SIZE or stop > end:
        return False
    if mv[pos + MAGIC_OFFSET] == 2:
        return (size >= MIN_V2_SIZE
                and crc32c(mv[pos + _V2_CRC_START:stop]) == _CRC.unpack_from(mv, pos + 17)[0])
    return (_legacy_lengths_fit(mv, pos, stop)
            and zlib.crc32(mv[pos + MAGIC_OFFSET:stop]) == _CRC.unpack_from(mv, pos + 12)[0])


def _legacy_lengths_fit(mv: memoryview, pos: int, stop: int) -> bool:
    """A v0/v1 message is its header, key and value and nothing else: the key and value
    lengths must add up to the entry's end. Checked before the CRC-32, which a random
    candidate would otherwise compute over up to RESYNC_MAX_ENTRY_SIZE bytes."""
    key_at = pos + (18 if mv[pos + MAGIC_OFFSET] == 0 else 26)  # CRC, magic, attributes[, timestamp]
    if key_at + 4 > stop:
        return False
    key = _INT32.unpack_from(mv, key_at)[0]
    value_at = key_at + 4 + max(key, 0)
    if key < -1 or value_at + 4 > stop:
        return False
    value = _INT32.unpack_from(mv, value_at)[0]
    return value >= -1 and value_at + 4 + max(value, 0) == stop
