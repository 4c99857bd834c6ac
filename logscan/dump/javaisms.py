"""How the JVM spells things kafka-dump-log prints, so our text matches byte for byte.

kafka-dump-log 4.1.1 is the Scala object ``kafka.tools.DumpLogSegments`` (in kafka_2.13, not
kafka-tools). Its end-of-run stderr blocks iterate ``scala.collection.mutable.HashMap``s keyed
by ``File.getAbsolutePath``, so with several files the block order is the hash-table order,
reproduced here; 4.4.0's Java port iterates ``java.util.HashMap``s instead.
"""

from __future__ import annotations

import os
import re

_SLASHES = re.compile(r"/{2,}")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")  # logscan.logdir.store.is_uri's test


def java_file_str(path: str) -> str:
    """``new File(path).toString()``: repeated slashes collapsed, trailing slash dropped. A
    URI (``s3://bucket/...``, which kafka-dump-log cannot read) is kept as given."""
    if _URI.match(path):
        return path
    p = _SLASHES.sub("/", path)
    if len(p) > 1 and p.endswith("/"):
        p = p[:-1]
    return p


def java_absolute_path(path: str) -> str:
    """``new File(path).getAbsolutePath()``: cwd + '/' + path, with no '..' resolution."""
    p = java_file_str(path)
    if p.startswith("/") or _URI.match(p):
        return p
    cwd = os.getcwd()
    return cwd if p == "" else f"{cwd.rstrip('/')}/{p}"


def java_file_name(path: str) -> str:
    """``File.getName``: the text after the last slash."""
    return java_file_str(path).rsplit("/", 1)[-1]


def java_string_hash(s: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def scala_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap[String, _]`` after inserting ``keys``.

    The table starts at 16 buckets and doubles when an insert would reach 3/4 full; the
    bucket of a key is ``improved & (len - 1)`` with ``improved = h ^ (h >>> 16)``, and a
    bucket's nodes are kept sorted by (signed) improved hash.
    """
    size, length, seen = 0, 16, []
    for k in keys:
        if k in seen:
            continue
        if size + 1 >= length * 0.75:
            length *= 2
        seen.append(k)
        size += 1

    def improved(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        v = h ^ (h >> 16)
        return v - (1 << 32) if v & 0x80000000 else v

    return sorted(seen, key=lambda k: (improved(k) & (length - 1), improved(k)))


def java_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a ``java.util.HashMap<String, _>`` whose entries were made by
    ``computeIfAbsent`` in the order of ``keys`` (kafka-dump-log 4.4.0's end-of-run maps).

    The table starts at 16 buckets and doubles when an insert finds more entries than 3/4 of it
    (computeIfAbsent resizes before inserting, put after); the bucket of a key is
    ``(h ^ (h >>> 16)) & (len - 1)``; computeIfAbsent puts a new node at the head of its bucket
    and a resize keeps the nodes' order, so a bucket lists its keys newest first. (A bucket of
    8 or more keys in a table of 64 or more becomes a tree, which is not modelled.)
    """
    seen = list(dict.fromkeys(keys))
    length, threshold = 16, 12
    for size in range(len(seen)):
        if size > threshold:
            length, threshold = length * 2, threshold * 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (length - 1)

    order = {k: i for i, k in enumerate(seen)}
    return sorted(seen, key=lambda k: (bucket(k), -order[k]))


def optional_long(value: int | None) -> str:
    """``java.util.OptionalLong.toString``."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def java_bool(value: bool) -> str:
    return "true" if value else "false"
