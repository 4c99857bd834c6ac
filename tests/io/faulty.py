"""A pyarrow filesystem that is the local one, with faults put where a test wants them: a
``pyarrow.fs.PyFileSystem`` over a ``FileSystemHandler`` delegating every call to
``LocalFileSystem``, counting listings and ranged reads, and raising an OSError (as
pyarrow's S3 client raises one for a dropped connection) on the reads a test names."""

from __future__ import annotations

import threading
from typing import Callable, Optional

import pyarrow as pa
from pyarrow import fs as pafs

#: The error a faulty read raises: what pyarrow's S3 client says for a dropped connection.
DROPPED = "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 56, Failure when receiving data from the peer"


class _File:
    """A local file whose reads go through ``handler.on_read`` first."""

    def __init__(self, handler: "FaultyHandler", path: str):
        self._handler, self._path = handler, path
        self._f = open(path, "rb")
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        at = self._f.tell()
        self._handler.on_read(self._path, at, n)
        return self._f.read(n)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._f.close()


class FaultyHandler(pafs.FileSystemHandler):
    """LocalFileSystem, with ``fail(path, offset, n, count)`` asked before each read
    (``count``: reads of that path so far, from 1): raise to fail that read."""

    def __init__(self, fail: Optional[Callable[[str, int, int, int], bool]] = None):
        self.local = pafs.LocalFileSystem()
        self.fail = fail
        self.reads: dict[str, int] = {}
        self.listings: list[str] = []
        self.lock = threading.Lock()

    def on_read(self, path: str, offset: int, n: int) -> None:
        with self.lock:
            count = self.reads[path] = self.reads.get(path, 0) + 1
        if self.fail is not None and self.fail(path, offset, n, count):
            raise OSError(DROPPED)

    # -- delegated ----------------------------------------------------------------------------
    def get_type_name(self) -> str:
        return "faulty-local"

    def normalize_path(self, path: str) -> str:
        return self.local.normalize_path(path)

    def get_file_info(self, paths):
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        self.listings.append(selector.base_dir)
        return self.local.get_file_info(selector)

    def open_input_file(self, path: str):
        return pa.PythonFile(_File(self, path), mode="r")

    def open_input_stream(self, path: str):
        return pa.PythonFile(_File(self, path), mode="r")

    def create_dir(self, path, recursive):
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        self.local.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        raise OSError("not here")

    def delete_file(self, path):
        self.local.delete_file(path)

    def move(self, src, dest):
        self.local.move(src, dest)

    def copy_file(self, src, dest):
        self.local.copy_file(src, dest)

    def open_output_stream(self, path, metadata):
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path, metadata):
        return self.local.open_append_stream(path, metadata=metadata)

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other


def faulty_filesystem(fail=None) -> tuple[pafs.PyFileSystem, FaultyHandler]:
    handler = FaultyHandler(fail)
    return pafs.PyFileSystem(handler), handler
