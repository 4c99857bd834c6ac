"""The steps of logscan.scan.pipeline that both executors share, on tiny row sets; the steps
over real broker files are held to Kafka's tools in test_local_vs_kafka.py and to the Spark
executor in tests/spark."""

import pickle
import random

import pyarrow as pa
import pytest

from logscan.scan import pipeline, summary
from logscan.scan import rows as R
from logscan.state.coordinator import ProducerIdMatch, merge_partitions


@pytest.mark.parametrize("text, ms", [
    ("1795381200000", 1795381200000),
    (" 1795381200000 ", 1795381200000),
    ("2026-11-22T21:00:00Z", 1795381200000),
    ("2026-11-22T21:00:00", 1795381200000),
    ("2026-11-22T22:00:00+01:00", 1795381200000),
    ("2026-11-22T21:00:00.123Z", 1795381200123),
    (None, None),
])
def test_as_of_takes_iso_or_epoch_ms(text, ms):
    assert pipeline.parse_as_of(text) == ms


@pytest.mark.parametrize("text", ["yesterday", "", "12:00", "1e12", "--5"])
def test_a_bad_as_of_says_what_is_accepted(text):
    with pytest.raises(ValueError, match="neither epoch milliseconds nor an ISO-8601 time"):
        pipeline.parse_as_of(text)


@pytest.mark.parametrize("text", ["-5", "253402300800000", str(2**63 - 1), "1582-10-15T00:00:00Z"])
def test_an_as_of_no_table_can_hold_is_refused(text):
    """Delta's as_of column, Spark and Python's datetime end with year 9999 (issue 33)."""
    with pytest.raises(ValueError, match="out of range"):
        pipeline.parse_as_of(text)


def test_times_past_the_scans_clock_are_not_the_scans_now():
    ceiling = pipeline.timestamp_ceiling()
    assert pipeline.as_of(ceiling + 1, 50) == 50
    assert pipeline.as_of(40, (2**63 - 1)) == 40


def test_the_default_as_of_is_the_newest_batch_or_record():
    assert pipeline.as_of(10, 20) == 20 and pipeline.as_of(30, 20) == 30
    assert pipeline.as_of(None, 7) == 7 and pipeline.as_of(7, None) == 7
    assert pipeline.as_of(None, None) == -1


def _record(partition, tid, offset, state="Ongoing", ts=100, pid=1):
    return {"broker": 1, "topic": "__transaction_state", "partition": partition, "offset": offset,
            "transactional_id": tid, "state": state, "producer_id": pid, "previous_producer_id": -1,
            "next_producer_id": -1, "producer_epoch": 0, "transaction_timeout_ms": 60000, "partitions": [],
            "last_update_timestamp_ms": ts, "start_timestamp_ms": ts, "coordinator_epoch": 0,
            "file": "f", "position": offset}


def test_coordinator_loads_a_partition_and_merge_keeps_one_record_per_id():
    p0 = pipeline.coordinator([_record(0, "a", 0), _record(0, "a", 1, "CompleteCommit"), _record(0, "b", 2),
                               {**_record(0, "b", 3), "state": None}])
    assert [(r["transactional_id"], r["state"], r["offset"]) for r in p0] == [("a", "CompleteCommit", 1)]
    # an id in two partitions (a mixed-up copy): the newer record wins
    p1 = pipeline.coordinator([_record(1, "a", 0, "Empty", ts=500)])
    view = pipeline.coordinator_view(p0 + p1)
    assert [(r["transactional_id"], r["partition"], r["state"]) for r in view.rows.to_pylist()] == [("a", 1, "Empty")]
    assert view.kept == [1] and list(view.index) == [1]
    assert pipeline.coordinator([]) == []
    empty = pipeline.coordinator_view([])
    assert empty.rows.num_rows == 0 and empty.kept == [] and dict(empty.index) == {}


def _index_as_it_was(latest):
    """Producer id -> [ProducerIdMatch], the dict of lists coordinator.index_by_producer_id gave
    before it was held as arrays: the oracle of the lookup's answers."""
    index = {}
    for rec in latest.values():
        for pid, relation in ((rec.producer_id, "current"), (rec.previous_producer_id, "previous"),
                              (rec.next_producer_id, "next")):
            if pid != -1:
                index.setdefault(pid, []).append(ProducerIdMatch(rec, relation))
    return index


def test_the_coordinator_view_gives_the_rows_and_index_both_executors_made():
    """Random coordinator records (ids in two partitions, producer ids named by several
    records and relations, partitions of every size): coordinator_view, from rows or from an
    Arrow table of another engine's types (Spark's list item names, no time zone metadata
    kept), gives the rows of the merge rule and the index's answers of the dict it replaced,
    also after a pickle (what the Spark job ships to its tasks)."""
    rng = random.Random(11)
    rows = []
    for partition in range(4):
        records = []
        for offset in range(300):
            pid = rng.choice([-1, *range(1, 40)])
            records.append({**_record(partition, f"id-{rng.randrange(150)}", offset,
                                      state=rng.choice(["Ongoing", "PrepareCommit", "CompleteAbort", "Empty", None]),
                                      ts=rng.randrange(1000), pid=pid),
                            "previous_producer_id": rng.choice([-1, -1, pid, rng.randrange(1, 40)]),
                            "next_producer_id": rng.choice([-1, -1, rng.randrange(1, 40)]),
                            "partitions": [{"topic": f"t{rng.randrange(3)}", "partition": rng.randrange(5)}
                                           for _ in range(rng.randrange(4))]})
        rows.extend(pipeline.coordinator(records))
    recs = [R.txn_record_from_row(r) for r in rows]
    want = merge_partitions(recs)
    assert len(want) < len(recs)   # some ids are in two partitions
    spark_like = pa.Table.from_pylist(rows, schema=R.COORDINATOR_STATE).cast(pa.schema(
        [pa.field(f.name, pa.list_(pa.field("element", f.type.value_type)) if f.name == "partitions" else f.type)
         for f in R.COORDINATOR_STATE]))
    for given in (rows, spark_like):
        view = pipeline.coordinator_view(given)
        assert view.rows.schema.equals(R.COORDINATOR_STATE)
        assert view.rows.equals(pa.Table.from_pylist([rows[i] for i in view.kept], schema=R.COORDINATOR_STATE))
        assert [R.txn_record_from_row(rows[i]) for i in view.kept] == list(want.values())
        oracle = _index_as_it_was(want)
        for index in (view.index, pickle.loads(pickle.dumps(view.index))):
            assert sorted(index) == sorted(oracle) and len(index) == len(oracle)
            for pid in [*range(-2, 45), None, "x"]:
                assert index.get(pid, []) == oracle.get(pid, [])
                assert (pid in index) == (pid in oracle)
            assert index == oracle


def test_figures_keep_the_first_rows_of_a_stream_as_a_sort_would():
    rng = random.Random(7)
    rows = [{"broker": rng.randrange(3), "topic": f"t{rng.randrange(5)}", "partition": rng.randrange(4),
             "producer_id": i, "producer_epoch": 0, "start_offset": rng.randrange(100), "age_ms": 1,
             "hanging": rng.choice([True, False, None]), "reason": rng.choice("xyz"), "evidence": ""}
            for i in range(500)]
    streamed = sorted(rows, key=lambda r: (r["topic"], r["partition"]))   # as the executors give them
    fig = summary.figures(as_of_ms=0, states=[], candidates=iter(streamed), findings=[], files=[])
    want = sorted(rows, key=summary.candidate_order)[:summary.MAX_ROWS]
    assert fig.candidate_rows == want and fig.candidates == 500
    assert sum(n for _, _, n in fig.reasons) == 500
    # every producer id is its own transaction here: a row each, in transaction order
    assert fig.transactions == 500 and [t["producer_id"] for t in fig.transaction_rows] == [
        r["producer_id"] for r in sorted(rows, key=summary.transaction_order)[:summary.MAX_ROWS]]


def test_figures_refuse_rows_out_of_stream_order():
    rows = [{"broker": 0, "topic": t, "partition": 0, "producer_id": 1, "producer_epoch": 0, "start_offset": 0,
             "age_ms": 1, "hanging": True, "reason": "x", "evidence": ""} for t in ("b", "a")]
    with pytest.raises(ValueError, match="out of order"):
        summary.figures(as_of_ms=0, states=[], candidates=rows, findings=[], files=[])


def test_exit_status_hanging_then_damage():
    fig = summary.figures(as_of_ms=0, states=[], candidates=[], findings=[], files=[])
    assert summary.exit_status(fig) == 0
    fig.findings = 1
    assert summary.exit_status(fig) == summary.EXIT_DAMAGE
    fig.reasons = [("no_coordinator_record", True, 1)]
    assert summary.exit_status(fig) == summary.EXIT_HANGING


def test_a_history_record_is_the_txn_log_record_of_its_values():
    """_history_record builds the TxnLogRecord by tuple.__new__: the record the keyword call
    made, the fields the history does not read at TxnLogRecord's defaults."""
    from logscan.state.coordinator import TxnLogRecord
    values = (3, 17, "app-1", "PrepareAbort", 42, 41, 43, 7, 60000, 1795381200123, 1795381199000)
    got = pipeline._history_record(values)
    want = TxnLogRecord(3, 17, "app-1", "PrepareAbort", 42, 41, 43, 7, 60000,
                        last_update_timestamp_ms=1795381200123, start_timestamp_ms=1795381199000)
    assert type(got) is TxnLogRecord and got == want and got._asdict() == want._asdict()
    assert len(values) == len(pipeline.HISTORY_RECORD_COLUMNS)


def _spans_of(rnd: random.Random) -> list[dict]:
    spans = []
    for _ in range(80):
        s = {"broker": rnd.randint(1, 3), "topic": rnd.choice("tu"), "partition": rnd.randint(0, 1),
             "producer_id": rnd.randint(1, 4), "first_offset": rnd.randint(0, 5),
             "outcome": rnd.choice(["COMMIT", "ABORT", "OPEN"]), "duration_ms": rnd.randint(0, 50),
             "producer_epoch": 0, "start_timestamp": 5, "end_marker_offset": 9}
        if s["outcome"] == "OPEN" and rnd.random() < 0.7:
            del s["duration_ms"]   # an open span of OPEN_SPAN_COLUMNS: no duration
        elif rnd.random() < 0.1:
            del s["outcome"]   # a column the history reads, missing: None, as history() gives it
        spans.append(s)
    return spans


@pytest.mark.parametrize("seed", range(20))
def test_the_history_in_order_takes_spans_as_they_are_or_projected(seed):
    """history_in_order takes a span holding every HISTORY_SPAN_COLUMNS as it is (its other
    columns unread) and one missing some as if they were None: its rows are history's, which
    projects every span, over spans with and without durations, outcomes and extra columns."""
    rnd = random.Random(seed)
    records = []
    for offset in range(40):
        tid = rnd.choice(["a", "b", "c"])
        start = rnd.randint(0, 40)
        records.append({"partition": 0, "offset": offset, "transactional_id": tid,
                        "state": rnd.choice(["Empty", "Ongoing", "PrepareAbort", "CompleteCommit", "CompleteAbort"]),
                        "producer_id": rnd.randint(1, 4), "previous_producer_id": -1, "next_producer_id": -1,
                        "producer_epoch": rnd.randint(0, 2), "transaction_timeout_ms": 10,
                        "last_update_timestamp_ms": start + rnd.randint(0, 30), "start_timestamp_ms": start,
                        "coordinator_epoch": 0, "partitions": []})
    spans = _spans_of(rnd)
    want = pipeline.history(records, spans)
    in_order = sorted(spans, key=lambda s: tuple(s[c] for c in pipeline.HISTORY_SPAN_ORDER))
    values = [tuple(r[c] for c in pipeline.HISTORY_RECORD_COLUMNS) for r in records]
    got = pipeline.history_in_order(values, in_order)
    assert repr(got) == repr(want)
    assert any(r["span_duration_p50_ms"] is not None for r in got)


def test_the_served_replicas_are_the_served_keys():
    """served_replicas(served(states)) is served_keys(states): each partition's served replica
    (its leader's, else the one furthest ahead), of any number of replicas."""
    rnd = random.Random(7)
    states = [{"broker": b, "topic": t, "partition": p, "is_leader": rnd.choice([None, False, True]),
               "high_watermark": rnd.choice([None, 5, 9]), "last_stable_offset": rnd.choice([None, 3, 9])}
              for t in "tu" for p in range(6) for b in rnd.sample([1, 2, 3, 4], rnd.randint(1, 4))]
    served = pipeline.served(states)
    assert pipeline.served_replicas(served) == pipeline.served_keys(states)
    assert len(pipeline.served_replicas(served)) == len(served) == 12
    assert pipeline.served_replicas({}) == set()


@pytest.mark.parametrize("columns", [
    ("broker", "topic", "partition", "producer_id", "first_offset", "outcome", "duration_ms"),
    ("a",), (), ("it's", 'say "x"', "new\nline", "ünï", "{}", "v[0]", "lambda"),
])
def test_a_row_maker_makes_the_dict_of_its_columns(columns):
    """row_maker(columns)(values) is dict(zip(columns, values)), key order too, whatever the
    column names hold (quotes, braces, code)."""
    values = tuple(range(len(columns)))
    got = pipeline.row_maker(columns)(values)
    assert got == dict(zip(columns, values)) and list(got) == list(columns)
    assert pipeline.row_maker(iter(columns))(tuple(reversed(values))) == dict(zip(columns, reversed(values)))


def test_a_row_maker_takes_names_only():
    with pytest.raises(TypeError, match="column names"):
        pipeline.row_maker(["a", 1])
