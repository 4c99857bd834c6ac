"""The hanging cluster uploaded to a real S3 server (SeaweedFS on loopback, the session's
``object_store``) and scanned from ``s3://`` with storage options gives the local scan's
rows: one recursive listing (LIST requests, not one per folder), then ranged reads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from logscan.scan.local import scan
from tests.objectstore.conftest import configured, object_store, weed_binary  # noqa: F401 (the session's store)

from .conftest import FIXTURES, local_form

pytestmark = pytest.mark.objectstore

HANGING = (FIXTURES / "hanging" / "brokers").resolve()


@pytest.fixture
def hanging_in_s3(object_store):  # noqa: F811
    uri = object_store.upload(HANGING, "io-hanging", "copy/brokers")
    with configured(object_store):
        yield object_store, uri


def test_a_copy_in_s3_gives_the_local_scans_rows(hanging_in_s3):
    s3, uri = hanging_in_s3
    root = str(HANGING)
    before = s3.request_counts()
    remote = scan([uri])
    after = s3.request_counts()
    local = scan([root])
    for name, rows in local.tables.items():
        assert [local_form(r, uri, root) for r in remote.tables[name]] == rows, name
    assert any(r["file"].startswith(uri + "/") for r in remote.tables["files"])
    lists = sum(n for (kind, _), n in after.items() if kind == "LIST") - sum(
        n for (kind, _), n in before.items() if kind == "LIST")
    folders = sum(1 for _, dirs, _ in os.walk(HANGING) for _ in dirs)
    assert 1 <= lists <= 2 < folders  # one listing of the tree (a page), not one per folder


def test_logscan_scan_of_an_s3_uri_with_storage_options(hanging_in_s3):
    s3, uri = hanging_in_s3
    options = [a for k, v in s3.storage_options.items() for a in ("--storage-option", f"{k}={v}")]
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        env.pop(name, None)  # the options alone must reach the store
    run = [sys.executable, "-c", "from logscan.cli import main; main()"]
    by_uri = subprocess.run([*run, "plan", "--no-progress", *options, uri], capture_output=True, text=True,
                            env=env, timeout=300)
    by_path = subprocess.run([*run, "plan", "--no-progress", str(HANGING)], capture_output=True, text=True,
                             timeout=300)
    assert by_uri.returncode == by_path.returncode == 4, by_uri.stderr
    assert by_uri.stdout.replace(uri, str(HANGING)) == by_path.stdout
    wrong = subprocess.run([*run, "scan", "--no-progress", *options, "--storage-option", "secret_key=wrong", uri],
                           capture_output=True, text=True, env=env, timeout=300)
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    assert f"logscan: {uri}: file: input folder cannot be listed" in wrong.stdout
