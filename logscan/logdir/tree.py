"""Finding brokers, replicas and segments in copied log dirs.

An operator's copy is one folder per broker, each a Kafka log dir (meta.properties names the
node; without it the folder name's digits do). `-delete`, `-future` and `-stray` partition
dirs and `.deleted`/`.cleaned`/`.swap` files hold superseded or duplicate data: they are
skipped unless asked for, and every skip is reported.

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
from pathlib import Path
from typing import Iterator, Optional, Sequence

from logscan.format.checkpoint import parse_meta_properties
from logscan.format.errors import DecodeError

from .naming import Kind, classify, parse_partition_dir
from .segment import LINK, Finding, describe_mode, read_small_file, refusal_reason

#: The reason of a finding for a log dir the scan cannot put on a broker.
NO_BROKER_ID = "no-broker-id"
#: The broker-level files the listing reads, by name.
META_PROPERTIES = Kind.META_PROPERTIES.value
BROKER_FILES = frozenset({META_PROPERTIES, Kind.REPLICATION_OFFSET_CHECKPOINT.value,
                          Kind.LOG_START_OFFSET_CHECKPOINT.value})
#: The files of a partition folder the scan opens (found by their names' suffixes).
_READ_KINDS = frozenset({Kind.LOG_SEGMENT, Kind.PRODUCER_SNAPSHOT, Kind.TXN_INDEX, Kind.OFFSET_INDEX,
                         Kind.TIME_INDEX})


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


@dataclass(slots=True)
class ReplicaDir:
    """One partition directory of one broker."""

    broker: int
    topic: str
    partition: int
    path: Path
    segments: list[tuple[int, Path]] = field(default_factory=list)  # (base offset, .log), sorted
    snapshots: list[tuple[int, Path]] = field(default_factory=list)
    txn_indexes: list[tuple[int, Path]] = field(default_factory=list)
    # (base offset, .index/.timeindex): a segment's other files name it even when its .log is
    # not in the copy
    indexes: list[tuple[int, Path]] = field(default_factory=list)
    refused: list[Finding] = field(default_factory=list)  # its entries not listed, and why


@dataclass(slots=True)
class BrokerDir:
    broker: int
    path: Path
    replicas: list[ReplicaDir] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # BROKER_FILES found, by name: the path to open (a followed link's target)
    files: dict[str, Path] = field(default_factory=dict)
    refused: list[Finding] = field(default_factory=list)  # its entries not listed, and why
    # partition folders that could not be listed (each with its finding in ``refused``)
    unlisted: list[ReplicaDir] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a symbolic link in the copy may lead: into an input root (by real path), or
    anywhere with ``follow_links``."""

    roots: tuple[str, ...]
    follow_links: bool = False

    @classmethod
    def of(cls, roots: Sequence[str | os.PathLike], follow_links: bool = False) -> "Scope":
        return cls(tuple(os.path.join(os.path.realpath(r), "") for r in roots), follow_links)

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
    return Finding(path, -1, "io", f"not read: {what} ({error.strerror or error})")


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
    return Finding(path, -1, refusal_reason(mode), f"not read: {via}{describe_mode(mode)}, not a regular file")


def _entries(path: str | os.PathLike, what: str, refused: list[Finding],
             so: Optional[str] = None) -> Optional[list[os.DirEntry]]:
    """A folder's entries by name, or None and a finding when it cannot be listed (``so``:
    what that costs the scan)."""
    try:
        with os.scandir(path) as it:
            return sorted(it, key=_name)
    except OSError as e:
        refused.append(Finding(os.fspath(path), -1, "io", f"{what} cannot be listed "
                                                          f"({e.strerror or e}){'' if so is None else '; ' + so}"))
        return None


def _name(entry: os.DirEntry) -> str:
    return entry.name


def _is_log_dir(entries: list[os.DirEntry]) -> bool:
    """meta.properties or a partition folder (or a link named like one) among ``entries``."""
    return any(e.name == META_PROPERTIES or (parse_partition_dir(e.name) is not None
                                              and (e.is_symlink() or e.is_dir(follow_symlinks=False)))
               for e in entries)


def find_log_dirs(roots: list[Path], refused: Optional[list[Finding]] = None, *,
                  follow_links: bool = False) -> list[Path]:
    """Each root is a log dir itself (it has meta.properties) or holds one log dir per
    broker. A folder that cannot be listed, or a link that may not be followed, is a finding
    in ``refused``."""
    refused = [] if refused is None else refused
    scope = Scope.of(roots, follow_links)
    found: list[Path] = []
    for root in roots:
        entries = _entries(root, "input folder", refused, "nothing in it is in this scan")
        if entries is None:
            continue
        if any(e.name == META_PROPERTIES for e in entries):
            found.append(root)
            continue
        for e in entries:
            where, why = _checked(e, True, scope)
            if why is not None and e.is_symlink():  # a link may be a broker's folder; a FIFO is not
                refused.append(why)
            elif where is not None:
                listed = _entries(where, "folder", refused, "if it is a broker's log dir, none of its "
                                                            "replicas are in this scan")
                if listed is not None and _is_log_dir(listed):
                    found.append(root / e.name)
    return found


class NoBrokerId(ValueError):
    """A log dir without a readable meta.properties node.id and without digits in its name."""


def broker_id(path: Path, errors: list[str]) -> int:
    """The node id in the folder's meta.properties, else the last number in its name."""
    return _broker_id(path, path / META_PROPERTIES, errors)


def _broker_id(path: Path, meta: Optional[Path], errors: list[str]) -> int:
    if meta is not None:
        try:
            data = read_small_file(meta)
            props = None if data is None else parse_meta_properties(data)
            if props is not None and props.node_id is not None:
                return props.node_id
        except (DecodeError, OSError) as e:
            errors.append(f"{meta}: {e}")
    digits = re.findall(r"\d+", path.name)
    if not digits:
        raise NoBrokerId(f"{path}: no meta.properties node.id and no digits in the folder name")
    return int(digits[-1])


def scan_broker(path: Path, *, include_superseded: bool = False, follow_links: bool = False,
                within: Sequence[Path] = ()) -> BrokerDir:
    """A broker's log dir listed: its partition folders and their files. Links may lead
    into ``within`` (the input roots; default: this folder), anywhere with ``follow_links``."""
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
                files[e.name] = Path(where)
            else:
                folders.append(e.name)
    errors: list[str] = []
    broker = BrokerDir(_broker_id(path, files.get(META_PROPERTIES), errors), path, errors=errors,
                       files=files, refused=refused)
    for name in folders:
        child = path / name
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
            _list_replica(broker, replica, entries, include_superseded, scope)
            broker.replicas.append(replica)
    return broker


def _list_replica(broker: BrokerDir, replica: ReplicaDir, entries: list[os.DirEntry],
                  include_superseded: bool, scope: Scope) -> None:
    """The files of ``entries`` the scan reads, into ``replica``; a Path only for those."""
    for e in entries:
        kind = classify(e.name)
        if kind.state is not None and not include_superseded:
            broker.skipped.append(Skipped(str(replica.path / e.name), f"{kind.state} file"))
            continue
        if kind.kind not in _READ_KINDS:
            continue
        where, why = _checked(e, False, scope)
        if why is not None:
            replica.refused.append(why)
            continue
        if where is None:
            continue
        if kind.kind is Kind.LOG_SEGMENT:
            replica.segments.append((kind.base_offset, Path(where)))
        elif kind.kind is Kind.PRODUCER_SNAPSHOT:
            replica.snapshots.append((kind.base_offset, Path(where)))
        elif kind.kind is Kind.TXN_INDEX:
            replica.txn_indexes.append((kind.base_offset, Path(where)))
        else:
            replica.indexes.append((kind.base_offset, Path(where)))
    replica.segments.sort()
    replica.indexes.sort()
    replica.snapshots.sort()
    replica.txn_indexes.sort()


def iter_brokers(roots: list[Path], *, include_superseded: bool = False, follow_links: bool = False,
                 refused: Optional[list[Finding]] = None) -> Iterator[BrokerDir]:
    """Each broker's log dir under ``roots``, listed (scan_broker). What cannot be put on a
    broker (a folder that cannot be listed, a link out of the copy, a log dir with no node
    id) is a finding in ``refused``."""
    refused = [] if refused is None else refused
    for log_dir in find_log_dirs(roots, refused, follow_links=follow_links):
        try:
            broker = scan_broker(log_dir, include_superseded=include_superseded, follow_links=follow_links,
                                 within=roots)
        except NoBrokerId:
            refused.append(Finding(str(log_dir), -1, NO_BROKER_ID,
                                   "not read: a log dir with no node.id in a readable meta.properties and no "
                                   "digits in its name, so no broker to put its replicas on"))
            continue
        yield broker


def read_offset_checkpoint(path: Path, errors: list[str]) -> dict[tuple[str, int], int]:
    """topic-partition -> offset from a log-dir-level checkpoint file (absent file: empty)."""
    from logscan.format.checkpoint import parse_offset_checkpoint

    try:
        data = read_small_file(path)
        if data is None:
            return {}
        cp = parse_offset_checkpoint(data)
    except (DecodeError, OSError) as e:
        errors.append(f"{path}: {e}")
        return {}
    return {(e.topic, e.partition): e.offset for e in cp.entries}


def file_size(path: Path) -> int:
    return os.stat(path).st_size
