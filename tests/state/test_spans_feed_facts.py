"""Replay.feed_facts (a segment's few batches in one loop: ReplicaAnalyser._feed_rows) leaves
what feed() a fact at a time leaves: the spans closed, in order, the spans open, and every
field of the producers (replay_state), on generated histories (seeded from a snapshot or not,
from a start offset, with a high-watermark floor or none) fed in pieces, and on every fixture
replica."""

from __future__ import annotations

import random

import pytest

from logscan.state.spans import Replay
from tests.state.test_bulk_replay import _fixture_replicas
from tools.fuzz.targets import random_history, replay_state, seeded_manager


def _state(facts, cuts, seed=None, start=0, floor=None) -> tuple:
    closed = []
    entries = None if seed is None else (list(seeded_manager(seed).producers.values()), start)
    r = Replay(entries, closed.append, high_watermark_floor=floor)
    if cuts is None:
        for fact in facts:
            r.feed(fact)
    else:
        at = 0
        for cut in sorted(cuts) + [len(facts)]:
            r.feed_facts(facts[at:cut])
            at = max(at, cut)
    return closed, r.open_spans, r._opened, replay_state(r.producers)


@pytest.mark.parametrize("seed", range(300))
def test_generated_histories_fed_as_facts_replay_as_feed(seed):
    rng = random.Random(seed)
    facts = random_history(rng, rng.randrange(1, 60))
    cuts = [rng.randrange(len(facts) + 1) for _ in range(rng.randrange(4))]
    state, start = rng.choice([None, rng.randrange(1 << 30)]), rng.choice([0, rng.randrange(40)])
    floor = rng.choice([None, 0, rng.randrange(60)])
    want = _state(facts, None, state, start, floor)
    assert _state(facts, cuts, state, start, floor) == want
    assert _state(facts, [], state, start, floor) == want


def test_every_fixture_replica_fed_as_facts_replays_as_feed():
    replicas = _fixture_replicas()
    assert len(replicas) > 50
    for facts in replicas:
        for cuts in ([], [1, len(facts) // 2]):
            assert _state(facts, cuts, None, 0, 0) == _state(facts, None, None, 0, 0)


def test_the_map_end_offset_is_the_last_fed_fact_past_the_start():
    facts = random_history(random.Random(7), 30)
    r = Replay(None)
    r.feed_facts(facts)
    assert r.producers.map_end_offset == facts[-1].last_offset + 1
    r.feed_facts([])
    assert r.producers.map_end_offset == facts[-1].last_offset + 1
