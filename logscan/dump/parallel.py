"""A second process for the batch lines of one large ``.log`` (`logscan dump FILE`, batch level).

Each batch line costs Python a few microseconds (header, CRC32C call, formatting), and the
CRC reads every byte; kafka-dump-log's JVM spreads its work over several threads. Python
threads cannot share this work (a CRC32C call over a 16 KiB batch is too short to give up
the GIL for), so for a large segment dumped batch by batch a forked child prints the lines
of the second half into a temporary file while this process prints the first half, then
copies the child's lines in.

The child only does the dull part. It starts at the first entry at or past the middle (found
by the walk's resync search) and stops before the first item that is not a v2 batch with a
valid CRC (a finding, a CRC mismatch, a legacy entry, the tail), and says where: this
process goes on from there by itself. So every finding, the exit status and the "Found N
invalid bytes" line come from the one sequential walk, and the output is the one-process
output byte for byte. When this process's own walk does not meet the child's start (damage
before the middle, a batch stored in a payload), the child's work is dropped. The walk keeps
no state but its position (``walk_windows(source, pos)``), which is what makes resuming
at the child's end exact.
"""

from __future__ import annotations

import io
import os
import signal
import struct
import tempfile

from logscan.format.batch import RecordBatch
from logscan.format.logfile import find_entry, walk_windows

#: The child prints at most the batches in this many bytes (half of Kafka's largest segment):
#: its temporary file holds a line of about 300 bytes per batch.
CHILD_MAX_BYTES = 1 << 30
_RESULT = struct.Struct(">qq")  # (child's first entry, where the walk goes on)
_COPY_CHUNK = 1 << 20


class SecondHalf:
    """A forked child printing batch lines from the first entry at or past ``middle``."""

    def __init__(self, pid: int, result_fd: int, lines):
        self._pid = pid
        self._result_fd = result_fd
        self._lines = lines  # the temporary file, shared with the child

    @classmethod
    def start(cls, source, middle: int, window: int, new_sink) -> "SecondHalf | None":
        """Fork the child (None where the OS has no fork), reading windows of ``window``
        bytes of ``source`` (the parent's: a regular file's reads are independent of the
        descriptor's position). ``new_sink(stream)`` makes the text sink the child prints
        through."""
        if not hasattr(os, "fork"):
            return None
        try:
            lines = tempfile.TemporaryFile()
        except OSError:
            return None  # no writable temporary directory: one process does it all
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (read_fd, write_fd):
                os.close(fd)
            lines.close()
            return None
        if pid == 0:  # the child: print, report, and leave without running any cleanup
            code = 1
            try:
                os.close(read_fd)
                result = _print_second_half(source, middle, window, new_sink, lines)
                os.write(write_fd, _RESULT.pack(*result))
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd, lines)

    def take(self, position: int, out) -> int | None:
        """Where the walk goes on when the child started at ``position``, after its lines
        were written to ``out``; None (and the child's work dropped) otherwise."""
        try:
            result = _read_all(self._result_fd, _RESULT.size)
            self._end_child()
            if len(result) != _RESULT.size:
                return None  # the child failed: this process reads on by itself
            start, resume = _RESULT.unpack(result)
            if start != position:
                return None
            self._lines.seek(0)
            raw = getattr(out, "buffer", None)  # a text stream over bytes: copy them as they are
            if raw is not None:
                out.flush()
            while chunk := self._lines.read(_COPY_CHUNK):
                if raw is not None:
                    raw.write(chunk)
                else:
                    out.write(chunk.decode("utf-8"))
            return resume
        finally:
            self.close()

    def close(self) -> None:
        """End the child if it still runs and release its pipe and file (idempotent)."""
        self._end_child()
        if not self._lines.closed:
            self._lines.close()

    def _end_child(self) -> None:
        if self._pid:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self._pid, 0)
            self._pid = 0
            os.close(self._result_fd)


def _print_second_half(source, middle: int, window: int, new_sink, lines) -> tuple[int, int]:
    end = source.size
    start = resume = _first_entry_at_or_past(source, middle, window)
    stop = min(end, start + CHILD_MAX_BYTES)
    out = io.TextIOWrapper(lines, encoding="utf-8", newline="\n")
    print_batch = new_sink(out).batch
    walk = walk_windows(source, start, window=window)
    for batch, _ in walk:
        if batch.__class__ is not RecordBatch or not batch.crc_valid or batch.position >= stop:
            break
        print_batch(batch)
        resume = batch.position + 12 + batch.batch_length
    walk.close()
    out.flush()
    out.detach()
    return start, resume


def _first_entry_at_or_past(source, middle: int, window: int) -> int:
    """The first checksum-valid entry at or past ``middle``, found by the resync search (a
    walk from byte 0 would read the whole first half into this process too); the end when
    there is none. A batch inside another one's payload may be taken for it: then the
    parent does not meet it and drops the child's work."""
    found = find_entry(source, middle, window=window) if middle < source.size else None
    return source.size if found is None else found


def _read_all(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data
