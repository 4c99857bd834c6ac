"""The Delta tables of one Spark scan of the `hanging` fixture cluster, made once through the
CLI (`logscan scan --output`) and shared by the sql and report tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
HANGING = REPO / "fixtures" / "hanging"


def truth() -> dict:
    return json.loads((HANGING / "truth" / "truth.json").read_text())


@pytest.fixture(scope="session")
def tables(tmp_path_factory) -> Path:
    from logscan.cli import main

    out = tmp_path_factory.mktemp("tables") / "t"
    res = CliRunner().invoke(main, ["scan", str(HANGING / "brokers"), "--output", str(out),
                                    "--master", "local[2]", "--as-of", str(truth()["recorded_at_ms"])])
    assert res.exit_code == 0, res.output
    assert str(out) in res.output   # the summary says where the tables are
    return out
