"""The IO layer of the dump and the scan: open a file, map it, hand memoryviews to the decoders.

This is where segment files are opened and mapped. Decoders under
``logscan.format`` see a buffer and a position; here we own the file handle, the mmap and the
translation of a decoder's ``DecodeError`` (a position in a buffer) into a ``Finding`` (a
path, a byte position in that file, a reason and a message an operator can act on). Walking
a ``.log`` buffer is ``logscan.format.logfile.walk_batches``, the one walker the scan and the
dump share.

Two mapping cases need care:

* an empty file cannot be mmapped (``ValueError: cannot mmap an empty file``); it is
  represented by an empty buffer;
* some paths cannot be mapped at all (FIFOs, ``/dev/stdin``, some FUSE or ``/proc`` files);
  they are read into memory instead, up to ``max_read_bytes`` (memory stays bounded: the
  rest is reported as not read). Only ``logscan dump`` reads them, for a path a person named.

The scan reads what it found in a copy, which may be hostile: there every open
(``open_regular``: LogWindows, ``read_small_file``, ``open_segment(regular_only=True)``) takes
a regular file only, never through a symbolic link (``O_NOFOLLOW``), never waiting on a FIFO
(``O_NONBLOCK``), and never opens a device (``lstat`` first: opening some devices acts).
Anything else there is a ``NotRegularFile``, which says what it found.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import stat
import threading
from dataclasses import dataclass

from logscan.format.errors import DecodeError
from logscan.format.logfile import WINDOW_BYTES, BufferWindow
from logscan.format.primitives import java_long
from logscan.text import printable

from . import store
from .store import RemoteWindows, is_uri, spool_object

#: Largest non-mappable file we read into memory (a pipe has no size to check against).
DEFAULT_MAX_READ_BYTES = 256 * 1024 * 1024
#: LogWindows reads a window this small into memory rather than mapping it: for a small
#: segment one read costs less than a mapping and its page faults (~15% of the walk of 3,000
#: segments of 360 KB, `make bench`'s copy, 2026-11-24), and the memory it holds is small.
READ_WINDOW_BYTES = 1 << 20
#: LogWindows(copy=True) reads windows up to this size (its own, 4 MiB, and any entry up to
#: twice that) and maps larger ones (an entry or a resync candidate that large): memory stays
#: a few MiB whatever the file's size.
COPY_WINDOW_BYTES = 8 << 20
#: The bytes LogWindows(copy=True) reads at a time (walk_windows' default for it): a read call
#: per window; a batch crossing a window's end is read again at the start of the next. Reading
#: costs about what mapping does (a 1 GB segment of the bench: 0.2 CPU-s either way).
LOG_WINDOW_BYTES = 4 << 20
#: LogWindows' windows start on a cache line of their buffer (_window_buffer).
CACHE_LINE = 64


@dataclass(frozen=True, slots=True)
class Finding:
    """Something wrong in a file, located: what an operator needs at 3 a.m.

    ``reason`` is a short machine-readable word (``truncated``, ``crc``, ``corrupt``,
    ``magic``, ``version``, ``compression``, ``bomb``, ``io``, ``unknown-file``,
    ``index-mismatch``, ``link`` (a symbolic link not followed), ``not-regular`` (a FIFO,
    socket or device where a file was expected) ...); ``position`` is a byte position in
    ``path`` (-1 when the finding is about the whole file).
    """

    path: str
    position: int
    reason: str
    message: str
    length: int | None = None  # bytes of the bad region, when known

    def line(self) -> str:
        where = f"byte {self.position}" if self.position >= 0 else "file"
        return f"logscan: {printable(self.path)}: {where}: {printable(self.message)}"

    @classmethod
    def from_error(cls, path: str, error: DecodeError, base: int = 0) -> "Finding":
        """Locate a decoder's error; ``base`` is added when the decoder saw a slice."""
        return cls(path, base + error.position, error.reason, error.message,
                   getattr(error, "length", None))


#: Kafka's largest offset (Long.MAX_VALUE).
INT64_MAX = 2**63 - 1


def offset_overflow_finding(path: str, batch) -> Finding:
    """A v2 batch whose last offset (base offset + lastOffsetDelta) passes Long.MAX_VALUE:
    no broker writes one (offsets are signed 64-bit), and Java's sum wraps negative."""
    last = batch.base_offset + batch.last_offset_delta
    return Finding(path, batch.position, "offset-overflow",
                   f"batch at base offset {batch.base_offset} with lastOffsetDelta {batch.last_offset_delta}: "
                   f"its last offset {last} passes 2^63-1, the largest offset Kafka has (Java's sum wraps to "
                   f"{java_long(last)})", batch.size_in_bytes)


LINK = "link"
NOT_REGULAR = "not-regular"

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISLNK, "a symbolic link"), (stat.S_ISREG, "a regular file"))


def describe_mode(mode: int) -> str:
    """What an (l)stat's ``st_mode`` says a path is, for a sentence: "a FIFO (named pipe)"."""
    return next((what for test, what in _KINDS if test(mode)), f"a special file (mode {stat.S_IFMT(mode):o})")


def refusal_reason(mode: int) -> str:
    """A finding's reason for a path of this mode where a regular file is read: ``link``,
    ``io`` for a folder (what opening one as a file has always given, in the dump too),
    ``not-regular`` for a FIFO, socket or device (opening one may wait or act)."""
    return LINK if stat.S_ISLNK(mode) else "io" if stat.S_ISDIR(mode) else NOT_REGULAR


class NotRegularFile(OSError):
    """Something other than a regular file where the scan reads one; it was not opened (or,
    swapped in after the check, not read). ``reason`` is refusal_reason's; ``str()`` is the
    sentence of its finding."""

    def __init__(self, path: str | os.PathLike, mode: int):
        self.path, self.mode = os.fspath(path), mode
        self.reason = refusal_reason(mode)
        super().__init__(f"not read: {describe_mode(mode)}, not a regular file")


TOO_LARGE = "too-large"

#: The most the scan reads of each kind of file it reads whole, by logscan.logdir.naming's kind
#: value (issue 33: a hostile copy's multi-GB file named like one must not take the scan's
#: memory). Past its cap a file is a ``too-large`` finding at the first byte not read, and the
#: scan goes on without it. Each cap is far above what a broker writes:
#: - a producer snapshot (``N.snapshot``): 10 bytes and 46 per producer (format.snapshot), so
#:   64 MiB holds 1,458,888 producers of one partition. Kafka reads the newest one whole
#:   (ProducerStateManager.readSnapshot: Files.readAllBytes, at most 2^31-9 bytes, Java's
#:   largest array; past that OutOfMemoryError) and keeps every producer in memory; a
#:   partition's producers expire after producer.id.expiration.ms (a day by default).
#: - a log dir's offset checkpoints (replication-offset, log-start-offset, recovery-point):
#:   a line per partition of the dir, at most 282 bytes (a 249-character topic, a partition
#:   number, an offset), so 64 MiB holds 237,000 partitions of the longest names and over a
#:   million of common ones. Kafka reads them line by line with no bound.
#: - leader-epoch-checkpoint: a line per leader epoch still in the log, at most 31 bytes:
#:   4 MiB holds 135,000 epochs.
#: - meta.properties: a handful of ``key=value`` lines.
SMALL_FILE_CAPS = {
    "snapshot": 64 << 20,
    "offset-checkpoint": 64 << 20,
    "leader-epoch-checkpoint": 4 << 20,
    "meta.properties": 1 << 20,
}


class FileTooLarge(OSError):
    """A file longer than the scan reads of its kind (SMALL_FILE_CAPS); at most its cap was
    read. ``size`` is its size when known (None: it grew past the cap while read)."""

    def __init__(self, path: str | os.PathLike, size: int | None, max_bytes: int):
        self.path, self.size, self.max_bytes = os.fspath(path), size, max_bytes
        what = f"{size:,} bytes" if size is not None else "it grew while read"
        super().__init__(f"not read: {what}, past the {max_bytes:,} bytes logscan reads of such a file "
                         "(far more than a broker writes: a damaged or foreign file)")


#: For a thing swapped in between the lstat and the open: O_NOFOLLOW makes the open of a
#: symbolic link fail (ELOOP), O_NONBLOCK the open of a FIFO return at once (fstat refuses it).
_REGULAR_OPEN = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW


def open_regular(path: str | os.PathLike, *, follow_links: bool = False) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its fstat, or
    NotRegularFile (a link, FIFO, socket, device or folder there: not followed, not opened);
    a missing or unreadable file raises the OSError open gives. ``follow_links``: a link
    is followed to what it names (the dump's path a person named), which must be a regular
    file all the same."""
    mode = (os.stat if follow_links else os.lstat)(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, mode)
    fd = os.open(path, _REGULAR_OPEN & ~os.O_NOFOLLOW if follow_links else _REGULAR_OPEN)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


class SegmentFile:
    """An opened file as one read-only buffer (mmap when possible).

    Use as a context manager; ``buf`` is a memoryview over the whole file and is released
    on exit (a memoryview outliving its mmap would make ``mmap.close`` fail). With
    ``regular_only`` (the scan's files) it opens as ``open_regular`` does; without (the dump
    of a path a person named) a FIFO or a device is read too.
    """

    def __init__(self, path: str, *, max_read_bytes: int = DEFAULT_MAX_READ_BYTES, regular_only: bool = False):
        self.path = path
        self.max_read_bytes = max_read_bytes
        self.regular_only = regular_only
        self._mmap: mmap.mmap | None = None
        self._view: memoryview | None = None
        self.unread_bytes = 0

    def __enter__(self) -> "SegmentFile":
        if is_uri(self.path):  # a stored file: spooled to a mapped temporary file (store.py)
            self._mmap, size = spool_object(self.path)
            self._view = memoryview(self._mmap if self._mmap is not None else b"")
            return self
        fh = os.fdopen(open_regular(self.path)[0], "rb") if self.regular_only else open(self.path, "rb")
        with fh:
            st = os.fstat(fh.fileno())
            try:
                if st.st_size > 0:
                    self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    data = self._mmap
                else:
                    data = self._read_unmappable(fh)
            except (ValueError, OSError) as e:
                if isinstance(e, OSError) and e.errno == errno.ENOMEM and stat.S_ISREG(st.st_mode):
                    # A regular file larger than this process's address space allows (an
                    # RLIMIT_AS such as spark.executor.pyspark.memory sets): reading a prefix
                    # would report a cut that is not in the file.
                    raise OSError(errno.ENOMEM, f"cannot map its {st.st_size} bytes: out of address "
                                  "space (raise the memory limit, e.g. spark.executor.pyspark.memory)") from e
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


class FileShrank(OSError):
    """A window of a file reaches past the file's end: it is shorter than when it was opened
    (a follower truncating its active segment, a copy being rewritten). An OSError like
    any failed read; ``position`` is the first byte not read, ``size`` the size at open."""

    def __init__(self, message: str, position: int, size: int):
        super().__init__(errno.EIO, message)
        self.position, self.size = position, size


def _read_into(fd: int, view: memoryview, start: int, size: int) -> None:
    """Fill ``view`` with the file's bytes from ``start`` (a regular file's read is short only
    at its end, or past about 2 GiB in one call: read on); FileShrank when the file ends first."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], start + got)
        if n == 0:
            break
        got += n
    if got < len(view):  # as a mapping past the end fails: the file shrank under the copy
        raise FileShrank(f"read {got} of {len(view)} bytes at {start}: the file is shorter", start, size)


#: The buffer LogWindows read their windows into (_window_buffer): a thread's own, shared by
#: its readers, as large as the largest window read (up to COPY_WINDOW_BYTES).
_WINDOWS = threading.local()


def _window_buffer(size: int) -> memoryview:
    """``size`` bytes to read a window into, starting on a cache line: of the buffer this
    thread's readers share, when no view of it is alive (a walk closes each window before it
    reads the next, and keeps nothing of its bytes), else of a new one (kept from then on
    unless it is smaller). A window read into fresh memory would cost its zero-fill and page
    faults (a 4 MiB window: about a fifth of the read of a 32 MiB segment of 16 KiB batches),
    and one still held is never overwritten. The kernel copies from the page cache to bytes
    16 bytes past a cache line (where malloc puts a large bytearray's) at half the speed
    (7.8 against 16.7 GB/s here, 2026-12-07)."""
    held = getattr(_WINDOWS, "buf", None)
    if held is not None and len(held) >= size + CACHE_LINE and _unexported(held):
        buf, at = held, _WINDOWS.at
    else:
        buf = bytearray(size + CACHE_LINE)
        at = -_address(buf) % CACHE_LINE
        if held is None or len(buf) >= len(held):
            _WINDOWS.buf, _WINDOWS.at = buf, at
    return memoryview(buf)[at:at + size]


def _unexported(buf: bytearray) -> bool:
    """Whether no view of ``buf`` is alive (no memoryview of it, nor any slice of one): a
    bytearray with a view cannot be resized, so a resize by one byte and back tells (a
    shrink, then a growth into the room it left: the bytes never move)."""
    try:
        buf.append(buf.pop())
    except BufferError:
        return False
    return True


def _address(buf: bytearray) -> int:
    """Where ``buf``'s bytes are in memory (for as long as it is not resized)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


class _MappedWindow:
    """Bytes [base, base + len(buf)) of a file, mapped; ``close`` unmaps them."""

    __slots__ = ("buf", "base", "_mmap")

    def __init__(self, mm: mmap.mmap, base: int):
        self._mmap, self.base, self.buf = mm, base, memoryview(mm)

    def close(self) -> None:
        self.buf.release()
        self._mmap.close()


class LogWindows:
    """A `.log` file read a window at a time, the source ``walk_windows`` and ``find_entry``
    (logscan.format.logfile) read: a segment larger than the process's address space (an
    RLIMIT_AS such as spark.executor.pyspark.memory sets) is read whole all the same. It is
    the scan's reader and the dump's: a regular file only (open_regular; anything else is
    NotRegularFile).

    ``copy=True`` (the default) reads its windows (``window_bytes``, 4 MiB) into memory (the
    buffer its thread's readers share, _window_buffer) rather than map them: a page of a mapping that the file no longer covers kills the
    process with SIGBUS when touched, while a read of it is short, and a short read is
    FileShrank (an OSError), which the walk reports where it happened (LogShrank). Only a
    window larger than COPY_WINDOW_BYTES is mapped (one entry that large, or a resync
    candidate up to RESYNC_MAX_ENTRY_SIZE), as reading it would cost memory in proportion to
    it; a file already shorter is FileShrank all the same, but one that shrinks while such a
    window is walked still faults. ``copy=False`` maps every window past READ_WINDOW_BYTES
    (64 MiB windows by default). ``follow_links=True`` follows a symbolic link (a path a
    person named).

    Use as a context manager: ``size``, then ``map(start, stop)`` for each window. A URI
    is read with ranged reads instead (logscan.logdir.store.RemoteWindows, the same API).
    """

    unread_bytes = 0  # as HeldWindows': a regular file is read to its end

    def __new__(cls, path, **kw):
        if cls is LogWindows and is_uri(path):
            return RemoteWindows(path)
        return super().__new__(cls)

    def __init__(self, path: str, *, copy: bool = True, follow_links: bool = False):
        self.path = path
        self.copy = copy
        self.follow_links = follow_links
        self.window_bytes = LOG_WINDOW_BYTES if copy else WINDOW_BYTES
        self._fd: int | None = None
        self.size = 0

    def __enter__(self) -> "LogWindows":
        if self._fd is not None:
            return self  # entered already (dump_windows hands it out entered)
        # A bare descriptor: open() would add a buffer the windows never use, and a TTY check
        # and a seek per file (a scan opens one per segment).
        self._fd, st = open_regular(self.path, follow_links=self.follow_links)
        self.size = st.st_size
        return self

    def map(self, start: int, stop: int):
        if stop - start <= (COPY_WINDOW_BYTES if self.copy else READ_WINDOW_BYTES):
            view = _window_buffer(stop - start)
            try:
                _read_into(self._fd, view, start, self.size)
            except FileShrank as e:
                view.release()
                e.filename = self.path  # which file, for a reader of several (an index and its log)
                raise
            return BufferWindow(view, start)
        if self.current_size() < stop:  # already shorter: say so, never map past it
            e = FileShrank(f"bytes {start}..{stop} asked of a file now {self.current_size()} bytes long", start,
                           self.size)
            e.filename = self.path
            raise e
        base = start - start % mmap.ALLOCATIONGRANULARITY
        try:
            mm = mmap.mmap(self._fd, stop - base, access=mmap.ACCESS_READ, offset=base)
        except ValueError as e:  # e.g. the file shrank under the copy
            raise OSError(errno.EIO, str(e)) from e
        return _MappedWindow(mm, base)

    def current_size(self) -> int:
        """The file's size now (it may have changed since it was opened)."""
        return os.fstat(self._fd).st_size

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class HeldWindows:
    """A file read whole into memory (or a stored one spooled: SegmentFile), handed out as
    windows (``size``, ``map``): what the dump reads a FIFO, a device or a URI through."""

    def __init__(self, seg: SegmentFile):
        self._seg = seg
        self.path = seg.path
        self.size = seg.size
        self.unread_bytes = seg.unread_bytes

    def map(self, start: int, stop: int) -> BufferWindow:
        return BufferWindow(self._seg.buf[start:stop], start)

    def current_size(self) -> int:
        return self.size

    def __enter__(self) -> "HeldWindows":
        return self

    def __exit__(self, *exc) -> None:
        self._seg.__exit__(*exc)


def dump_windows(path: str) -> "LogWindows | HeldWindows":
    """The windows `logscan dump` reads a `.log` through, entered (use in a with-block): a
    regular file (a link followed) is read a window at a time, never mapped
    (``LogWindows``: a file that shrinks under the dump is a LogShrank finding, never a
    SIGBUS); a FIFO, a device or a URI is read whole, as SegmentFile reads it (up to its
    ``max_read_bytes``; ``unread_bytes`` says there was more)."""
    if not is_uri(path):
        log = LogWindows(path, follow_links=True)
        try:
            return log.__enter__()
        except NotRegularFile:
            pass  # not a regular file: read whole below, as the dump always read one
    return HeldWindows(SegmentFile(path).__enter__())


def read_small_file(path: str | os.PathLike, max_bytes: int) -> bytes | None:
    """The whole of a regular file such as a checkpoint or a producer snapshot, or None when
    nothing is there: in five system calls (lstat, open, fstat, read, close), where
    ``Path.is_file()`` then ``read_bytes()`` take ten. A scan reads one per replica. A link,
    FIFO, device or folder of that name is NotRegularFile (open_regular); a file longer than
    ``max_bytes`` (its kind's cap: SMALL_FILE_CAPS) is FileTooLarge, read no further than the
    cap; other OSErrors propagate. A URI is read from its store (logscan.logdir.store)."""
    if is_uri(path):
        return store.read_small_file(path, max_bytes)
    try:
        fd, st = open_regular(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if st.st_size > max_bytes:
            raise FileTooLarge(path, st.st_size, max_bytes)
        data = os.read(fd, st.st_size + 1)
        if len(data) <= st.st_size:  # a regular file's read is short only at its end
            return data
        chunks, held = [data], len(data)  # it grew since fstat: read on to its end or the cap
        while held <= max_bytes and (chunk := os.read(fd, min(1 << 16, max_bytes + 1 - held))):
            chunks.append(chunk)
            held += len(chunk)
        if held > max_bytes:
            raise FileTooLarge(path, None, max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_segment(path: str, **kw) -> SegmentFile:
    """``with open_segment(path) as seg: seg.buf`` — the file as a read-only memoryview
    (``regular_only=True``: only a regular file, as the scan reads)."""
    return SegmentFile(path, **kw)


def io_finding(path: str, error: OSError) -> Finding:
    """An OSError (missing, unreadable, a directory, NotRegularFile, FileTooLarge) as a
    finding naming the file (FileTooLarge's at the first byte not read)."""
    if isinstance(error, FileTooLarge):
        return Finding(path, error.max_bytes, TOO_LARGE, str(error))
    if isinstance(error, NotRegularFile):
        return Finding(path, -1, error.reason, str(error))
    reason = error.strerror or type(error).__name__
    return Finding(path, -1, "io", f"cannot read file: {reason}")
