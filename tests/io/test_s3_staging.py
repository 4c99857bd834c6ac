"""Staging folders of catalog runs in an object store (``--staging s3a://...``): a run removes
the folders of runs that are gone, never a live run's, on a real S3 server (SeaweedFS)."""

from __future__ import annotations

import json

import pytest
from pyarrow import fs as pafs

from logscan.logdir import store
from spark_jobs.staging import MARKER, StagingRun
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)
from tests.spark.test_staging import Holder

pytestmark = pytest.mark.objectstore


@pytest.fixture(scope="module")
def s3(object_store):  # noqa: F811
    object_store.create_bucket("logscan-staging")
    with configured(object_store):
        yield object_store


def _runs(s3, prefix: str) -> list[str]:
    found = s3.filesystem.get_file_info(pafs.FileSelector(f"logscan-staging/{prefix}", allow_not_found=True))
    return sorted(i.base_name for i in found)


def test_a_killed_runs_staging_in_the_store_is_removed_and_a_live_ones_kept(s3):
    base = s3.uri("logscan-staging", "runs")
    env = {store.OPTIONS_ENV: json.dumps(s3.storage_options), "AWS_EC2_METADATA_DISABLED": "true"}
    live, killed = Holder(base, "live", **env), Holder(base, "killed", **env)
    try:
        killed.kill()
        assert _runs(s3, "runs") == ["run-killed", "run-live"]
        with s3.filesystem.open_input_stream(f"logscan-staging/runs/run-killed/{MARKER}") as f:
            assert json.loads(f.read())["pid"] == killed.proc.pid
        run = StagingRun(f"{base}/run-next", "next")
        assert run.start() == [f"{base}/run-killed"]
        assert _runs(s3, "runs") == ["run-live", "run-next"]
        assert _runs(s3, "runs/run-live") == [MARKER, "part-0.parquet"]
        run.end()
        assert _runs(s3, "runs") == ["run-live"]
    finally:
        live.kill()
