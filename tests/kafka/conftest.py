"""Shared helpers for the harness tests: where the fixture clusters and their truth live."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.killed_fixtures import FIXTURE_CLUSTERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture_clusters() -> list[Path]:
    """Every fixtures/<cluster>/ that carries a recorded truth.json, and the SIGKILLed-broker
    clusters of fixtures/killed and the clusters of fixtures/trimmed as restored for reading
    (tests/killed_fixtures.py)."""
    return FIXTURE_CLUSTERS


def load_truth(cluster_dir: Path) -> dict:
    return json.loads((cluster_dir / "truth" / "truth.json").read_text())


@pytest.fixture(params=fixture_clusters(), ids=lambda p: p.name)
def fixture_cluster(request) -> tuple[Path, dict]:
    return request.param, load_truth(request.param)
