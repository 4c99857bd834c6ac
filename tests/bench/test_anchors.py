"""tools/bench/anchors.py: how the decode benchmark times its anchors."""

from tools.bench import anchors


def test_best_of_each_takes_turns_and_keeps_each_best(monkeypatch):
    # A fake clock read before and after each run: logscan's runs last 3, 1 and 2 s,
    # kafka-python's 5, 6 and 4 s, in rounds of one run each.
    ticks = iter([0, 3, 10, 15, 20, 21, 30, 36, 40, 42, 50, 54])
    monkeypatch.setattr(anchors.time, "perf_counter", lambda: next(ticks))
    calls = []

    def run(name):
        return lambda: calls.append(name) or len(calls)

    best = anchors.best_of_each(3, {"logscan": run("logscan"), "kafka-python": run("kafka-python")})
    assert calls == ["logscan", "kafka-python"] * 3
    assert {k: t for k, (t, _) in best.items()} == {"logscan": 1, "kafka-python": 4}
    assert {k: r for k, (_, r) in best.items()} == {"logscan": 5, "kafka-python": 6}   # the last results
