"""`logscan dump` against kafka-dump-log's recorded output on the real-broker fixtures.

For every ``fixtures/<cluster>/truth/dump/<path>.txt`` (recorded by tools/kafka/fixtures.py
from kafka-dump-log 4.1.1 with ``--files <file>`` and the arguments it lists in truth.json),
`logscan dump` with the same arguments, run from ``fixtures/<cluster>/brokers``, must print
the same stdout; where kafka-dump-log exited 0 the Kafka part of stderr must match too.
No Java needed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main

from .kafkatool import logscan_kafka_stderr_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

#: Known, justified differences: {(cluster, path relative to brokers/): reason}. Empty: every
#: recorded file matches.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}


def _default_args(rel: str) -> list[str]:
    """tools/kafka/fixtures.py dump_args, for truth recorded before truth.json existed."""
    name = os.path.basename(rel)
    part_dir = os.path.basename(os.path.dirname(rel))
    if name == "bootstrap.checkpoint":
        return ["--deep-iteration", "--print-data-log", "--cluster-metadata-decoder"]
    if name.endswith((".log", ".checkpoint")):
        args = ["--deep-iteration", "--print-data-log"]
        for prefix, opt in (("__transaction_state-", "--transaction-log-decoder"),
                            ("__consumer_offsets-", "--offsets-decoder"),
                            ("__cluster_metadata-", "--cluster-metadata-decoder")):
            if part_dir.startswith(prefix):
                args.append(opt)
        return args
    return []


def _cases():
    cases = []
    for cluster in sorted(p for p in FIXTURES.glob("*") if (p / "truth" / "dump").is_dir()):
        truth_json = cluster / "truth" / "truth.json"
        dumps = json.loads(truth_json.read_text()).get("dumps", {}) if truth_json.exists() else {}
        dump_dir = cluster / "truth" / "dump"
        for txt in sorted(dump_dir.rglob("*.txt")):
            if txt.name.endswith(".stderr.txt"):
                continue
            rel = str(txt.relative_to(dump_dir))[: -len(".txt")]
            if not (cluster / "brokers" / rel).is_file():
                continue
            meta = dumps.get(rel, {})
            cases.append(pytest.param(cluster, rel, meta.get("args", _default_args(rel)),
                                      meta.get("exit_code", 0), id=f"{cluster.name}/{rel}"))
    return cases


CASES = _cases()


@pytest.mark.skipif(not CASES, reason="no recorded fixtures under fixtures/*/truth/dump")
@pytest.mark.parametrize("cluster,rel,args,exit_code", CASES)
def test_matches_recorded_kafka_dump_log(cluster, rel, args, exit_code, monkeypatch):
    if (cluster.name, rel) in KNOWN_DIFFERENCES:
        pytest.skip(KNOWN_DIFFERENCES[(cluster.name, rel)])
    monkeypatch.chdir(cluster / "brokers")
    result = CliRunner().invoke(main, ["dump", *args, "--files", rel])
    # Both as bytes decoded without newline translation: a CR in a payload must match too.
    truth = (cluster / "truth" / "dump" / f"{rel}.txt").read_bytes().decode("utf-8")
    ours = result.stdout_bytes.decode("utf-8", "replace")
    assert ours.splitlines(True) == truth.splitlines(True)
    if exit_code == 0:
        err_file = cluster / "truth" / "dump" / f"{rel}.stderr.txt"
        recorded = err_file.read_text().splitlines() if err_file.exists() else []
        recorded = [_relative(line) for line in recorded if line.strip()]
        ours = [_relative(line) for line in logscan_kafka_stderr_lines(result.stderr_bytes)]
        assert ours == recorded


_BROKER_PATH = re.compile(r"\S*?/(broker-\d+/)")


def _relative(line: str) -> str:
    """Absolute paths (Kafka's end-of-run blocks print File.getAbsolutePath) cut to the part
    from ``broker-N/``: the recorder ran from elsewhere and rewrote them only partly."""
    return _BROKER_PATH.sub(r"\1", line)
