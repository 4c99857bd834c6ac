"""Progress bars on stderr for long dumps and scans: bytes, files, rate and time left.

Drawn only for a person: when stderr is a terminal and ``--no-progress`` was not given (and,
for a command whose stdout is its output, when stdout is not that terminal too: the lines
themselves show progress there). Otherwise every function here is a no-op and nothing is
imported, so piped and scripted output stays byte for byte what it was, and ``logscan dump``
starts as fast as before (rich is imported only when a bar is drawn).

    with progress.files_bar("dump", paths, enabled=progress.wanted(no_progress)) as bar:
        for path in paths:
            dump(path)
            bar.advance(progress.file_size(path))
"""

from __future__ import annotations

import io
import os
import sys
from typing import Callable, Iterable, Optional, TextIO, TypeVar

T = TypeVar("T")


def wanted(no_progress: bool, *, output_on_stdout: bool = False,
           stderr: Optional[TextIO] = None, stdout: Optional[TextIO] = None) -> bool:
    """Whether to draw a bar: a person is watching stderr, and it would not tear the output."""
    if no_progress or os.environ.get("TERM") == "dumb":
        return False
    err = stderr if stderr is not None else sys.stderr
    if not _isatty(err):
        return False
    return not (output_on_stdout and _isatty(stdout if stdout is not None else sys.stdout))


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def file_size(path) -> int:
    """Size for the bar; 0 for what cannot be stat'ed (the command reports that itself). A
    URI's (a store's file, logscan.logdir.store) from its listing or one stat request."""
    try:
        if "://" in str(path):
            from logscan.logdir.tree import file_size as stored_size

            return stored_size(path)
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0


class _Quiet:
    """The bar when none is drawn."""

    @property
    def err(self) -> TextIO:
        return sys.stderr

    def __enter__(self) -> "_Quiet":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def advance(self, nbytes: int, files: int = 1) -> None:
        return None


class _AboveTheBar(io.TextIOBase):
    """A text stream for messages while the bar is drawn: each whole line is printed above
    the bar, as written (no markup, no hard wrapping: a long path stays one line to copy)."""

    def __init__(self, console) -> None:
        self._console = console
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            self._console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        return len(text)

    def close_pending(self) -> None:
        if self._pending:
            self.write("\n")


class Bar:
    """One rich progress bar: a label, bytes done of total, files done of total, rate, ETA.
    Messages meant for stderr while it is drawn go to ``err``, which prints them above it.
    """

    def __init__(self, label: str, total_bytes: int, total_files: int, *, console=None) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn,
                                   TimeRemainingColumn, TransferSpeedColumn)

        self.total_files = total_files
        self.files_done = 0
        self.bytes_done = 0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
            TextColumn("{task.fields[files]}/{task.fields[total_files]} files"),
            TransferSpeedColumn(), TimeRemainingColumn(),
            console=console or Console(stderr=True), transient=True,
            redirect_stdout=False, redirect_stderr=False)
        self.err = _AboveTheBar(self._progress.console)
        self._task = self._progress.add_task(label, total=max(total_bytes, 1), files=0,
                                             total_files=total_files)

    def __enter__(self) -> "Bar":
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.err.close_pending()
        self._progress.stop()

    def advance(self, nbytes: int, files: int = 1) -> None:
        self.files_done += files
        self.bytes_done += nbytes
        self._progress.update(self._task, advance=nbytes, files=self.files_done)


def files_bar(label: str, paths: list, *, enabled: bool) -> Bar | _Quiet:
    """A bar over ``paths`` (their sizes stat'ed now), or the no-op one when not enabled."""
    return Bar(label, *total_size(paths)) if enabled else _Quiet()


def per_file(fn: Callable[..., T], progress: Bar | _Quiet) -> Callable[..., T]:
    """``fn(path, ...)`` that moves the bar by the file's size once it returns (or fails)."""
    def tracked(path, *args, **kwargs) -> T:
        try:
            return fn(path, *args, **kwargs)
        finally:
            progress.advance(file_size(path))
    return tracked


def total_size(paths: Iterable) -> tuple[int, int]:
    """(bytes, files) of the given paths."""
    sizes = [file_size(p) for p in paths]
    return sum(sizes), len(sizes)


def scan(roots, *, enabled: bool, include_superseded: bool = False, follow_links: bool = False, **scan_options):
    """logscan.scan.local.scan with a bar over the segments it reads, moved through the
    scan's ``on_file`` callback as each one is read. The segments are listed up front (a
    directory walk; no file is opened), and only when the bar is drawn."""
    from logscan.scan import local

    if not enabled:
        return local.scan(roots, include_superseded=include_superseded, follow_links=follow_links, **scan_options)
    from logscan.logdir.tree import iter_brokers

    segments = [p for broker in iter_brokers(roots, include_superseded=include_superseded, follow_links=follow_links)
                for replica in broker.replicas for _, p in replica.segments]
    with Bar("scan", *total_size(segments)) as bar:
        return local.scan(roots, include_superseded=include_superseded, follow_links=follow_links,
                          on_file=lambda _path, size: bar.advance(size), **scan_options)
