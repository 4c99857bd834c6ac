"""What a file or directory in a copied Kafka log dir is, from its name alone (no file system).

Kafka encodes a lot in names (LogFileUtils, LocalLog, Snapshots):

- segment files and producer snapshots: ``<offset as 20 zero-padded digits>.<suffix>``; the
  offset is the segment's base offset (for a ``.snapshot``: the exclusive end offset of the
  state it holds). Kafka parses the digits leniently (``Long.parseLong``) but always writes 20.
- a state suffix appended to a whole file name: ``.deleted`` (async delete pending: old
  content, ignore it or you double count), ``.cleaned`` (cleaner output in progress, deleted at
  startup) and ``.swap`` (cleaner/split output about to replace originals at startup).
- KRaft snapshots: ``<20-digit end offset>-<10-digit epoch>.checkpoint``, with ``.part``
  (being written) or ``.deleted`` after it; ``bootstrap.checkpoint`` in the metadata dir.
- partition dirs: ``topic-N``, and ``topic-N.<32-hex id>-delete|-future|-stray`` (the topic
  may be truncated in ``-delete``/``-stray`` names to keep them <= 255 characters); the topic
  is one Kafka's ``Topic.validate`` accepts, so a folder named otherwise was not written by Kafka.
- checkpoint files are written to ``<name>.tmp`` and renamed: a ``.tmp`` is an interrupted write.

kafka-dump-log picks a decoder by the text after the *last* dot, so suffixed copies
(``.deleted`` ...) are "Ignoring unknown file" there; ``dump_log_suffix`` says what it does.
"""

from __future__ import annotations

import enum
import posixpath
import re
from typing import NamedTuple

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1


class Kind(enum.Enum):
    LOG_SEGMENT = "log"
    OFFSET_INDEX = "index"
    TIME_INDEX = "timeindex"
    TXN_INDEX = "txnindex"
    PRODUCER_SNAPSHOT = "snapshot"
    KRAFT_SNAPSHOT = "kraft-snapshot"
    BOOTSTRAP_SNAPSHOT = "bootstrap-snapshot"
    RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
    REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
    LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
    CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    META_PROPERTIES = "meta.properties"
    QUORUM_STATE = "quorum-state"
    CLEAN_SHUTDOWN = "clean-shutdown"
    LOCK = "lock"
    UNKNOWN = "unknown"


#: Kinds whose files hold the four-column ``topic partition offset`` checkpoint format.
OFFSET_CHECKPOINT_KINDS = frozenset({
    Kind.RECOVERY_POINT_CHECKPOINT, Kind.REPLICATION_OFFSET_CHECKPOINT,
    Kind.LOG_START_OFFSET_CHECKPOINT, Kind.CLEANER_OFFSET_CHECKPOINT})

_SEGMENT_SUFFIXES = {
    "log": Kind.LOG_SEGMENT, "index": Kind.OFFSET_INDEX, "timeindex": Kind.TIME_INDEX,
    "txnindex": Kind.TXN_INDEX, "snapshot": Kind.PRODUCER_SNAPSHOT,
}
_FIXED_NAMES = {
    "recovery-point-offset-checkpoint": Kind.RECOVERY_POINT_CHECKPOINT,
    "replication-offset-checkpoint": Kind.REPLICATION_OFFSET_CHECKPOINT,
    "log-start-offset-checkpoint": Kind.LOG_START_OFFSET_CHECKPOINT,
    "cleaner-offset-checkpoint": Kind.CLEANER_OFFSET_CHECKPOINT,
    "leader-epoch-checkpoint": Kind.LEADER_EPOCH_CHECKPOINT,
    "partition.metadata": Kind.PARTITION_METADATA,
    "meta.properties": Kind.META_PROPERTIES,
    "quorum-state": Kind.QUORUM_STATE,
    ".kafka_cleanshutdown": Kind.CLEAN_SHUTDOWN,
    ".lock": Kind.LOCK,
    "bootstrap.checkpoint": Kind.BOOTSTRAP_SNAPSHOT,
}
FILE_STATE_SUFFIXES = ("deleted", "cleaned", "swap")

_SEGMENT_NAME = re.compile(r"([0-9]+)\.(log|index|timeindex|txnindex|snapshot)(?:\.(deleted|cleaned|swap))?")
_KRAFT_SNAPSHOT_NAME = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(?:\.(part|deleted))?")


class FileKind(NamedTuple):
    """``state`` is the suffix after the real name (``deleted``, ``cleaned``, ``swap``,
    ``part``, ``tmp``) or None for a live file. ``base_offset`` is set for segment files and
    producer snapshots; ``end_offset``/``epoch`` for KRaft snapshots."""

    kind: Kind
    name: str
    state: str | None = None
    base_offset: int | None = None
    end_offset: int | None = None
    epoch: int | None = None

    @property
    def is_live(self) -> bool:
        """A file the broker would load as is (not pending delete, in-progress or temporary)."""
        return self.state is None and self.kind is not Kind.UNKNOWN


def base_offset_from_name(name: str) -> int | None:
    """Offset in ``00000000000000000042.log`` style names (any segment-family suffix)."""
    match = _SEGMENT_NAME.fullmatch(posixpath.basename(name))
    if match is None or int(match.group(1)) > INT64_MAX:
        return None
    return int(match.group(1))


def segment_file_name(base_offset: int, suffix: str) -> str:
    """LogFileUtils.filenamePrefixFromOffset + suffix, e.g. (42, "log") -> 000...042.log."""
    return f"{base_offset:020d}.{suffix}"


def classify(path: str) -> FileKind:
    """The kind of a file from its name (the directory part of ``path`` is ignored)."""
    name = posixpath.basename(path.rstrip("/")) if "/" in path else path
    if name[:1].isdigit():  # only the names of segment files and KRaft snapshots start with one
        kind = _numbered(name)
        if kind is not None:
            return kind
    if name in _FIXED_NAMES:
        return FileKind(_FIXED_NAMES[name], name)
    if name.endswith(".tmp") and name[:-4] in _FIXED_NAMES:
        return FileKind(_FIXED_NAMES[name[:-4]], name, "tmp")
    return FileKind(Kind.UNKNOWN, name)


def _numbered(name: str) -> FileKind | None:
    """A segment file or producer snapshot (by its base offset), or a KRaft snapshot."""
    suffix = name[21:]
    if name[20:21] == "." and suffix in _SEGMENT_SUFFIXES and name[:20].isdigit() and name[:20].isascii():
        # the name Kafka gives a live segment file (segment_file_name): no pattern to match
        base = int(name[:20])
        if base <= INT64_MAX:
            return FileKind(_SEGMENT_SUFFIXES[suffix], name, None, base)
    match = _SEGMENT_NAME.fullmatch(name)
    if match and int(match.group(1)) <= INT64_MAX:
        return FileKind(_SEGMENT_SUFFIXES[match.group(2)], name, match.group(3),
                        base_offset=int(match.group(1)))
    match = _KRAFT_SNAPSHOT_NAME.fullmatch(name)
    if match and int(match.group(1)) <= INT64_MAX and int(match.group(2)) <= INT32_MAX:
        return FileKind(Kind.KRAFT_SNAPSHOT, name, match.group(3),
                        end_offset=int(match.group(1)), epoch=int(match.group(2)))
    return None


def dump_log_suffix(name: str) -> str | None:
    """What kafka-dump-log 4.1.1 dispatches on: the text from the last dot (".log",
    ".checkpoint", ".index", ".timeindex", ".snapshot", ".txnindex" are handled, anything
    else is "Ignoring unknown file"). None when the name has no dot: the 4.1.1 tool then
    fails with StringIndexOutOfBoundsException instead of ignoring the file."""
    base = posixpath.basename(name)
    dot = base.rfind(".")
    return None if dot < 0 else base[dot:]


# --- partition directories -------------------------------------------------------------

class PartitionDir(NamedTuple):
    """``flavor``: "live", "delete", "future" or "stray"."""

    topic: str
    partition: int
    flavor: str


_DIR_FLAVORS = ("delete", "future", "stray")
_FLAVOR_ENDINGS = tuple("-" + f for f in _DIR_FLAVORS)
# LocalLog.DELETE_DIR_PATTERN and friends: ^(\S+)-(\S+)\.(\S+)-<flavor>
_FLAVORED_DIR = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)")
_PARTITION_NUMBER = re.compile(r"\+?[0-9]+")


def parse_partition_dir(name: str) -> PartitionDir | None:
    """LocalLog.parseTopicPartitionName; None where Kafka would throw (not a partition dir)."""
    name = posixpath.basename(name.rstrip("/")) if "/" in name else name
    if not name or "-" not in name:
        return None
    flavor = "live"
    if name.endswith(_FLAVOR_ENDINGS):  # one call for the three, not one each (issue 30)
        for candidate in _DIR_FLAVORS:
            if name.endswith("-" + candidate):
                if not _FLAVORED_DIR.fullmatch(name):
                    return None
                flavor = candidate
                name = name[:name.rindex(".")]
                break
    topic, _, number = name.rpartition("-")
    if not topic:
        return None
    # ASCII digits alone, the name Kafka gives (``topic-17``): what the pattern takes, unmatched
    if not (number.isdigit() and number.isascii()) and not _PARTITION_NUMBER.fullmatch(number):
        return None
    partition = int(number)
    if partition > INT32_MAX:
        return None
    return PartitionDir(topic, partition, flavor)


# --- topic names -------------------------------------------------------------------------

# org.apache.kafka.common.internals.Topic.validate (Kafka 4.1): MAX_NAME_LENGTH = 249,
# LEGAL_CHARS = [a-zA-Z0-9._-], not empty and neither "." nor ".." (which, as folder names,
# are the log dir itself and its parent).
TOPIC_MAX_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,%d}" % TOPIC_MAX_LENGTH)
LEGAL_TOPIC_TEXT = (f"1 to {TOPIC_MAX_LENGTH} ASCII letters, digits, '.', '_' and '-', "
                    "neither '.' nor '..'")


def is_legal_topic(topic: str) -> bool:
    """Topic.isValid: a name Kafka lets a topic have. Shell metacharacters, spaces and
    newlines are never in one, which is what lets a topic be pasted into a command line."""
    return topic not in (".", "..") and _LEGAL_TOPIC.fullmatch(topic) is not None


# --- internal topics ---------------------------------------------------------------------

class InternalTopicDecoder(enum.Enum):
    """The decoder an internal topic's records need; the value is kafka-dump-log's option."""

    TRANSACTION_LOG = "--transaction-log-decoder"
    OFFSETS = "--offsets-decoder"
    CLUSTER_METADATA = "--cluster-metadata-decoder"
    SHARE_GROUP_STATE = "--share-group-state-decoder"
    REMOTE_LOG_METADATA = "--remote-log-metadata-decoder"


_INTERNAL_TOPICS = {
    "__transaction_state": InternalTopicDecoder.TRANSACTION_LOG,
    "__consumer_offsets": InternalTopicDecoder.OFFSETS,
    "__cluster_metadata": InternalTopicDecoder.CLUSTER_METADATA,
    "__share_group_state": InternalTopicDecoder.SHARE_GROUP_STATE,
    "__remote_log_metadata": InternalTopicDecoder.REMOTE_LOG_METADATA,
}


def internal_topic_decoder(topic: str) -> InternalTopicDecoder | None:
    return _INTERNAL_TOPICS.get(topic)


def decoder_for_partition_dir(name: str) -> InternalTopicDecoder | None:
    """Decoder for the records of a partition dir (any flavor), None for user topics.

    A ``-delete`` dir's topic can be truncated, so only an exact internal name matches."""
    parsed = parse_partition_dir(name)
    return None if parsed is None else internal_topic_decoder(parsed.topic)
