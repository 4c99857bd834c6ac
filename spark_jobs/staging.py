"""Staging folders of catalog runs: each run's own, named by a marker, removed by whoever
outlives it (issue 31).

A scan into catalog tables (spark_jobs.catalog) stages its Parquet in a fresh ``run-<hex>``
folder under the staging folder (``--staging DIR``, or the warehouse's ``_logscan_staging``)
and removes it when it ends. A run that cannot (SIGKILL, a lost driver machine, a power cut)
leaves it behind; so every run, once its own folder is made, removes the folders of runs that
are gone, and never the folder of a run that lives. How a run is known to be gone:

* Its folder holds a marker (:data:`MARKER`, JSON) written before any task stages a file:
  the driver's host name, process id, the process's start (``/proc/<pid>/stat``'s start
  time in clock ticks since boot), the kernel's boot id and the process-id namespace. On the
  machine and in the namespace that wrote it (same boot id and namespace) the answer is
  certain: the run lives while a process of that id started at that tick does (a process id
  used again by another program has another start time).
* Elsewhere (another machine of the cluster, another container) the driver renews its marker
  every :data:`HEARTBEAT_S` seconds while it runs; a marker not renewed for
  :data:`GONE_AFTER_S` is a run that is gone. Ages are measured in the store's clock: against
  the time the sweeping run's own marker was just written (its modification time), never the
  local clock, so two machines' clocks need not agree.
* A run folder with no marker (a run between making its folder and writing the marker, or
  files a task wrote after its run had removed the folder) is gone once its newest file is
  :data:`GONE_AFTER_S` old.

A run that outlived that age without renewing its marker (a driver suspended for a quarter of
an hour) finds its staged files gone and fails at its next commit (Spark reads the files it was
told of, and a missing one is an error): no table is ever written from part of a run's files.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
import time
import uuid
from typing import Optional

MARKER = "_logscan_run.json"
RUN_PREFIX = "run-"
#: How often a live run renews its marker, and how long a marker may go unrenewed before its
#: run counts as gone (many heartbeats: a slow store or a busy driver misses a few).
HEARTBEAT_S = 60.0
GONE_AFTER_S = 15 * 60.0
#: How long a run's end waits for a marker write in flight (a store's PUT, with its retries).
HEARTBEAT_JOIN_S = 30.0


def _fs(location: str):
    """(pyarrow filesystem, its path) of a staging location: a local folder, or a store's URI."""
    from pyarrow import fs as pafs

    from logscan.logdir.store import local_folder

    local = local_folder(location)
    if local is not None:
        return pafs.LocalFileSystem(), os.path.abspath(local)
    from logscan.logdir import store

    st = store.store_with(location, getattr(location, "storage_options", None))
    return st.fs, st.path(location).rstrip("/")


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def this_process() -> dict:
    """What names this process in a marker: host, pid, and where /proc has them, the process's
    start tick, the boot id and the pid namespace (which together make the pid certain)."""
    pid = os.getpid()
    me = {"host": socket.gethostname(), "pid": pid}
    start = process_start(pid)
    boot = _read_text("/proc/sys/kernel/random/boot_id")
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    if start is not None and boot and pid_ns:
        me.update(start_ticks=start, boot_id=boot.strip(), pid_ns=pid_ns)
    return me


def process_start(pid: int) -> Optional[int]:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat``'s 22nd
    field), None when there is no such process (or no /proc)."""
    stat = _read_text(f"/proc/{pid}/stat")
    if stat is None:
        return None
    try:   # after the command name, which may hold spaces and parentheses
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def alive_here(marker: dict, me: Optional[dict] = None) -> Optional[bool]:
    """Whether the run ``marker`` names is alive, when this process can know (the same boot
    and pid namespace: its pid means the same process here); None when it cannot."""
    me = me or this_process()
    if "start_ticks" not in me or any(marker.get(k) != me[k] for k in ("boot_id", "pid_ns")):
        return None
    try:
        return process_start(int(marker["pid"])) == int(marker["start_ticks"])
    except (KeyError, TypeError, ValueError):
        return None


class StagingRun:
    """A run's staging folder (``root``, a local folder or a store's URI): :meth:`start` makes
    it with its marker, renews the marker meanwhile and sweeps away the folders of runs that
    are gone; :meth:`end` removes it (again at the process's exit: after Ctrl-C a Python
    worker may still have written a file into it)."""

    def __init__(self, root: str, scan_id: str = ""):
        self.root = root
        self.scan_id = scan_id
        self._stop = threading.Event()
        self._heartbeat: Optional[threading.Thread] = None
        self.swept: list[str] = []

    @property
    def base(self) -> str:
        return self.root.rstrip("/").rsplit("/", 1)[0]

    def start(self) -> list[str]:
        """Makes the folder and its marker, starts the heartbeat, removes the folders of runs
        that are gone; returns those folders (as locations under the base)."""
        fs, path = _fs(self.root)
        fs.create_dir(path, recursive=True)
        self._marker = {**this_process(), "scan_id": self.scan_id, "started_ms": int(time.time() * 1000)}
        self._write_marker(fs, path)
        _started.add(self)
        self._heartbeat = threading.Thread(target=self._renew, name="logscan-staging-heartbeat", daemon=True)
        self._heartbeat.start()
        self.swept = sweep(self.base, keep=self.root)
        return self.swept

    def _write_marker(self, fs, path: str) -> None:
        # (a sweep reading it half-written reads no marker: a young folder without one is kept)
        data = json.dumps(self._marker).encode()
        with fs.open_output_stream(f"{path}/{MARKER}") as out:
            out.write(data)

    def _renew(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                fs, path = _fs(self.root)
                self._write_marker(fs, path)
            except OSError:
                continue   # the next beat tries again; the run itself says what is wrong

    def end(self) -> None:
        """Removes the folder (copied into the tables, or abandoned: no longer read)."""
        self._stop.set()
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(HEARTBEAT_JOIN_S)   # a beat in flight would write the marker again
        remove(self.root)


def remove(location: str) -> None:
    """Deletes a staging folder and everything in it; nothing when it is not there."""
    from pyarrow import fs as pafs

    try:
        fs, path = _fs(location)
        if fs.get_file_info(path).type != pafs.FileType.NotFound:
            fs.delete_dir(path)
    except (OSError, FileNotFoundError):
        pass


def sweep(base: str, keep: str = "") -> list[str]:
    """Removes the ``run-*`` folders under ``base`` whose run is gone (see the module's
    docstring), never ``keep``; returns the removed folders. Call it once a marker of one's own
    was just written under ``base`` (``keep``'s): its modification time is the store's now."""
    from pyarrow import fs as pafs

    fs, path = _fs(base)
    keep_name = keep.rstrip("/").rsplit("/", 1)[-1] if keep else ""
    try:
        entries = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return []
    now = _mtime_s(fs, f"{path}/{keep_name}/{MARKER}") if keep_name else None
    if now is None:
        now = time.time()
    me = this_process()
    removed = []
    for entry in entries:
        if entry.type != pafs.FileType.Directory or not entry.base_name.startswith(RUN_PREFIX) \
                or entry.base_name == keep_name:
            continue
        if _gone(fs, entry.path, now, me):
            location = f"{base.rstrip('/')}/{entry.base_name}"
            remove(location)
            removed.append(location)
    return removed


def _gone(fs, folder: str, now: float, me: dict) -> bool:
    from pyarrow import fs as pafs

    marker_path = f"{folder}/{MARKER}"
    try:
        with fs.open_input_stream(marker_path) as f:
            marker = json.loads(f.read())
    except (OSError, FileNotFoundError, ValueError):
        marker = None
    if isinstance(marker, dict):
        alive = alive_here(marker, me)
        if alive is not None:
            return not alive
        renewed = _mtime_s(fs, marker_path)
        return renewed is not None and now - renewed > GONE_AFTER_S
    try:   # no marker: the newest file's age decides
        files = fs.get_file_info(pafs.FileSelector(folder, recursive=True, allow_not_found=True))
        times = [f.mtime.timestamp() for f in files if f.mtime is not None]
        times += [t for t in [_mtime_s(fs, folder)] if t is not None]
    except OSError:
        return False
    return bool(times) and now - max(times) > GONE_AFTER_S


def _mtime_s(fs, path: str) -> Optional[float]:
    try:
        info = fs.get_file_info(path)
    except OSError:
        return None
    return info.mtime.timestamp() if info.mtime is not None else None


def new_root(base: str) -> str:
    return f"{base.rstrip('/')}/{RUN_PREFIX}{uuid.uuid4().hex}"


_started: "set[StagingRun]" = set()


@atexit.register
def _end_started() -> None:
    for run in list(_started):
        run.end()
