"""The SIGKILLed-broker clusters of Kafka 3.9.2 and 4.4.0 (fixtures/killed, tools/kafka/killed.py),
restored for reading: their metadata-log indexes are stored without the preallocated zero
tail (fixtures/killed/README.md), so a test reads the copy tools.kafka.trimmed.restore makes
under .work (made once, at import, reused while the stored fixture is unchanged), whose files
are the broker's bytes again, never fixtures/killed itself."""
from __future__ import annotations

from pathlib import Path

from tools.kafka.trimmed import restore

REPO = Path(__file__).resolve().parents[1]
STORED = REPO / "fixtures" / "killed"
RESTORED = REPO / ".work" / "restored-fixtures"


def killed_clusters() -> list[Path]:
    """Each killed-broker cluster, restored: ``<copy>/brokers`` and ``<copy>/truth`` as in
    ``fixtures/<cluster>/``; the folder is named after the cluster (truth.json cluster_name)."""
    return [restore(p.parent.parent, RESTORED) for p in sorted(STORED.glob("*/truth/truth.json"))]


KILLED_CLUSTERS = killed_clusters()
