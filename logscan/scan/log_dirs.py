"""A node's log dirs as `__cluster_metadata` knows them, against those the copy holds (issue 36):
a forgotten second disk of a JBOD broker.

Since KIP-858 (metadata version 3.7-IV2) a broker registers the directory.id of every log dir it
has (meta.properties): RegisterBrokerRecord.LogDirs, replaced by a BrokerRegistrationChangeRecord
whose LogDirs is not empty (ClusterControlManager.replay), dropped by UnregisterBrokerRecord. The
controller records the dir of each replica in PartitionRecord.Directories and
PartitionChangeRecord.Directories, aligned with Replicas (null: unchanged; DirectoryId's reserved
ids, UNASSIGNED, LOST, MIGRATING and the rest below 100, name no dir). A node of the copy whose
registered or assigned dirs are not all among the directory.ids of its copied dirs has a log dir
the copy lacks, and the replicas Kafka placed there are not in the copy: an `incomplete` finding
per such dir, at the record that names it, with the partitions placed there.

Every replica the copy holds of such a partition gets a ``dir_gap`` (listing.ListedReplica): the
missing replica may have led the partition and reached further than the copies here (a follower
lags its leader). The per-replica step adds it to the replica's copy_gap
(replica.ReplicaAnalyser), which withholds a hanging verdict resting on the replica
(logscan.state.hanging.with_copy) and, on a `__transaction_state` partition, the verdicts
resting on its records (coordinator_copy).
A copy of a ZooKeeper-era broker (meta.properties without directory.id) or whose
`__cluster_metadata` predates KIP-858 names no dir: nothing is told then.

A replica named on a log dir the copy holds, without its folder there (absent_replicas): the
dir's own checkpoints list the partitions it held, and `__cluster_metadata` gives each
partition's replica set (PartitionRecord/PartitionChangeRecord Replicas, every KRaft version).
Its files row (kind ``missing``, or ``not_copied`` when the copy holds the partition nowhere)
says where the folder belongs and what names it; a ``missing`` one is an `incomplete` finding
at the checkpoint line, else at the metadata record. It withholds no verdict by itself: the
partition's other replicas are judged (a last leader's absence withholds them:
logscan.state.hanging.without_leader).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional

from logscan.format.checkpoint import uuid_to_kafka_string
from logscan.logdir.segment import Finding
from logscan.logdir.tree import BrokerDir, file_size

from .replica import CLUSTER_METADATA_TOPIC, INCOMPLETE, MetadataRecordAt, read_metadata_records

#: DirectoryId.reserved: a Uuid with most significant bits 0 and least below 100 names no dir.
_RESERVED_BELOW = 100
#: Partitions a finding names before "and N more".
SHOWN = 10


def dir_name(value: uuid.UUID) -> Optional[str]:
    """A directory id as meta.properties writes it (Uuid.toString), None for a reserved one."""
    if value.int < _RESERVED_BELOW:
        return None
    return uuid_to_kafka_string(value.bytes)


@dataclass(slots=True)
class Placement:
    """What `__cluster_metadata` says of the nodes' log dirs, replayed in log order."""

    registered: dict[int, tuple[frozenset[str], MetadataRecordAt]] = field(default_factory=dict)
    # (topic id, partition) -> {node: directory id or None}
    dirs: dict[tuple[str, int], dict[int, Optional[str]]] = field(default_factory=dict)
    # directory id -> the first record assigning a replica to it (where a finding points)
    first_assigned: dict[str, MetadataRecordAt] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    # (topic id, partition) -> the record that gave its replica set last
    assigned: dict[tuple[str, int], MetadataRecordAt] = field(default_factory=dict)

    def replay(self, r: MetadataRecordAt) -> None:
        msg = r.message
        kind = r.type_name
        if kind == "TOPIC_RECORD":
            self.names[str(msg.topic_id)] = msg.name
        elif kind == "REMOVE_TOPIC_RECORD":
            tid = str(msg.topic_id)
            self.names.pop(tid, None)
            for key in [k for k in self.dirs if k[0] == tid]:
                del self.dirs[key]
                self.assigned.pop(key, None)
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            key = (str(msg.topic_id), msg.partition_id)
            if msg.replicas is not None:
                self.assigned[key] = r
            replicas = msg.replicas if msg.replicas is not None else tuple(self.dirs.get(key, {}))
            if msg.directories is not None and len(msg.directories) == len(replicas):
                placed = dict(zip(replicas, map(dir_name, msg.directories)))
                for d in placed.values():
                    if d is not None:
                        self.first_assigned.setdefault(d, r)
                self.dirs[key] = placed
            elif msg.replicas is not None:  # new replicas, no dirs told
                self.dirs[key] = dict.fromkeys(replicas)
        elif kind == "REGISTER_BROKER_RECORD" or (kind == "BROKER_REGISTRATION_CHANGE_RECORD" and msg.log_dirs):
            self.registered[msg.broker_id] = (frozenset(filter(None, map(dir_name, msg.log_dirs))), r)
        elif kind == "UNREGISTER_BROKER_RECORD":
            self.registered.pop(msg.broker_id, None)

    def placed_on(self, node: int, directory: str) -> list[tuple[str, int]]:
        """(topic, partition) of node's replicas the controller placed on ``directory``."""
        return sorted((self.names[tid], p) for (tid, p), placed in self.dirs.items()
                      if tid in self.names and placed.get(node) == directory)

    def by_name(self) -> dict[tuple[str, int], dict[int, Optional[str]]]:
        """(topic, partition) -> {node: directory id or None}, of the topics still named."""
        return {(self.names[tid], p): placed for (tid, p), placed in self.dirs.items() if tid in self.names}


@dataclass(slots=True)
class MissingDirs:
    findings: list[tuple[int, Finding]] = field(default_factory=list)  # (node, finding)
    # (topic, partition) -> why every replica of it in the copy cannot be judged alone
    gaps: dict[tuple[str, int], str] = field(default_factory=dict)


def placement(metadata_replicas: Iterable) -> Optional[Placement]:
    """The placement read from the `__cluster_metadata` replica whose files reach furthest
    (newest segment, then its size); None when the copy holds none. Its decode errors are
    the metadata step's to report."""
    best = None
    for r in metadata_replicas:
        reach = (r.segments[-1][0], _size(r.segments[-1][1])) if r.segments else (-1, -1)
        if best is None or reach > best[0]:
            best = (reach, r)
    if best is None:
        return None
    out = Placement()
    for record in read_metadata_records(best[1], []):
        out.replay(record)
    return out


def _size(path) -> int:
    try:
        return file_size(path)
    except OSError:
        return -1


def missing_dirs(brokers: list[BrokerDir], placed: Optional[Placement]) -> MissingDirs:
    """The log dirs of the copy's nodes that `__cluster_metadata` names and the copy lacks."""
    out = MissingDirs()
    if placed is None:
        return out
    copied: dict[int, dict[str, BrokerDir]] = defaultdict(dict)
    for b in brokers:
        if b.meta is not None and b.meta.directory_id is not None:
            copied[b.broker][b.meta.directory_id] = b
    held = {(r.topic, r.partition, b.broker) for b in brokers for r in b.replicas}
    by_name = placed.by_name()
    for node in sorted(copied):
        here = copied[node]
        registered, reg_at = placed.registered.get(node, (frozenset(), None))
        assigned = {d for placed_dirs in placed.dirs.values() for n, d in placed_dirs.items()
                    if n == node and d is not None}
        for d in sorted((registered | assigned) - set(here)):
            at = reg_at if d in registered else placed.first_assigned[d]
            on = placed.placed_on(node, d)
            for tp in on:
                out.gaps.setdefault(tp, (f"node {node}'s replica of {tp[0]}-{tp[1]} is in its log dir {d}, which is "
                                         f"not in the copy ('incomplete' finding): it may have led the partition and "
                                         f"reached past the copies here"))
            elsewhere = [tp for tp in on if any((tp[0], tp[1], n) in held for n in by_name[tp] if n != node)]
            out.findings.append((node, Finding(at.path, at.position, INCOMPLETE, _sentence(node, d, at, here, on,
                                                                                          elsewhere, d in registered))))
    return out


def _sentence(node: int, d: str, at: MetadataRecordAt, here: dict[str, BrokerDir], on: list[tuple[str, int]],
              elsewhere: list[tuple[str, int]], registered: bool) -> str:
    source = (f"{_record(at.type_name)} at offset {at.offset} registers it" if registered
              else f"{_record(at.type_name)} at offset {at.offset} places a replica on it")
    copied = ", ".join(f"{b.path} ({i})" for i, b in sorted(here.items()))
    text = (f"incomplete copy: node {node}'s log dir {d} is not in the copy ({source}; the copy holds node {node}'s "
            f"log dirs {copied} only): a forgotten disk of a broker with several log.dirs; copy every one")
    if on:
        names = ", ".join(f"{t}-{p}" for t, p in on[:SHOWN]) + (f" and {len(on) - SHOWN} more" if len(on) > SHOWN
                                                                  else "")
        text += (f". Kafka placed {len(on)} of node {node}'s replicas there (PartitionRecord/PartitionChangeRecord "
                 f"Directories): {names}; the copy holds {len(elsewhere)} of these partitions on other brokers only, "
                 f"where a verdict cannot be checked against node {node}'s replica, which may have led the partition "
                 f"and reached further")
    else:
        text += ". No replica is placed there by the records read"
    return text


def _record(type_name: str) -> str:
    return "".join(w.capitalize() for w in type_name.split("_"))


def metadata_replicas(brokers: list[BrokerDir]) -> list:
    """The copy's `__cluster_metadata` replicas (ReplicaDir): the dirs (KRaft with KIP-858)
    and the replica set of every partition."""
    return [r for b in brokers for r in b.replicas if r.topic == CLUSTER_METADATA_TOPIC and r.partition == 0]


# --- a KRaft node without the metadata log ---------------------------------------------------

#: files row of a KRaft node's log dir in a copy that holds `__cluster_metadata-0` nowhere.
NO_METADATA = "no_metadata"


def without_metadata(brokers: list[BrokerDir]) -> list[tuple[int, BrokerDir, Finding]]:
    """(node, its first log dir, finding) for each KRaft node (meta.properties version 1, with
    node.id) of the copy when no node's copy holds `__cluster_metadata-0`: the partitions'
    leaders, and whether the copy holds each partition's last leader, cannot be read (the
    metadata log is in the node's metadata.log.dir, which may be set apart from its log.dirs).
    Empty when some node's copy holds it: every node replicates the one metadata log."""
    if metadata_replicas(brokers):
        return []
    kraft: dict[int, list[BrokerDir]] = defaultdict(list)
    for b in brokers:
        if b.meta is not None and b.meta.version == 1 and b.meta.node_id is not None:
            kraft[b.broker].append(b)
    out = []
    for node, dirs in sorted(kraft.items()):
        first = sorted(dirs, key=lambda b: str(b.path))[0]
        where = ", ".join(sorted(str(b.path) for b in dirs))
        out.append((node, first, Finding(
            str(first.path / "meta.properties"), -1, INCOMPLETE,
            f"incomplete copy: node {node} is a KRaft node (meta.properties version 1, node.id {node}), but "
            f"__cluster_metadata-0 is in none of its log dirs in the copy ({where}) nor in any other node's: the "
            f"partitions' leaders cannot be read from it, so they are taken from the replicas' leader-epoch-checkpoint "
            f"and the scan cannot tell whether the copy holds each partition's last leader (whose log holds every "
            f"marker written). Copy node {node}'s metadata.log.dir (the folder holding __cluster_metadata-0; its "
            f"log.dirs' first when not set)")))
    return out


# --- replicas named but not copied ------------------------------------------------------------

#: files rows of a replica the brokers' own files name on a log dir in the copy that lacks its
#: folder: ``missing`` when the copy holds the partition from other brokers (an 'incomplete'
#: finding), ``not_copied`` when it holds no replica of it at all (a partition left out).
MISSING, NOT_COPIED = "missing", "not_copied"


class CheckpointLine(NamedTuple):
    """Where a log dir's checkpoint lists a partition."""

    log_dir: BrokerDir
    file: str
    line: int       # from 1
    position: int   # byte of the line's start


@dataclass(frozen=True, slots=True)
class AbsentReplica:
    node: int
    topic: str
    partition: int
    kind: str                      # MISSING or NOT_COPIED
    folder: str                    # where the copy should hold it: its log dir's path / topic-partition
    finding: Finding               # located at the checkpoint line, else at the metadata record
    others: tuple[int, ...]        # the brokers whose replicas of the partition the copy holds


def absent_replicas(brokers: list[BrokerDir], placed: Optional[Placement],
                    listed: dict[int, dict[tuple[str, int], CheckpointLine]]) -> list[AbsentReplica]:
    """The replicas the copy's log dirs should hold and do not: each node with a log dir in
    the copy held every partition its dirs' checkpoints list (``listed``: per log dir, by
    ``id(BrokerDir)``, the partitions its replication-offset-, recovery-point-offset- or
    log-start-offset-checkpoint lists: LogManager and ReplicaManager write them for the logs
    that dir holds) and every partition whose replica set in `__cluster_metadata`
    (PartitionRecord/PartitionChangeRecord Replicas) names it. Where the metadata is in the
    copy it decides (a checkpoint may still list a deleted or moved-away partition for up to
    a checkpoint interval): a partition it does not place on the node is not looked for. A
    replica on a log dir the copy lacks is missing_dirs' (a forgotten disk), not looked for
    here."""
    # what the copy holds (topic, partition, node), not looked for
    held = {(r.topic, r.partition, b.broker) for b in brokers for r in (*b.replicas, *b.unlisted)}
    dirs: dict[int, list[BrokerDir]] = defaultdict(list)
    for b in brokers:
        dirs[b.broker].append(b)
    ids = {n: {b.meta.directory_id: b for b in ds if b.meta is not None and b.meta.directory_id is not None}
           for n, ds in dirs.items()}
    by_name = placed.by_name() if placed is not None else {}
    assigned = ({(placed.names[tid], p): r for (tid, p), r in placed.assigned.items() if tid in placed.names}
                if placed is not None else {})
    expected: dict[tuple[int, str, int], tuple[Optional[CheckpointLine], Optional[MetadataRecordAt]]] = {}
    for node, ds in dirs.items():
        for b in ds:
            for tp, where in listed.get(id(b), {}).items():
                if ((*tp, node) in held or tp[0] == CLUSTER_METADATA_TOPIC
                        or (by_name and node not in by_name.get(tp, {}))):
                    continue
                key = (node, *tp)
                if key not in expected:
                    expected[key] = (where, assigned.get(tp))
    for tp, placed_dirs in by_name.items():
        for node, d in placed_dirs.items():
            if node not in dirs or (*tp, node) in held or tp[0] == CLUSTER_METADATA_TOPIC:
                continue
            if d is not None and ids.get(node) and d not in ids[node]:
                continue  # on a log dir the copy lacks: missing_dirs names it
            expected.setdefault((node, *tp), (None, assigned.get(tp)))
    out = []
    for (node, topic, partition), (line, record) in sorted(expected.items()):
        if line is None and record is None:
            continue
        tp = (topic, partition)
        d = by_name.get(tp, {}).get(node)
        log_dir = (line.log_dir if line is not None else ids.get(node, {}).get(d) if d is not None else None) \
            or sorted(dirs[node], key=lambda b: str(b.path))[0]
        folder = str(log_dir.path / f"{topic}-{partition}")
        others = tuple(n for n in sorted(dirs) if (topic, partition, n) in held)
        kind = MISSING if others else NOT_COPIED
        out.append(AbsentReplica(node, topic, partition, kind, folder,
                                 _absent_finding(node, topic, partition, folder, line, record, others, dirs[node]),
                                 others))
    return out


def _absent_finding(node: int, topic: str, partition: int, folder: str, line: Optional[CheckpointLine],
                    record: Optional[MetadataRecordAt], others: tuple[int, ...], dirs: list[BrokerDir]) -> Finding:
    tp = f"{topic}-{partition}"
    named = []
    if line is not None:
        named.append(f"its log dir's {line.file.rsplit('/', 1)[-1]} lists it at line {line.line}")
    if record is not None:
        named.append(f"__cluster_metadata's {_record(record.type_name)} at offset {record.offset} names node {node} "
                     f"among its replicas")
    held = (f"the copy holds {tp} from broker {', '.join(map(str, others))} only" if others
            else f"the copy holds no replica of {tp}")
    where = ", ".join(sorted(str(b.path) for b in dirs))
    text = (f"incomplete copy: broker {node}'s replica of {tp} is not in the copy ({'; '.join(named)}), though its "
            f"log dir{'s' if len(dirs) > 1 else ''} {where} {'are' if len(dirs) > 1 else 'is'} in it: copy the "
            f"folder {tp} of broker {node}'s log dir to {folder}; {held}. The verdicts on {tp} stand unless broker "
            f"{node} was its last leader (then partition_not_in_copy), but a follower's copy may lack markers this "
            f"replica holds")
    if line is not None:
        return Finding(line.file, line.position, INCOMPLETE, text)
    return Finding(record.path, record.position, INCOMPLETE, text)
