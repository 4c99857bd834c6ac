"""The object-store fixtures: one real SeaweedFS S3 server on loopback for the whole session.

The server is ``weed mini`` built by ``make objectstore`` (tools/objectstore/build.py) into
.work/objectstore/weed, or the binary $LOGSCAN_WEED names. Without it the tests skip, saying
why: Go missing, or Go there but the binary not built yet (a cold build takes ~10 minutes, so
the tests never start one themselves).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from logscan.logdir import store as logdir_store

from tools.objectstore import build
from tools.objectstore.server import object_store as start_object_store

REPO = Path(__file__).resolve().parents[2]


def weed_or_skip() -> Path:
    """The weed binary, or a skip that says what is missing and how to get it."""
    if build.built():
        return build.weed_path()
    go = build.find_go()
    if go is None:
        pytest.skip("object-store tests skipped: Go is not installed, so SeaweedFS's weed cannot "
                    "be built (install Go 1.26+, then make objectstore)")
    pytest.skip(f"object-store tests skipped: SeaweedFS's weed is not built yet: run "
                f"`make objectstore` (Go found at {go}; ~10 min cold) or set LOGSCAN_WEED")


@pytest.fixture(scope="session")
def weed_binary() -> Path:
    return weed_or_skip()


@pytest.fixture(scope="session")
def object_store(weed_binary):
    """A running SeaweedFS S3 store (tools.objectstore.server.ObjectStore) for the session."""
    with start_object_store(weed=weed_binary) as store:
        yield store


@contextmanager
def configured(object_store) -> Iterator:
    """logscan's stores (logscan.logdir.store) given the object store's options for the block:
    its URIs read and written as a user's ``--storage-option`` values would make them."""
    logdir_store.configure(object_store.storage_options)
    try:
        yield object_store
    finally:
        logdir_store.configure()
