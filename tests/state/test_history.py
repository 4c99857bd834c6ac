"""transactional_id_history on the real fixture clusters' __transaction_state records and
spans: the last producer id, epoch and state of every id equal what `kafka-transactions
describe` reported live, and the counts are the scenarios' own (fixtures/README.md):
txn-basic commits, aborts and commits; txn-timeout is aborted by the coordinator's timeout
sweep; txn-fenced's first producer is fenced by a second InitProducerId, which then commits;
java-txn commits twice, runs again (InitProducerId) and aborts once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logscan.scan.local import scan
from logscan.scan.rows import txn_record_from_row
from logscan.state.history import percentile, transactional_id_history

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTERS = ["tv1", "tv2", "kafka-3.9", "kafka-4.4"]

# (committed, aborted, open, timeouts, fences) per transactional id, from the scenarios
SCENARIOS = {
    "txn-basic": (2, 1, 0, 0, 0),
    "txn-timeout": (0, 1, 0, 1, 0),
    "txn-fenced": (1, 1, 0, 0, 1),
    "java-txn": (2, 1, 0, 0, 1),
    "txn-open": (0, 0, 1, 0, 0),
    "java-open": (0, 0, 1, 0, 0),
}


@pytest.fixture(scope="module", params=CLUSTERS)
def cluster(request):
    root = FIXTURES / request.param
    truth = json.loads((root / "truth" / "truth.json").read_text())
    result = scan([root / "brokers"], as_of_ms=truth["recorded_at_ms"])
    t = result.tables
    # the replica of each coordinator partition the coordinator loads (coordinator_state's)
    loaded = {(r["broker"], r["partition"]) for r in t["coordinator_state"]}
    records = sorted((txn_record_from_row(r) for r in t["txn_log"] if (r["broker"], r["partition"]) in loaded),
                     key=lambda r: (r.coordinator_partition, r.offset))   # the order the history takes
    return truth, transactional_id_history(records, t["txn_spans"]), t


def test_last_producer_and_state_are_what_kafka_described(cluster):
    truth, history, _ = cluster
    assert set(truth["describe"]) <= set(history)
    for tid, described in truth["describe"].items():
        (row,) = described["rows"]
        h = history[tid]
        assert (h.producers[-1].producer_id, h.producers[-1].last_epoch, h.last_state) == \
            (int(row["ProducerId"]), int(row["ProducerEpoch"]), row["TransactionState"]), tid


def test_counts_are_the_scenarios(cluster):
    truth, history, _ = cluster
    for tid, expected in SCENARIOS.items():
        if tid in truth["describe"]:
            h = history[tid]
            assert (h.committed, h.aborted, h.open, h.timeouts, h.fences) == expected, tid
            assert h.durations.count == h.committed + h.aborted


def test_spans_count_each_partitions_transaction_once(cluster):
    truth, history, tables = cluster
    h = history["txn-basic"]
    # txn_basic: a commit on txn-a/0, txn-a/1, txn-b/0; an abort on txn-a/1, txn-a/2, txn-b/1;
    # then a commit on data partitions and the group's __consumer_offsets partition
    spans = {(s["topic"], s["partition"], s["first_offset"]) for s in tables["txn_spans"]
             if s["producer_id"] == h.producers[-1].producer_id}
    assert sum(h.span_outcomes.values()) == len(spans)
    assert h.span_outcomes.get("ABORT") == 3 and h.span_outcomes.get("OPEN") is None
    assert h.span_durations.count == len(spans) and h.span_durations.max_ms >= h.span_durations.p50_ms


def test_the_timed_out_abort_took_the_timeout(cluster):
    truth, history, _ = cluster
    h = history["txn-timeout"]
    assert h.durations.max_ms >= 2000   # transaction.timeout.ms of the scenario's producer
    assert len({p.producer_id for p in h.producers}) == 1 and h.producers[0].last_epoch > h.producers[0].first_epoch


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile([7], 0.99), percentile([], 0.5)) == \
        (50, 99, 7, None)
    assert percentile([5, 1, 3], 0.5) == 3


def test_history_rows_fit_their_schema(cluster):
    from logscan.scan.rows import TRANSACTIONAL_ID_HISTORY, to_batch
    from logscan.state.history import history_rows

    truth, history, _ = cluster
    rows = history_rows(history)
    batch = to_batch(rows, TRANSACTIONAL_ID_HISTORY)
    assert batch.num_rows == len(history) and [r["transactional_id"] for r in rows] == sorted(history)
    basic = next(r for r in rows if r["transactional_id"] == "txn-basic")
    assert (basic["committed"], basic["aborted"], basic["span_aborts"]) == (2, 1, 3)
    assert basic["producers"][-1]["producer_id"] == int(truth["describe"]["txn-basic"]["rows"][0]["ProducerId"])


def test_the_scans_history_table_is_the_rule_over_the_copy(cluster):
    """The scan's transactional_id_history table (the coordinator's records as loaded, each
    partition's served replica's spans): the rows of the rule over every replica's spans."""
    from logscan.state.history import history_rows

    _, history, tables = cluster
    assert tables["transactional_id_history"] == history_rows(history)


def test_the_history_in_order_takes_ids_and_transactions_in_any_order(cluster):
    """pipeline.history_in_order (the Spark job's: records clustered by id, spans by
    transaction, in no order between them) gives the rows history gives from any order."""
    from logscan.scan import pipeline

    _, _, t = cluster
    loaded = {(r["broker"], r["partition"]) for r in t["coordinator_state"]}
    served = pipeline.served_keys(t["partition_state"])
    records = [tuple(r[c] for c in pipeline.HISTORY_RECORD_COLUMNS) for r in t["txn_log"]
               if (r["broker"], r["partition"]) in loaded]
    by_id = sorted(records, key=lambda r: (r[2], r[:2]), reverse=True)   # ids reversed...
    by_id = [r for tid in dict.fromkeys(r[2] for r in by_id)               # ...each id's in log order
             for r in sorted((x for x in by_id if x[2] == tid), key=lambda x: x[:2])]
    spans = [s for s in t["txn_spans"] if (s["broker"], s["topic"], s["partition"]) in served]
    # each transaction's spans together, the transactions last first
    grouped = sorted(spans, key=lambda s: [s[c] for c in pipeline.HISTORY_SPAN_ORDER], reverse=True)
    assert records and grouped
    assert pipeline.history_in_order(by_id, grouped) == t["transactional_id_history"]


def test_a_producer_id_belongs_to_the_id_whose_first_record_comes_first_in_the_log():
    from logscan.state.coordinator import TxnLogRecord

    # "b" (coordinator partition 0) names producer 7 before "a" (partition 1) does, though
    # "a"'s records come first: 7's span counts for "b"
    a = [TxnLogRecord(1, 5, "a", "Empty", producer_id=7, producer_epoch=0, last_update_timestamp_ms=10)]
    b = [TxnLogRecord(0, 3, "b", "Empty", producer_id=9, next_producer_id=7, producer_epoch=0,
                      last_update_timestamp_ms=5)]
    span = {"topic": "t", "partition": 0, "producer_id": 7, "first_offset": 0, "outcome": "COMMIT", "duration_ms": 4}
    for records in (a + b, b + a):
        history = transactional_id_history(records, [span])
        assert (history["b"].span_outcomes, history["a"].span_outcomes) == ({"COMMIT": 1}, {})
