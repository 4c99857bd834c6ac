"""Finding brokers, replicas and segments in copied log dirs.

An operator's copy is one folder per broker, each a Kafka log dir (meta.properties names the
node; without it the folder name's digits do). `-delete`, `-future` and `-stray` partition
dirs and `.deleted`/`.cleaned`/`.swap` files hold superseded or duplicate data: they are
skipped unless asked for, and every skip is reported.

A log dir is known by what it holds, never by being a folder (issue 36): meta.properties or
a log-dir checkpoint Kafka writes, else a ``topic-N`` folder holding a partition's files
(segments, indexes, snapshots, leader-epoch-checkpoint, partition.metadata). What else lies
beside the log dirs (a docker-compose copy's ``zookeeper/``, whose ``version-2`` is named like
a partition folder, or ``logs/``) is skipped with its reason. An input is searched itself and
one level down, no deeper: a folder higher up may hold several clusters or several copies of
one, whose brokers share node ids and would be read as one broker's log dirs. An input with
no log dir there is ``NoLogDirs``: one sentence of what was looked for and, when log dirs lie
up to three levels deeper or the input is a partition folder, the path to give instead.

A copy may be hostile (issue 33): what the listing hands on to be read is a folder or a
regular file, checked from the directory entry before anything opens it. A symbolic link is
followed only when its target is inside an input root (``Scope``): Kafka writes no links, so
a link is the copy's own, and a folder link within it (``copy/broker-0 -> raw/node0/data``)
is how one is often assembled; a link out of the copy is followed only with
``follow_links``. A followed file link is handed on as its target's real path, so every
open can refuse links (logdir.segment.open_regular). A dangling link, a loop, a link out of
the copy, a FIFO, socket, device or folder named like a file the scan reads, and a folder
that cannot be listed are findings (``refused``), and the rest of the copy is listed.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from logscan.format.checkpoint import MetaProperties, parse_meta_properties
from logscan.format.errors import DecodeError

from .naming import Kind, classify, parse_partition_dir
from . import store
from .segment import LINK, SMALL_FILE_CAPS, FileTooLarge, Finding, describe_mode, io_finding, read_small_file, refusal_reason
from .store import StorePath, location

#: The reason of a finding for a log dir the scan cannot put on a broker.
NO_BROKER_ID = "no-broker-id"
#: The broker-level files the listing reads, by name.
META_PROPERTIES = Kind.META_PROPERTIES.value
BROKER_FILES = frozenset({META_PROPERTIES, Kind.REPLICATION_OFFSET_CHECKPOINT.value,
                          Kind.LOG_START_OFFSET_CHECKPOINT.value, Kind.RECOVERY_POINT_CHECKPOINT.value,
                          Kind.CLEANER_OFFSET_CHECKPOINT.value})
#: The files of a partition folder the scan opens (found by their names' suffixes), each to
#: the ReplicaDir file list it goes into: segments, snapshots, txn_indexes, indexes.
_FILE_LISTS = {Kind.LOG_SEGMENT: 0, Kind.PRODUCER_SNAPSHOT: 1, Kind.TXN_INDEX: 2, Kind.OFFSET_INDEX: 3,
               Kind.TIME_INDEX: 3}
_READ_KINDS = frozenset(_FILE_LISTS)
#: Files Kafka writes in a log dir itself: one of them (in any state) makes a folder a log dir.
LOG_DIR_KINDS = frozenset({Kind.META_PROPERTIES, Kind.REPLICATION_OFFSET_CHECKPOINT,
                           Kind.RECOVERY_POINT_CHECKPOINT, Kind.LOG_START_OFFSET_CHECKPOINT,
                           Kind.CLEANER_OFFSET_CHECKPOINT, Kind.CLEAN_SHUTDOWN, Kind.BOOTSTRAP_SNAPSHOT})
#: Files Kafka writes in a partition folder: one of them makes a ``topic-N`` folder a partition's.
PARTITION_KINDS = frozenset({*_READ_KINDS, Kind.KRAFT_SNAPSHOT, Kind.LEADER_EPOCH_CHECKPOINT,
                             Kind.PARTITION_METADATA, Kind.QUORUM_STATE})
#: What a log dir is known by, as NoLogDirs says it.
LOG_DIR_TEXT = "meta.properties or topic-N partition folders"
#: Folders listed at most while looking deeper for the path to suggest (a wrong input may be /).
DEEPER_LISTINGS = 500


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


class ReplicaDir:
    """One partition directory of one broker, and the files the scan reads in it, each kind a
    list of (base offset, where to read the file) in base-offset order: ``segments`` (.log),
    ``snapshots``, ``txn_indexes`` and ``indexes`` (.index/.timeindex: a segment's other files
    name it even when its .log is not in the copy). Where to read a file is a path string (a
    StorePath in a store); ``refused``: its entries not listed, and why.

    A listing is held whole while the scan reads it, so a replica is held small (issue 33: a
    typical partition's replica took 2,109 bytes with a pathlib.Path per file, measured over
    100,000 partitions): the listing keeps a file of the folder by its name (one string for
    every replica of a broker whose file has that name), a followed link by its target, and
    joins the folder's path to the name when the files are asked for. A local folder the
    listing found is held as its path string (``folder``: str(path) as pathlib writes it), its
    Path made when asked for: a Path and its string took 6 us a replica to make, the string
    alone 1 us (the bench copy has 60,000 replicas)."""

    __slots__ = ("broker", "topic", "partition", "_path", "refused", "_files", "_in_folder")

    def __init__(self, broker: int, topic: str, partition: int, path: Path | StorePath | str,
                 segments: Iterable[tuple[int, str]] = (), snapshots: Iterable[tuple[int, str]] = (),
                 txn_indexes: Iterable[tuple[int, str]] = (), indexes: Iterable[tuple[int, str]] = (),
                 refused: Optional[list[Finding]] = None) -> None:
        self.broker, self.topic, self.partition, self._path = broker, topic, partition, path
        self.refused = [] if refused is None else refused
        self._files = (tuple(segments), tuple(snapshots), tuple(txn_indexes), tuple(indexes))
        self._in_folder = False  # True: names of files in ``path`` (and absolute link targets)

    @property
    def path(self) -> Path | StorePath:
        """The partition folder: a local one as a Path, a store's as a StorePath."""
        return Path(self._path) if type(self._path) is str else self._path

    @property
    def folder(self) -> str:
        """str(path), without making the Path."""
        return self._path if type(self._path) is str else str(self._path)

    def _where(self, kind: int) -> list[tuple[int, str]]:
        files = self._files[kind]
        if not (self._in_folder and files):
            return list(files)
        return self._joined(files, self._prefix())

    def _prefix(self) -> str:
        """os.path.join(folder, ""), without its call: _where ran 360,000 times over the bench
        copy's listing (2026-12-07)."""
        folder = self._path if type(self._path) is str else str(self._path)
        return folder if not folder or folder[-1] == "/" else folder + "/"

    @staticmethod
    def _joined(files: tuple, prefix: str) -> list[tuple[int, str]]:
        # os.path.join(folder, name) of each, without its call a file: a followed link's target
        # is absolute, and stays as it is
        return [(base, name if name.startswith("/") else prefix + name) for base, name in files]

    def files(self) -> tuple[list[tuple[int, str]], ...]:
        """(segments, snapshots, txn_indexes, indexes) at once: the folder joined once for
        the four (pipeline.replica_info's row)."""
        if not self._in_folder:
            return tuple([list(f) for f in self._files])
        prefix = self._prefix()
        return tuple([self._joined(f, prefix) if f else [] for f in self._files])

    segments = property(lambda self: self._where(0))
    snapshots = property(lambda self: self._where(1))
    txn_indexes = property(lambda self: self._where(2))
    indexes = property(lambda self: self._where(3))

    def _key(self) -> tuple:
        return (self.broker, self.topic, self.partition, self.path, self.segments, self.snapshots,
                self.txn_indexes, self.indexes, self.refused)

    def __eq__(self, other) -> bool:
        return type(other) is ReplicaDir and self._key() == other._key()

    __hash__ = None

    def __repr__(self) -> str:
        return f"ReplicaDir({self.broker!r}, {self.topic!r}, {self.partition!r}, {self.path!r})"


@dataclass(slots=True)
class BrokerDir:
    """One log dir of one broker (a broker with several ``log.dirs`` has one per dir: the
    listing reads them together, logscan.scan.listing)."""

    broker: int
    path: Path
    replicas: list[ReplicaDir] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # its files' damage: a sentence naming the file, or a located finding (a file too long to read)
    errors: list[str | Finding] = field(default_factory=list)
    # BROKER_FILES found, by name: the path to open (a followed link's target)
    files: dict[str, Path] = field(default_factory=dict)
    refused: list[Finding] = field(default_factory=list)  # its entries not listed, and why
    # partition folders that could not be listed (each with its finding in ``refused``)
    unlisted: list[ReplicaDir] = field(default_factory=list)
    meta: Optional[MetaProperties] = None  # its meta.properties, when readable (directory.id, cluster.id)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a symbolic link in the copy may lead: into an input root (by real path), or
    anywhere with ``follow_links``."""

    roots: tuple[str, ...]
    follow_links: bool = False

    @classmethod
    def of(cls, roots: Sequence[str | os.PathLike], follow_links: bool = False) -> "Scope":
        # A store's roots hold no links (logscan.logdir.store): only local ones bound them.
        return cls(tuple(os.path.join(os.path.realpath(r), "") for r in roots if not store.is_uri(r)),
                   follow_links)

    def holds(self, real: str) -> bool:
        return self.follow_links or any((real + os.sep).startswith(r) for r in self.roots)


def _link_target(entry: os.DirEntry, scope: Scope) -> tuple[Optional[str], Optional[Finding]]:
    """The real path a symbolic link leads to, or the finding of why it is not followed."""
    try:
        real = os.path.realpath(entry.path, strict=True)
    except FileNotFoundError:
        return None, Finding(entry.path, -1, LINK, f"not read: a symbolic link to {_readlink(entry)}, "
                                                   "which does not exist (dangling)")
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, Finding(entry.path, -1, LINK, "not read: a symbolic link that leads back to itself "
                                                       "(a loop)")
        return None, _unreadable(entry.path, e, "its symbolic link cannot be followed")
    if not scope.holds(real):
        return None, Finding(entry.path, -1, LINK, f"not read: a symbolic link to {real}, outside the copy "
                                                   "(links out of it are followed only when asked)")
    return real, None


def _readlink(entry: os.DirEntry) -> str:
    try:
        return repr(os.readlink(entry.path))
    except OSError as e:
        return f"a target it cannot say ({e.strerror})"


def _unreadable(path: str, error: OSError, what: str) -> Finding:
    return Finding(str(path), -1, "io", f"not read: {what} ({error.strerror or error})")


def _checked(entry: os.DirEntry, folder: bool, scope: Scope) -> tuple[Optional[str], Optional[Finding]]:
    """Where to read ``entry`` if it is a ``folder`` (or a regular file): its own path, or a
    followed file link's target; (None, None) for the other kind of the two, which the
    caller passes over; (None, finding) for anything it may not read. DirEntry answers the
    type from the listing, without a system call, on most file systems."""
    try:
        if entry.is_symlink():
            real, why = _link_target(entry, scope)
            if real is None:
                return None, why
            mode = os.stat(real).st_mode
            if stat.S_ISDIR(mode):
                return (entry.path, None) if folder else (None, _not_regular(entry.path, mode, real))
            if stat.S_ISREG(mode):
                return (None, None) if folder else (real, None)
            return None, _not_regular(entry.path, mode, real)
        if entry.is_dir(follow_symlinks=False):
            return (entry.path, None) if folder else (None, _not_regular(entry.path, stat.S_IFDIR))
        if entry.is_file(follow_symlinks=False):
            return (None, None) if folder else (entry.path, None)
        return None, _not_regular(entry.path, entry.stat(follow_symlinks=False).st_mode)
    except OSError as e:
        return None, _unreadable(entry.path, e, "cannot tell what it is")


def _not_regular(path: str, mode: int, target: Optional[str] = None) -> Finding:
    via = "" if target is None else f"a symbolic link to {target}, "
    return Finding(str(path), -1, refusal_reason(mode), f"not read: {via}{describe_mode(mode)}, not a regular file")


def _entries(path: str | os.PathLike, what: str, refused: list[Finding],
             so: Optional[str] = None) -> Optional[list[os.DirEntry]]:
    """A folder's entries by name, or None and a finding when it cannot be listed (``so``:
    what that costs the scan). A store's folder (a StorePath) is listed from its root's one
    recursive listing (logscan.logdir.store)."""
    try:
        if type(path) is StorePath:
            return store.list_dir(path)
        with os.scandir(path) as it:
            return sorted(it, key=_NAME)
    except OSError as e:
        refused.append(Finding(str(path) if type(path) is StorePath else os.fspath(path), -1, "io", f"{what} cannot be listed "
                                                          f"({e.strerror or e}){'' if so is None else '; ' + so}"))
        return None


_NAME = attrgetter("name")


class NoLogDirs(ValueError):
    """An input that neither is nor holds a Kafka log dir: one sentence saying what was looked
    for and, when it can tell, the path to give instead."""


def _is_partition_folder(entries: list[os.DirEntry]) -> bool:
    """A file Kafka writes in a partition folder among ``entries`` (by name)."""
    return any(classify(e.name).kind in PARTITION_KINDS for e in entries)


def _has_log_dir_files(entries: list[os.DirEntry]) -> bool:
    """A file Kafka writes in a log dir itself among ``entries`` (by name); meta.properties
    first, without classifying each of a broker's thousands of partition folders' names."""
    return (any(e.name == META_PROPERTIES for e in entries)
            or any(classify(e.name).kind in LOG_DIR_KINDS for e in entries))


def _holds_partitions(entries: list[os.DirEntry], scope: Scope) -> bool:
    """A ``topic-N`` folder holding a partition's files among ``entries``. A folder that
    cannot be listed is no evidence (scan_broker says so when the log dir is read)."""
    for e in entries:
        if parse_partition_dir(e.name) is None:
            continue
        where, _ = _checked(e, True, scope)
        inside = None if where is None else _entries(where, "partition folder", [])
        if inside and _is_partition_folder(inside):
            return True
    return False


def _is_log_dir(entries: list[os.DirEntry], scope: Scope) -> bool:
    """What a log dir holds among ``entries``: meta.properties or a log-dir checkpoint, else a
    ``topic-N`` folder holding a partition's files (a log dir copied without its own files).
    A name alone is not enough: ZooKeeper's ``version-2`` and a broker folder ``broker-0`` are
    named like partition folders."""
    return _has_log_dir_files(entries) or _holds_partitions(entries, scope)


def _not_a_log_dir(path: Path, entries: list[os.DirEntry]) -> str:
    """Why a folder beside the log dirs is skipped."""
    if parse_partition_dir(path.name) is not None and _is_partition_folder(entries):
        return "a partition folder beside the log dirs, not in one: not read"
    if not entries:
        return "not a Kafka log dir: an empty folder"
    return ("not a Kafka log dir: no meta.properties, no log-dir checkpoint and no topic-N folder holding a "
            "partition's files")


def find_log_dirs(roots: list[Path], refused: Optional[list[Finding]] = None, *,
                  follow_links: bool = False, skipped: Optional[list[Skipped]] = None) -> list[Path]:
    """Each root is a log dir itself or holds one log dir per broker (see the module's
    docstring for how a log dir is known). A folder beside the log dirs that is none is in
    ``skipped``; a folder that cannot be listed, or a link that may not be followed, is a
    finding in ``refused``. Raises NoLogDirs for a root that is and holds no log dir and
    refused nothing (a refused folder may have been a broker's: its finding says so)."""
    refused = [] if refused is None else refused
    skipped = [] if skipped is None else skipped
    roots = [location(r) for r in roots]
    scope = Scope.of(roots, follow_links)
    found: list[Path] = []
    for root in roots:
        before = len(refused)
        entries = _entries(root, "input folder", refused, "nothing in it is in this scan")
        if entries is None:
            continue
        if _has_log_dir_files(entries):
            found.append(root)
            continue
        log_dirs: list[Path] = []
        others: list[tuple[Path, list[os.DirEntry]]] = []
        for e in entries:
            where, why = _checked(e, True, scope)
            if why is not None and e.is_symlink():  # a link may be a broker's folder; a FIFO is not
                refused.append(why)
            elif where is not None:
                listed = _entries(where, "folder", refused, "if it is a broker's log dir, none of its "
                                                            "replicas are in this scan")
                if listed is not None and _is_log_dir(listed, scope):
                    log_dirs.append(root / e.name)
                elif listed is not None:
                    others.append((root / e.name, listed))
        if not log_dirs and any(parse_partition_dir(p.name) is not None and _is_partition_folder(listed)
                                for p, listed in others):
            found.append(root)  # a log dir copied without meta.properties or checkpoints
            continue
        if not log_dirs and len(refused) == before:
            raise NoLogDirs(_no_log_dir(root, entries, scope))
        found.extend(log_dirs)
        skipped.extend(Skipped(str(p), _not_a_log_dir(p, listed)) for p, listed in others)
    return found


def _no_log_dir(root: Path, entries: list[os.DirEntry], scope: Scope) -> str:
    """NoLogDirs' sentence for ``root``: what was looked for, and where to look instead."""
    name = root.name if type(root) is StorePath else Path(os.path.abspath(root)).name
    if parse_partition_dir(name) is not None and _is_partition_folder(entries):
        broker, cluster = _up(root), _up(_up(root))
        if _log_dirs_in(cluster, scope):
            where = f"give the folder of the brokers' log dirs, {cluster}, or this broker's, {broker}"
        else:
            where = f"give the log dir that holds it, {broker}"
        return (f"no Kafka log dir in {root}: it is one partition's folder, and a log dir holds "
                f"{LOG_DIR_TEXT}; {where}")
    looked = f"no Kafka log dir in {root} or in its folders (a log dir holds {LOG_DIR_TEXT})"
    if not entries:
        return f"no Kafka log dir in {root}: the folder is empty (a log dir holds {LOG_DIR_TEXT})"
    deeper = _holders(root, 2, scope, [DEEPER_LISTINGS])
    if len(deeper) == 1:
        return f"{looked}; the log dirs are deeper, in {deeper[0]}: give that folder"
    if deeper:
        shown = ", ".join(map(str, deeper[:5])) + (", ..." if len(deeper) > 5 else "")
        return (f"{looked}; log dirs are deeper, in {len(deeper)} folders ({shown}): give the one of the "
                "cluster to scan (several clusters read as one would mix brokers of the same node id)")
    return f"{looked}; none is up to three levels below it either"


def _up(path: Path) -> Path:
    """The folder holding ``path``, as the person wrote it when it has a parent to name."""
    if type(path) is StorePath:
        return path.parent
    return path.parent if path.name not in ("", "..") else Path(os.path.abspath(path)).parent


def _quiet_entries(path: str | os.PathLike, budget: list[int]) -> Optional[list[os.DirEntry]]:
    """A folder's entries while looking around for a suggestion: no finding, and None once
    ``budget`` listings are spent."""
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    return _entries(path, "folder", [])


def _subfolders(folder: Path, entries: list[os.DirEntry], scope: Scope) -> list[tuple[Path, str]]:
    return [(folder / e.name, where) for e in entries for where in [_checked(e, True, scope)[0]]
            if where is not None]


def _log_dirs_in(folder: Path, scope: Scope, budget: Optional[list[int]] = None) -> list[Path]:
    """The log dirs directly in ``folder``."""
    budget = [DEEPER_LISTINGS] if budget is None else budget
    entries = _quiet_entries(folder, budget)
    if entries is None:
        return []
    found = []
    for path, where in _subfolders(folder, entries, scope):
        listed = _quiet_entries(where, budget)
        if listed is not None and _is_log_dir(listed, scope):
            found.append(path)
    return found


def _holders(folder: Path, depth: int, scope: Scope, budget: list[int]) -> list[Path]:
    """The folders at most ``depth`` levels below ``folder`` (itself included) that hold log
    dirs, breadth first: where a person meant to point."""
    level, holders = [folder], []
    for _ in range(depth + 1):
        below = []
        for f in level:
            if _log_dirs_in(f, scope, budget):
                holders.append(f)
                continue
            entries = _quiet_entries(f, budget)
            below.extend(p for p, _ in ([] if entries is None else _subfolders(f, entries, scope)))
        if holders or budget[0] <= 0:
            break
        level = below
    return holders


class NoBrokerId(ValueError):
    """A log dir without a readable meta.properties node.id and without digits in its name."""


def broker_id(path: Path, errors: list[str | Finding]) -> int:
    """The node id in the folder's meta.properties, else the last number in its name."""
    return _broker_id(path, path / META_PROPERTIES, errors)[0]


def _broker_id(path: Path, meta: Optional[Path], errors: list[str | Finding]) -> tuple[int, Optional[MetaProperties]]:
    """(node id, meta.properties when readable)."""
    props = None
    if meta is not None:
        try:
            data = read_small_file(meta, SMALL_FILE_CAPS["meta.properties"])
            props = None if data is None else parse_meta_properties(data)
            if props is not None and props.node_id is not None:
                return props.node_id, props
        except FileTooLarge as e:
            errors.append(io_finding(str(meta), e))
        except (DecodeError, OSError) as e:
            errors.append(f"{meta}: {e}")
    digits = re.findall(r"\d+", path.name)
    if not digits:
        raise NoBrokerId(f"{path}: no meta.properties node.id and no digits in the folder name")
    return int(digits[-1]), props


def scan_broker(path: Path, *, include_superseded: bool = False, follow_links: bool = False,
                within: Sequence[Path] = ()) -> BrokerDir:
    """A broker's log dir listed: its partition folders and their files. Links may lead
    into ``within`` (the input roots; default: this folder), anywhere with ``follow_links``."""
    path = location(path)
    scope = Scope.of(within or [path], follow_links)
    refused: list[Finding] = []
    # DirEntry answers is_dir() from the listing's file types where the file system gives
    # them (Path.is_dir() costs a stat per entry: a copy has thousands of partition folders).
    # Sorted by name, the order of their paths: comparing Path objects rebuilds their parts on
    # every comparison (0.9 of the 4.5 s a 30,000-replica copy's listing took under the profiler).
    entries = _entries(path, "broker folder", refused, "none of its replicas are in this scan") or []
    files: dict[str, Path] = {}
    folders: list[str] = []
    for e in entries:
        read_here = e.name in BROKER_FILES
        where, why = _checked(e, not read_here, scope)
        if why is not None and (read_here or parse_partition_dir(e.name) is not None):
            refused.append(why)  # a bad entry of another name is never read: no loss
        if where is not None:
            if read_here:
                files[e.name] = _as_path(where)
            else:
                folders.append(e.name)
    errors: list[str | Finding] = []
    node_id, meta = _broker_id(path, files.get(META_PROPERTIES), errors)
    broker = BrokerDir(node_id, path, errors=errors, files=files, refused=refused, meta=meta)
    # What each file name is, classified once for all the broker's replicas (the name kept as
    # one string for them all: ReplicaDir); the bench copy's 180,000 files have 3 names per
    # broker (naming.classify took 0.35 s of its 2.4 s listing under the profiler, 2026-12-07).
    names: dict[str, tuple] = {}
    local = type(path) is not StorePath
    if local:  # _child's join, its prefix made once: the same string for every folder
        parent = os.fspath(path)
        prefix = "" if parent == "." else parent if parent == "" or parent.endswith("/") else parent + "/"
    for name in folders:
        child = prefix + name if local else _child(path, name)
        parsed = parse_partition_dir(name)
        if parsed is None:
            broker.skipped.append(Skipped(str(child), "not a partition directory"))
            continue
        if parsed.flavor != "live" and not include_superseded:
            broker.skipped.append(Skipped(str(child), f"{parsed.flavor} partition directory"))
            continue
        replica = ReplicaDir(broker.broker, parsed.topic, parsed.partition, child)
        entries = _entries(child, "partition folder", replica.refused, "none of its files are in this scan")
        if entries is None:
            broker.unlisted.append(replica)
        else:
            _list_replica(broker, replica, entries, include_superseded, scope, names)
            broker.replicas.append(replica)
    return broker


def _child(folder: str | os.PathLike, name: str) -> str | StorePath:
    """Where a folder's entry ``name`` is: str(folder / name) for a local folder, made without
    the Path (ReplicaDir), a StorePath in a store."""
    if type(folder) is StorePath:
        return folder / name
    parent = os.fspath(folder)
    return name if parent == "." else os.path.join(parent, name)  # pathlib drops a lone "."


def _list_replica(broker: BrokerDir, replica: ReplicaDir, entries: list[os.DirEntry],
                  include_superseded: bool, scope: Scope, names: dict[str, tuple]) -> None:
    """The files of ``entries`` the scan reads, into ``replica``: where to read each, a name in
    its folder (one string for every replica: ReplicaDir), a followed link's target, or a
    StorePath in a store. ``names``: each file name to (the name, its state, its file list in
    _FILE_LISTS or None, its base offset), shared by the broker's replicas."""
    local = type(replica._path) is not StorePath
    found: tuple[list, list, list, list] = ([], [], [], [])
    for e in entries:
        named = names.get(e.name)
        if named is None:
            kind = classify(e.name)
            named = names[e.name] = (e.name, kind.state, _FILE_LISTS.get(kind.kind), kind.base_offset)
        name, state, into, base = named
        if state is not None and not include_superseded:
            broker.skipped.append(Skipped(str(_child(replica._path, name)), f"{state} file"))
            continue
        if into is None:
            continue  # not a file the scan reads
        where, why = _checked(e, False, scope)
        if why is not None:
            replica.refused.append(why)
            continue
        if where is None:
            continue
        if local:
            # the file itself: its name; a followed link: its target (absolute, realpath)
            where = name if where == e.path else where
        else:
            where = _as_path(where)
        found[into].append((base, where))
    # most lists hold one file or none: nothing to sort (240,000 sorted() calls in the bench copy)
    replica._files = tuple([tuple(files) if len(files) < 2 else tuple(sorted(files)) for files in found])
    replica._in_folder = local


def iter_brokers(roots: list[Path], *, include_superseded: bool = False, follow_links: bool = False,
                 refused: Optional[list[Finding]] = None,
                 skipped: Optional[list[Skipped]] = None) -> Iterator[BrokerDir]:
    """Each log dir under ``roots``, listed (scan_broker): one per broker, or several of one
    node id for a broker with several ``log.dirs``. What cannot be put on a broker (a folder
    that cannot be listed, a link out of the copy, a log dir with no node id) is a finding in
    ``refused``; a folder beside the log dirs that is none is in ``skipped``. Raises
    NoLogDirs (find_log_dirs) before it yields anything."""
    refused = [] if refused is None else refused
    roots = [location(r) for r in roots]
    for log_dir in find_log_dirs(roots, refused, follow_links=follow_links, skipped=skipped):
        try:
            broker = scan_broker(log_dir, include_superseded=include_superseded, follow_links=follow_links,
                                 within=roots)
        except NoBrokerId:
            refused.append(Finding(str(log_dir), -1, NO_BROKER_ID,
                                   "not read: a log dir with no node.id in a readable meta.properties and no "
                                   "digits in its name, so no broker to put its replicas on"))
            continue
        yield broker


def read_offset_checkpoint(path: Path, errors: list[str | Finding],
                           lines: Optional[dict[tuple[str, int], tuple[int, int]]] = None
                           ) -> dict[tuple[str, int], int]:
    """topic-partition -> offset from a log-dir-level checkpoint file (absent file: empty);
    ``lines`` gets topic-partition -> (line number from 1, byte position of the line)."""
    from logscan.format.checkpoint import parse_offset_checkpoint

    try:
        data = read_small_file(path, SMALL_FILE_CAPS["offset-checkpoint"])
        if data is None:
            return {}
        cp = parse_offset_checkpoint(data)
    except FileTooLarge as e:
        errors.append(io_finding(str(path), e))
        return {}
    except (DecodeError, OSError) as e:
        errors.append(f"{path}: {e}")
        return {}
    # column by column, no Python code a line: 180,000 lines in the bench copy's 9 files
    entries = cp.entries
    keys = list(zip(map(_TOPIC, entries), map(_PARTITION, entries)))
    if lines is not None:
        lines.update(zip(keys, zip(map(_LINE, entries), map(_POSITION, entries))))
    return dict(zip(keys, map(_OFFSET, entries)))


_LINE, _POSITION, _TOPIC, _PARTITION, _OFFSET = map(itemgetter, range(5))  # of an OffsetCheckpointEntry


def file_size(path: Path | StorePath | str) -> int:
    """The size of a file, local or in a store (from its listing when it has one)."""
    if type(path) is str and "://" not in path:  # a local path, as the listing holds one: store.is_uri's first test
        return os.stat(path).st_size
    if store.is_uri(path):
        return store.file_size(path)
    return os.stat(path).st_size


def _as_path(where) -> Path | StorePath:
    """Where _checked says to read, as the listing holds it: a local file's Path, a store's
    StorePath as it is."""
    return where if type(where) is StorePath else Path(where)
