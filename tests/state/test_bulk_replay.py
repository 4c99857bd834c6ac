"""ProducerStateManager.append_table, the replay over a fact table in bulk, against append()
(the reference: Kafka's ProducerAppendInfo rules) row by row: the same producers (entries,
their order, their kept batches), completed transactions, anomalies and map end offset, on
every replica of the real-broker fixtures and on generated histories full of what is unusual
(epochs going down, coordinator epochs going down, non-transactional batches inside a
transaction, control batches of other types, emptied ones), from empty and seeded states,
cut into tables anywhere. The fuzz target ``replay`` does the same over arbitrary bytes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from logscan.logdir.tree import iter_brokers
from logscan.scan.replica import ReplicaAnalyser, ReplicaRead, facts_to_table, iter_segment
from logscan.state.facts import BatchFact
from logscan.state.producer_state import BrokerLoad
from tools.fuzz.targets import random_history, replay_state, seeded_manager, spans_state

REPO = Path(__file__).resolve().parents[2]


def _tables(facts: list[BatchFact], cuts: list[int], positions=None):
    bounds = [0, *sorted(cuts), len(facts)]
    positions = [0] * len(facts) if positions is None else positions
    return [facts_to_table(facts[a:b], positions[a:b]) for a, b in zip(bounds, bounds[1:])]


def _both(facts: list[BatchFact], cuts: list[int], floor=None, seed=None) -> None:
    """append_table over the facts cut into tables at ``cuts`` leaves what append() of each
    leaves, and says which rows completed a transaction (where append() returns one)."""
    reference, bulk = seeded_manager(seed, floor), seeded_manager(seed, floor)
    completing = [i for i, fact in enumerate(facts) if reference.append(fact) is not None]
    done, at = [], 0
    for table in _tables(facts, cuts):
        done += [at + r for r in bulk.append_table(table).tolist()]
        at += table.num_rows
    assert replay_state(bulk) == replay_state(reference)
    assert done == completing


def _fixture_replicas() -> list[list[BatchFact]]:
    """The facts of each partition folder of the fixtures, its segments in base-offset order."""
    out = []
    for folder in sorted({p.parent for p in (REPO / "fixtures").glob("*/brokers/*/*/*.log")}):
        facts = [f for path in sorted(folder.glob("*.log"))
                 for f, _ in iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead())]
        if facts:
            out.append(facts)
    return out


def test_every_fixture_replica_replays_the_same():
    replicas = _fixture_replicas()
    assert len(replicas) > 50
    rng = random.Random(5)
    owned = 0
    for facts in replicas:
        owned += sum(f.producer_id >= 0 for f in facts)
        for cuts in ([], [rng.randrange(len(facts) + 1) for _ in range(3)], list(range(1, len(facts)))):
            for floor in (None, facts[len(facts) // 2].base_offset):
                _both(facts, cuts, floor)
    assert owned > 1000


@pytest.mark.parametrize("seed", range(300))
def test_generated_histories_replay_the_same(seed):
    rng = random.Random(seed)
    facts = random_history(rng, rng.randrange(1, 60))
    cuts = [rng.randrange(len(facts) + 1) for _ in range(rng.randrange(3))]
    _both(facts, cuts, floor=rng.choice([None, 0, rng.randrange(200)]), seed=rng.randrange(1 << 30))


def _broker_load(facts, snapshots, log_start, cuts=None):
    """BrokerLoad fed as ReplicaAnalyser feeds it (the rows at or past its start offset): a
    row at a time, or (``cuts``) in tables cut there; the producers it loads."""
    load = BrokerLoad(snapshots, log_start)
    rows = [f for f in facts if load.start_offset is not None and f.last_offset >= load.start_offset]
    if cuts is None:
        for fact in rows:
            load.feed(fact)
    else:
        for table in _tables(rows, [c for c in cuts if c <= len(rows)]):
            load.feed_table(table)
    psm = load.finish(facts[-1].last_offset + 1 if facts else 0)
    return None if psm is None else replay_state(psm)


@pytest.mark.parametrize("seed", range(100))
def test_a_broker_load_in_bulk_loads_what_feed_loads(seed):
    rng = random.Random(seed)
    facts = random_history(rng, rng.randrange(1, 60))
    end = facts[-1].last_offset + 1
    snapshots = sorted({rng.randrange(end + 5): rng.randrange(1, 1 << 30) for _ in range(rng.randrange(4))}.items())
    # (a loader gives fresh entries each time, as decoding the file does)
    sources = [(offset, (lambda s=s: list(seeded_manager(s).producers.values()))) for offset, s in snapshots]
    cuts = [rng.randrange(len(facts) + 1) for _ in range(rng.randrange(3))]
    log_start = rng.choice([0, rng.randrange(end)])
    assert _broker_load(facts, sources, log_start, cuts) == _broker_load(facts, sources, log_start)


def _spans(facts, cuts, seed, start, floor=None) -> tuple:
    return spans_state(facts, None if cuts is None else _tables(facts, cuts), seed, start, floor)


def test_every_fixture_replica_makes_the_same_spans():
    for facts in _fixture_replicas():
        for cuts in ([], [len(facts) // 3, 2 * len(facts) // 3]):
            assert _spans(facts, cuts, None, 0, 0) == _spans(facts, None, None, 0, 0)


@pytest.mark.parametrize("seed", range(200))
def test_generated_histories_make_the_same_spans(seed):
    rng = random.Random(seed)
    facts = random_history(rng, rng.randrange(1, 60))
    cuts = [rng.randrange(len(facts) + 1) for _ in range(rng.randrange(3))]
    state, start = rng.choice([None, rng.randrange(1 << 30)]), rng.choice([0, rng.randrange(40)])
    floor = rng.choice([None, 0])
    assert _spans(facts, cuts, state, start, floor) == _spans(facts, None, state, start, floor)


@pytest.fixture(autouse=True)
def tables_in_bulk(monkeypatch):
    """ReplicaAnalyser.feed_table replays every table in bulk, however few its rows (the scan
    feeds a table of fewer than replica.BULK_ROWS a row at a time, through feed())."""
    from logscan.scan import replica

    monkeypatch.setattr(replica, "BULK_ROWS", 1)


def _analysis(replica, tables_of, facts_of) -> tuple:
    """A replica analysed from its segments' facts: fed a row at a time (``tables_of`` None)
    or a fact table at a time (ReplicaAnalyser.feed_table); what finish() gives and the spans
    closed on the way, comparable."""
    closed = []
    analyser = ReplicaAnalyser(replica, closed.append, hw_checkpoint=None, log_start_checkpoint=None)
    for base, path in replica.segments:
        if tables_of is None:
            for fact, entry in facts_of(path):
                analyser.feed(fact, base, entry.position)
        else:
            for table in tables_of(path):
                analyser.feed_table(table, base)
    a = analyser.finish()
    return (a.state, a.max_timestamp, a.snapshot_check, a.leader_epoch, a.findings, a.replay.open_spans,
            replay_state(a.replay.producers), closed)


def test_every_fixture_replica_analyses_the_same():
    roots = sorted((REPO / "fixtures").glob("*/brokers"))
    replicas = [r for root in roots for b in iter_brokers([root]) for r in b.replicas if r.segments]
    assert len(replicas) > 50

    def facts_of(path):
        return list(iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead()))

    def tables_of(path, cut=7):  # small tables: the order rules and snapshots fall inside them
        facts = facts_of(path)
        return _tables([f for f, _ in facts], list(range(cut, len(facts), cut)), [e.position for _, e in facts])

    for replica in replicas:
        assert _analysis(replica, tables_of, facts_of) == _analysis(replica, None, facts_of), replica.path


def _write_replica(folder: Path, rng: random.Random) -> None:
    """A partition folder of a generated history (history_from_bytes) written as batches in
    one to three segments, some base offsets moved back (offset order broken: the replay
    stops there), and a producer snapshot of some of its producers at a mid-log offset (the
    newest snapshot's rebuild and its comparison, the broker's load)."""
    from logscan.format.control import LEADER_CHANGE, encode_control_key
    from logscan.format.snapshot import encode_producer_snapshot
    from logscan.testing.encoder import Rec, encode_batch, end_txn_marker_batch, with_base_offset

    folder.mkdir(parents=True)
    facts = random_history(rng, rng.randrange(5, 80))
    batches = []
    for f in facts:
        owner = dict(producer_id=f.producer_id, producer_epoch=f.producer_epoch)
        if f.control_type in ("COMMIT", "ABORT"):
            b = end_txn_marker_batch(commit=f.control_type == "COMMIT", coordinator_epoch=f.coordinator_epoch,
                                     base_offset=f.base_offset, timestamp=f.max_timestamp, **owner)
        elif f.is_control:
            recs = [Rec(b"\0\0\0\0", encode_control_key(LEADER_CHANGE), (), f.max_timestamp)]
            b = encode_batch([] if f.control_type is None else recs, base_offset=f.base_offset, control=True,
                             transactional=f.is_transactional, **owner)
        else:
            b = encode_batch([Rec(b"v", b"k", (), f.max_timestamp)] * f.records_count, base_offset=f.base_offset,
                             transactional=f.is_transactional, base_sequence=f.base_sequence, **owner)
        if rng.random() < 0.03:
            b = with_base_offset(b, max(0, f.base_offset - rng.randrange(1, 5)))
        batches.append((f.base_offset, b))
    cuts = sorted(rng.sample(range(1, len(batches)), min(len(batches) - 1, rng.randrange(3))))
    for a, z in zip([0, *cuts], [*cuts, len(batches)]):
        (folder / f"{batches[a][0]:020d}.log").write_bytes(b"".join(b for _, b in batches[a:z]))
    # (producer id, epoch, last sequence, last offset, offset delta, timestamp, coordinator epoch,
    # current transaction's first offset)
    entries = [(pid, rng.randrange(4), rng.randrange(50), rng.randrange(50), 0, rng.randrange(2000), 0, -1)
               for pid in rng.sample([10, 11, 12], rng.randrange(1, 4))]
    (folder / f"{facts[len(facts) // 2].base_offset:020d}.snapshot").write_bytes(encode_producer_snapshot(entries))


@pytest.mark.parametrize("seed", range(40))
def test_damaged_generated_replicas_analyse_the_same(tmp_path, seed):
    rng = random.Random(seed)
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=x\n")
    _write_replica(tmp_path / "broker-1" / "t-0", rng)
    (replica,) = [r for b in iter_brokers([tmp_path]) for r in b.replicas]
    assert replica.snapshots and replica.segments

    def facts_of(path):
        return list(iter_segment(str(path), 0, is_txn_log=False, out=ReplicaRead()))

    def tables_of(path, cut=rng.randrange(1, 9)):
        facts = facts_of(path)
        return _tables([f for f, _ in facts], list(range(cut, len(facts), cut)), [e.position for _, e in facts])

    assert _analysis(replica, tables_of, facts_of) == _analysis(replica, None, facts_of)


def test_of_transactions_starting_at_the_same_offset_the_floor_keeps_the_first_marker():
    """With a high-watermark floor append() keeps one completed transaction: the first, in log
    order, of those starting earliest. Two producers' transactions open in a snapshot from the
    same offset, closed by markers in the order 11 then 10 (rows the bulk replay groups by
    producer, 10 first): 11's is kept, as append() keeps it."""
    from logscan.state.producer_state import ProducerStateEntry, ProducerStateManager

    def seeded():
        psm = ProducerStateManager(0)
        psm.seed([ProducerStateEntry(pid, 0, 0, 1000, 5) for pid in (10, 11)], 10)
        return psm

    def marker(offset, pid, commit):
        return BatchFact(offset, offset, pid, 0, -1, -1, 2000, True, True, 1, 78, "COMMIT" if commit else "ABORT", 1,
                         2000)

    facts = [marker(10, 11, True), marker(11, 10, False)]
    reference, bulk = seeded(), seeded()
    for fact in facts:
        reference.append(fact)
    assert bulk.append_table(_tables(facts, [])[0]).tolist() == [0, 1]
    assert [t.producer_id for t in reference.completed] == [11]
    assert replay_state(bulk) == replay_state(reference)


def test_fact_rows_hold_what_fact_columns_of_the_same_facts_hold():
    """FactRows (facts in hand, columns made when read) against FactColumns.of_facts of the
    same facts: every column, control type and flag, positions (given, or from the first where
    each batch follows the one before) and any rows taken; a column read before the rest are
    made is the one made with them; the facts are those in hand (a last offset below -2^63
    too, which a column holds as INT64_MIN). Histories with every control type."""
    from logscan.state.columns import FACT_NUMPY_COLUMNS, INT64_MIN, FactColumns, FactRows

    rng = random.Random(11)
    facts = random_history(rng, 300)
    facts[7] = facts[7]._replace(last_offset=INT64_MIN - 5)
    follow = [0]
    for fact in facts[:-1]:
        follow.append(follow[-1] + fact.size_in_bytes)
    for positions in (follow, follow[0], [rng.randrange(1 << 40) for _ in facts]):
        expected = FactColumns.of_facts(facts, positions if type(positions) is list else follow)
        rows = FactRows(list(facts), positions)
        assert len(rows) == len(facts) and rows.facts() == facts
        assert rows.max_timestamp.tolist() == expected.max_timestamp.tolist()   # one column, before the rest
        assert rows.positions() == expected.positions()
        for name in (*FACT_NUMPY_COLUMNS, "types", "marker", "empty_control", "other_control", "aborted"):
            assert getattr(rows, name).tolist() == getattr(expected, name).tolist(), name
        assert rows.names.tolist() == expected.names.tolist()
        assert [rows.control_type(i) for i in range(len(facts))] == [f.control_type for f in facts]
        assert rows.fact(9) == facts[9] and rows.by_producer.tolist() == expected.by_producer.tolist()
        taken = rows.take(slice(5, 50))
        assert type(taken) is FactRows and taken.facts() == facts[5:50]
        assert taken.positions() == (positions if type(positions) is list else follow)[5:50]
        some = expected.by_producer[:40]
        assert rows.take(some).facts() == expected.take(some).facts()
    halves = FactRows.concat([FactRows(facts[:100], follow[0]), FactRows(facts[100:], follow[100])])
    assert halves.facts() == facts and halves.positions() == follow
