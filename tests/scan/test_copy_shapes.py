"""Copies as operators make them (issue 36 item 3), from the real fixture clusters' files.

A docker-compose copy holds ZooKeeper's data and the brokers' logs beside the log dirs: they
are skipped, with their reason, and the scan is the one of the log dirs alone. A broker with
two ``log.dirs`` (JBOD) is one broker whose partitions are spread over two dirs, each with its
own meta.properties (same node.id, its own directory.id) and checkpoints: the scan is the one
of the same broker with one dir. The same partition in both dirs, which Kafka refuses to
start with, is a finding naming both folders, and one copy is read (listing.duplicate_copy).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from logscan.cli import main
from logscan.scan.listing import DUPLICATE, list_copy
from logscan.scan.local import scan

from .copy_shapes import (HANGING_MOVED, add_compose_folders, checkpointed, copy_cluster, cut_after_first_batch,
                          list_in_checkpoint, split_jbod)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HANGING, TV2 = FIXTURES / "hanging", FIXTURES / "tv2"
#: The tables a verdict is read from.
COMPARED = ("partition_state", "hanging_candidates", "abort_plans", "coordinator_state")


def _as_of(cluster: Path) -> int:
    return json.loads((cluster / "truth" / "truth.json").read_text())["recorded_at_ms"]


def _tables(result) -> dict[str, list[str]]:
    return {t: sorted(json.dumps(r, sort_keys=True) for r in result.tables[t]) for t in COMPARED}


def _cli_scan(copy: Path, as_of_ms: int):
    return CliRunner().invoke(main, ["scan", str(copy), "--as-of", str(as_of_ms), "--no-progress"])


def test_folders_beside_the_log_dirs_are_skipped(tmp_path):
    copy = copy_cluster(TV2, tmp_path)
    as_of = _as_of(TV2)
    before, before_cli = scan([copy], as_of_ms=as_of), _cli_scan(copy, as_of)
    assert before_cli.exit_code == 0, before_cli.output   # a healthy cluster
    beside = add_compose_folders(copy)

    after, after_cli = scan([copy], as_of_ms=as_of), _cli_scan(copy, as_of)
    assert _tables(after) == _tables(before)
    assert after.tables["corruptions"] == before.tables["corruptions"] == []
    skipped = {r["file"]: r for r in after.tables["files"] if r["file"] not in
               {b["file"] for b in before.tables["files"]}}
    assert sorted(skipped) == sorted(map(str, beside))
    for row in skipped.values():
        assert (row["broker"], row["kind"], row["status"]) == (None, "skipped", "skipped")
        assert row["detail"].startswith("not a Kafka log dir: no meta.properties")
    assert after_cli.exit_code == before_cli.exit_code == 0, after_cli.output
    assert not isinstance(after_cli.exception, Exception) or isinstance(after_cli.exception, SystemExit)
    assert "Traceback" not in after_cli.output and "Damage: 0 located findings" in after_cli.output


def test_a_jbod_broker_is_one_broker_and_a_partition_in_two_of_its_dirs_is_a_finding(tmp_path):
    copy = copy_cluster(HANGING, tmp_path)
    as_of = _as_of(HANGING)
    whole = _tables(scan([copy], as_of_ms=as_of))
    second = split_jbod(copy, "broker-1", "broker-1-disk2", HANGING_MOVED)
    assert checkpointed(second, "replica", 0) == 5 and not (copy / "broker-1" / "replica-0").exists()

    split = scan([copy], as_of_ms=as_of)
    assert _tables(split) == whole            # each dir's own checkpoints, one broker
    assert {s["broker"] for s in split.tables["partition_state"]} == {0, 1, 2}

    # The same partition in both dirs, the one in the dir whose checkpoint does not list it cut
    # short (a move to another dir cut off by a failed disk): Kafka refuses to start; the scan
    # reads the copy the broker was serving and says so.
    stale = copy / "broker-1" / "hang-0"
    shutil.copytree(second / "hang-0", stale)
    cut_after_first_batch(stale)
    doubled = scan([copy], as_of_ms=as_of)
    assert _tables(doubled) == whole
    (finding,) = [f for f in doubled.findings if f.reason == DUPLICATE]
    assert finding.path == str(stale)
    assert f"{second / 'hang-0'} and {stale}" in finding.message
    assert "Duplicate log directories for hang-0 are found in both" in finding.message
    assert f"reads {second / 'hang-0'} (its log dir's replication-offset-checkpoint lists" in finding.message
    (row,) = [r for r in doubled.tables["files"] if r["file"] == str(stale)]
    assert (row["broker"], row["topic"], row["partition"], row["status"]) == (1, "hang", 0, "skipped")

    res = _cli_scan(copy, as_of)
    assert res.exit_code == 4 and "Traceback" not in res.output, res.output   # hanging, as before
    assert f"logscan: {stale}: file: partition hang-0 of broker 1 is in two of its log dirs" in res.output


def test_which_copy_of_a_doubled_partition_is_read(tmp_path):
    """Both dirs' checkpoints list it: the higher checkpointed high watermark, else the copy
    whose files reach further; a copy the broker's checkpoints never name loses to one they do."""
    copy = copy_cluster(HANGING, tmp_path)
    second = split_jbod(copy, "broker-1", "broker-1-disk2", HANGING_MOVED)
    stale = copy / "broker-1" / "hang-0"
    shutil.copytree(second / "hang-0", stale)

    def read() -> tuple[Path, str]:
        listing = list_copy([copy])
        (listed,) = [r for r in listing.replicas if (r.replica.broker, r.replica.topic, r.replica.partition)
                     == (1, "hang", 0)]
        (finding,) = [f for _, f in listing.findings if f.reason == DUPLICATE]
        return listed.replica.path, finding.message

    assert read()[0] == second / "hang-0"                  # only its own dir's checkpoint lists it
    list_in_checkpoint(copy / "broker-1", "hang", 0, 4)
    path, message = read()                                 # both list it at 4: the files decide
    assert path == second / "hang-0" and "the first by path" in message
    cut_after_first_batch(second / "hang-0")
    path, message = read()
    assert path == stale and "its files reach further (newest segment at offset 0," in message
    list_in_checkpoint(second, "hang", 0, 5)               # a higher checkpointed HW wins
    path, message = read()
    assert path == second / "hang-0" and "its checkpointed high watermark (5) is the highest" in message


def test_log_dirs_of_one_node_that_kafka_would_not_start_with(tmp_path):
    """One directory.id in two dirs (a log dir copied twice), a dir of another cluster: findings
    (MetaPropertiesEnsemble.verify), and the scan goes on."""
    copy = copy_cluster(HANGING, tmp_path)
    shutil.copytree(copy / "broker-2", copy / "broker-2-again")
    listing = list_copy([copy])
    reasons = sorted((Path(f.path).parent.name, f.message.split(":")[0]) for _, f in listing.findings
                     if f.reason == DUPLICATE)
    assert ("broker-2-again", f"log dirs {copy / 'broker-2'} and {copy / 'broker-2-again'} of node 2 have the "
                              "same directory.id vqQVPLvRUYGOWz8-nwcpPA") in reasons
    assert len({(r.replica.broker, r.replica.topic, r.replica.partition) for r in listing.replicas}) == len(
        listing.replicas) == 30

    meta = copy / "broker-2-again" / "meta.properties"
    meta.write_text(meta.read_text().replace("directory.id=vqQVPLvRUYGOWz8-nwcpPA", "directory.id=kVCb3lB0Qn6uY8G6CqWvbQ")
                    .replace("cluster.id=tZx3Erx9T-CFzwRqOJdaag", "cluster.id=9dPpqDq7Q7K3b5Z3yzX3Pg"))
    (finding,) = [f for _, f in list_copy([copy]).findings if f.reason == DUPLICATE and f.path == str(meta)]
    assert "belong to two clusters (tZx3Erx9T-CFzwRqOJdaag, 9dPpqDq7Q7K3b5Z3yzX3Pg)" in finding.message
