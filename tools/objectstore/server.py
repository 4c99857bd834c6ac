"""A real S3-compatible object store on loopback: SeaweedFS's ``weed mini``, for the tests.

``object_store()`` starts one ``weed mini`` (master, volume server, filer and S3 gateway in one
process) in a temporary folder, every port a free loopback one picked here and passed
explicitly (weed mini moves a default port that is taken elsewhere, never an explicit one),
waits until S3 answers a signed request, and yields an :class:`ObjectStore`: the endpoint, the
credentials, a ready ``pyarrow.fs.S3FileSystem``, helpers to make a bucket and upload a local
folder tree, and the forms other code takes (``s3://bucket/prefix`` plus storage options, AWS
environment variables, Spark's ``spark.hadoop.fs.s3a.*`` settings). On exit the process group
is stopped (SIGTERM, then SIGKILL after a grace period) and the folder removed.

Credentials: weed's S3 gateway takes ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` from its
environment as one admin identity; once an identity exists every request must be signed with
it (a wrong secret is SignatureDoesNotMatch, an anonymous request AccessDenied). Each server
gets a fresh random secret. The region is not checked by weed; clients sign with ``us-east-1``.

Nothing leaves loopback: every listener binds 127.0.0.1 (``-ip.bind``), telemetry is off, the
WebDAV, Iceberg and Lance servers are not started, glog writes to the server's log file, and
``AWS_EC2_METADATA_DISABLED`` keeps the AWS SDK in pyarrow from asking the instance-metadata
address for credentials or a region.

CLI (runs until Ctrl-C, printing the endpoint, credentials and environment)::

    python -m tools.objectstore.server [--dir D] [--s3-port P] [--upload LOCAL s3://bucket/prefix]
"""
from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from tools.kafka.cluster import free_ports, wait_for
from tools.objectstore import build

REGION = "us-east-1"
ACCESS_KEY = "logscan"
#: Seconds weed mini has to answer on S3 (it is ready in ~5 s here when the machine is idle).
STARTUP_TIMEOUT = 90.0
#: Seconds between SIGTERM and SIGKILL (weed mini stops in ~2 s: filer, then volume server).
STOP_GRACE = 20.0

# weed's listeners, each a free port passed explicitly; the gRPC ones would otherwise be
# port + 10000 and the others weed's fixed defaults (9333, 8888, ...).
PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
              "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
              "metricsPort")
# What weed prints when an explicit port was taken between our pick and its bind.
PORT_RACE = re.compile(r"is not available on|address already in use|bind: address")


class ObjectStoreError(RuntimeError):
    """The server did not start, or stopped: the message names its log file."""


@dataclass
class ObjectStore:
    """One running ``weed mini`` and a client for it."""
    host: str
    s3_port: int
    metrics_port: int
    access_key: str
    secret_key: str
    region: str
    workdir: Path
    log_path: Path
    process: subprocess.Popen = field(repr=False)
    ports: dict = field(repr=False, default_factory=dict)  # weed's flag -> port
    filesystem: object = field(repr=False, default=None)  # pyarrow.fs.S3FileSystem

    # -- the forms other code takes ---------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """``host:port``, as pyarrow's ``endpoint_override`` takes it."""
        return f"{self.host}:{self.s3_port}"

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.endpoint}"

    @property
    def storage_options(self) -> dict[str, str]:
        """Keyword arguments of ``pyarrow.fs.S3FileSystem`` (and of ``--storage-option k=v``)."""
        return {"endpoint_override": self.endpoint, "scheme": "http",
                "access_key": self.access_key, "secret_key": self.secret_key,
                "region": self.region}

    def env(self) -> dict[str, str]:
        """The AWS SDK's standard environment for this store (pyarrow, boto3, the aws CLI)."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region,
                "AWS_ENDPOINT_URL": self.endpoint_url, "AWS_ENDPOINT_URL_S3": self.endpoint_url,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def spark_conf(self) -> dict[str, str]:
        """Spark's Hadoop S3A settings for this store (hadoop-aws on the classpath)."""
        return {"spark.hadoop.fs.s3a.endpoint": self.endpoint_url,
                "spark.hadoop.fs.s3a.endpoint.region": self.region,
                "spark.hadoop.fs.s3a.access.key": self.access_key,
                "spark.hadoop.fs.s3a.secret.key": self.secret_key,
                "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"}

    @staticmethod
    def uri(bucket: str, prefix: str = "") -> str:
        """``s3://bucket/prefix`` (the URI users give; the storage options say where)."""
        prefix = prefix.strip("/")
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"

    def filesystem_uri(self, bucket: str, prefix: str = "") -> str:
        """A URI that carries its store, for ``pyarrow.fs.FileSystem.from_uri``."""
        query = urllib.parse.urlencode({"endpoint_override": self.endpoint, "scheme": "http",
                                        "region": self.region})
        creds = (f"{urllib.parse.quote(self.access_key, safe='')}:"
                 f"{urllib.parse.quote(self.secret_key, safe='')}")
        path = f"{bucket}/{prefix.strip('/')}".rstrip("/")
        return f"s3://{creds}@{path}?{query}"

    # -- clients and helpers ----------------------------------------------------------------
    def new_filesystem(self, **overrides):
        """A fresh ``pyarrow.fs.S3FileSystem`` on this store (overrides: e.g. a wrong secret)."""
        from pyarrow import fs
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        options = {**self.storage_options, "allow_bucket_creation": True,
                   "allow_bucket_deletion": True, "connect_timeout": 5, "request_timeout": 30,
                   **overrides}
        return fs.S3FileSystem(**options)

    def create_bucket(self, bucket: str) -> str:
        """Creates ``bucket`` (no error if it exists); returns its ``s3://`` URI."""
        self.filesystem.create_dir(bucket)
        return self.uri(bucket)

    def upload(self, local_dir: Path | str, bucket: str, prefix: str = "") -> str:
        """Copies the tree under ``local_dir`` to ``bucket/prefix`` (the bucket made if need be;
        file names relative to ``local_dir`` become the keys under the prefix) and returns its
        ``s3://`` URI. Empty folders have no object and are not kept, as on any object store."""
        from pyarrow import fs
        local_dir = Path(local_dir).resolve()
        if not local_dir.is_dir():
            raise NotADirectoryError(f"not a folder to upload: {local_dir}")
        self.create_bucket(bucket)
        destination = f"{bucket}/{prefix.strip('/')}".rstrip("/")
        fs.copy_files(str(local_dir), destination, source_filesystem=fs.LocalFileSystem(),
                      destination_filesystem=self.filesystem, use_threads=True)
        return self.uri(bucket, prefix)

    def request_counts(self) -> dict[tuple[str, str], int]:
        """S3 requests served so far, by (type, HTTP code), from weed's Prometheus counter
        ``SeaweedFS_s3_request_total`` (type: GET, PUT, LIST, POST, DELETE, ...; weed counts a
        HEAD as a GET)."""
        text = self._metrics()
        counts: dict[tuple[str, str], int] = {}
        for m in re.finditer(r'^SeaweedFS_s3_request_total\{([^}]*)\} (\S+)$', text, re.M):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            key = (labels.get("type", ""), labels.get("code", ""))
            counts[key] = counts.get(key, 0) + int(float(m.group(2)))
        return counts

    def bytes_sent(self, bucket: str) -> int:
        """Bytes of object data served from ``bucket`` so far (weed's
        ``SeaweedFS_s3_bucket_traffic_sent_bytes_total``): what a reader really fetched."""
        return int(sum(float(v) for v in re.findall(
            r'^SeaweedFS_s3_bucket_traffic_sent_bytes_total\{[^}]*bucket="%s"[^}]*\} (\S+)$'
            % re.escape(bucket), self._metrics(), re.M)))

    def _metrics(self) -> str:
        with urllib.request.urlopen(f"http://{self.host}:{self.metrics_port}/metrics",
                                    timeout=10) as answer:
            return answer.read().decode()

    def requests(self, kind: Optional[str] = None) -> int:
        """How many S3 requests (of type ``kind``, e.g. "LIST", or all) were served so far."""
        return sum(n for (t, _), n in self.request_counts().items() if kind in (None, t))

    def alive(self) -> bool:
        return self.process.poll() is None


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


def _command(weed: Path, data: Path, config: Path, host: str, ports: dict[str, int]) -> list[str]:
    return [str(weed), "-logtostderr", f"-config_dir={config}", "mini", f"-dir={data}",
            f"-ip={host}", f"-ip.bind={host}",
            *(f"-{flag}={port}" for flag, port in ports.items()),
            "-admin.port.legacy=0", "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0",
            "-s3.port.lance=0", "-master.telemetry=false",
            f"-filer.localSocket={data / 'filer.sock'}", f"-s3.localSocket={data / 's3.sock'}"]


def _environment(access_key: str, secret_key: str) -> dict[str, str]:
    # weed reads WEED_* as config overrides and S3_BUCKET etc. in mini: none of the caller's
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WEED_", "AWS_", "S3_"))}
    env.update(AWS_ACCESS_KEY_ID=access_key, AWS_SECRET_ACCESS_KEY=secret_key)
    return env


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies (Linux's
    PR_SET_PDEATHSIG), so a pytest killed outright leaves no server behind."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _s3_answers(url: str) -> bool:
    """True once anything answers HTTP on the S3 port (an unsigned request gets a 403 XML)."""
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError as answer:
        return b"<Error" in answer.read()
    return True


def remove_sockets(ports: dict[str, int]) -> None:
    """Removes the gRPC sockets weed mini puts in /tmp under the names of our ports
    (/tmp/seaweedfs-admin-grpc-<port>.sock has a fixed folder and outlives a stop)."""
    for port in ports.values():
        for sock in Path("/tmp").glob(f"seaweedfs-*-grpc-{port}.sock"):
            if sock.is_socket():
                sock.unlink(missing_ok=True)


def stop(process: subprocess.Popen, grace: float = STOP_GRACE) -> None:
    """SIGTERM to the server's process group, SIGKILL after ``grace`` s; waits for the end."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)


def _start(weed: Path, workdir: Path, host: str, s3_port: Optional[int], access_key: str,
           secret_key: str, timeout: float) -> tuple[subprocess.Popen, dict[str, int], Path]:
    data, config = workdir / "data", workdir / "config"
    data.mkdir(parents=True, exist_ok=True)
    config.mkdir(exist_ok=True)  # empty: no security.toml etc. from ~/.seaweedfs or /etc
    log_path = workdir / "weed.log"
    ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS))))
    if s3_port:
        ports["s3.port"] = s3_port
    with open(log_path, "ab") as log:
        process = subprocess.Popen(_command(weed, data, config, host, ports), cwd=workdir,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   env=_environment(access_key, secret_key),
                                   start_new_session=True, preexec_fn=_die_with_parent)
    url = f"http://{host}:{ports['s3.port']}/"
    try:
        wait_for(lambda: process.poll() is not None or _s3_answers(url), bool,
                 timeout=timeout, every=0.25, retry=(OSError,),
                 failure=lambda _: f"weed mini's S3 did not answer on {url} within {timeout:.0f} s "
                                   f"(last lines: {_tail(log_path)}); see {log_path}",
                 error=ObjectStoreError)
    except BaseException:
        stop(process)
        remove_sockets(ports)
        raise
    if process.poll() is not None:
        remove_sockets(ports)
        raise ObjectStoreError(f"weed mini exited with code {process.returncode} before S3 "
                               f"answered (last lines: {_tail(log_path)}); see {log_path}")
    return process, ports, log_path


@contextmanager
def object_store(*, workdir: Optional[Path] = None, host: str = "127.0.0.1",
                 s3_port: Optional[int] = None, access_key: str = ACCESS_KEY,
                 secret_key: Optional[str] = None, region: str = REGION,
                 startup_timeout: float = STARTUP_TIMEOUT, keep: bool = False,
                 weed: Optional[Path] = None) -> Iterator[ObjectStore]:
    """Starts ``weed mini`` on free loopback ports, yields a ready :class:`ObjectStore`, and
    stops it (and its process group) on exit.

    ``workdir``: the server's folder (default: a new temporary one, removed on exit unless
    ``keep``). ``weed``: the binary (default: :func:`build.weed_path`, which must exist; see
    ``make objectstore``). A server that does not answer S3 within ``startup_timeout`` s, or
    exits first, is an ObjectStoreError naming its log file. A port taken between the pick
    and weed's bind is retried with new ports (twice)."""
    weed = Path(weed) if weed else build.weed_path()
    if not os.access(weed, os.X_OK):
        raise ObjectStoreError(f"no weed binary at {weed}: run `make objectstore` first")
    own_dir = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="logscan-objectstore-")) if own_dir else Path(workdir)
    secret_key = secret_key or secrets.token_urlsafe(24)
    process, ports = None, {}
    try:
        for attempt in range(3):
            try:
                process, ports, log_path = _start(weed, workdir, host, s3_port, access_key,
                                                  secret_key, startup_timeout)
                break
            except ObjectStoreError:
                if attempt == 2 or s3_port or not PORT_RACE.search(_tail(workdir / "weed.log", 40)):
                    raise
        store = ObjectStore(host=host, s3_port=ports["s3.port"], metrics_port=ports["metricsPort"],
                            access_key=access_key, secret_key=secret_key, region=region,
                            workdir=workdir, log_path=log_path, process=process, ports=ports)
        store.filesystem = store.new_filesystem()
        # S3 answering is not yet the filer behind it: wait for a signed ListBuckets to pass.
        wait_for(lambda: store.filesystem.get_file_info(_root_selector()), lambda _: True,
                 timeout=startup_timeout, every=0.5, retry=(OSError,),
                 failure=lambda _: f"weed mini's S3 on {store.endpoint} did not list buckets "
                                   f"within {startup_timeout:.0f} s; see {log_path}",
                 error=ObjectStoreError)
        yield store
        if process.poll() is not None:
            raise ObjectStoreError(f"weed mini died while in use (exit {process.returncode}; "
                                   f"last lines: {_tail(log_path)}); see {log_path}")
    finally:
        if process is not None:
            stop(process)
            remove_sockets(ports)
        if own_dir and not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _root_selector():
    from pyarrow import fs
    return fs.FileSelector("", recursive=False)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Run SeaweedFS's S3 on loopback until Ctrl-C.")
    parser.add_argument("--dir", type=Path, help="the server's folder (kept; default: a temporary "
                                                 "one, removed at the end)")
    parser.add_argument("--s3-port", type=int, help="the S3 port (default: a free one)")
    parser.add_argument("--secret-key", help="the secret key (default: a random one)")
    parser.add_argument("--upload", nargs=2, metavar=("LOCAL", "S3_URI"),
                        help="upload a local folder tree to s3://bucket/prefix once up")
    args = parser.parse_args(argv)
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
    try:
        with object_store(workdir=args.dir, s3_port=args.s3_port,
                          secret_key=args.secret_key) as store:
            print(f"S3 endpoint   {store.endpoint_url}   (log: {store.log_path})")
            for key, value in store.env().items():
                print(f"export {key}={value}")
            print("storage options: " + " ".join(f"--storage-option {k}={v}"
                                                 for k, v in store.storage_options.items()))
            if args.upload:
                local, uri = args.upload
                bucket, _, prefix = uri.removeprefix("s3://").partition("/")
                print(f"uploaded {local} to {store.upload(local, bucket, prefix)}")
            print("Ctrl-C stops it", flush=True)
            try:
                while store.alive():
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
    except ObjectStoreError as exc:
        print(f"objectstore: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
