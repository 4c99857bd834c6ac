"""`logscan dump --kafka-version V` against the real kafka-dump-log of release V on the files
real brokers of that release wrote, for every option combination that makes sense per file
kind: 4.1.1's tool on fixtures/{tv1,tv2,hanging,pending} and the trimmed share-4.1, 3.9.2's
on fixtures/kafka-3.9 and the SIGKILLed-broker cluster killed-3.9, 4.4.0's on
fixtures/kafka-4.4, killed-4.4 and the trimmed marker-epochs-4.4 and share-4.4 (the killed
and trimmed ones read from their restored copies, tests/killed_fixtures.py): every release's
crashed broker, and real __share_group_state segments, under every option set of a .log and
their own --share-group-state-decoder.

test_fixtures.py replays ONE recorded option set per file; test_differential.py runs every
option on encoder-made files. This module closes the gap: every file of those clusters under
every option set, with the real tool run now.

Cost: per release, kafka-dump-log runs inside ONE JVM (tools/kafka/cluster.py
``run_java_tools``), one tool invocation per option set with ``--files`` listing every file of
that kind across the release's clusters; `logscan dump` runs in-process (click's runner) with
the same ``--files`` (so no automatic decoder is picked from a partition directory).

Where kafka-dump-log dies part-way (a coordinator decoder meeting a record without a key, an
Integer/Long decoder meeting fewer than 4/8 bytes, a .index entry whose --max-message-size slice
holds no whole batch), the rest of its batch is never dumped. For those option sets a second
JVM runs the tool once per file, so that every file is still compared: where Kafka survives,
stdout and stderr must be equal; where it dies, what it printed (up to the unfinished line of
the record it died on) must be the start of logscan's stdout, and logscan must exit non-zero
with a finding naming the file (logscan keeps going where Kafka stops; see dumper.py).

Paths are absolute: the in-process runner shares the test's working directory, and the
absolute path is what kafka-dump-log prints in its end-of-run stderr blocks anyway (whose
order, a Scala HashMap's, depends on that string).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.dump.versions import RELEASES
from tests.killed_fixtures import CLUSTER_ROOTS, REPO
from tools.kafka.cluster import jars_present, libs_for

from .kafkatool import kafka_stderr_lines, logscan_kafka_stderr_lines, requires_kafka

pytestmark = [pytest.mark.kafka, requires_kafka]

# Each release's clusters, whose files its tool and `logscan dump --kafka-version` are run on
# (the other releases' tools on the 4.1.1 clusters' files: test_kafka_releases.py).
CLUSTERS = {"4.1": ("tv1", "tv2", "hanging", "pending", "share-4.1"), "3.9": ("kafka-3.9", "killed-3.9"),
            "4.4": ("kafka-4.4", "killed-4.4", "marker-epochs-4.4", "share-4.4")}
DECODER_PKG = "org.apache.kafka.tools.api."
INTERNAL_DECODERS = {"__transaction_state-": "--transaction-log-decoder",
                     "__consumer_offsets-": "--offsets-decoder",
                     "__cluster_metadata-": "--cluster-metadata-decoder",
                     "__share_group_state-": "--share-group-state-decoder"}
#: The kinds a release's clusters hold none of: share groups (KIP-932) came after 3.9.
ABSENT = {"3.9": {"--share-group-state-decoder"}}


def _fixture_files(clusters) -> dict[str, list[str]]:
    """Absolute paths by kind, in ``clusters``: log (every .log) and its subsets per internal topic, index,
    timeindex, txnindex, snapshot (producer state), checkpoint (KRaft bootstrap snapshots),
    other (what kafka-dump-log ignores), nodot (names without a dot, which it dies on)."""
    kinds: dict[str, list[str]] = {k: [] for k in ("log", "index", "timeindex", "txnindex",
                                                   "snapshot", "checkpoint", "user", "other",
                                                   "nodot")}
    kinds.update({opt: [] for opt in INTERNAL_DECODERS.values()})
    for cluster in clusters:
        brokers = CLUSTER_ROOTS[cluster] / "brokers"
        for path in sorted(brokers.rglob("*")):
            suffix = path.suffix.lstrip(".")
            if not path.is_file():
                continue
            if "." not in path.name:
                suffix = "nodot"
            kinds[suffix if suffix in kinds else "other"].append(str(path))
            if suffix == "log":
                topic = [opt for prefix, opt in INTERNAL_DECODERS.items()
                         if path.parent.name.startswith(prefix)]
                kinds[topic[0] if topic else "user"].append(str(path))
    return kinds


FILES = {version: _fixture_files(clusters) for version, clusters in CLUSTERS.items()}

LOG_OPTIONS = [
    [],
    ["--deep-iteration"],
    ["--print-data-log"],
    ["--deep-iteration", "--skip-record-metadata"],
    ["--print-data-log", "--skip-record-metadata"],
    ["--max-bytes", "0"],
    ["--max-bytes", "100"],  # inside the first batch of nearly every segment
    ["--max-bytes", "1000"],
    ["--max-bytes", "5000"],
    ["--max-bytes", "1000", "--print-data-log"],
    # Each coordinator/metadata decoder on every .log: its own topic and all the others
    # (kafka-dump-log's output for a mismatched decoder, stack trace included, is the truth).
    ["--transaction-log-decoder"],
    ["--offsets-decoder"],
    ["--cluster-metadata-decoder"],
    ["--value-decoder-class"],  # bare flag: StringDecoder, implies --print-data-log
    ["--key-decoder-class", DECODER_PKG + "StringDecoder",
     "--value-decoder-class", DECODER_PKG + "StringDecoder"],
    ["--key-decoder-class", DECODER_PKG + "IntegerDecoder"],
    ["--key-decoder-class", DECODER_PKG + "LongDecoder"],
    ["--value-decoder-class", DECODER_PKG + "IntegerDecoder"],
    ["--value-decoder-class", DECODER_PKG + "LongDecoder", "--skip-record-metadata"],
]
# The matching decoder on its own topic, also without record metadata.
MATCHED_DECODER_OPTIONS = [[opt, *extra] for opt in INTERNAL_DECODERS.values()
                           for extra in ([], ["--skip-record-metadata"])]
INDEX_OPTIONS = [
    [],
    ["--verify-index-only"],
    ["--index-sanity-check"],
    ["--max-message-size", "100"],  # too small for most batches: Kafka dies
    ["--max-message-size", "1000"],
    ["--verify-index-only", "--max-message-size", "300"],
]


@dataclass(frozen=True)
class Case:
    kind: str
    options: tuple[str, ...]
    version: str = "4.1"

    @property
    def id(self) -> str:
        opts = " ".join(o.replace(DECODER_PKG, "") for o in self.options) or "default"
        return f"{self.version} {self.kind}: {opts}"

    @property
    def files(self) -> list[str]:
        return FILES[self.version][self.kind]


OPTION_SETS = ([Case("log", tuple(o)) for o in LOG_OPTIONS]
         + [Case(o[0], tuple(o)) for o in MATCHED_DECODER_OPTIONS]
         + [Case(k, tuple(o)) for k in ("index", "timeindex") for o in INDEX_OPTIONS]
         + [Case(k, tuple(o)) for k in ("txnindex", "snapshot")
            for o in ([], ["--deep-iteration", "--print-data-log"])]
         + [Case("checkpoint", tuple(o)) for o in (
             [], ["--deep-iteration"], ["--print-data-log"], ["--cluster-metadata-decoder"],
             ["--cluster-metadata-decoder", "--skip-record-metadata"])]
         + [Case("other", ())])
CASES = [Case(c.kind, c.options, version) for version in CLUSTERS for c in OPTION_SETS
         if c.kind not in ABSENT.get(version, set())]
# kafka-dump-log 3.9.2 and 4.1.1 die (StringIndexOutOfBoundsException from
# filename.substring(filename.lastIndexOf("."))) on a name without a dot, such as
# leader-epoch-checkpoint; logscan deliberately ignores it like any unknown file (dumper.py).
# 4.4.0's (the Java DumpLogSegments) ignores it as logscan does: "Ignoring unknown file", exit 0.
DOTLESS = {version: Case("nodot", (), version) for version in CLUSTERS}
DIES_ON_DOTLESS = {"3.9": True, "4.1": True, "4.4": False}

_RUNS: dict[str, tuple[dict, dict]] = {}


def kafka_runs(version: str) -> tuple[dict, dict]:
    """{case: batch result} and {(case, file): single-file result} of the release's tool, from
    at most two JVMs per release, run once per release in the module."""
    from tools.kafka.cluster import run_java_tools

    if version not in _RUNS:
        libs = libs_for(RELEASES[version])
        if not jars_present(libs, RELEASES[version]):
            pytest.skip(f"no Kafka {RELEASES[version]} jars: make kafka-jars KAFKA_VERSION={RELEASES[version]}")
        cases = [c for c in [*CASES, DOTLESS[version]] if c.version == version and c.files]
        batch = dict(zip(cases, run_java_tools(
            [("kafka-dump-log", ["--files", ",".join(c.files), *c.options]) for c in cases], libs)))
        died = [c for c in cases if batch[c].returncode != 0]
        single_jobs = [(c, f) for c in died for f in c.files]
        single = dict(zip(single_jobs, run_java_tools(
            [("kafka-dump-log", ["--files", f, *c.options]) for c, f in single_jobs], libs)))
        _RUNS[version] = batch, single
    return _RUNS[version]


def _logscan(files: list[str], options, version: str) -> tuple[int, str, bytes]:
    result = CliRunner().invoke(main, ["dump", "--kafka-version", version, "--files", ",".join(files), *options])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    # Not result.stdout: click's runner turns CRLF into LF there.
    return result.exit_code, result.stdout_bytes.decode("utf-8", "replace"), result.stderr_bytes


def _first_difference(ours: list[str], kafka: list[str]) -> str:
    for n, (a, b) in enumerate(zip(ours, kafka)):
        if a != b:
            return f"line {n + 1}:\n  kafka:   {b!r}\n  logscan: {a!r}"
    n = min(len(ours), len(kafka))
    if len(kafka) == len(ours):
        return "the end of the last line (a line break)"
    extra = ("kafka", kafka) if len(kafka) > n else ("logscan", ours)
    return f"line {n + 1}: only {extra[0]} has {extra[1][n]!r} ({len(kafka)} vs {len(ours)} lines)"


def _text_difference(ours: str, kafka: str) -> str:
    """Where two outputs first differ, character by character (a CR inside a payload is
    printed as is by both tools, and run_java_tools hands it back untranslated)."""
    n = next((i for i, (a, b) in enumerate(zip(ours, kafka)) if a != b), min(len(ours), len(kafka)))
    line = kafka.count("\n", 0, n) + 1
    start = max(kafka.rfind("\n", 0, n) + 1, n - 80)
    return (f"line {line}:\n  kafka:   {kafka[start:n + 40]!r}\n"
            f"  logscan: {ours[start:n + 40]!r}")


def _not_a_prefix(ours: str, kafka: str) -> str | None:
    """Where Kafka's stdout stops being the start of ours (its last line is unfinished when
    it died inside a record)."""
    return None if ours.startswith(kafka) else _text_difference(ours, kafka)


def _compare_full(where: str, kafka, files: list[str], options, version: str) -> list[str]:
    """kafka-dump-log exited 0: stdout and the Kafka part of stderr must be equal."""
    _, out, err = _logscan(files, options, version)
    problems = []
    if out != kafka.stdout:
        problems.append(f"{where}: stdout differs at " + _text_difference(out, kafka.stdout))
    ours_err = logscan_kafka_stderr_lines(err)
    kafka_err = kafka_stderr_lines(kafka.stderr.encode())
    if ours_err != kafka_err:
        problems.append(f"{where}: stderr differs at " + _first_difference(ours_err, kafka_err))
    return problems


def _compare_died(where: str, kafka, files: list[str], options, version: str) -> list[str]:
    """kafka-dump-log died: its stdout (ending in the unfinished line of the record it died
    on) starts logscan's; logscan exits non-zero with a finding naming the file."""
    code, out, err = _logscan(files, options, version)
    problems = []
    wrong = _not_a_prefix(out, kafka.stdout)
    if wrong:
        problems.append(f"{where}: Kafka died (exit {kafka.returncode}) and its stdout is not "
                        f"the start of logscan's: {wrong}")
    if code == 0:
        problems.append(f"{where}: Kafka died (exit {kafka.returncode}) but logscan exited 0")
    findings = [ln for ln in err.decode("utf-8", "replace").splitlines()
                if ln.startswith("logscan: ")]
    if len(files) == 1 and not any(files[0] in ln for ln in findings):
        problems.append(f"{where}: no logscan finding names the file: {findings[:3]}")
    return problems


@pytest.mark.parametrize("version", list(CLUSTERS))
def test_fixture_kinds_present(version):
    """Each release's fixture trees hold every kind this module claims to cover."""
    for kind in {"log", "user", "index", "timeindex", "txnindex", "snapshot", "checkpoint",
                 "other", "nodot", *INTERNAL_DECODERS.values()} - ABSENT.get(version, set()):
        assert FILES[version][kind], f"no {kind} files under fixtures/{{{','.join(CLUSTERS[version])}}}/brokers"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_option_set_matches_kafka_dump_log(case):
    if not case.files:
        pytest.skip(f"no {case.kind} files under fixtures/*/brokers")
    batch, single = kafka_runs(case.version)
    kafka = batch[case]
    where = f"{case.id} over {len(case.files)} files"
    if kafka.returncode == 0:
        problems = _compare_full(where, kafka, case.files, case.options, case.version)
    else:
        # The batch as far as Kafka got, then every file on its own.
        problems = _compare_died(where, kafka, case.files, case.options, case.version)[:1]
        for f in case.files:
            one = single[(case, f)]
            rel = str(Path(f).relative_to(REPO))
            compare = _compare_full if one.returncode == 0 else _compare_died
            problems += compare(f"{case.id} on {rel}", one, [f], case.options, case.version)
    assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems[:20])


@pytest.mark.parametrize("version", list(CLUSTERS))
def test_dotless_names_kafka_dies_logscan_ignores(version):
    """The one deliberate difference: where kafka-dump-log dies on a name without a dot after
    its "Dumping" line (3.9.2, 4.1.1), logscan prints the same stdout and ignores the file like
    any unknown one (stderr "Ignoring unknown file", exit 0); 4.4.0's tool does the same as
    logscan, all files in one run."""
    dotless = DOTLESS[version]
    if not dotless.files:
        pytest.skip("no dotless files under fixtures/*/brokers")
    batch, single = kafka_runs(version)
    if not DIES_ON_DOTLESS[version]:
        assert batch[dotless].returncode == 0, batch[dotless].stderr[:500]
        problems = _compare_full(f"{dotless.id} over {len(dotless.files)} files", batch[dotless], dotless.files, (),
                                 version)
        assert _logscan(dotless.files, (), version)[0] == 0
        assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems[:20])
        return
    assert batch[dotless].returncode == 1, batch[dotless].stderr[:500]
    problems = []
    for f in dotless.files:
        kafka = single[(dotless, f)]
        code, out, err = _logscan([f], (), version)
        rel = str(Path(f).relative_to(REPO))
        if kafka.returncode != 1 or "StringIndexOutOfBoundsException" not in kafka.stderr:
            problems.append(f"{rel}: kafka-dump-log did not die as expected: "
                            f"{kafka.stderr[:200]!r}")
        if out != kafka.stdout:
            problems.append(f"{rel}: stdout differs at " + _text_difference(out, kafka.stdout))
        if code != 0 or err.decode().splitlines() != [f"Ignoring unknown file {f}"]:
            problems.append(f"{rel}: logscan exit {code}, stderr {err.decode()[:200]!r}")
    assert not problems, f"{len(problems)} mismatch(es):\n" + "\n".join(problems[:20])
