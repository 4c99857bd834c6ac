"""A file of small decompression bombs (issue 33 item 2): a per-file budget.

Each bomb here is a few hundred bytes of zstd that inflates to 4 MiB, far under the per-batch
cap (--max-decompressed-bytes, 256 MiB), so no single one is refused; a segment of them cost
minutes per MB. A file's batches share a DecompressionBudget (output bytes per byte of the
file, with a floor, and seconds): the payload that goes past it is one located finding
(``bomb-budget``), the later compressed payloads of that file are not inflated, and every
other batch is read as before. The segment is the real `tv2` __transaction_state-2 one (31
uncompressed batches of TransactionLogValue records) with ten of its batches turned into
bombs; the budget is made small (10 MiB) so that the test runs in a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import cramjam
import pytest

from logscan.dump import EXIT_DATA
from logscan.format import compression
from logscan.format.batch import iter_records
from logscan.format.compression import DecompressionBudget
from logscan.format.errors import DecodeError, DecompressionBudgetSpent
from logscan.format.logfile import walk_batches
from logscan.scan.replica import BUDGET_ENV

from .harness import BROKER, REAL_LOGS, RECORDS_AT, REPO, batch_spans, dump_json, place, rebuilt_batch, scan_read

REAL = REAL_LOGS["txnlog"]
BOMB_BYTES = 4 << 20
BUDGET = dict(budget_min_bytes=10 << 20, budget_ratio=1)
BOMBED = range(2, 12)  # the batches made bombs


@pytest.fixture(scope="module")
def bombed():
    """(segment bytes, positions of the bombs, positions of the untouched batches)."""
    data = REAL.read_bytes()
    payload = bytes(cramjam.zstd.compress(bytes(BOMB_BYTES)))
    assert len(payload) < 1000
    out, bombs, kept = bytearray(), [], []
    for i, (p, s) in enumerate(batch_spans(data)):
        (bombs if i in BOMBED else kept).append(len(out))
        out += rebuilt_batch(data, p, payload, codec=compression.ZSTD) if i in BOMBED else data[p:p + s]
    return bytes(out), bombs, kept


def test_the_budget_is_charged_and_then_refuses_at_once():
    ticks = iter(range(100))
    budget = DecompressionBudget(1000, ratio=1, min_bytes=10 << 20, seconds=1e9, clock=lambda: next(ticks))
    payload = bytes(cramjam.zstd.compress(bytes(BOMB_BYTES)))
    for at in (100, 200):
        assert len(compression.decompress(compression.ZSTD, payload, magic=2, position=at, budget=budget)) == BOMB_BYTES
    with pytest.raises(DecompressionBudgetSpent) as spent:
        compression.decompress(compression.ZSTD, payload, magic=2, position=300, budget=budget)
    assert spent.value.position == 300 == budget.spent_at and spent.value.reason == "bomb-budget"
    with pytest.raises(DecompressionBudgetSpent) as again:
        compression.decompress(compression.ZSTD, payload, magic=2, position=400, budget=budget)
    assert again.value.position == 400 and budget.output == 2 * BOMB_BYTES + (2 << 20) + 1
    # uncompressed payloads cost nothing
    assert compression.decompress(compression.NONE, b"abc", magic=2, budget=budget) == b"abc"


def test_the_time_budget():
    """A clock that moves 5 s per call: the second payload goes past a 6 s budget."""
    ticks = iter(range(0, 1000, 5))
    budget = DecompressionBudget(1000, seconds=6, clock=lambda: next(ticks))
    payload = bytes(cramjam.zstd.compress(b"x" * 1000))
    assert compression.decompress(compression.ZSTD, payload, magic=2, budget=budget) == b"x" * 1000
    with pytest.raises(DecompressionBudgetSpent) as spent:
        compression.decompress(compression.ZSTD, payload, magic=2, position=77, budget=budget)
    assert spent.value.position == 77 and "10.0 s" in spent.value.message


def test_the_dump_says_where_the_budget_ran_out_and_goes_on(tmp_path, bombed):
    data, bombs, kept = bombed
    reference = dump_json(place(tmp_path / "ref", REAL, REAL.read_bytes()))
    run = dump_json(place(tmp_path, REAL, data), **BUDGET)
    assert run.status == EXIT_DATA
    assert [b["position"] for b in run.batches] == sorted(bombs + kept)
    # every untouched batch comes out with its records, as from the real file
    ref_records = [reference.records[b["position"]] for b in reference.batches]
    assert [run.records[p] for p in kept] == [r for i, r in enumerate(ref_records) if i not in BOMBED]
    # two bombs fit the 10 MiB (their zeros are no records: a finding each), the third spends it
    spent = [f for f in run.findings if f["reason"] == "bomb-budget"]
    assert [f["position"] for f in spent] == [bombs[2] + RECORDS_AT]
    assert {f["position"] for f in run.findings} == {b + RECORDS_AT for b in bombs[:3]}
    assert all(run.records[p] == [] for p in bombs)
    assert "not decompressed" in spent[0]["message"]


def test_the_default_budget_leaves_a_real_file_alone(tmp_path):
    """The real codecs segment (gzip, snappy, lz4, zstd batches): nothing near the budget."""
    assert dump_json(place(tmp_path, REAL_LOGS["codecs"], REAL_LOGS["codecs"].read_bytes())).findings == []


def test_records_of_a_file_share_one_budget(bombed):
    """The format layer alone: iter_records charged with one budget per file."""
    data, bombs, _ = bombed
    budget = DecompressionBudget(len(data), ratio=1, min_bytes=10 << 20)
    reasons = []
    for batch in walk_batches(data):
        try:
            list(iter_records(data, batch, budget=budget))
        except DecodeError as e:
            reasons.append((batch.position, e.reason))
    assert [r for _, r in reasons][2:] == ["bomb-budget"] * 8
    assert [p for p, _ in reasons] == bombs


def test_the_scan_says_where_the_budget_ran_out_and_keeps_every_other_record(tmp_path, bombed, monkeypatch):
    """The scan decompresses __transaction_state batches: each segment gets a budget (here
    made 10 MiB through the environment the CLI's flags set); past it, one finding, and the
    coordinator records of every untouched batch are read as from the real file."""
    monkeypatch.setenv(BUDGET_ENV, f"1:{10 << 20}:60")
    data, bombs, kept = bombed
    real = scan_read(place(tmp_path / "ref", REAL, REAL.read_bytes()))
    read = scan_read(place(tmp_path, REAL, data))
    spent = [f for f in read.findings if f.reason == "bomb-budget"]
    assert [f.position for f in spent] == [bombs[2] + RECORDS_AT]
    assert {f.position for f in read.findings} == {b + RECORDS_AT for b in bombs[:3]}
    spans = batch_spans(REAL.read_bytes())
    untouched = {spans[i][0] for i in range(len(spans)) if i not in BOMBED}
    expected = [r for r, p in zip(real.txn_log, real.txn_log_positions) if p in untouched]
    assert read.txn_log == expected and len(expected) > 10


#: The command line's spelling of BUDGET: 1 byte per byte of the file, at least 10 MiB.
FLAGS = ["--max-decompressed-ratio", "1", "--min-decompressed-budget", str(10 << 20)]


def _command(*args, env=None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != BUDGET_ENV}
    return subprocess.run([sys.executable, "-m", "logscan.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=dict(environ, **(env or {})))


def test_the_dump_command_takes_the_budget_flags(tmp_path, bombed):
    """logscan dump --max-decompressed-ratio / --min-decompressed-budget: the third bomb spends
    the 10 MiB (the default budget, 1 GiB, lets all ten through: each a finding of its own for
    records that are not there); --max-decompress-seconds: a budget of a microsecond is spent
    by the first compressed batch."""
    data, bombs, _ = bombed
    path = place(tmp_path, REAL, data)
    args = ["dump", "--deep-iteration", "--format", "json", str(path)]

    def spent(run):
        findings = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
        return [f["position"] for f in findings if f["reason"] == "bomb-budget"]

    assert spent(_command(*args)) == []
    run = _command(*args, *FLAGS)
    assert run.returncode == EXIT_DATA and spent(run) == [bombs[2] + RECORDS_AT]
    assert spent(_command(*args, "--max-decompress-seconds", "0.000001")) == [bombs[0] + RECORDS_AT]


def test_the_scan_command_takes_the_budget_flags(tmp_path, bombed):
    """logscan scan (and plan) pass the flags to every segment's reader (through BUDGET_ENV,
    which a Spark job's local workers inherit too): the scan's finding line names the byte
    where the budget was spent, which the default budget leaves alone."""
    data, bombs, _ = bombed
    broker = tmp_path / "copy" / "broker-0"
    (broker / REAL.parent.name).mkdir(parents=True)
    (broker / "meta.properties").write_bytes((BROKER / "meta.properties").read_bytes())
    (broker / REAL.parent.name / REAL.name).write_bytes(data)
    where = f"{broker / REAL.parent.name / REAL.name}: byte {bombs[2] + RECORDS_AT}: the file's decompression budget"

    def spent(run) -> list[str]:
        return [line for line in (run.stdout + run.stderr).splitlines() if "decompression budget is spent" in line]

    assert spent(_command("scan", "--no-progress", str(tmp_path / "copy"))) == []
    run = _command("scan", "--no-progress", *FLAGS, str(tmp_path / "copy"))
    assert [line.split("logscan: ", 1)[-1][:len(where)] for line in spent(run)] == [where], spent(run)
    # plan prints plans only; it takes the same flags
    assert _command("plan", "--no-progress", *FLAGS, str(tmp_path / "copy")).returncode in (0, 1, 4)
    assert "usage" in _command("scan", "--max-decompressed-ratio", "0", str(tmp_path / "copy")).stderr.lower()
