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

from logscan.scan.replica import ReplicaRead, facts_to_table, iter_segment
from logscan.state.facts import BatchFact
from logscan.state.producer_state import BrokerLoad
from tools.fuzz.targets import random_history, replay_state, seeded_manager, spans_state

REPO = Path(__file__).resolve().parents[2]


def _tables(facts: list[BatchFact], cuts: list[int]):
    bounds = [0, *sorted(cuts), len(facts)]
    return [facts_to_table(facts[a:b], [0] * (b - a)) for a, b in zip(bounds, bounds[1:])]


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
