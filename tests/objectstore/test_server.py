"""The real S3 store of the tests (issue 31 item 5): SeaweedFS's weed mini on loopback, driven
through pyarrow.fs.S3FileSystem as logscan's remote backend will be: upload a real Kafka copy,
list it recursively in pages, range-read a segment window, refuse what is missing or unsigned,
and stop with nothing left behind. Request counts come from weed's own Prometheus counter."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from pyarrow import fs

from tools.objectstore import build
from tools.objectstore.server import ObjectStoreError, object_store as start_object_store

from .conftest import REPO

pytestmark = pytest.mark.objectstore

HANGING = REPO / "fixtures" / "hanging" / "brokers"


def local_tree(root: Path) -> dict[str, int]:
    """Every file under ``root``: its path relative to root (with /) and its size."""
    return {p.relative_to(root).as_posix(): p.stat().st_size
            for p in root.rglob("*") if p.is_file()}


def listed_files(s3: fs.S3FileSystem, base: str) -> dict[str, int]:
    infos = s3.get_file_info(fs.FileSelector(base, recursive=True))
    return {i.path[len(base) + 1:]: i.size for i in infos if i.type == fs.FileType.File}


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


@pytest.fixture(scope="module")
def hanging_copy(object_store) -> str:
    """fixtures/hanging/brokers uploaded to copies/hanging/brokers; its bucket/prefix path."""
    uri = object_store.upload(HANGING, "copies", "hanging/brokers")
    assert uri == "s3://copies/hanging/brokers"
    return "copies/hanging/brokers"


def test_upload_lists_back_the_whole_copy_in_one_page(object_store, hanging_copy):
    expected = local_tree(HANGING)
    assert len(expected) == 201 and any(name.endswith(".log") for name in expected)
    before = object_store.request_counts()
    got = listed_files(object_store.filesystem, hanging_copy)
    requests = delta(before, object_store.request_counts())
    # every file, hidden and empty ones too (.kafka_cleanshutdown), with its size
    assert got == expected
    # a recursive listing is ListObjectsV2 pages, never a request per folder or per file:
    # 201 keys under 33 folders are one page
    assert requests == {("LIST", "200"): 1}, requests


def test_range_read_of_a_segment_window_matches_the_local_bytes(object_store, hanging_copy):
    segment = max((p for p in HANGING.rglob("*.log")), key=lambda p: p.stat().st_size)
    local = segment.read_bytes()
    size = len(local)
    assert size > 4096
    key = f"{hanging_copy}/{segment.relative_to(HANGING).as_posix()}"
    before, sent_before = object_store.request_counts(), object_store.bytes_sent("copies")
    got = 0
    with object_store.filesystem.open_input_file(key) as f:
        assert f.size() == size
        windows = [(0, 61), (size // 2 - 100, 333), (size - 17, 17), (size - 10, 100)]
        for start, length in windows:
            window = f.read_at(length, start)
            assert window == local[start:start + length], (start, length)
            got += len(window)
    requests = delta(before, object_store.request_counts())
    # the open's HEAD (weed counts it as a GET 200), then one ranged GET (206) per window
    assert requests == {("GET", "200"): 1, ("GET", "206"): len(windows)}, requests
    # and the store sent those windows' bytes, not the segment
    assert object_store.bytes_sent("copies") - sent_before == got == 61 + 333 + 17 + 10
    # the same object through the URI form other code gets (store in the query string)
    other, path = fs.FileSystem.from_uri(object_store.filesystem_uri("copies", key[len("copies/"):]))
    assert path == key
    with other.open_input_file(path) as f:
        assert f.read_at(1000, 2000) == local[2000:3000]


def test_missing_keys_and_bad_credentials_are_clear_errors(object_store, hanging_copy):
    missing = f"{hanging_copy}/broker-0/hang-0/00000000000000000099.log"
    with pytest.raises(FileNotFoundError, match="00000000000000000099.log"):
        object_store.filesystem.open_input_file(missing)
    assert object_store.filesystem.get_file_info(missing).type == fs.FileType.NotFound
    with pytest.raises(OSError, match="no-such-bucket"):
        object_store.filesystem.open_input_file("no-such-bucket/x.log")
    # the store checks signatures: a wrong secret and an anonymous client are refused
    wrong = object_store.new_filesystem(secret_key="not-the-secret")
    with pytest.raises(OSError, match="SIGNATURE_DOES_NOT_MATCH"):
        wrong.get_file_info(fs.FileSelector(hanging_copy, recursive=True))
    anonymous = object_store.new_filesystem(access_key=None, secret_key=None, anonymous=True)
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        anonymous.get_file_info(fs.FileSelector(hanging_copy, recursive=True))


def test_environment_and_storage_options_reach_the_store(object_store, hanging_copy):
    # S3FileSystem built from the storage options alone, as --storage-option k=v will
    s3 = fs.S3FileSystem(**object_store.storage_options)
    assert listed_files(s3, hanging_copy) == local_tree(HANGING)
    assert object_store.uri("copies", "/hanging/brokers/") == "s3://copies/hanging/brokers"
    env = object_store.env()
    assert env["AWS_ACCESS_KEY_ID"] == object_store.access_key
    assert env["AWS_ENDPOINT_URL"] == f"http://{object_store.endpoint}"
    conf = object_store.spark_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == env["AWS_ENDPOINT_URL"]
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"


def test_listing_10000_objects_takes_pages_not_a_request_per_object(object_store, tmp_path):
    # 10,000 partition-like folders of one small segment each (issue 31 asks 100,000 in bench)
    count = 10_000
    for i in range(count):
        folder = tmp_path / f"t-{i}"
        folder.mkdir()
        (folder / "00000000000000000000.log").write_bytes(b"%d" % i)
    started = time.monotonic()
    object_store.upload(tmp_path, "many", "copy")
    upload_s = time.monotonic() - started
    before = object_store.request_counts()
    started = time.monotonic()
    infos = object_store.filesystem.get_file_info(fs.FileSelector("many/copy", recursive=True))
    list_s = time.monotonic() - started
    requests = delta(before, object_store.request_counts())
    files = [i for i in infos if i.type == fs.FileType.File]
    assert len(files) == count
    lists = requests.get(("LIST", "200"), 0)
    print(f"\n10,000 objects: upload {upload_s:.1f} s; recursive listing {list_s:.2f} s in "
          f"{sum(requests.values())} requests {requests}")
    # pages of up to 1000 keys (weed answered 21 here): far below one request per object
    assert sum(requests.values()) == lists, requests
    assert 10 <= lists <= count // 250, requests


def test_server_stops_cleanly_and_leaves_nothing(weed_binary, tmp_path):
    with start_object_store(weed=weed_binary) as store:
        pid, port, workdir = store.process.pid, store.s3_port, store.workdir
        store.create_bucket("short-lived")
        assert [i.path for i in store.filesystem.get_file_info(fs.FileSelector(""))] == ["short-lived"]
        assert workdir.is_dir() and store.log_path.is_file()
    assert store.process.returncode == 0  # SIGTERM: weed mini's own clean shutdown
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not workdir.exists()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    # weed's gRPC sockets in /tmp (named by port) and glog files: none left
    assert not [p for port in store.ports.values()
                for p in Path("/tmp").glob(f"seaweedfs-*-{port}.sock")]
    assert not [p for p in Path("/tmp").glob(f"weed.*.{pid}")]


def test_a_server_that_does_not_come_up_is_an_error_naming_its_log(weed_binary, tmp_path):
    # too short a wait for a real start: the error names the log, the process is stopped
    with pytest.raises(ObjectStoreError, match=str(tmp_path / "slow" / "weed.log")):
        with start_object_store(weed=weed_binary, workdir=tmp_path / "slow", startup_timeout=0.01):
            pytest.fail("the server cannot answer S3 within 10 ms")
    # an S3 port someone else holds: weed mini exits, and the error says so with its log
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        with pytest.raises(ObjectStoreError, match=r"exited with code .*weed\.log"):
            with start_object_store(weed=weed_binary, workdir=tmp_path / "taken",
                                    s3_port=holder.getsockname()[1]):
                pytest.fail("weed mini cannot serve S3 on a port that is taken")
    finally:
        holder.close()
    assert "not available" in (tmp_path / "taken" / "weed.log").read_text()
    # and nothing of either is still running
    assert not [p for p in Path("/proc").glob("[0-9]*")
                if _cmdline(p).startswith(str(weed_binary)) and str(tmp_path) in _cmdline(p)]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_missing_go_is_one_clear_sentence(monkeypatch, tmp_path):
    monkeypatch.delenv("GO", raising=False)
    monkeypatch.delenv("LOGSCAN_WEED", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(build, "GO_FALLBACK", tmp_path / "go")
    assert build.find_go() is None
    with pytest.raises(build.BuildError, match=r"^Go is not installed .*\.$"):
        build.build(force=True)
