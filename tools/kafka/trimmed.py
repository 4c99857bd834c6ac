"""Fixture files stored without their preallocated zero tail, and their restoration.

Why this exists: a broker killed with SIGKILL leaves its active segments' ``.index`` /
``.timeindex`` at their preallocated size, zeros after the entries. The harness makes that
size small for every topic (``log.index.size.max.bytes``, tools.kafka.cluster), but the KRaft
metadata log ignores it: KafkaMetadataLog (3.9.2, ``kafka.raft.KafkaMetadataLog$.apply``) and
KafkaRaftLog (4.4.0, ``org.apache.kafka.raft.internals.KafkaRaftLog``) build the log's
LogConfig from max.message.bytes, segment.bytes, segment.ms, file.delete.delay.ms and the
retentions only, so ``segment.index.bytes`` is LogConfig's default, 10 MiB, on every release,
with no broker setting to change it (MetadataLogConfig has none). Kafka 4.4.0 leaves those
two files at 10 MiB even after a clean stop. No file over 1 MiB may be committed, so such a
file is stored trimmed to its last non-zero byte (an index: to its last non-zero entry) and ``trimmed.json`` beside ``brokers/``
records its real size and the SHA-256 of its real bytes; :func:`restore` copies the cluster
into a work folder and gives each file back its zeros (``os.truncate``), checked against the
hash, before anything reads it. kafka-dump-log (``truth/dump``) was run on the real files,
before the trim.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

#: Files above this size are trimmed (and none may stay above it).
LIMIT_BYTES = 256 * 1024
MANIFEST = "trimmed.json"
#: Entry sizes: a trimmed index keeps whole entries (an entry's own last bytes may be zeros).
_ENTRY_BYTES = {".index": 8, ".timeindex": 12}


class TrimError(RuntimeError):
    """A large file whose bytes past the limit are not all zeros: it cannot be stored trimmed."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _kept_length(path: Path) -> int:
    """The length of the file without its trailing zero bytes, rounded up to whole entries
    for an index."""
    kept = len(path.read_bytes().rstrip(b"\0"))
    entry = _ENTRY_BYTES.get(path.suffix, 1)
    return min(-(-kept // entry) * entry, path.stat().st_size)


def trim(cluster_out: Path, limit: int = LIMIT_BYTES) -> dict:
    """Trim every file of ``cluster_out/brokers`` larger than ``limit`` to its last non-zero
    byte and write the manifest ``cluster_out/trimmed.json``; returns the manifest."""
    cluster_out = Path(cluster_out)
    files = {}
    for p in sorted(q for q in (cluster_out / "brokers").rglob("*") if q.is_file()):
        size = p.stat().st_size
        if size <= limit:
            continue
        kept = _kept_length(p)
        if kept > limit:
            raise TrimError(f"{p}: {size} bytes, non-zero up to byte {kept} (over {limit})")
        files[str(p.relative_to(cluster_out))] = {"size": size, "stored_size": kept, "sha256": _sha256(p)}
        os.truncate(p, kept)
    manifest = {"limit_bytes": limit, "files": files,
                "why": "preallocated zero tails removed for the repository; tools/kafka/trimmed.py restore() "
                       "gives them back (os.truncate) before anything reads the copy"}
    (cluster_out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def restore(cluster_out: Path, work: Path) -> Path:
    """A copy of the fixture cluster ``cluster_out`` in ``work/<cluster name>`` with every
    trimmed file at its real size again (checked against the manifest's hash); made once,
    reused while the stored fixture and its manifest are unchanged. Returns the copy."""
    cluster_out = Path(cluster_out)
    manifest_text = (cluster_out / MANIFEST).read_text()
    manifest = json.loads(manifest_text)
    dest = Path(work) / cluster_out.name
    stamp = dest / ".restored-from"
    key = _stamp(cluster_out, manifest_text)
    if stamp.exists() and stamp.read_text() == key:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(cluster_out, tmp)
    for rel, f in manifest["files"].items():
        p = tmp / rel
        if p.stat().st_size != f["stored_size"]:
            raise TrimError(f"{p}: stored size {p.stat().st_size}, manifest says {f['stored_size']}")
        os.truncate(p, f["size"])
        if _sha256(p) != f["sha256"]:
            raise TrimError(f"{p}: restored bytes differ from the broker's (SHA-256)")
    tmp.rename(dest)
    stamp.write_text(key)
    return dest


def build_trimmed(names, out_root: Path, work_root: Path) -> dict[str, dict]:
    """Builds each named fixture cluster into ``out_root`` (tools.kafka.fixtures.build_cluster:
    the brokers, then the truth from the release's own tools on the real files) and trims it
    there; per cluster, its dump count, timings and the real sizes of the files trimmed."""
    from tools.kafka.fixtures import build_cluster

    built = {}
    for name in names:
        truth = build_cluster(name, out_root, work_root)
        # after the dumps (kafka-dump-log read the real files), before anything is committed
        manifest = trim(out_root / name)
        built[name] = {"dumps": len(truth["dumps"]), "timings": truth["timings"],
                       "trimmed": {k: v["size"] for k, v in manifest["files"].items()}}
    return built


def _stamp(cluster_out: Path, manifest_text: str) -> str:
    """What the restored copy was made from: the manifest and every stored file's size and
    modification time (a rebuilt fixture is copied again)."""
    h = hashlib.sha256(manifest_text.encode())
    for p in sorted(q for q in cluster_out.rglob("*") if q.is_file()):
        st = p.stat()
        h.update(f"{p.relative_to(cluster_out)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()
