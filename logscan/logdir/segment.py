"""The IO layer of `logscan dump`: open a file, map it, hand memoryviews to the decoders.

This is the only module of the dump path that touches the file system. Decoders under
``logscan.format`` see a buffer and a position; here we own the file handle, the mmap and the
translation of a decoder's ``DecodeError`` (a position in a buffer) into a ``Finding`` (a
path, a byte position in that file, a reason and a message an operator can act on).

Two mapping cases need care:

* an empty file cannot be mmapped (``ValueError: cannot mmap an empty file``); it is
  represented by an empty buffer;
* some paths cannot be mapped at all (FIFOs, ``/dev/stdin``, some FUSE or ``/proc`` files);
  they are read into memory instead, up to ``max_read_bytes`` (memory stays bounded: the
  rest is reported as not read).
"""

from __future__ import annotations

import mmap
import re
import struct
import os
from dataclasses import dataclass
from typing import Iterator

from logscan.format.errors import DecodeError

#: Largest non-mappable file we read into memory (a pipe has no size to check against).
DEFAULT_MAX_READ_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Finding:
    """Something wrong in a file, located: what an operator needs at 3 a.m.

    ``reason`` is a short machine-readable word (``truncated``, ``crc``, ``corrupt``,
    ``magic``, ``version``, ``compression``, ``bomb``, ``io``, ``unknown-file``,
    ``index-mismatch`` ...); ``position`` is a byte position in ``path`` (-1 when the
    finding is about the whole file).
    """

    path: str
    position: int
    reason: str
    message: str

    def line(self) -> str:
        where = f"byte {self.position}" if self.position >= 0 else "file"
        return f"logscan: {self.path}: {where}: {self.message}"

    @classmethod
    def from_error(cls, path: str, error: DecodeError, base: int = 0) -> "Finding":
        """Locate a decoder's error; ``base`` is added when the decoder saw a slice."""
        return cls(path, base + error.position, error.reason, error.message)


class SegmentFile:
    """An opened file as one read-only buffer (mmap when possible).

    Use as a context manager; ``buf`` is a memoryview over the whole file and is released
    on exit (a memoryview outliving its mmap would make ``mmap.close`` fail).
    """

    def __init__(self, path: str, *, max_read_bytes: int = DEFAULT_MAX_READ_BYTES):
        self.path = path
        self.max_read_bytes = max_read_bytes
        self._mmap: mmap.mmap | None = None
        self._view: memoryview | None = None
        self.unread_bytes = 0

    def __enter__(self) -> "SegmentFile":
        with open(self.path, "rb") as fh:
            try:
                size = os.fstat(fh.fileno()).st_size
                if size > 0:
                    self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    data = self._mmap
                else:
                    data = self._read_unmappable(fh)
            except (ValueError, OSError):
                # Not mappable (pipe, character device, special file system).
                if fh.seekable():
                    fh.seek(0)
                data = self._read_unmappable(fh)
        self._view = memoryview(data)
        return self

    def _read_unmappable(self, fh) -> bytes:
        data = fh.read(self.max_read_bytes)
        if fh.read(1):
            self.unread_bytes = 1  # at least one byte more; the caller reports the cut
        return data

    @property
    def buf(self) -> memoryview:
        assert self._view is not None, "SegmentFile used outside its with-block"
        return self._view

    @property
    def size(self) -> int:
        return len(self.buf)

    def __exit__(self, *exc) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None


def open_segment(path: str, **kw) -> SegmentFile:
    """``with open_segment(path) as seg: seg.buf`` — the file as a read-only memoryview."""
    return SegmentFile(path, **kw)


def io_finding(path: str, error: OSError) -> Finding:
    """An OSError (missing, unreadable, a directory) as a finding naming the file."""
    reason = error.strerror or type(error).__name__
    return Finding(path, -1, "io", f"cannot read file: {reason}")


# --- Walking a .log file the way kafka-dump-log does ---------------------------------------
#
# FileLogInputStream.nextBatch (Kafka 4.1) decides where a log ends:
#   * fewer than HEADER_SIZE_UP_TO_MAGIC (17) bytes left: stop;
#   * a size field below RECORD_OVERHEAD_V0 (14): CorruptRecordException, the tool dies;
#   * a batch running past the end: stop.
# kafka-dump-log then prints "Found N invalid bytes at the end of F" for what was not read.
# logscan follows the same rules for what it prints, and where Kafka would die it reports a
# finding and looks for the next batch instead (see ``next_batch_candidate``).

HEADER_SIZE_UP_TO_MAGIC = 17
LOG_OVERHEAD = 12
RECORD_OVERHEAD_V0 = 14
_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Tail:
    """Bytes at the end of a log that hold no complete batch (``count`` may be 0)."""

    position: int
    count: int
    reason: str  # "", "short" (< 17 bytes), "truncated", "zero-filled", "unreadable"


def walk_log(buf, end: int, path: str, *, decode_batch, resync_truncated: bool = True) -> Iterator:
    """Batches, Findings and finally one Tail, for ``buf[0:end]``.

    ``decode_batch(buf, pos, end)`` returns the batch at ``pos`` (v2 or legacy) or raises
    DecodeError; it is given by the caller so this module stays ignorant of magic numbers.
    ``resync_truncated=False`` (a ``--max-bytes`` cut) treats a batch crossing ``end`` as the
    end, without looking for a damaged length.
    """
    pos = 0
    while True:
        if pos >= end - HEADER_SIZE_UP_TO_MAGIC:
            yield Tail(pos, max(end - pos, 0), "short" if end > pos else "")
            return
        size = _SIZE.unpack_from(buf, pos + 8)[0]
        if size < RECORD_OVERHEAD_V0:
            if _all_zero(buf, pos, end):
                yield Tail(pos, end - pos, "zero-filled")
                return
            error = Finding(path, pos + 8, "corrupt",
                            f"Found record size {size} smaller than minimum record overhead "
                            f"({RECORD_OVERHEAD_V0})")
        elif pos > end - LOG_OVERHEAD - size:
            if _all_zero(buf, pos, end):
                yield Tail(pos, end - pos, "zero-filled")
                return
            # Kafka stops here. A valid batch further on means the length is damaged, not
            # the tail cut: say so and go on from there.
            resume = (next_batch_candidate(buf, pos + 1, end, decode_batch)
                      if resync_truncated else None)
            if resume is None:
                yield Tail(pos, end - pos, "truncated")
                return
            yield Finding(path, pos + 8, "corrupt",
                          f"batch size {size} runs past the end of the file "
                          f"({end - pos - LOG_OVERHEAD} bytes left) but a valid batch follows")
            yield Finding(path, pos, "skipped",
                          f"skipped {resume - pos} unreadable bytes, resuming at byte {resume}")
            pos = resume
            continue
        else:
            try:
                batch = decode_batch(buf, pos, end)
            except DecodeError as e:
                error = Finding.from_error(path, e)
            else:
                yield batch
                pos += LOG_OVERHEAD + size
                continue
        yield error
        resume = next_batch_candidate(buf, pos + 1, end, decode_batch)
        if resume is None:
            yield Tail(pos, end - pos, "unreadable")
            return
        yield Finding(path, pos, "skipped",
                      f"skipped {resume - pos} unreadable bytes, resuming at byte {resume}")
        pos = resume


def _all_zero(buf, pos: int, end: int, chunk: int = 1 << 20) -> bool:
    """True when buf[pos:end] is all zero bytes (a preallocated, never written tail)."""
    mv = memoryview(buf)
    while pos < end:
        stop = min(end, pos + chunk)
        piece = mv[pos:stop]
        if piece.nbytes and bytes(piece).count(0) != piece.nbytes:
            return False
        pos = stop
    return True


def next_batch_candidate(buf, start: int, end: int, decode_batch) -> int | None:
    """The first position >= ``start`` holding a batch that decodes with a valid CRC.

    Candidates are found by their magic byte at ``pos + 16`` with a plausible size, then
    confirmed by decoding (which checks the CRC). Magic 2 is searched first over the whole
    rest of the file, legacy magics (0, 1: common bytes in garbage) only when no v2 batch
    follows. ``bytes.find`` keeps the scan in C over large damaged regions.
    """
    for magic in (b"\x02", b"\x01", b"\x00"):
        found = _find_candidate(buf, start, end, decode_batch, magic)
        if found is not None:
            return found
    return None


#: A batch start: offset, a positive non-zero size, leader epoch, then the magic byte. The
#: regex engine tests every position in C, which keeps zero runs and garbage cheap to cross.
_CANDIDATE = {m: re.compile(rb"(?=.{8}(?!\x00\x00\x00\x00)[\x00-\x7f].{7}" + re.escape(m) + rb")",
                            re.DOTALL)
              for m in (b"\x00", b"\x01", b"\x02")}
_WINDOW = 1 << 20


def _find_candidate(buf, start: int, end: int, decode_batch, magic: bytes) -> int | None:
    mv = memoryview(buf)
    pattern = _CANDIDATE[magic]
    pos = start
    while pos <= end - HEADER_SIZE_UP_TO_MAGIC:
        window_end = min(end, pos + _WINDOW + HEADER_SIZE_UP_TO_MAGIC)
        window = bytes(mv[pos:window_end])
        for m in pattern.finditer(window):
            cand = pos + m.start()
            size = _SIZE.unpack_from(buf, cand + 8)[0]
            if size >= RECORD_OVERHEAD_V0 and cand + LOG_OVERHEAD + size <= end and \
                    _plausible(buf, cand, end, decode_batch):
                return cand
        pos = window_end - HEADER_SIZE_UP_TO_MAGIC + 1
    return None


def _plausible(buf, pos: int, end: int, decode_batch) -> bool:
    try:
        batch = decode_batch(buf, pos, end)
    except DecodeError:
        return False
    return bool(getattr(batch, "is_valid", False))
