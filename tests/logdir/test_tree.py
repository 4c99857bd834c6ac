"""Listing a broker's log dir and reading its small per-replica files: partition folders only
(a file named like one is not one; a symlink to one is, when it stays in the copy), and
checkpoint reads that tell a missing file from a damaged one, and a regular file from a FIFO,
a folder or a link, without blocking on the FIFO."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from logscan.logdir.segment import NotRegularFile, read_small_file
from logscan.logdir.tree import ReplicaDir, scan_broker
from logscan.scan.replica import latest_leader_epoch


def test_a_broker_lists_its_partition_folders_only(tmp_path):
    broker = tmp_path / "broker-7"
    broker.mkdir()
    for name in ("orders-1", "orders-0", "__transaction_state-3"):
        (broker / name).mkdir()
    (broker / "payments-0").write_bytes(b"")  # a file named like a partition folder
    (broker / "not-a-partition").mkdir()
    elsewhere = tmp_path / "elsewhere" / "refunds-2"
    elsewhere.mkdir(parents=True)
    (broker / "refunds-2").symlink_to(elsewhere)  # followed when the copy holds it

    listed = scan_broker(broker, within=[tmp_path])

    assert listed.broker == 7
    assert [(r.topic, r.partition) for r in listed.replicas] == [
        ("__transaction_state", 3), ("orders", 0), ("orders", 1), ("refunds", 2)]
    assert [(s.path, s.reason) for s in listed.skipped] == [
        (str(broker / "not-a-partition"), "not a partition directory")]
    assert listed.refused == []

    alone = scan_broker(broker)  # the broker folder is the copy: the link leads out of it
    assert [(r.topic, r.partition) for r in alone.replicas] == [
        ("__transaction_state", 3), ("orders", 0), ("orders", 1)]
    assert [(f.path, f.reason) for f in alone.refused] == [(str(broker / "refunds-2"), "link")]
    assert [r.topic for r in scan_broker(broker, follow_links=True).replicas] == [
        "__transaction_state", "orders", "orders", "refunds"]


def test_a_small_file_is_read_whole(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n1\n2 0\n")
    assert read_small_file(path, 1 << 20) == b"0\n1\n2 0\n"
    path.write_bytes(b"")
    assert read_small_file(path, 1 << 20) == b""


def test_nothing_there_reads_as_none(tmp_path):
    (tmp_path / "a-file").write_bytes(b"x")
    assert read_small_file(tmp_path / "missing", 1 << 20) is None
    assert read_small_file(tmp_path / "a-file" / "below-a-file", 1 << 20) is None


def test_a_folder_or_a_link_is_no_small_file(tmp_path):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_bytes(b"x")
    (tmp_path / "a-link").symlink_to("a-file")  # even one that stays in the folder
    (tmp_path / "dangling").symlink_to("missing")
    for name, reason, what in [("a-folder", "io", "a folder"), ("a-link", "link", "a symbolic link"),
                               ("dangling", "link", "a symbolic link")]:
        with pytest.raises(NotRegularFile) as e:
            read_small_file(tmp_path / name, 1 << 20)
        assert (e.value.reason, str(e.value)) == (reason, f"not read: {what}, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "leader-epoch-checkpoint"
    os.mkfifo(fifo)
    got = []

    def read():
        try:
            read_small_file(fifo, 1 << 20)
        except NotRegularFile as e:
            got.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "read_small_file waited for a writer of a FIFO"
    assert [str(e) for e in got] == ["not read: a FIFO (named pipe), not a regular file"]


def _replica(tmp_path) -> ReplicaDir:
    path = tmp_path / "orders-0"
    path.mkdir()
    return ReplicaDir(1, "orders", 0, path)


def test_the_latest_leader_epoch_of_a_replica(tmp_path):
    replica = _replica(tmp_path)
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None  # no checkpoint file
    (replica.path / "leader-epoch-checkpoint").write_bytes(b"0\n3\n0 0\n4 120\n2 300\n")
    assert latest_leader_epoch(replica, findings) == 4
    assert findings == []


def test_a_damaged_leader_epoch_checkpoint_is_a_finding(tmp_path):
    replica = _replica(tmp_path)
    path = replica.path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n2\n0 0\n")  # two entries announced, one there
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None
    (finding,) = findings
    assert finding.path == str(path)


def test_a_folder_named_like_the_checkpoint_is_no_checkpoint(tmp_path):
    replica = _replica(tmp_path)
    path = replica.path / "leader-epoch-checkpoint"
    path.mkdir()
    findings: list = []
    assert latest_leader_epoch(replica, findings) is None
    assert [(f.path, f.position, f.reason, f.message) for f in findings] == [
        (str(path), -1, "io", "not read: a folder, not a regular file")]


def test_a_broker_id_comes_from_meta_properties_or_else_the_folder_name(tmp_path):
    from logscan.logdir.tree import broker_id

    broker = tmp_path / "kafka-logs-3"
    broker.mkdir()
    errors: list[str] = []
    assert broker_id(broker, errors) == 3  # no meta.properties
    assert errors == []
    (broker / "meta.properties").mkdir()
    assert broker_id(broker, errors) == 3  # a folder of that name is no meta.properties
    assert errors == [f"{broker / 'meta.properties'}: not read: a folder, not a regular file"]
    errors.clear()
    (broker / "meta.properties").rmdir()
    (broker / "meta.properties").write_bytes(b"version=1\nnode.id=12\ncluster.id=abc\n")
    assert broker_id(broker, errors) == 12
    assert errors == []


def test_an_offset_checkpoint_is_read_or_reported(tmp_path):
    from logscan.logdir.tree import read_offset_checkpoint

    path = tmp_path / "replication-offset-checkpoint"
    errors: list[str] = []
    assert read_offset_checkpoint(path, errors) == {}
    path.write_bytes(b"0\n2\norders 0 17\norders 1 4\n")
    assert read_offset_checkpoint(path, errors) == {("orders", 0): 17, ("orders", 1): 4}
    assert errors == []
    path.write_bytes(b"0\n3\norders 0 17\n")  # three entries announced, one there
    assert read_offset_checkpoint(path, errors) == {}
    assert len(errors) == 1 and errors[0].startswith(f"{path}: ")


def test_folders_come_in_name_order_and_a_replicas_files_in_log_order(tmp_path):
    broker = tmp_path / "broker-1"
    for name in ("orders-2", "orders-10", "orders-1"):
        (broker / name).mkdir(parents=True)
    replica = broker / "orders-10"
    for base in (2000, 100, 0):  # written out of order; listed in log order
        for suffix in (".log", ".index", ".snapshot", ".txnindex"):
            (replica / f"{base:020d}{suffix}").write_bytes(b"")
    (replica / f"{50:020d}.log.deleted").write_bytes(b"")
    (replica / "leader-epoch-checkpoint").write_bytes(b"0\n0\n")

    listed = scan_broker(broker)

    # Path order: by name, character by character ("orders-10" before "orders-2").
    assert [r.path.name for r in listed.replicas] == ["orders-1", "orders-10", "orders-2"]
    r = listed.replicas[1]
    assert r.segments == [(b, str(replica / f"{b:020d}.log")) for b in (0, 100, 2000)]
    assert r.snapshots == [(b, str(replica / f"{b:020d}.snapshot")) for b in (0, 100, 2000)]
    assert r.txn_indexes == [(b, str(replica / f"{b:020d}.txnindex")) for b in (0, 100, 2000)]
    assert [(s.path, s.reason) for s in listed.skipped] == [
        (str(replica / f"{50:020d}.log.deleted"), "deleted file")]
    with_superseded = scan_broker(broker, include_superseded=True).replicas[1]
    assert (50, str(replica / f"{50:020d}.log.deleted")) in with_superseded.segments


# --- a hostile copy (issue 33): what the listing will not hand on to be read ----------------

def _hostile_broker(tmp_path):
    """A copy whose one broker holds a partition with every kind of entry the scan reads by
    name: a regular segment, and links, a FIFO, a socket and a folder named like files."""
    import socket

    copy = tmp_path / "copy"
    part = copy / "broker-1" / "orders-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(b"")
    (copy / "kept.log").write_bytes(b"")                          # in the copy, beside the broker
    (tmp_path / "outside.log").write_bytes(b"")
    (part / "00000000000000000001.log").symlink_to(copy / "kept.log")
    (part / "00000000000000000002.log").symlink_to(tmp_path / "outside.log")
    (part / "00000000000000000003.log").symlink_to("nowhere")
    (part / "00000000000000000004.log").symlink_to("00000000000000000004.log")  # a loop
    os.mkfifo(part / "00000000000000000005.snapshot")
    (part / "00000000000000000006.txnindex").mkdir()
    cwd = os.getcwd()
    os.chdir(part)  # a socket's path is short (108 bytes): bind it by its name
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind("00000000000000000007.index")
    finally:
        os.chdir(cwd)
    os.mkfifo(part / "00000000000000000008.log.deleted")          # superseded: skipped, not refused
    os.mkfifo(part / "partition.metadata")                         # never read by the listing
    return copy, part


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_the_listing_hands_on_regular_files_only_and_says_why_not_the_rest(tmp_path):
    copy, part = _hostile_broker(tmp_path)
    (listed,) = scan_broker(copy / "broker-1", within=[copy]).replicas
    assert listed.segments == [(0, str(part / "00000000000000000000.log")),
                               (1, str(copy / "kept.log"))]  # a followed link: its target, opened as such
    assert listed.snapshots == listed.txn_indexes == listed.indexes == []
    refused = {Path(f.path).name: (f.position, f.reason, f.message) for f in listed.refused}
    assert refused == {
        "00000000000000000002.log": (-1, "link", f"not read: a symbolic link to {tmp_path / 'outside.log'}, "
                                                 "outside the copy (links out of it are followed only when asked)"),
        "00000000000000000003.log": (-1, "link", "not read: a symbolic link to 'nowhere', which does not exist "
                                                 "(dangling)"),
        "00000000000000000004.log": (-1, "link", "not read: a symbolic link that leads back to itself (a loop)"),
        "00000000000000000005.snapshot": (-1, "not-regular", "not read: a FIFO (named pipe), not a regular file"),
        "00000000000000000006.txnindex": (-1, "io", "not read: a folder, not a regular file"),
        "00000000000000000007.index": (-1, "not-regular", "not read: a socket, not a regular file"),
    }
    followed = scan_broker(copy / "broker-1", within=[copy], follow_links=True).replicas[0]
    assert followed.segments[2] == (2, str(tmp_path / "outside.log"))
    assert [Path(f.path).name for f in followed.refused if f.reason == "link"] == [
        "00000000000000000003.log", "00000000000000000004.log"]


def test_a_folder_that_cannot_be_listed_is_a_finding_and_the_rest_is_listed(tmp_path, monkeypatch):
    from logscan.logdir.tree import iter_brokers

    copy = tmp_path / "copy"
    for broker in ("broker-1", "broker-2"):
        for name in ("orders-0", "orders-1"):
            (copy / broker / name).mkdir(parents=True)
            (copy / broker / name / "00000000000000000000.log").touch()  # what makes it a partition's
    denied = {str(copy / "broker-1" / "orders-0"), str(copy / "broker-2")}
    scandir = os.scandir

    def guarded(path="."):
        if os.fspath(path) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    refused: list = []
    (broker,) = iter_brokers([copy], refused=refused)
    assert [(f.path, f.reason, f.message) for f in refused] == [
        (str(copy / "broker-2"), "io", "folder cannot be listed (Permission denied); if it is a broker's "
                                       "log dir, none of its replicas are in this scan")]
    assert [(r.topic, r.partition) for r in broker.replicas] == [("orders", 1)]
    (unlisted,) = broker.unlisted
    assert [(f.path, f.reason, f.message) for f in unlisted.refused] == [
        (str(copy / "broker-1" / "orders-0"), "io", "partition folder cannot be listed (Permission denied); "
                                                    "none of its files are in this scan")]


@pytest.mark.parametrize("make", ["fifo", "folder", "link-out"])
def test_a_broker_level_checkpoint_that_is_no_regular_file(tmp_path, make):
    from logscan.scan.listing import list_copy

    copy = tmp_path / "copy"
    (copy / "broker-1" / "orders-0").mkdir(parents=True)
    path = copy / "broker-1" / "replication-offset-checkpoint"
    (tmp_path / "outside").write_bytes(b"0\n1\norders 0 17\n")
    {"fifo": lambda: os.mkfifo(path), "folder": path.mkdir, "link-out": lambda: path.symlink_to(tmp_path / "outside")
     }[make]()
    listing = list_copy([copy])
    assert [(f.path, f.reason) for _, f in listing.findings] == [
        (str(path), {"fifo": "not-regular", "folder": "io", "link-out": "link"}[make])]
    assert [r.hw_checkpoint for r in listing.replicas] == [None]
    assert [f for f in listing.files if f["kind"] == "checkpoint"] == []
    assert [r.hw_checkpoint for r in list_copy([copy], follow_links=True).replicas] == [
        17 if make == "link-out" else None]


def test_a_log_dir_with_no_broker_id_is_a_finding(tmp_path):
    from logscan.scan.listing import list_copy

    copy = tmp_path / "copy"
    (copy / "data" / "orders-0").mkdir(parents=True)   # no meta.properties, no digits
    (copy / "broker-2" / "orders-0").mkdir(parents=True)
    for broker in ("data", "broker-2"):
        (copy / broker / "orders-0" / "00000000000000000000.log").touch()
    listing = list_copy([copy])
    assert [(k["broker"], f.path, f.reason) for k, f in listing.findings] == [
        (None, str(copy / "data"), "no-broker-id")]
    assert [r.replica.broker for r in listing.replicas] == [2]


# --- log dirs known by what they hold (issue 36 item 3, issue 34 item 1) ------------------------

def _partition(folder: Path) -> Path:
    """A partition folder as Kafka leaves it: at least its active segment."""
    folder.mkdir(parents=True)
    (folder / "00000000000000000000.log").touch()
    return folder


def test_log_dirs_are_known_by_what_they_hold(tmp_path):
    from logscan.logdir.tree import find_log_dirs

    copy = tmp_path / "copy"
    (copy / "broker-0").mkdir(parents=True)
    (copy / "broker-0" / "meta.properties").write_text("version=0\nbroker.id=0\n")
    _partition(copy / "broker-1" / "orders-0")               # no meta.properties: its partitions say it
    (copy / "broker-2").mkdir()
    (copy / "broker-2" / "replication-offset-checkpoint").write_text("0\n0\n")
    (copy / "zookeeper" / "version-2").mkdir(parents=True)   # named like topic 'version', partition 2
    (copy / "zookeeper" / "version-2" / "log.100000001").write_bytes(b"ZKLG")
    (copy / "logs" / "kafka-1").mkdir(parents=True)          # named like a partition folder, empty
    (copy / "logs" / "server.log").write_text("INFO\n")
    _partition(copy / "orders-1")                            # a partition folder outside any log dir
    (copy / "empty").mkdir()
    skipped: list = []

    assert find_log_dirs([copy], skipped=skipped) == [copy / "broker-0", copy / "broker-1", copy / "broker-2"]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [
        ("empty", "not a Kafka log dir: an empty folder"),
        ("logs", "not a Kafka log dir: no meta.properties, no log-dir checkpoint and no topic-N folder "
                 "holding a partition's files"),
        ("orders-1", "a partition folder beside the log dirs, not in one: not read"),
        ("zookeeper", "not a Kafka log dir: no meta.properties, no log-dir checkpoint and no topic-N folder "
                      "holding a partition's files")]
    # a log dir given itself, with or without its own files
    assert find_log_dirs([copy / "broker-0"]) == [copy / "broker-0"]
    assert find_log_dirs([copy / "broker-1"]) == [copy / "broker-1"]


def _no_log_dirs(root: Path) -> str:
    from logscan.logdir.tree import NoLogDirs, find_log_dirs

    with pytest.raises(NoLogDirs) as raised:
        find_log_dirs([root])
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"no Kafka log dir in {root}")
    assert "meta.properties" in text and "topic-N" in text
    return text


def test_an_input_with_no_log_dir_says_what_was_looked_for_and_where_they_are(tmp_path, monkeypatch):
    cluster = tmp_path / "incident" / "cluster-a" / "brokers"
    _partition(cluster / "broker-1" / "orders-0")
    (cluster / "broker-1" / "meta.properties").write_text("version=0\nbroker.id=1\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes" / "old").mkdir(parents=True)
    (tmp_path / "notes" / "a.txt").write_text("x")

    assert "the folder is empty" in _no_log_dirs(tmp_path / "empty")
    assert "none is up to three levels below it" in _no_log_dirs(tmp_path / "notes")
    # one and two levels above the broker dirs: the folder to give instead
    for above in (cluster.parent, cluster.parent.parent):
        assert _no_log_dirs(above).endswith(f"the log dirs are deeper, in {cluster}: give that folder")
    # one partition's folder: its broker's log dir and the folder of all of them
    assert _no_log_dirs(cluster / "broker-1" / "orders-0").endswith(
        f"give the folder of the brokers' log dirs, {cluster}, or this broker's, {cluster / 'broker-1'}")
    # a folder above several clusters: each, never read as one
    _partition(tmp_path / "incident" / "cluster-b" / "brokers" / "broker-1" / "orders-0")
    text = _no_log_dirs(tmp_path / "incident")
    assert f"in 2 folders ({cluster}, {tmp_path / 'incident' / 'cluster-b' / 'brokers'})" in text

    # a folder that cannot be listed may be a broker's: its finding says so, no NoLogDirs
    from logscan.logdir.tree import find_log_dirs

    scandir = os.scandir

    def guarded(path="."):
        if os.fspath(path) == str(tmp_path / "notes" / "old"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    refused: list = []
    assert find_log_dirs([tmp_path / "notes"], refused) == []
    assert [(f.path, f.reason) for f in refused] == [(str(tmp_path / "notes" / "old"), "io")]


def test_a_log_dir_keeps_its_meta_properties(tmp_path):
    """node.id, cluster.id and directory.id (KRaft, one per log dir) of a real broker."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    listed = scan_broker(fixtures / "hanging" / "brokers" / "broker-1")
    assert listed.broker == 1
    assert (listed.meta.node_id, listed.meta.cluster_id, listed.meta.directory_id) == (
        1, "tZx3Erx9T-CFzwRqOJdaag", "25MTcsOvzlHGZW13t0VjAQ")


def test_a_listing_holds_each_file_as_a_string_not_a_path(tmp_path):
    """A listing is held whole while the scan reads it: a pathlib.Path costs ~350 bytes more
    than its string, four or more per replica (issue 33 item 3; tests/robust/test_listing_memory.py
    measures what a replica holds)."""
    broker = tmp_path / "broker-1"
    replica = broker / "orders-0"
    replica.mkdir(parents=True)
    for suffix in (".log", ".index", ".timeindex", ".snapshot", ".txnindex"):
        (replica / f"{0:020d}{suffix}").write_bytes(b"")
    (listed,) = scan_broker(broker).replicas
    files = listed.segments + listed.snapshots + listed.indexes + listed.txn_indexes
    assert len(files) == 5
    assert [type(p) for _, p in files] == [str] * 5, files
    assert sorted(os.path.basename(p) for _, p in files) == sorted(f"{0:020d}{s}" for s in (
        ".index", ".log", ".snapshot", ".timeindex", ".txnindex"))


# --- what the listing works out once per name or per folder (issue 30) ----------------------

def test_a_name_classified_once_is_read_alike_in_every_replica(tmp_path):
    """A file name is classified once for all the broker's replicas: its state still skips it
    in each, each replica's own file or link target is kept, and the name is one string."""
    copy = tmp_path / "copy"
    broker = copy / "broker-1"
    kept = copy / "kept.log"
    folders = [broker / f"orders-{p}" for p in range(3)]
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / f"{0:020d}.log.deleted").write_bytes(b"")
        (folder / f"{0:020d}.index").write_bytes(b"")
    kept.write_bytes(b"")
    (folders[0] / f"{0:020d}.log").write_bytes(b"")
    (folders[1] / f"{0:020d}.log").symlink_to(kept)
    (folders[2] / f"{0:020d}.log").write_bytes(b"")

    listed = scan_broker(broker, within=[copy])

    assert [(s.path, s.reason) for s in listed.skipped] == [
        (str(f / f"{0:020d}.log.deleted"), "deleted file") for f in folders]
    first, linked, third = listed.replicas
    assert first.segments == [(0, str(folders[0] / f"{0:020d}.log"))]
    assert linked.segments == [(0, str(kept))]
    assert third.segments == [(0, str(folders[2] / f"{0:020d}.log"))]
    assert first._files[0][0][1] is third._files[0][0][1]   # one string for the name
    assert first._files[3][0][1] is linked._files[3][0][1]


def test_files_are_the_four_lists_at_once(tmp_path):
    broker = tmp_path / "broker-1"
    replica = broker / "orders-0"
    replica.mkdir(parents=True)
    for base in (7, 0):
        for suffix in (".log", ".index", ".timeindex", ".snapshot"):
            (replica / f"{base:020d}{suffix}").write_bytes(b"")
    (listed,) = scan_broker(broker).replicas
    built = ReplicaDir(1, "t", 0, "/x/t-0", segments=[(0, "/x/t-0/a.log")], indexes=[(0, "/y/b.index")])
    for r in (listed, built):
        assert r.files() == (r.segments, r.snapshots, r.txn_indexes, r.indexes)
    assert [len(f) for f in listed.files()] == [2, 2, 0, 4]
    assert listed.files()[0] == [(0, str(replica / f"{0:020d}.log")), (7, str(replica / f"{7:020d}.log"))]


@pytest.mark.parametrize("given", [".", "broker-1", "./broker-1", "broker-1/"])
def test_a_relative_log_dir_names_its_folders_as_pathlib_does(tmp_path, monkeypatch, given):
    broker = tmp_path / "broker-1"
    (broker / "orders-0").mkdir(parents=True)
    (broker / "orders-0" / f"{0:020d}.log").write_bytes(b"")
    (broker / "meta.properties").write_text("version=0\nbroker.id=1\n")  # "." has no digits to name it
    monkeypatch.chdir(broker if given == "." else tmp_path)
    (listed,) = scan_broker(Path(given)).replicas
    assert listed.folder == str(Path(given) / "orders-0")
    assert listed.segments == [(0, str(Path(given) / "orders-0" / f"{0:020d}.log"))]
