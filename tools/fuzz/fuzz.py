"""Coverage-guided fuzzing of logscan's decoders with atheris (libFuzzer for Python).

    python -m tools.fuzz.fuzz TARGET [libFuzzer options] [CORPUS_DIR ...]
    make fuzz FUZZ_TARGET=all FUZZ_RUNS=200000

TARGET is one of ``tools/fuzz/targets.py`` (batch, legacy, walk, windows, native, control,
txnlog, offsets, metadata, snapshot, index, checkpoint, compression) or ``all`` (the first
input byte picks one). Without a corpus directory the run uses ``.work/fuzz/corpus/TARGET``,
seeded from the fixtures on first use (``tools/fuzz/seeds.py``). A crashing input is written
to ``.work/fuzz/artifacts/``; after the fix it goes to ``tools/fuzz/crashes/TARGET-<what>.bin``,
where ``tests/robust/test_fuzz.py`` replays it forever.

Only ``logscan`` is instrumented: coverage feedback comes from the decoders, not from the
standard library or cramjam.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = REPO / ".work" / "fuzz"
DEFAULT_MAX_LEN = 16384


def main(argv: list[str]) -> None:
    import atheris

    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit(__doc__)
    target_name, rest = argv[1], argv[2:]
    with atheris.instrument_imports(include=["logscan"]):
        from tools.fuzz import targets
    from tools.fuzz.seeds import write_corpus

    if target_name == "all":
        target = targets.run_all
    elif target_name in targets.TARGETS:
        target = targets.TARGETS[target_name]
    else:
        sys.exit(f"unknown target {target_name!r}; one of: all, {', '.join(targets.NAMES)}")
    options = [a for a in rest if a.startswith("-")]
    corpora = [a for a in rest if not a.startswith("-")]
    if not corpora:
        corpus = WORK / "corpus" / target_name
        if not corpus.is_dir() or not any(corpus.iterdir()):
            write_corpus(WORK / "corpus", [target_name])
        corpora = [str(corpus)]
    if not any(o.startswith("-artifact_prefix=") for o in options):
        (WORK / "artifacts").mkdir(parents=True, exist_ok=True)
        options.append(f"-artifact_prefix={WORK / 'artifacts'}/{target_name}-")
    if not any(o.startswith("-max_len=") for o in options):
        options.append(f"-max_len={DEFAULT_MAX_LEN}")
    atheris.Setup([argv[0], *options, *corpora], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
