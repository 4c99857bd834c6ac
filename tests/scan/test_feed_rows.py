"""ReplicaAnalyser.feed_columns of a table of fewer than replica.BULK_ROWS rows (what the scan's
bulk decode hands on for a segment of few batches: FactRows of the compiled step's facts) goes
through ReplicaAnalyser._feed_rows, feed()'s checks and bookkeeping in one loop: what finish()
gives, the findings and the spans closed on the way are feed()'s, a row at a time, on every
fixture replica and on generated replicas with offsets moved back (the replay stops at a
fault) and a producer snapshot (the newest snapshot's rebuild: feed() takes every row)."""

from __future__ import annotations

import random

import pytest

from logscan.logdir.tree import iter_brokers
from logscan.scan import replica as R
from logscan.scan.replica import ReplicaAnalyser, ReplicaRead, iter_segment
from logscan.state.columns import FactRows
from tests.state.test_bulk_replay import REPO, _write_replica
from tools.fuzz.targets import replay_state


def _facts_of(path) -> list:
    return list(iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead()))


def _analysis(replica, cut) -> tuple:
    """``replica`` analysed from its segments' facts: fed a row at a time by feed() (``cut``
    None) or as FactRows of ``cut`` rows at most (feed_columns); what finish() gives and the
    spans closed on the way, comparable."""
    closed = []
    analyser = ReplicaAnalyser(replica, closed.append, hw_checkpoint=None, log_start_checkpoint=None)
    for base, path in replica.segments:
        facts = _facts_of(path)
        if cut is None:
            for fact, entry in facts:
                analyser.feed(fact, base, entry.position)
            continue
        for at in range(0, len(facts), cut):
            part = facts[at:at + cut]
            # the positions as the scan gives them: a compiled run's first, or each batch's
            rows = (FactRows([f for f, _ in part], part[0][1].position) if at % 2 == 0 else
                    FactRows([f for f, _ in part], [e.position for _, e in part]))
            assert len(rows) < R.BULK_ROWS
            analyser.feed_columns(rows, base)
    a = analyser.finish()
    return (a.state, a.max_timestamp, a.snapshot_check, a.leader_epoch, a.findings, a.replay.open_spans,
            replay_state(a.replay.producers), closed, analyser._batches_end, analyser._prev_position)


def test_every_fixture_replica_fed_in_few_rows_analyses_as_feed():
    roots = sorted((REPO / "fixtures").glob("*/brokers"))
    replicas = [r for root in roots for b in iter_brokers([root]) for r in b.replicas if r.segments]
    assert len(replicas) > 50
    for replica in replicas:
        want = _analysis(replica, None)
        for cut in (1, 7, R.BULK_ROWS - 1):
            assert _analysis(replica, cut) == want, (replica.path, cut)


@pytest.mark.parametrize("seed", range(30))
def test_damaged_generated_replicas_fed_in_few_rows_analyse_as_feed(tmp_path, seed):
    rng = random.Random(seed)
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=x\n")
    folder = tmp_path / "broker-1" / "t-0"
    _write_replica(folder, rng)
    if seed % 2:   # without its snapshot, the loop runs up to the fault
        for snapshot in folder.glob("*.snapshot"):
            snapshot.unlink()
    (replica,) = [r for b in iter_brokers([tmp_path]) for r in b.replicas]
    want = _analysis(replica, None)
    for cut in (1, rng.randrange(2, 9)):
        assert _analysis(replica, cut) == want, cut



def test_a_fault_inside_a_table_hands_over_to_feed(tmp_path):
    """A generated replica whose offsets go back without a snapshot: the loop stops at the
    fault inside a table and feed() takes the rest (the same fault, copy end and findings)."""
    for seed in range(30):
        rng = random.Random(seed)
        root = tmp_path / str(seed)
        (root / "broker-1").mkdir(parents=True)
        (root / "broker-1" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=x\n")
        _write_replica(root / "broker-1" / "t-0", rng)
        for snapshot in (root / "broker-1" / "t-0").glob("*.snapshot"):
            snapshot.unlink()
        (replica,) = [r for b in iter_brokers([root]) for r in b.replicas]
        want = _analysis(replica, None)
        if want[0].log_fault is not None:
            assert _analysis(replica, 5) == want
            return
    pytest.fail("no generated replica breaks the offset order")


def test_a_batch_below_its_segments_base_hands_over_to_feed(tmp_path):
    """The last segment named past its batches' offsets: its first batch lies below the
    segment's base (a segment_base fault inside a table), as feed() finds it."""
    for seed in range(30):
        rng = random.Random(seed)
        root = tmp_path / str(seed)
        (root / "broker-1").mkdir(parents=True)
        (root / "broker-1" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=x\n")
        folder = root / "broker-1" / "t-0"
        _write_replica(folder, rng)
        for snapshot in folder.glob("*.snapshot"):
            snapshot.unlink()
        last = sorted(folder.glob("*.log"))[-1]
        last.rename(folder / f"{int(last.stem) + 10 ** 6:020d}.log")
        (replica,) = [r for b in iter_brokers([root]) for r in b.replicas]
        want = _analysis(replica, None)
        if want[0].log_fault is not None and want[0].log_fault.startswith("segment-base"):
            for cut in (1, 5):
                assert _analysis(replica, cut) == want, cut
            return
    pytest.fail("no generated replica's fault is a batch below its segment's base")
