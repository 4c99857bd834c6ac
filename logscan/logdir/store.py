"""Where the bytes are: the IO seam of logscan, and its remote backend on ``pyarrow.fs``.

Everything the scan and the dump read goes through four operations of ``logscan.logdir``,
each of which takes a local path or a URI (``s3://bucket/copy/broker-0``, ``gs://``,
``abfs://``, ``hdfs://``, ``file:///abs/path``):

    list a tree         tree._entries(folder): a folder's entries (os.DirEntry, or
                        :class:`RemoteEntry` with the same is_dir/is_file/is_symlink/stat)
    stat a file         tree.file_size(path)
    read a small file   segment.read_small_file(path): bytes, or None when nothing is there
    read a window       segment.LogWindows(path): ``size`` and ``map(start, stop)``, a
                        window of bytes [start, stop) at a time (walk_windows' source);
                        segment.open_segment(path) for the whole-buffer readers (the dump)

A local path is read exactly as before (mmap windows, open_regular's O_NOFOLLOW|O_NONBLOCK
and S_ISREG rules, link and FIFO findings): none of this module runs, and pyarrow is not
imported. A URI is read here:

* **listing**: one recursive listing per input (``FileSelector(prefix, recursive=True)``:
  pyarrow pages through the store's list calls, e.g. S3's ListObjectsV2 1,000 keys a page),
  never a request per folder; the folders are the key prefixes. Object stores have no
  symbolic links, FIFOs or devices, so only the local backend has those rules (an entry of
  another type, which only a ``file://`` store could list, is a ``not-regular`` finding).
  A listed folder is a :class:`StorePath` (``/``, ``name``, ``parent``, ``iterdir`` over the
  same listing); rows and work units carry its ``str``, the URI.
* **windows**: ranged reads (``open_input_file(path).read_at(n, offset)``) into a buffer of
  the window's size, so a segment is never held whole: walk_windows holds one window at a
  time, as it holds one mapping of a local file. A window larger than SPOOL_BYTES (the rest
  of a segment, which walk_windows asks for after damage other than zeros) is copied chunk by
  chunk into an unlinked temporary file and mapped, so memory stays bounded there too. The
  whole-file readers (the dump, ``__cluster_metadata``) read a spooled copy the same way.
* **retries**: an OSError from the store is retried RETRIES times (backoff BACKOFF_S,
  doubling) unless it is one that cannot pass: a missing object or bucket, a permission,
  credential or signature refusal, a folder where a file is read (``permanent``). pyarrow's
  S3 client also retries throttling and 5xx answers itself; these retries are for what gets
  through (a connection reset or timeout mid-read, a store that answers with an error). A
  read that still fails is an OSError naming the bytes and the store's error: the walk makes
  it a located ``io`` finding (logscan.format.logfile.WindowUnmappable: file, byte, error)
  and the scan goes on with the next segment and replica.

Storage options (``--storage-option key=value``, :func:`configure`) are the keyword
arguments of the pyarrow filesystem of the URI's scheme (S3FileSystem: endpoint_override,
scheme, access_key, secret_key, region, ...). Without them pyarrow finds credentials where
its SDKs look: the environment, the instance profile, the config files. The text of a URI
after ``scheme://`` is the store's path as is (no percent-decoding).
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import stat
import threading
import time
from typing import Callable, Iterator, Mapping, Optional, TypeVar

T = TypeVar("T")

#: ``scheme://`` at the start of an input: a URI, read through pyarrow.fs. Anything else is a
#: local path (``s3:/x`` too: it is a folder named ``s3:``).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

#: Attempts after the first for a store operation that fails with a transient error.
RETRIES = 3
#: Seconds before the first retry, doubled for each further one.
BACKOFF_S = 0.2
#: A window larger than this is spooled to a temporary file and mapped, not held in memory.
SPOOL_BYTES = 128 << 20
#: The size of each ranged read when a window or a whole object is spooled.
CHUNK_BYTES = 8 << 20

#: Store errors that no retry can mend, by their text (pyarrow raises plain OSErrors with the
#: SDK's error name in the message for most of them).
_PERMANENT = re.compile(r"ACCESS_DENIED|AccessDenied|Forbidden|SignatureDoesNotMatch|InvalidAccessKeyId|"
                        r"NoSuchBucket|NoSuchKey|NO_SUCH_BUCKET|RESOURCE_NOT_FOUND|Not a directory|"
                        r"Is a directory|Path does not exist|does not exist|INVALID_ACCESS_KEY_ID|"
                        r"SIGNATURE_DOES_NOT_MATCH|cannot be a directory|is a directory", re.I)


def is_uri(path) -> bool:
    """A URI (``scheme://...``) or a StorePath: read through this module; else a local path."""
    t = type(path)
    if t is StorePath:
        return True
    return t is str and "://" in path and _URI.match(path) is not None


# --- storage options and filesystems ---------------------------------------------------------

#: The environment variable that hands the storage options (a JSON object) to a process that
#: reads the same stores without being configured: a Spark task's Python worker (the job's
#: session sets it with spark.executorEnv, spark_jobs.session.store_conf). A process that calls
#: configure() uses what it was given instead.
OPTIONS_ENV = "LOGSCAN_STORAGE_OPTIONS"


def local_folder(location: str) -> Optional[str]:
    """The local folder a location names when it names one (``file:/x``, ``/x``, ``x``); None
    for a store's URI."""
    if location.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(location).path)
    return None if is_uri(location) else location


def _from_environment() -> tuple[dict[str, str], Optional[str]]:
    """The options OPTIONS_ENV holds, and the sentence saying why it is unusable (or None)."""
    text = os.environ.get(OPTIONS_ENV)
    if not text:
        return {}, None
    import json   # here, not at the top: `logscan dump` imports this module and needs no json

    try:
        value = json.loads(text)
    except ValueError as e:
        return {}, f"${OPTIONS_ENV} is not a JSON object of storage options ({e})"
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return {}, f"${OPTIONS_ENV} is not a JSON object of storage options (key: text)"
    return value, None


_options, _environment_error = _from_environment()
_stores: dict[tuple[str, str], "_Store"] = {}
_lock = threading.Lock()


class StorageOptionError(OSError):
    """A URI's store cannot be made (an unknown scheme, a storage option its filesystem does
    not take): one sentence saying which. An OSError, so a read of the URI is an ``io``
    finding like any other the store gives."""


def parse_storage_options(pairs) -> dict[str, str]:
    """``key=value`` texts as a dict; ValueError naming a text without ``=`` or a key."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"{pair!r} is not key=value (e.g. endpoint_override=host:9000)")
        out[key] = value
    return out


_given: dict[tuple[str, str], "_Store"] = {}


def configure(options: Optional[Mapping[str, str]] = None) -> None:
    """The storage options of the filesystems made from now on (the ones made before are
    dropped): keyword arguments of the pyarrow filesystem of each URI's scheme."""
    global _environment_error
    with _lock:
        _options.clear()
        _options.update(options or {})
        _stores.clear()
        _environment_error = None


def use_filesystem(scheme: str, filesystem, fs_prefix: str = "") -> None:
    """Read ``scheme://`` URIs through ``filesystem`` (any pyarrow FileSystem: a PyFileSystem
    over an fsspec one, a wrapper; None: back to the one made from the URI). The URI's text
    after ``scheme://`` (after ``fs_prefix`` is put before it) is the filesystem's path."""
    key = (scheme.lower(), "")
    with _lock:
        if filesystem is None:
            _given.pop(key, None)
        else:
            _given[key] = _Store(filesystem, f"{scheme.lower()}://", fs_prefix)


def _value(text: str):
    """A storage option's text as the keyword argument pyarrow wants: true/false are
    booleans, a number is a number only where one is wanted (timeouts, ports)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return text


_NUMERIC = frozenset({"connect_timeout", "request_timeout", "port", "replication", "buffer_size",
                      "default_block_size", "retry_time_limit", "default_bucket_location"})


def _kwargs(options: Mapping[str, str]) -> dict:
    out = {}
    for key, text in options.items():
        if key.isupper():   # delta-rs's own spelling (AWS_S3_LOCKING_PROVIDER=...): delta_options passes it
            continue
        value = _value(text)
        if key in _NUMERIC and isinstance(value, str):
            try:
                value = int(text)
            except ValueError:
                try:
                    value = float(text)
                except ValueError:
                    value = text
        out[key] = value
    return out


class _Store:
    """One pyarrow filesystem and how its paths map to URIs: uri = prefix + fs path after
    ``fs_prefix``."""

    __slots__ = ("fs", "prefix", "fs_prefix")

    def __init__(self, fs, prefix: str, fs_prefix: str = ""):
        self.fs, self.prefix, self.fs_prefix = fs, prefix, fs_prefix

    def path(self, uri: str) -> str:
        return self.fs_prefix + uri[len(self.prefix):]

    def uri(self, fs_path: str) -> str:
        return self.prefix + fs_path[len(self.fs_prefix):]


def _make_store(scheme: str, authority: str, given: Optional[Mapping[str, str]] = None) -> _Store:
    from pyarrow import fs as pafs

    if given is None and _environment_error is not None:
        raise StorageOptionError(_environment_error)
    kw = _kwargs(_options if given is None else given)
    what = {"s3": "S3FileSystem", "gs": "GcsFileSystem", "hdfs": "HadoopFileSystem",
            "abfs": "AzureFileSystem", "file": "LocalFileSystem"}.get(scheme, scheme)
    try:
        if scheme == "file":
            if authority not in ("", "localhost"):
                raise StorageOptionError(f"file://{authority}/...: a file URI names no host (file:///abs/path)")
            return _Store(pafs.LocalFileSystem(**kw), f"file://{authority}")
        if scheme in ("s3", "s3a", "s3n"):
            if "@" in authority:
                raise StorageOptionError("credentials in an s3:// URI are not read: give them as storage "
                                         "options (access_key=..., secret_key=...) or in the environment")
            return _Store(pafs.S3FileSystem(**kw), f"{scheme}://")
        if scheme in ("gs", "gcs"):
            return _Store(pafs.GcsFileSystem(**kw), f"{scheme}://")
        if scheme in ("hdfs", "viewfs"):
            host, _, port = authority.partition(":")
            if port:
                kw.setdefault("port", int(port))
            return _Store(pafs.HadoopFileSystem(f"{scheme}://{host}" if host else "default", **kw),
                          f"{scheme}://{authority}")
        if scheme in ("abfs", "abfss", "az"):
            container, _, account = authority.partition("@")
            if account and "account_name" not in kw:
                kw["account_name"] = account.split(".")[0]
            return _Store(pafs.AzureFileSystem(**kw), f"{scheme}://{authority}/", f"{container}/")
    except TypeError as e:  # a keyword the filesystem does not take
        raise StorageOptionError(f"a storage option {what} does not take ({e}); its options are its "
                                 "keyword arguments (pyarrow.fs docs)") from None
    except (ValueError, OSError) as e:
        if isinstance(e, StorageOptionError):
            raise
        raise StorageOptionError(f"cannot make a {what} for {scheme}://{authority}: {e}") from None
    raise StorageOptionError(f"{scheme}:// is not a store logscan reads (s3, gs, abfs, hdfs, file)")


def _split(uri: str) -> tuple[str, str]:
    scheme, _, rest = uri.partition("://")
    return scheme.lower(), rest.split("/", 1)[0]


def store_of(uri: str) -> _Store:
    """The filesystem (made once per scheme and authority, with the storage options) of
    ``uri``. Raises StorageOptionError (an OSError) for an unknown scheme or option."""
    scheme, authority = _split(uri)
    if _given:
        given = _given.get((scheme, ""))
        if given is not None:
            return given
    key = (scheme, authority if scheme not in ("s3", "s3a", "s3n", "gs", "gcs") else "")
    store = _stores.get(key)
    if store is None:
        with _lock:
            store = _stores.get(key)
            if store is None:
                store = _stores[key] = _make_store(scheme, authority)
    return store


# --- retries ---------------------------------------------------------------------------------

def permanent(error: BaseException) -> bool:
    """An error no retry can mend: a missing object, a refusal, a folder where a file is read,
    a request pyarrow itself refuses (not an OSError)."""
    if not isinstance(error, OSError):
        return True
    if isinstance(error, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
        return True
    return bool(_PERMANENT.search(str(error)))


def retried(fn: Callable[[], T], what: str) -> T:
    """``fn()``, again after a transient OSError (RETRIES times, backoff BACKOFF_S doubling);
    the last error, or a permanent one at once, is raised as an OSError saying ``what`` failed
    and after how many attempts (a FileNotFoundError stays one)."""
    delay = BACKOFF_S
    for attempt in range(RETRIES + 1):
        try:
            return fn()
        except Exception as e:  # pyarrow raises OSError, ArrowInvalid (a ValueError), ...
            if permanent(e) or attempt == RETRIES:
                if isinstance(e, FileNotFoundError):
                    raise
                tries = "" if attempt == 0 else f" after {attempt + 1} attempts"
                err = OSError(getattr(e, "errno", None) or errno.EIO, f"{what} failed{tries}: {_said(e)}")
                raise err from e
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")


def _said(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.split())


# --- paths and the listing -------------------------------------------------------------------

class StorePath:
    """A file or folder in a store, as the listing hands it on: its URI (``str``) and the
    listing it was found in (so a folder's entries and a file's size cost no request). The
    operations tree.py and the scan use on a local Path: ``/``, ``name``, ``parent``,
    ``iterdir``. No ``__fspath__``: nothing local can open it by mistake."""

    __slots__ = ("uri", "tree")

    def __init__(self, uri: str, tree: Optional["Tree"] = None):
        while uri.endswith("/") and not uri.endswith("://"):
            uri = uri[:-1]
        self.uri, self.tree = uri, tree

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"StorePath({self.uri!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, StorePath) and other.uri == self.uri

    def __lt__(self, other) -> bool:
        return self.uri < str(other)

    def __hash__(self) -> int:
        return hash(self.uri)

    def __truediv__(self, name: str) -> "StorePath":
        return StorePath(f"{self.uri}/{name}", self.tree)

    @property
    def name(self) -> str:
        rest = self.uri.partition("://")[2]
        return rest.rsplit("/", 1)[-1] if "/" in rest else rest

    @property
    def parent(self) -> "StorePath":
        scheme, _, rest = self.uri.partition("://")
        if "/" not in rest.strip("/"):
            return self
        return StorePath(f"{scheme}://{rest.rsplit('/', 1)[0]}", self.tree)

    def iterdir(self) -> Iterator["StorePath"]:
        return (e.path for e in list_dir(self))


class RemoteEntry:
    """One entry of a store's listing, with the os.DirEntry methods tree.py asks."""

    __slots__ = ("name", "path", "_mode", "size")

    def __init__(self, name: str, path: StorePath, mode: int, size: int):
        self.name, self.path, self._mode, self.size = name, path, mode, size

    def is_symlink(self) -> bool:
        return False  # an object store has none; a file:// listing reports a link's target

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._mode)

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return stat.S_ISREG(self._mode)

    def stat(self, follow_symlinks: bool = True) -> os.stat_result:
        return os.stat_result((self._mode, 0, 0, 0, 0, 0, max(self.size, 0), 0, 0, 0))

    def __repr__(self) -> str:
        return f"RemoteEntry({self.path.uri!r})"


class Tree:
    """What one recursive listing of a store prefix holds: each folder's entries, by URI."""

    __slots__ = ("root", "folders", "sizes")

    def __init__(self, root: str):
        self.root = root
        self.folders: Optional[dict[str, list[RemoteEntry]]] = None  # None: not listed yet
        self.sizes: dict[str, int] = {}

    def load(self) -> None:
        """One recursive listing of the root (pages of the store's list call inside pyarrow).
        Raises OSError when the root cannot be listed (missing, refused, the store down)."""
        from pyarrow import fs as pafs

        store = store_of(self.root)
        base = store.path(self.root)
        infos = retried(lambda: store.fs.get_file_info(pafs.FileSelector(base, recursive=True)),
                        f"listing {self.root}")
        modes = {pafs.FileType.Directory: stat.S_IFDIR, pafs.FileType.File: stat.S_IFREG}
        folders: dict[str, dict[str, RemoteEntry]] = {self.root: {}}
        for info in infos:
            uri = store.uri(info.path)
            mode = modes.get(info.type, 0)
            self._add(folders, uri, mode, info.size if mode == stat.S_IFREG else -1)
            if mode == stat.S_IFREG:
                self.sizes[uri] = info.size
        self.folders = {k: sorted(v.values(), key=_entry_name) for k, v in folders.items()}

    def _add(self, folders: dict, uri: str, mode: int, size: int) -> None:
        """``uri`` into its folder's entries, and every folder between it and the root (a
        store need not list the prefixes its keys imply)."""
        while True:
            parent, _, name = uri.rpartition("/")
            if not uri.startswith(self.root + "/") or not name:
                return
            entries = folders.setdefault(parent, {})
            if mode == stat.S_IFDIR:
                folders.setdefault(uri, {})
            if name in entries:
                return
            entries[name] = RemoteEntry(name, StorePath(uri, self), mode, size)
            uri, mode, size = parent, stat.S_IFDIR, -1

    def entries(self, uri: str) -> list[RemoteEntry]:
        if self.folders is None:
            self.load()
        found = self.folders.get(uri)
        if found is None:
            if uri in self.sizes:
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", uri)
            raise FileNotFoundError(errno.ENOENT, "No such folder in the listing", uri)
        return found


def _entry_name(entry: RemoteEntry) -> str:
    return entry.name


def location(path) -> "StorePath | os.PathLike":
    """An input as the listing holds it: a StorePath for a URI (listed once, recursively, on
    first use), else a local pathlib.Path."""
    if type(path) is StorePath:
        return path
    if is_uri(path):
        uri = StorePath(path).uri
        return StorePath(uri, Tree(uri))
    from pathlib import Path
    return Path(path)


def list_dir(path: StorePath) -> list[RemoteEntry]:
    """A store folder's entries by name, from its tree's one listing. OSError when it cannot
    be listed."""
    tree = path.tree
    if tree is None:
        tree = path.tree = Tree(path.uri)
    return tree.entries(path.uri)


# --- stat, small files, windows --------------------------------------------------------------

def file_size(path) -> int:
    """The size of a stored file: from the listing that found it, else one stat request."""
    uri = str(path)
    if type(path) is StorePath and path.tree is not None and uri in path.tree.sizes:
        return path.tree.sizes[uri]
    from pyarrow import fs as pafs

    store = store_of(uri)
    info = retried(lambda: store.fs.get_file_info(store.path(uri)), f"stat of {uri}")
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(errno.ENOENT, "No such object", uri)
    if info.type != pafs.FileType.File:
        raise IsADirectoryError(errno.EISDIR, "not a file", uri)
    return info.size


def _open(uri: str):
    store = store_of(uri)
    return retried(lambda: store.fs.open_input_file(store.path(uri)), f"opening {uri}")


def read_small_file(path, max_bytes: int) -> Optional[bytes]:
    """A stored small file whole (a checkpoint, a producer snapshot), None when there is none;
    one longer than ``max_bytes`` is segment.FileTooLarge, not read."""
    from .segment import FileTooLarge

    uri = str(path)
    if type(path) is StorePath and path.tree is not None and path.tree.folders is not None \
            and uri not in path.tree.sizes:
        return None  # the listing holds no such file: no request for it
    try:
        def read() -> bytes | int:
            with _open(uri) as f:
                size = f.size()
                return size if size > max_bytes else f.read(size)  # too long: its size alone
        data = retried(read, f"reading {uri}")
    except FileNotFoundError:
        return None
    if isinstance(data, int):
        raise FileTooLarge(uri, data, max_bytes)
    return data


class RemoteWindows:
    """A stored `.log` read a window at a time with ranged reads: the LogWindows of a URI
    (``size``, ``map(start, stop)``; a context manager). ``reads`` counts the ranged reads
    and ``bytes_fetched`` their bytes (tests and figures)."""

    def __init__(self, path: str):
        self.path = str(path)
        self.size = 0
        self._file = None
        self.reads = 0
        self.bytes_fetched = 0

    def __enter__(self) -> "RemoteWindows":
        self._file = _open(self.path)
        try:
            self.size = retried(self._file.size, f"size of {self.path}")
        except BaseException:
            self._file.close()
            raise
        return self

    def read(self, start: int, n: int) -> bytes:
        """Bytes [start, start + n), retried (reopening the object) on a transient error; an
        OSError naming the bytes and the store's error when that fails for good."""
        def attempt() -> bytes:
            if self._file is None:
                self._file = _open(self.path)
            try:
                data = self._file.read_at(n, start)
            except BaseException:
                self._drop()
                raise
            if len(data) < n:
                raise OSError(errno.EIO, f"read {len(data)} of {n} bytes at {start}: the object is shorter")
            return data
        data = retried(attempt, f"read of bytes {start}..{start + n} of {self.path}")
        self.reads += 1
        self.bytes_fetched += n
        return data

    def _drop(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except Exception:
                pass

    def map(self, start: int, stop: int):
        from logscan.format.logfile import BufferWindow

        if stop - start <= SPOOL_BYTES:
            return BufferWindow(memoryview(self.read(start, stop - start)), start)
        from .segment import _MappedWindow
        return _MappedWindow(self._spool(start, stop), start)

    def _spool(self, start: int, stop: int) -> mmap.mmap:
        """Bytes [start, stop) copied chunk by chunk into an unlinked temporary file, mapped."""
        import tempfile

        with tempfile.TemporaryFile(prefix="logscan-window-") as tmp:
            at = start
            while at < stop:
                n = min(CHUNK_BYTES, stop - at)
                tmp.write(self.read(at, n))
                at += n
            tmp.flush()
            return mmap.mmap(tmp.fileno(), stop - start, access=mmap.ACCESS_READ)

    def __exit__(self, *exc) -> None:
        self._drop()


def spool_object(path: str) -> tuple[Optional[mmap.mmap], int]:
    """A stored file whole, for the readers that take one buffer (the dump, the
    ``__cluster_metadata`` replay): copied in ranged reads into an unlinked temporary file
    and mapped (None for an empty one), so memory holds one chunk at a time."""
    with RemoteWindows(path) as source:
        if source.size == 0:
            return None, 0
        return source._spool(0, source.size), source.size


# --- writes, Delta's options, commands to print ----------------------------------------------

def options() -> dict[str, str]:
    """The storage options configured now (--storage-option): what a writer in another process
    (a Spark task) must be given to reach the same stores."""
    with _lock:
        return dict(_options)


_written: dict[tuple, "_Store"] = {}


def store_with(uri: str, given: Optional[Mapping[str, str]] = None) -> _Store:
    """store_of(uri), or with ``given`` storage options instead of the configured ones (a Spark
    task's writer, which gets its options in its closure: nothing was configured there)."""
    if given is None or dict(given) == _options:
        return store_of(uri)
    scheme, authority = _split(uri)
    key = (scheme, authority if scheme not in ("s3", "s3a", "s3n", "gs", "gcs") else "", tuple(sorted(given.items())))
    store = _written.get(key)
    if store is None:
        with _lock:
            store = _written[key] = _make_store(scheme, authority, given)
    return store


#: pyarrow's S3FileSystem keyword -> delta-rs's (object_store's) storage option for the same.
_DELTA_S3 = {"access_key": "AWS_ACCESS_KEY_ID", "secret_key": "AWS_SECRET_ACCESS_KEY",
             "session_token": "AWS_SESSION_TOKEN", "region": "AWS_REGION"}
#: pyarrow's AzureFileSystem / GcsFileSystem keywords delta-rs takes under another name.
_DELTA_OTHER = {"account_name": "AZURE_STORAGE_ACCOUNT_NAME", "account_key": "AZURE_STORAGE_ACCOUNT_KEY",
                "sas_token": "AZURE_STORAGE_SAS_TOKEN", "client_id": "AZURE_CLIENT_ID",
                "client_secret": "AZURE_CLIENT_SECRET", "tenant_id": "AZURE_TENANT_ID"}


def delta_options(uri: str, given: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The delta-rs storage options that reach the store of ``uri`` as the pyarrow filesystem
    made with ``given`` (default: the configured options) does: for S3, endpoint_override and
    scheme -> AWS_ENDPOINT_URL (and AWS_ALLOW_HTTP for http), access_key, secret_key,
    session_token, region -> AWS_*, force_virtual_addressing -> AWS_VIRTUAL_HOSTED_STYLE_REQUEST.
    A key already in delta-rs's form (upper case: AWS_S3_LOCKING_PROVIDER, ...) is passed as is;
    a pyarrow keyword delta-rs has no counterpart for (timeouts, retry strategies) is left out.
    Nothing is added for safety: delta-rs 1.6 commits to S3 with a conditional put (docs/spark.md)."""
    given = options() if given is None else dict(given)
    scheme = _split(uri)[0]
    out = {k: v for k, v in given.items() if k.isupper()}
    if scheme in ("s3", "s3a", "s3n"):
        for key, name in _DELTA_S3.items():
            if key in given:
                out[name] = given[key]
        if "endpoint_override" in given:
            endpoint = given["endpoint_override"]
            if "://" not in endpoint:
                endpoint = f"{given.get('scheme', 'https')}://{endpoint}"
            out["AWS_ENDPOINT_URL"] = endpoint
            if endpoint.startswith("http://"):
                out["AWS_ALLOW_HTTP"] = "true"
        if given.get("force_virtual_addressing", "").lower() == "true":
            out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "true"
    elif scheme in ("abfs", "abfss", "az"):
        out.update({name: given[key] for key, name in _DELTA_OTHER.items() if key in given})
    elif scheme in ("gs", "gcs") and "endpoint_override" in given:
        out["GOOGLE_ENDPOINT"] = given["endpoint_override"]   # a GCS emulator (tests)
    return out


#: pyarrow's S3FileSystem keyword -> Hadoop S3A's setting for the same (spark.hadoop.fs.s3a.*).
_HADOOP_S3A = {"access_key": "fs.s3a.access.key", "secret_key": "fs.s3a.secret.key",
               "session_token": "fs.s3a.session.token", "region": "fs.s3a.endpoint.region"}


def hadoop_options(given: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """Hadoop's S3A settings (``fs.s3a.*``, for Spark as ``spark.hadoop.fs.s3a.*``) that reach
    the S3 store the pyarrow filesystem made with ``given`` (default: the configured options)
    reaches: access_key, secret_key, session_token, region, and endpoint_override with scheme ->
    fs.s3a.endpoint with path-style access (a store of one's own: SeaweedFS, MinIO) and, for
    http, SSL off. A session token switches S3A to temporary credentials. Empty when nothing is
    given: S3A then finds credentials where the AWS SDK looks, as pyarrow does."""
    given = options() if given is None else dict(given)
    out = {name: given[key] for key, name in _HADOOP_S3A.items() if key in given}
    if "session_token" in given:
        out["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    if "endpoint_override" in given:
        endpoint = given["endpoint_override"]
        if "://" not in endpoint:
            endpoint = f"{given.get('scheme', 'https')}://{endpoint}"
        out["fs.s3a.endpoint"] = endpoint
        out["fs.s3a.path.style.access"] = str(given.get("force_virtual_addressing", "").lower() != "true").lower()
        if endpoint.startswith("http://"):
            out["fs.s3a.connection.ssl.enabled"] = "false"
    return out


#: Storage options that are secrets: never printed. Each is shown as the environment variable
#: a printed command reads it from instead.
SECRET_OPTIONS = {"secret_key": "AWS_SECRET_ACCESS_KEY", "session_token": "AWS_SESSION_TOKEN",
                  "account_key": "AZURE_STORAGE_ACCOUNT_KEY", "sas_token": "AZURE_STORAGE_SAS_TOKEN",
                  "client_secret": "AZURE_CLIENT_SECRET", "access_token": "GOOGLE_ACCESS_TOKEN",
                  "AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN": "AWS_SESSION_TOKEN",
                  "AZURE_STORAGE_ACCOUNT_KEY": "AZURE_STORAGE_ACCOUNT_KEY",
                  "AZURE_STORAGE_SAS_TOKEN": "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET": "AZURE_CLIENT_SECRET"}


def option_flags(paths, given: Optional[Mapping[str, str]] = None) -> str:
    """The ``--storage-option`` flags a printed command needs to read ``paths`` (any of them a
    URI) as this run did, shell-quoted, each led by a space ('' when none is a URI or no option
    was given). A secret's value is never printed: it is read from its environment variable
    (``"secret_key=$AWS_SECRET_ACCESS_KEY"``, SECRET_OPTIONS), which the operator sets before
    pasting the command."""
    import shlex

    given = options() if given is None else dict(given)
    if not given or not any(is_uri(str(p)) for p in paths):
        return ""
    out = []
    for key, value in given.items():
        if key in SECRET_OPTIONS:
            out.append(f'--storage-option "{key}=${SECRET_OPTIONS[key]}"')
        else:
            out.append(f"--storage-option {shlex.quote(f'{key}={value}')}")
    return " " + " ".join(out)


def secret_variables(given: Optional[Mapping[str, str]] = None) -> list[str]:
    """The environment variables option_flags' commands read secrets from."""
    given = options() if given is None else dict(given)
    return sorted({SECRET_OPTIONS[k] for k in given if k in SECRET_OPTIONS})
