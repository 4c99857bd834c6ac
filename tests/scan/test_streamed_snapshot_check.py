"""The newest-snapshot check of a streamed replay equals a replay of the listed batches below
the snapshot's offset, on every replica of the fixture clusters that has a loadable snapshot."""

from pathlib import Path

from logscan.scan.listing import list_copy
from logscan.scan.replica import (TRANSACTION_STATE_TOPIC, ReplicaRead, _describe, analyse_replica,
                                  newest_loadable, read_segment, snapshot_seed)
from logscan.state.snapshots import compare_producers
from logscan.state.spans import replay

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTERS = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))


def _listed_facts(replica):
    read = ReplicaRead()
    for _, path in replica.segments:
        read_segment(str(path), replica.partition, is_txn_log=replica.topic == TRANSACTION_STATE_TOPIC, out=read)
    return read.facts


def test_streamed_check_equals_a_replay_of_the_listed_batches():
    compared = 0
    for cluster in CLUSTERS:
        for listed in list_copy([cluster / "brokers"]).replicas:
            replica = listed.replica
            facts = _listed_facts(replica)
            a = analyse_replica(replica, iter(facts), hw_checkpoint=listed.hw_checkpoint,
                                log_start_checkpoint=listed.log_start_checkpoint)
            newest = newest_loadable(a.snapshots)
            if newest is None:
                assert a.snapshot_check is None
                continue
            seed = snapshot_seed(a.snapshots, facts[0].base_offset if facts else None)
            if seed is not None and seed[1] == newest.offset:
                assert not a.snapshot_check.comparable
                continue
            rebuilt = replay([f for f in facts if f.base_offset < newest.offset], seed).producers
            assert a.snapshot_check.comparable and a.snapshot_check.offset == newest.offset
            assert a.snapshot_check.differences == compare_producers(a.snapshot_check.entries, _describe(rebuilt))
            assert a.replay.producers.producers.keys() == replay(facts, seed).producers.producers.keys()
            compared += 1
    assert compared > 0


def test_streamed_check_taken_as_the_replay_passes_an_older_snapshot(tmp_path):
    """The newest snapshot removed from copies of replicas with two or more: the check is then
    taken in the middle of the replay, and must equal the replay of the batches below it."""
    import shutil

    from logscan.logdir.tree import ReplicaDir

    compared = 0
    for cluster in CLUSTERS:
        for listed in list_copy([cluster / "brokers"]).replicas:
            replica = listed.replica
            if len(replica.snapshots) < 2 or compared >= 5:
                continue
            copy = tmp_path / f"{cluster.name}-{replica.broker}-{replica.path.name}"
            shutil.copytree(replica.path, copy)
            snapshots = [(o, copy / Path(p).name) for o, p in replica.snapshots[:-1]]
            moved = ReplicaDir(replica.broker, replica.topic, replica.partition, copy,
                               segments=replica.segments, snapshots=snapshots)
            facts = _listed_facts(moved)
            a = analyse_replica(moved, iter(facts), hw_checkpoint=listed.hw_checkpoint,
                                log_start_checkpoint=listed.log_start_checkpoint)
            newest = newest_loadable(a.snapshots)
            seed = snapshot_seed(a.snapshots, facts[0].base_offset if facts else None)
            if newest is None or not any(f.base_offset >= newest.offset for f in facts) or (
                    seed is not None and seed[1] == newest.offset):
                continue
            rebuilt = replay([f for f in facts if f.base_offset < newest.offset], seed).producers
            assert a.snapshot_check.comparable and a.snapshot_check.offset == newest.offset
            assert a.snapshot_check.differences == compare_producers(a.snapshot_check.entries, _describe(rebuilt))
            compared += 1
    assert compared > 0
