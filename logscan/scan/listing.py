"""What a scan learns from directory listings and checkpoint files alone, for both drivers.

The single-process driver walks this listing replica by replica; the Spark job turns it into
work units (one per segment or byte range) and per-replica rows. Either way the `files`
rows of skipped folders, checkpoint files and transaction indexes, and the findings of bad
checkpoints, of partition folders whose topic Kafka would not allow and of what the listing
would not read (links out of the copy, FIFOs and such, folders that cannot be listed:
logscan.logdir.tree), come from here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from logscan.logdir.naming import LEGAL_TOPIC_TEXT, is_legal_topic
from logscan.logdir.segment import Finding
from logscan.logdir.tree import BrokerDir, ReplicaDir, file_size, iter_brokers, read_offset_checkpoint

from . import rows as R

CHECKPOINTS = ("replication-offset-checkpoint", "log-start-offset-checkpoint")
ILLEGAL_NAME = "illegal-name"


@dataclass(slots=True)
class ListedReplica:
    replica: ReplicaDir
    hw_checkpoint: Optional[int]
    log_start_checkpoint: Optional[int]

    @property
    def key(self) -> R.Row:
        return R.replica_key(self.replica.broker, self.replica.topic, self.replica.partition)


@dataclass(slots=True)
class Listing:
    brokers: list[BrokerDir] = field(default_factory=list)
    replicas: list[ListedReplica] = field(default_factory=list)
    files: list[R.Row] = field(default_factory=list)        # files rows of what is not decoded
    findings: list[tuple[R.Row, Finding]] = field(default_factory=list)  # (key, finding)


def list_copy(roots: list[Path], *, include_superseded: bool = False, follow_links: bool = False) -> Listing:
    """The copy under ``roots`` listed. A symbolic link is followed only into the copy, or
    anywhere with ``follow_links`` (logscan.logdir.tree.Scope)."""
    out = Listing()
    refused: list[Finding] = []  # of no broker: input folders, folders that might be brokers
    for broker in iter_brokers(roots, include_superseded=include_superseded, follow_links=follow_links,
                               refused=refused):
        out.brokers.append(broker)
        bkey = R.replica_key(broker.broker, None, None)
        for s in broker.skipped:
            out.files.append({**bkey, "file": s.path, "kind": "skipped", "size": -1, "status": "skipped",
                              "error_count": 0, "batches": 0, "detail": s.reason})
        errors = list(broker.errors)
        checkpoints = {}
        for name in CHECKPOINTS:
            path = broker.files.get(name)  # a regular file, or the target of a link followed
            before = len(errors)
            checkpoints[name] = {} if path is None else read_offset_checkpoint(path, errors)
            if path is not None:
                bad = len(errors) - before
                out.files.append({**bkey, "file": str(path), "kind": "checkpoint",
                                  "size": _size(path), "status": "damaged" if bad else "ok",
                                  "error_count": bad, "batches": 0, "detail": None})
        out.findings.extend((bkey, Finding(str(broker.path), -1, "corrupt", e)) for e in errors)
        out.findings.extend((bkey, f) for f in broker.refused)
        for r in broker.unlisted:
            out.findings.extend((R.replica_key(r.broker, r.topic, r.partition), f) for f in r.refused)
        hws, starts = checkpoints[CHECKPOINTS[0]], checkpoints[CHECKPOINTS[1]]
        for r in broker.replicas:
            key = R.replica_key(r.broker, r.topic, r.partition)
            if not is_legal_topic(r.topic):
                out.findings.append((key, illegal_topic_finding(r)))
            out.findings.extend((key, f) for f in r.refused)
            out.files.extend({**key, "file": str(p), "kind": "txn_index", "size": _size(p),
                              "status": "listed", "error_count": 0, "batches": 0, "detail": None}
                             for _, p in r.txn_indexes)
            tp = (r.topic, r.partition)
            out.replicas.append(ListedReplica(r, hws.get(tp), starts.get(tp)))
    out.findings.extend((R.replica_key(None, None, None), f) for f in refused)
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
