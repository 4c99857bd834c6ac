"""The fixture clusters (real Kafka 4.1.1 copies) scanned through ``file://`` URIs, i.e. by
the remote backend of logscan.logdir.store (one recursive listing, ranged reads), give
exactly the local scan's rows, table by table."""

from __future__ import annotations

import pytest

from logscan.scan.local import scan

from .conftest import CLUSTERS, local_form


@pytest.mark.parametrize("cluster", CLUSTERS, ids=[c.parent.name for c in CLUSTERS])
def test_a_cluster_read_through_its_uri_gives_the_local_scans_rows(cluster, stored):
    root = str(cluster.resolve())
    uri = f"file://{root}"
    local = scan([root])
    remote = scan([uri])

    assert stored.listings == [root]  # one recursive listing of the whole tree
    segments = [r for r in remote.tables["files"] if r["kind"] == "log_segment"]
    assert segments and all(r["file"].startswith(uri + "/") for r in segments)
    assert all(stored.reads.get(r["file"][len("file://"):], 0) >= 1 for r in segments if r["size"] > 0)
    assert remote.as_of_ms == local.as_of_ms
    for name, rows in local.tables.items():
        assert [local_form(r, uri, root) for r in remote.tables[name]] == rows, name


def test_a_copy_listed_in_one_call_also_gives_its_own_input_folder_finding(tmp_path, stored):
    """An input that cannot be listed is a located finding, as a local folder that cannot be."""
    missing = f"file://{tmp_path}/not-there"
    result = scan([missing])
    assert [(f.path, f.reason) for f in result.findings] == [(missing, "io")]
    assert "input folder cannot be listed" in result.findings[0].message
