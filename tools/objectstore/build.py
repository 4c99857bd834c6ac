"""Build SeaweedFS's ``weed`` once, from its Go module source, into ``.work/objectstore/``.

Why this way: ``go install github.com/seaweedfs/seaweedfs/weed@VERSION`` is refused because
SeaweedFS's go.mod has replace directives, and no other route brings a server binary onto this
machine (only package registries are reachable). So the pinned module is fetched with
``go mod download -json MODULE@VERSION`` (the Go module proxy, as every Go dependency) and its
``weed`` command is built with ``go build`` inside the downloaded, read-only module folder, where
its go.mod and go.sum (replace directives included) apply.

A cold build (empty Go caches) takes ~10 minutes on 2 cores; once Go's module and build caches
are warm it takes ~15 s, and a binary already built from the pinned version is reused as is.

CLI::

    python -m tools.objectstore.build [--force]      # prints the binary's path
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[2]
MODULE = "github.com/seaweedfs/seaweedfs"
#: The pseudo-version the module proxy serves here; its go.mod asks for go 1.26.6.
VERSION = "v0.0.0-20261109003541-7506e5f91cd6"
OUT_DIR = REPO / ".work" / "objectstore"
WEED = OUT_DIR / "weed"
#: Holds MODULE@VERSION of the binary beside it: another pin rebuilds.
STAMP = OUT_DIR / "weed.version"
BUILD_LOG = OUT_DIR / "build.log"
#: Where Go is looked for when it is not on PATH (the image's install).
GO_FALLBACK = Path("/usr/local/go/bin/go")


class BuildError(RuntimeError):
    """Go is missing or the build failed; the message is one sentence saying which."""


def find_go() -> Optional[str]:
    """The go command: $GO, else ``go`` on PATH, else /usr/local/go/bin/go; None if none."""
    for candidate in (os.environ.get("GO"), shutil.which("go"),
                      str(GO_FALLBACK) if GO_FALLBACK.exists() else None):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def weed_path() -> Path:
    """The binary the server runs: $LOGSCAN_WEED (a weed built elsewhere) or .work's."""
    return Path(os.environ["LOGSCAN_WEED"]) if os.environ.get("LOGSCAN_WEED") else WEED


def built() -> bool:
    """True when a usable binary is there: $LOGSCAN_WEED, or .work's built from the pin."""
    if os.environ.get("LOGSCAN_WEED"):
        return os.access(os.environ["LOGSCAN_WEED"], os.X_OK)
    return (os.access(WEED, os.X_OK) and STAMP.exists()
            and STAMP.read_text().strip() == f"{MODULE}@{VERSION}")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def download(go: str) -> Path:
    """``go mod download -json`` of the pinned module; returns its (read-only) source folder."""
    with tempfile.TemporaryDirectory(prefix="logscan-go-dl-") as outside_any_module:
        proc = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
                              cwd=outside_any_module, capture_output=True, text=True)
    try:
        info = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
        why = info.get("Error") or _last_line(proc.stderr or proc.stdout)
        raise BuildError(f"go mod download of {MODULE}@{VERSION} failed: {why}")
    return Path(info["Dir"])


def build(force: bool = False, log: Callable[[str], None] = lambda line: None) -> Path:
    """Makes sure the pinned ``weed`` exists (building it if needed) and returns its path.

    Raises BuildError (one sentence) when Go is missing or the download or build fails; the
    build's whole output is in .work/objectstore/build.log. Concurrent callers (two pytest
    processes) wait for each other on a lock instead of building twice."""
    if not force and built():
        return weed_path()
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH, no $GO, no /usr/local/go/bin/go): "
                         "install Go 1.26 or newer to build SeaweedFS's weed for the object-store "
                         "tests.")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUT_DIR / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and built():  # another process built it while we waited
            return weed_path()
        started = time.monotonic()
        log(f"downloading {MODULE}@{VERSION}")
        source = download(go)
        log(f"go build ./weed in {source} (a cold build takes ~10 min on 2 cores; "
            f"output in {BUILD_LOG})")
        partial = OUT_DIR / "weed.partial"
        with open(BUILD_LOG, "w") as out:
            proc = subprocess.run([go, "build", "-trimpath", "-buildvcs=false",
                                   "-ldflags=-s -w", "-o", str(partial), "./weed"],
                                  cwd=source, stdout=out, stderr=subprocess.STDOUT)
        if proc.returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            raise BuildError(f"go build of SeaweedFS's weed failed (exit {proc.returncode}): "
                             f"{_last_line(BUILD_LOG.read_text(errors='replace'))} "
                             f"(whole output in {BUILD_LOG})")
        os.replace(partial, WEED)
        STAMP.write_text(f"{MODULE}@{VERSION}\n")
        log(f"built {WEED} in {time.monotonic() - started:.0f} s")
    return WEED


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if the binary is there")
    args = parser.parse_args(argv)
    try:
        path = build(force=args.force, log=lambda line: print(line, file=sys.stderr, flush=True))
    except BuildError as exc:
        print(f"objectstore: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
