"""What a scan learns from directory listings and checkpoint files alone, for both drivers.

The single-process driver walks this listing replica by replica; the Spark job turns it into
work units (one per segment or byte range) and per-replica rows. Either way the `files`
rows of skipped folders, checkpoint files and transaction indexes, and the findings of bad
checkpoints, of partition folders whose topic Kafka would not allow and of what the listing
would not read (links out of the copy, FIFOs and such, folders that cannot be listed:
logscan.logdir.tree), come from here, once.

A broker with several ``log.dirs`` (JBOD) is several log dirs of one node id: one broker, its
replicas from all its dirs, each with its own dir's checkpoints (Kafka keeps
replication-offset-checkpoint, log-start-offset-checkpoint and recovery-point-offset-checkpoint
per log dir). Kafka refuses to start a broker whose dirs disagree (MetaPropertiesEnsemble.verify:
a duplicate directory.id, another cluster.id) or hold one partition twice (LogManager.loadLog:
"Duplicate log directories for T-P are found in both A and B ... Recover broker from this
failure by manually deleting one of the two directories"). Each is a located finding here, and the scan goes on
with one copy of such a partition, so every replica key stays one replica (duplicate_copy
says which is read and why).

What the copy lacks of what the brokers' own files name is listed here too (logscan.scan.log_dirs):
a log dir `__cluster_metadata` registers and the copy lacks (a forgotten disk), a replica folder
a copied log dir's checkpoints or the metadata's replica sets name but the copy lacks (files kind
missing / not_copied), a KRaft copy without `__cluster_metadata-0` on any node (no_metadata).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from logscan.logdir.naming import LEGAL_TOPIC_TEXT, is_legal_topic
from logscan.logdir.segment import TOO_LARGE, Finding
from logscan.logdir.tree import (BrokerDir, ReplicaDir, Skipped, file_size, iter_brokers,
                                 read_offset_checkpoint)

from . import rows as R
from .collector import young_collections_only
from .log_dirs import (MISSING, NO_METADATA, CheckpointLine, absent_replicas, metadata_replicas, missing_dirs,
                       placement, without_metadata)

#: The checkpoints of a log dir read for each of its partitions: its high watermark
#: (ReplicaManager.checkpointHighWatermarks), log start offset and recovery point
#: (LogManager.checkpointLogStartOffsets, checkpointLogRecoveryOffsets). What they say the
#: broker held is compared with the copy (logscan.state.partition.copy_gaps).
CHECKPOINTS = ("replication-offset-checkpoint", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint")
#: The log cleaner's checkpoint of a log dir (LogCleanerManager): where each compacted
#: partition's cleaning stopped (logscan.state.retention's partition_impact).
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
ILLEGAL_NAME = "illegal-name"
#: The reason of a finding for what Kafka refuses in a broker's log dirs: one partition in two
#: of them, two dirs with one directory.id or with different cluster.ids.
DUPLICATE = "duplicate"


@dataclass(slots=True)
class ListedReplica:
    replica: ReplicaDir
    hw_checkpoint: Optional[int]
    log_start_checkpoint: Optional[int]
    recovery_point_checkpoint: Optional[int] = None
    # Why this replica cannot be judged alone: another replica of its partition is on a log dir
    # the copy lacks (logscan.scan.log_dirs); None: none is known to be.
    dir_gap: Optional[str] = None
    cleaner_checkpoint: Optional[int] = None   # its log dir's cleaner-offset-checkpoint entry

    @property
    def key(self) -> R.Row:
        return R.replica_key(self.replica.broker, self.replica.topic, self.replica.partition)


@dataclass(slots=True)
class Listing:
    brokers: list[BrokerDir] = field(default_factory=list)
    replicas: list[ListedReplica] = field(default_factory=list)
    files: list[R.Row] = field(default_factory=list)        # files rows of what is not decoded
    findings: list[tuple[R.Row, Finding]] = field(default_factory=list)  # (key, finding)


@young_collections_only()
def list_copy(roots: list[str | Path], *, include_superseded: bool = False, follow_links: bool = False) -> Listing:
    """The copy under ``roots`` (local paths or URIs: logscan.logdir.store) listed. A symbolic link is followed only into the copy, or
    anywhere with ``follow_links`` (logscan.logdir.tree.Scope). Raises
    logscan.logdir.tree.NoLogDirs for an input that is and holds no log dir.

    Python's cycle collector is paused while it lists (collector.young_collections_only): a
    listing builds some ten objects per file of the copy, frees few and makes no reference
    cycle, and each full collection while it grew walked every object built so far, finding
    nothing (about a second of the five the bench copy's 180,000 files took to list)."""
    out = Listing()
    refused: list[Finding] = []  # of no broker: input folders, folders that might be brokers
    beside: list[Skipped] = []   # folders beside the log dirs that are none
    copies: dict[tuple[int, str, int], ListedReplica] = {}  # each replica's first copy, in listing order
    again: dict[tuple[int, str, int], list[ListedReplica]] = defaultdict(list)  # its further copies
    listed_by: dict[int, dict[tuple[str, int], CheckpointLine]] = {}  # id(log dir) -> what its checkpoints list
    for broker in iter_brokers(roots, include_superseded=include_superseded, follow_links=follow_links,
                               refused=refused, skipped=beside):
        out.brokers.append(broker)
        bkey = R.replica_key(broker.broker, None, None)
        out.files.extend(_skipped_row(bkey, s) for s in broker.skipped)
        errors = list(broker.errors)
        checkpoints = {}
        named = listed_by[id(broker)] = {}
        for name in (*CHECKPOINTS, CLEANER_CHECKPOINT):
            path = broker.files.get(name)  # a regular file, or the target of a link followed
            before = len(errors)
            lines: dict[tuple[str, int], tuple[int, int]] = {}
            checkpoints[name] = {} if path is None else read_offset_checkpoint(path, errors, lines)
            if name in CHECKPOINTS and lines:
                file = str(path)
                for tp, (number, position) in lines.items():
                    if tp not in named:  # the first checkpoint to list it
                        named[tp] = CheckpointLine(broker, file, number, position)
            if path is not None:
                bad = len(errors) - before
                unread = any(isinstance(e, Finding) and e.reason == TOO_LARGE for e in errors[before:])
                out.files.append({**bkey, "file": str(path), "kind": "checkpoint",
                                  "size": _size(path), "status": "unreadable" if unread else "damaged" if bad else "ok",
                                  "error_count": bad, "batches": 0, "detail": None})
        out.findings.extend((bkey, e if isinstance(e, Finding) else Finding(str(broker.path), -1, "corrupt", e))
                            for e in errors)
        out.findings.extend((bkey, f) for f in broker.refused)
        for r in broker.unlisted:
            out.findings.extend((R.replica_key(r.broker, r.topic, r.partition), f) for f in r.refused)
        hws, starts, recovery, cleaned = (checkpoints[name] for name in (*CHECKPOINTS, CLEANER_CHECKPOINT))
        for r in broker.replicas:
            if r.refused:
                key = R.replica_key(r.broker, r.topic, r.partition)
                out.findings.extend((key, f) for f in r.refused)
            tp = (r.topic, r.partition)
            listed = ListedReplica(r, hws.get(tp), starts.get(tp), recovery.get(tp), None,
                                   cleaned.get(tp) if cleaned else None)
            # a partition in two log dirs of a node is rare: its further copies aside, not a
            # list for every replica (the bench copy has 60,000)
            first = copies.setdefault((r.broker, *tp), listed)
            if first is not listed:
                again[(r.broker, *tp)].append(listed)
    out.findings.extend((R.replica_key(b, None, None), f) for b, f in log_dir_conflicts(out.brokers))
    placed = placement(metadata_replicas(out.brokers))
    missing = missing_dirs(out.brokers, placed)
    out.findings.extend((R.replica_key(n, None, None), f) for n, f in missing.findings)
    for node, log_dir, finding in without_metadata(out.brokers):
        key = R.replica_key(node, None, None)
        out.findings.append((key, finding))
        out.files.append({**key, "file": str(log_dir.path / "__cluster_metadata-0"), "kind": NO_METADATA, "size": -1,
                          "status": "missing", "error_count": 1, "batches": 0, "detail": finding.message})
    for absent in absent_replicas(out.brokers, placed, listed_by):
        key = R.replica_key(absent.node, absent.topic, absent.partition)
        if absent.kind == MISSING:
            out.findings.append((key, absent.finding))
        out.files.append({**key, "file": absent.folder, "kind": absent.kind, "size": -1, "status": "missing",
                          "error_count": int(absent.kind == MISSING), "batches": 0,
                          "detail": absent.finding.message})
    gaps = missing.gaps
    legal: dict[str, bool] = {}  # is_legal_topic by topic: a topic has many partitions
    for ident, listed in copies.items():
        if ident in again:
            same = [listed, *again[ident]]
            listed, why = duplicate_copy(same)
            for other in same:
                if other is not listed:
                    out.findings.append((listed.key, duplicate_finding(listed, other, why)))
                    out.files.append(_skipped_row(listed.key, Skipped(
                        str(other.replica.path), f"not read: the same partition as {listed.replica.path}, "
                                                 "in another log dir of its broker (a 'duplicate' finding)")))
        r = listed.replica
        if gaps:
            listed.dir_gap = gaps.get((r.topic, r.partition))
        ok = legal.get(r.topic)
        if ok is None:
            ok = legal[r.topic] = is_legal_topic(r.topic)
        if not ok:
            out.findings.append((listed.key, illegal_topic_finding(r)))
        txn_indexes = r.txn_indexes
        if txn_indexes:
            out.files.extend({**listed.key, "file": str(p), "kind": "txn_index", "size": _size(p),
                              "status": "listed", "error_count": 0, "batches": 0, "detail": None}
                             for _, p in txn_indexes)
        out.replicas.append(listed)
    nobody = R.replica_key(None, None, None)
    out.files.extend(_skipped_row(nobody, s) for s in beside)
    out.findings.extend((nobody, f) for f in refused)
    return out


def _skipped_row(key: R.Row, skipped: Skipped) -> R.Row:
    return {**key, "file": skipped.path, "kind": "skipped", "size": -1, "status": "skipped",
            "error_count": 0, "batches": 0, "detail": skipped.reason}


def duplicate_copy(copies: list[ListedReplica]) -> tuple[ListedReplica, str]:
    """Which of one broker's copies of a partition the scan reads, and why. Kafka keeps one
    (the operator deletes the other: the one in the dir known to have failed recently, where
    a move to another dir was cut short), so the scan reads the copy the broker was serving
    as far as its files tell: the one its own dir's replication-offset-checkpoint lists (the
    checkpoints of a failed dir stop), else the higher checkpointed high watermark, else the
    copy whose files reach further (newest segment's base offset, then its size: no byte is
    decoded before the copies are chosen, so both executors choose alike), else the first by
    path."""
    listed = [c for c in copies if c.hw_checkpoint is not None]
    if len(listed) == 1:
        return listed[0], ("its log dir's replication-offset-checkpoint lists the partition, the other's "
                           "does not")
    pool = listed or copies
    by_hw = max(pool, key=lambda c: c.hw_checkpoint if c.hw_checkpoint is not None else -1)
    if listed and sum(c.hw_checkpoint == by_hw.hw_checkpoint for c in pool) == 1:
        return by_hw, f"its checkpointed high watermark ({by_hw.hw_checkpoint}) is the highest"
    pool = [c for c in pool if c.hw_checkpoint == by_hw.hw_checkpoint]
    reach = {id(c): _reach(c.replica) for c in pool}
    furthest = max(reach.values())
    ahead = sorted((c for c in pool if reach[id(c)] == furthest), key=lambda c: str(c.replica.path))
    if len(ahead) == 1 and furthest != (-1, -1):
        return ahead[0], (f"its files reach further (newest segment at offset {furthest[0]}, "
                          f"{furthest[1]} bytes)")
    return ahead[0], "the copies' checkpoints and files do not tell them apart: the first by path"


def _reach(replica: ReplicaDir) -> tuple[int, int]:
    """(newest segment's base offset, its size), (-1, -1) for a copy with no segment."""
    if not replica.segments:
        return -1, -1
    base, path = replica.segments[-1]
    return base, _size(path)


def duplicate_finding(read: ListedReplica, other: ListedReplica, why: str) -> Finding:
    r = read.replica
    tp = f"{r.topic}-{r.partition}"
    return Finding(str(other.replica.path), -1, DUPLICATE,
                   f"partition {tp} of broker {r.broker} is in two of its log dirs, {r.path} and "
                   f"{other.replica.path}: Kafka refuses to start with that (LogManager: 'Duplicate log "
                   f"directories for {tp} are found in both ...'; delete one of them); the scan reads "
                   f"{r.path} ({why}), not {other.replica.path}")


def log_dir_conflicts(brokers: list[BrokerDir]) -> list[tuple[int, Finding]]:
    """(node id, finding) for the log dirs of one node that Kafka would not start with
    (MetaPropertiesEnsemble.verify): one directory.id in two dirs (a dir copied twice) or a
    cluster.id other than the first dir's (a copy mixing clusters)."""
    out: list[tuple[int, Finding]] = []
    by_node: dict[int, list[BrokerDir]] = defaultdict(list)
    for b in brokers:
        by_node[b.broker].append(b)
    for node, dirs in by_node.items():
        seen: dict[str, BrokerDir] = {}
        cluster: Optional[BrokerDir] = None
        for d in dirs:
            if d.meta is None:
                continue
            meta = d.path / "meta.properties"  # a Path, or a StorePath in a store
            if d.meta.cluster_id is not None:
                if cluster is None:
                    cluster = d
                elif d.meta.cluster_id != cluster.meta.cluster_id:
                    out.append((node, Finding(str(meta), -1, DUPLICATE,
                                              f"log dirs {cluster.path} and {d.path} of node {node} belong to "
                                              f"two clusters ({cluster.meta.cluster_id}, {d.meta.cluster_id}): "
                                              f"Kafka refuses to start with that ('Invalid cluster.id in: {meta}'); "
                                              "their replicas are read as one broker's")))
            if d.meta.directory_id is not None:
                first = seen.setdefault(d.meta.directory_id, d)
                if first is not d:
                    out.append((node, Finding(str(meta), -1, DUPLICATE,
                                              f"log dirs {first.path} and {d.path} of node {node} have the same "
                                              f"directory.id {d.meta.directory_id}: Kafka refuses to start with "
                                              "that ('Duplicate directory ID ... found'); one is likely a second "
                                              "copy of the other")))
    return out


def _size(path: Path) -> int:
    try:
        return file_size(path)
    except OSError:
        return -1  # gone or unreadable since it was read: its finding, if any, says so


def illegal_topic_finding(replica: ReplicaDir) -> Finding:
    """The folder is still read (its transactions are judged), but Kafka could not have named
    it so, and no abort plan is made for its topic (logscan.state.plans)."""
    return Finding(str(replica.path), -1, ILLEGAL_NAME,
                   f"partition folder {replica.path.name!r}: topic {replica.topic!r} is not a name Kafka "
                   f"allows ({LEGAL_TOPIC_TEXT}), so no abort plan is made for it")
