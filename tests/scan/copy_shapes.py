"""Copies as operators make them, reshaped from the real fixture clusters' files (issue 36).

No byte of a segment, index or snapshot is written here: partition folders are moved or copied
whole, meta.properties and the log-dir checkpoints are rewritten in Kafka's own text formats
(``Properties.store`` lines, ``0 / count / topic partition offset``), as a broker with several
``log.dirs`` writes one of each per dir (LogManager and ReplicaManager checkpoint per dir).
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

#: The log-dir files in Kafka's offset checkpoint format, one per log dir.
CHECKPOINTS = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
               "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
#: A KRaft directory.id (base64url of 16 bytes, as DirectoryId writes it) for the second dir.
SECOND_DIRECTORY_ID = "kVCb3lB0Qn6uY8G6CqWvbQ"
#: The hanging cluster's broker-1 folders that go to its second log dir: a hanging partition, a
#: coordinator partition, and the follower the fixture cut short (its checkpointed HW says so).
HANGING_MOVED = ["hang-0", "hang-ongoing-1", "__transaction_state-2", "replica-0"]
_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a batch's baseOffset and batchLength


def copy_cluster(cluster: Path, tmp_path: Path, name: str = "brokers") -> Path:
    """The cluster's broker dirs (``cluster/brokers``) copied to ``tmp_path/name``."""
    copy = tmp_path / name
    shutil.copytree(cluster / "brokers", copy)
    return copy


def add_compose_folders(copy: Path) -> list[Path]:
    """What a docker-compose copy puts beside the brokers: ZooKeeper's data folder (its
    ``version-2`` is named like a partition folder of a topic 'version') and a logs folder."""
    zk = copy / "zookeeper"
    (zk / "version-2").mkdir(parents=True)
    (zk / "version-2" / "log.100000001").write_bytes(b"ZKLG" + bytes(60))
    (zk / "version-2" / "snapshot.0").write_bytes(bytes(64))
    (zk / "myid").write_text("1\n")
    logs = copy / "logs"
    logs.mkdir()
    (logs / "server.log").write_text("[2026-11-23 00:13:13,000] INFO starting (kafka.Kafka$)\n")
    (logs / "kafka-1").mkdir()  # a folder named like a partition folder, holding no segment
    return [zk, logs]


def read_checkpoint(path: Path) -> list[tuple[str, int, int]]:
    lines = path.read_text().splitlines()
    assert lines[0] == "0", path
    return [(t, int(p), int(o)) for t, p, o in (line.split(" ") for line in lines[2:2 + int(lines[1])])]


def write_checkpoint(path: Path, entries: list[tuple[str, int, int]]) -> None:
    path.write_text("".join(f"{line}\n" for line in ["0", str(len(entries)),
                                                     *(f"{t} {p} {o}" for t, p, o in entries)]))


def with_directory_id(meta: str, directory_id: str) -> str:
    """meta.properties text with its directory.id replaced (KRaft), or added."""
    lines = [line for line in meta.splitlines() if not line.startswith("directory.id=")]
    return "\n".join([*lines, f"directory.id={directory_id}"]) + "\n"


def split_jbod(copy: Path, broker: str, second: str, moved: list[str],
               directory_id: str = SECOND_DIRECTORY_ID) -> Path:
    """One broker with two log dirs: the partition folders ``moved`` go from ``copy/broker``
    to a new ``copy/second`` holding the same meta.properties but its own directory.id, and
    each dir's checkpoints list only the partitions in it."""
    first, other = copy / broker, copy / second
    other.mkdir()
    (other / "meta.properties").write_text(with_directory_id((first / "meta.properties").read_text(),
                                                             directory_id))
    for name in moved:
        shutil.move(first / name, other / name)
    names = set(moved)
    for checkpoint in CHECKPOINTS:
        if not (first / checkpoint).exists():
            continue
        text = (first / checkpoint).read_text()
        entries = read_checkpoint(first / checkpoint) if text else []
        write_checkpoint(first / checkpoint, [e for e in entries if f"{e[0]}-{e[1]}" not in names])
        write_checkpoint(other / checkpoint, [e for e in entries if f"{e[0]}-{e[1]}" in names])
    return other


def list_in_checkpoint(log_dir: Path, topic: str, partition: int, offset: int,
                       checkpoint: str = "replication-offset-checkpoint") -> None:
    """``topic-partition`` added to (or set in) one log dir's checkpoint."""
    entries = [e for e in read_checkpoint(log_dir / checkpoint) if (e[0], e[1]) != (topic, partition)]
    write_checkpoint(log_dir / checkpoint, [*entries, (topic, partition, offset)])


def checkpointed(log_dir: Path, topic: str, partition: int,
                 checkpoint: str = "replication-offset-checkpoint") -> int:
    (offset,) = [o for t, p, o in read_checkpoint(log_dir / checkpoint) if (t, p) == (topic, partition)]
    return offset


def cut_after_first_batch(folder: Path) -> None:
    """The folder's log cut after its first batch: a copy another one is ahead of."""
    (log,) = folder.glob("*.log")
    data = log.read_bytes()
    _, length = _OFFSET_AND_LENGTH.unpack_from(data, 0)
    assert 12 + length < len(data), log
    log.write_bytes(data[:12 + length])
