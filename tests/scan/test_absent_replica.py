"""A replica its broker's own files name, on a log dir the copy holds, but not copied
(issue 36, item B).

A broker's replication-offset-checkpoint (and recovery-point-, log-start-offset-checkpoint)
lists the partitions that log dir held, and `__cluster_metadata`'s PartitionRecord and
PartitionChangeRecord name each partition's replica set. A copied log dir without the folder
of a partition they name lacks a replica: an 'incomplete' finding at the checkpoint's line (or,
with no checkpoint naming it, at the metadata record), and a files row of kind 'missing' where
the folder belongs, saying what to copy. A partition the copy holds nowhere is 'not_copied' (an
operator may copy only the partitions in question): a files row, no finding. Neither withholds
a verdict by itself (tests/scan/test_leader_absent.py withholds those whose last leader is
gone). Built from the real hanging cluster: folders removed, checkpoints rewritten in Kafka's
text format (tests/scan/copy_shapes.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from logscan.scan.listing import list_copy
from logscan.scan.local import scan
from logscan.scan.summary import copy_line, table_figures

from .copy_shapes import CHECKPOINTS, copy_cluster, read_checkpoint, write_checkpoint
from .test_leader_absent import AS_OF, HANGING

#: hang/0: led last by broker 1; broker 0 a follower.
GONE = ("hang", 0)
FOLDER = "hang-0"


def _absent(rows: list[dict]) -> list[tuple]:
    return sorted((r["broker"], r["topic"], r["partition"], r["kind"], r["status"]) for r in rows
                  if r["kind"] in ("missing", "not_copied"))


def _line_of(path: Path, text: str) -> tuple[int, int]:
    """(line number from 1, byte position) of the line ``text`` in a checkpoint file."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    number = lines.index(text.encode()) + 1
    return number, len(b"\n".join(lines[:number - 1])) + (1 if number > 1 else 0)


def test_a_follower_s_folder_left_out_is_named_at_its_checkpoint_line(tmp_path):
    copy = copy_cluster(HANGING, tmp_path)
    shutil.rmtree(copy / "broker-0" / FOLDER)
    listing = list_copy([copy])
    ((key, finding),) = listing.findings
    checkpoint = copy / "broker-0" / "replication-offset-checkpoint"
    number, position = _line_of(checkpoint, "hang 0 4")
    assert (key["broker"], key["topic"], key["partition"]) == (0, *GONE)
    assert (finding.reason, finding.path, finding.position) == ("incomplete", str(checkpoint), position)
    assert f"replication-offset-checkpoint lists it at line {number}" in finding.message
    assert "PartitionRecord at offset" in finding.message  # the metadata names it too
    assert f"copy the folder hang-0 of broker 0's log dir to {copy / 'broker-0' / FOLDER}" in finding.message
    assert "from broker 1, 2 only" in finding.message
    assert _absent(listing.files) == [(0, *GONE, "missing", "missing")]
    (row,) = [r for r in listing.files if r["kind"] == "missing"]
    assert (row["file"], row["error_count"], row["detail"]) == (str(copy / "broker-0" / FOLDER), 1, finding.message)

    # the verdicts stand: broker 1, hang/0's last leader, is in the copy
    result = scan([copy], as_of_ms=AS_OF)
    whole = scan([HANGING / "brokers"], as_of_ms=AS_OF)
    assert result.tables["abort_plans"] == whole.tables["abort_plans"]
    assert sorted((f.reason, f.message.replace(str(copy), "")) for f in result.findings) == sorted(
        [(finding.reason, finding.message.replace(str(copy), "")),
         *((f.reason, f.message.replace(str(HANGING / "brokers"), "")) for f in whole.findings)])
    fig = table_figures(result.tables, AS_OF)
    assert fig.missing == 1 and "1 replica of partitions it holds elsewhere is not in the copy" in copy_line(fig)


def test_without_a_checkpoint_line_the_metadata_record_locates_it(tmp_path):
    copy = copy_cluster(HANGING, tmp_path)
    shutil.rmtree(copy / "broker-0" / FOLDER)
    for name in CHECKPOINTS[:3]:
        path = copy / "broker-0" / name
        write_checkpoint(path, [e for e in read_checkpoint(path) if (e[0], e[1]) != GONE])
    ((key, finding),) = list_copy([copy]).findings
    assert (key["broker"], key["topic"], key["partition"]) == (0, *GONE)
    assert Path(finding.path).parent.name == "__cluster_metadata-0" and finding.position >= 0
    assert "PartitionRecord at offset" in finding.message and "lists it at line" not in finding.message


def test_without_metadata_the_checkpoints_alone_name_it(tmp_path):
    """A copy without `__cluster_metadata` (a ZooKeeper-era cluster, or not copied): the
    checkpoints name what each log dir held."""
    copy = copy_cluster(HANGING, tmp_path)
    for broker in (0, 1, 2):
        shutil.rmtree(copy / f"broker-{broker}" / "__cluster_metadata-0")
    shutil.rmtree(copy / "broker-2" / FOLDER)
    ((key, finding),) = [(k, f) for k, f in list_copy([copy]).findings if k["topic"] is not None]
    assert (key["broker"], finding.path) == (2, str(copy / "broker-2" / "replication-offset-checkpoint"))
    assert "__cluster_metadata" not in finding.message.split("(", 1)[1].split(")", 1)[0]


def test_a_partition_left_out_everywhere_is_not_copied_without_a_finding(tmp_path):
    copy = copy_cluster(HANGING, tmp_path)
    for broker in (0, 1, 2):
        shutil.rmtree(copy / f"broker-{broker}" / FOLDER)
    listing = list_copy([copy])
    assert listing.findings == []
    assert _absent(listing.files) == [(b, *GONE, "not_copied", "missing") for b in (0, 1, 2)]


def test_the_metadata_decides_over_a_stale_checkpoint_line(tmp_path):
    """A checkpoint may list a partition deleted (or moved away) less than a checkpoint
    interval before the copy: where `__cluster_metadata` does not place it on the broker, it
    is not looked for."""
    copy = copy_cluster(HANGING, tmp_path)
    path = copy / "broker-0" / "replication-offset-checkpoint"
    write_checkpoint(path, [*read_checkpoint(path), ("deleted-topic", 0, 7)])
    listing = list_copy([copy])
    assert listing.findings == [] and _absent(listing.files) == []


def test_the_spark_job_s_listing_gives_the_same_finding_and_row(tmp_path):
    from spark_jobs.scan import list_inputs

    copy = copy_cluster(HANGING, tmp_path)
    shutil.rmtree(copy / "broker-0" / FOLDER)
    ((key, finding),) = list_copy([copy]).findings
    listed = list_inputs([copy])
    (row,) = listed.findings
    assert (row["broker"], row["topic"], row["file"], row["position"], row["message"]) == (
        key["broker"], key["topic"], finding.path, finding.position, finding.message)
    assert _absent(listed.files) == [(0, *GONE, "missing", "missing")]


def test_a_kraft_copy_without_the_metadata_log_says_the_leaders_cannot_be_read(tmp_path):
    """Item C: no node's copy holds `__cluster_metadata-0` (each node's metadata.log.dir left
    out): one 'incomplete' finding per KRaft node, at its meta.properties, and a files row of
    kind no_metadata where the folder belongs. One node's copy of it is enough: every node
    replicates the one metadata log."""
    copy = copy_cluster(HANGING, tmp_path)
    for broker in (0, 1):
        shutil.rmtree(copy / f"broker-{broker}" / "__cluster_metadata-0")
    listing = list_copy([copy])
    assert listing.findings == [] and not [r for r in listing.files if r["kind"] == "no_metadata"]
    shutil.rmtree(copy / "broker-2" / "__cluster_metadata-0")
    listing = list_copy([copy])
    found = sorted((k["broker"], f.path, f.position, f.reason) for k, f in listing.findings)
    assert found == [(b, str(copy / f"broker-{b}" / "meta.properties"), -1, "incomplete") for b in (0, 1, 2)]
    assert all("the partitions' leaders cannot be read" in f.message and "metadata.log.dir" in f.message
               for _, f in listing.findings)
    rows = sorted((r["broker"], r["file"], r["status"]) for r in listing.files if r["kind"] == "no_metadata")
    assert rows == [(b, str(copy / f"broker-{b}" / "__cluster_metadata-0"), "missing") for b in (0, 1, 2)]
    # the Spark job lists the copy alike
    from spark_jobs.scan import list_inputs

    assert sorted((r["broker"], r["file"], r["message"]) for r in list_inputs([copy]).findings) == sorted(
        (k["broker"], f.path, f.message) for k, f in listing.findings)


def test_a_zookeeper_era_copy_has_no_metadata_log_to_miss():
    zookeeper = HANGING.parents[0] / "zookeeper" / "zookeeper-3.9" / "brokers"
    assert [f for _, f in list_copy([zookeeper]).findings] == []
