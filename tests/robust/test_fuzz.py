"""The fuzzer's findings stay fixed, and the fuzzer itself runs.

Every input in ``tools/fuzz/crashes/`` once crashed a decoder (``<target>-<what>.bin``);
each is replayed through its target. Then a short coverage-guided run of atheris over all
decoders (a few thousand inputs, seconds) checks that the harness works and finds nothing
new; `make fuzz` runs the long version (figures in tools/fuzz/README.md).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.fuzz.targets import NAMES, TARGETS

REPO = Path(__file__).resolve().parents[2]
CRASHES = sorted((REPO / "tools" / "fuzz" / "crashes").glob("*.bin"))


def test_every_crash_input_names_its_target():
    assert CRASHES, "tools/fuzz/crashes holds the fuzzer's regression inputs"
    assert all(p.name.split("-")[0] in TARGETS for p in CRASHES), [p.name for p in CRASHES]


@pytest.mark.parametrize("path", CRASHES, ids=[p.stem for p in CRASHES])
def test_crash_input_is_fixed(path):
    TARGETS[path.name.split("-")[0]](path.read_bytes())


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None,
                    reason="atheris is not installed (it ships wheels for Linux x86_64 only)")
def test_short_atheris_run(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    from tools.fuzz.seeds import distinct_seeds
    for i, name in enumerate(NAMES):  # a few real seeds per target keep the run short
        for j, seed in enumerate(distinct_seeds(name, 3)):
            (corpus / f"{name}-{j}").write_bytes(bytes([i]) + seed)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.fuzz.fuzz", "all", "-runs=4000", "-seed=1", "-max_len=4096",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        cwd=REPO, capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "DONE" in proc.stderr and "cov:" in proc.stderr
    assert not list(tmp_path.glob("crash-*"))
