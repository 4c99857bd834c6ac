"""The Delta tables of one Spark scan of the `hanging` fixture cluster, made once through the
CLI (`logscan scan --output`) and shared by the scan, sql and report tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"


def truth() -> dict:
    return json.loads((HANGING / "truth" / "truth.json").read_text())


BOOTSTRAP = "broker1.example:9092"


def scan_args(out: Path, *extra: str) -> list[str]:
    return ["scan", str(HANGING / "brokers"), "--output", str(out), "--master", "local[2]",
            "--as-of", str(truth()["recorded_at_ms"]), "--bootstrap-server", BOOTSTRAP, *extra]


def plans() -> list[dict]:
    """`logscan plan --format json` on the same copy, same as-of and bootstrap server."""
    from logscan.cli import main

    res = CliRunner().invoke(main, ["plan", str(HANGING / "brokers"), "--format", "json", "--bootstrap-server",
                                    BOOTSTRAP, "--as-of", str(truth()["recorded_at_ms"])])
    assert res.exit_code == 4, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


@pytest.fixture(scope="session")
def scan_run(tmp_path_factory) -> tuple[Path, Result]:
    """(DIR, the run's CliRunner result) of `logscan scan fixtures/hanging/brokers --output DIR
    --tables all` (batches too, for the sql and report tests)."""
    from logscan.cli import main

    out = tmp_path_factory.mktemp("tables") / "scan tables"   # a space: what is printed must be quoted
    return out, CliRunner().invoke(main, scan_args(out, "--tables", "all"))


@pytest.fixture(scope="session")
def tables(scan_run) -> Path:
    out, res = scan_run
    assert res.exit_code == 4, res.output   # the fixture's hanging transactions
    return out
