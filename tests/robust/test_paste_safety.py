"""What logscan prints for a person to paste into a shell runs only what it says.

The abort commands of `logscan plan` (and the abort_plans table, and the report's copy
buttons) carry a topic taken from a folder name of a copied, possibly hostile, disk and a
--bootstrap-server given on the command line. Here the real `hanging` fixture cluster is
copied, one hanging partition's folder is renamed on every broker to a name Kafka would
refuse, `logscan plan`'s whole stdout is executed by bash with a fake kafka-transactions.sh
first on PATH that records its argv, and nothing but the expected commands may run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main
from logscan.report import render
from logscan.scan.listing import ILLEGAL_NAME
from logscan.scan.local import scan
from logscan.state import hanging as h
from logscan.state.plans import plan_abort

from .harness import REPO, run_cli

HANGING = REPO / "fixtures" / "hanging"
TRUTH = json.loads((HANGING / "truth" / "truth.json").read_text())
AS_OF = str(TRUTH["recorded_at_ms"])
# Brackets make shlex quote it: the value must reach the tool intact through the quotes.
BOOTSTRAP = "broker1.example:9092,[::1]:9093"

RENAMED = ("hang", 2)   # coordinator_moved_on: a hanging transaction, so a plan was printed for it
HOSTILE_TOPICS = [
    "hang$(touch PWNED)",
    "hang`touch PWNED`",
    "hang;touch PWNED;",
    "hang'$(touch PWNED)'",
    "hang\ntouch PWNED\n",        # a newline ends the "# ..." comment line that names the topic
]


def _kafka_hanging() -> list[dict]:
    """The transactions Kafka's own find-hanging listed when the fixture was recorded."""
    return TRUTH["find_hanging"]["broker-0.max-timeout-15"]["rows"]


def _hostile_copy(tmp_path: Path, topic: str) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(HANGING / "brokers", copy)
    name = f"{RENAMED[0]}-{RENAMED[1]}"
    for broker in sorted(copy.iterdir()):
        (broker / name).rename(broker / f"{topic}-{RENAMED[1]}")
    return copy


def _run_in_bash(tmp_path: Path, script: str) -> list[list[str]]:
    """Execute ``script`` with bash in a fresh folder, a fake kafka-transactions.sh first on
    PATH; the argv of each of its calls. Asserts that no PWNED file appeared anywhere."""
    work, fake_bin = tmp_path / "paste", tmp_path / "bin"
    work.mkdir(exist_ok=True)
    fake_bin.mkdir(exist_ok=True)
    log = tmp_path / "argv.jsonl"
    log.write_text("")
    tool = fake_bin / "kafka-transactions.sh"
    tool.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    "with open(os.environ['ARGV_LOG'], 'a') as f:\n"
                    "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    tool.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}", ARGV_LOG=str(log))
    proc = subprocess.run(["bash"], input=script, cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert not [p for p in tmp_path.rglob("*PWNED*") if "copy" not in p.relative_to(tmp_path).parts], proc.stderr
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def _abort_argv(row: dict) -> list[str]:
    return ["--bootstrap-server", BOOTSTRAP, "abort", "--topic", row["Topic"], "--partition", row["Partition"],
            "--start-offset", row["StartOffset"]]


def _explicit_argv(row: dict) -> list[str]:
    # The tool itself sends coordinator epoch 0 for -1 (never touched by a marker).
    return ["--bootstrap-server", BOOTSTRAP, "abort", "--topic", row["Topic"], "--partition", row["Partition"],
            "--producer-id", row["ProducerId"], "--producer-epoch", row["ProducerEpoch"],
            "--coordinator-epoch", str(max(int(row["CoordinatorEpoch"]), 0))]


def _legit(rows: list[dict]) -> list[dict]:
    return [r for r in rows if (r["Topic"], int(r["Partition"])) != RENAMED]


@pytest.mark.parametrize("topic", HOSTILE_TOPICS, ids=repr)
def test_pasting_all_of_logscan_plans_output_runs_only_the_abort_commands(tmp_path, topic):
    copy = _hostile_copy(tmp_path, topic)
    proc = run_cli("plan", str(copy), "--as-of", AS_OF, "--bootstrap-server", BOOTSTRAP)
    assert proc.returncode == 4, proc.stderr
    # the withheld plan is said, on stderr, the name quoted
    assert proc.stderr.splitlines() == [
        f"logscan: no abort planned for producer {r['ProducerId']} open since offset {r['StartOffset']} in "
        f"partition {RENAMED[1]} of {topic!r}: not a legal Kafka topic name (logscan scan shows the finding)"
        for r in _kafka_hanging() if (r["Topic"], int(r["Partition"])) == RENAMED]
    calls = _run_in_bash(tmp_path, proc.stdout)
    expected = [_abort_argv(r) for r in _legit(_kafka_hanging())]
    assert len(expected) == len(_kafka_hanging()) - 1
    # the explicit form (a comment) says it skips the leader's lookup the --start-offset form makes
    explicit = [line for line in proc.stdout.splitlines() if line.startswith("# older brokers")]
    assert len(explicit) == len(expected)
    assert all(line.startswith("# older brokers (no leader lookup: make the first check below before it): "
                               "kafka-transactions.sh ") for line in explicit)
    assert sorted(calls) == sorted(expected)


@pytest.mark.parametrize("topic", HOSTILE_TOPICS[:2], ids=repr)
def test_every_command_of_the_json_plans_runs_as_written(tmp_path, topic):
    """The abort_plans rows hold the same text: both command forms and the describe-producers
    command of the first check, each pasted alone."""
    copy = _hostile_copy(tmp_path, topic)
    proc = run_cli("plan", str(copy), "--as-of", AS_OF, "--bootstrap-server", BOOTSTRAP, "--format", "json")
    assert proc.returncode == 4, proc.stderr
    plans = [json.loads(line) for line in proc.stdout.splitlines()]
    assert topic not in {p["topic"] for p in plans}
    describe = [re.fullmatch(r".*\((kafka-transactions\.sh .*)\)", p["preconditions"][0]).group(1) for p in plans]
    script = "\n".join([*(p["command"] for p in plans), *(p["command_explicit"] for p in plans), *describe])
    calls = _run_in_bash(tmp_path, script + "\n")
    legit = _legit(_kafka_hanging())
    assert sorted(calls) == sorted(
        [_abort_argv(r) for r in legit] + [_explicit_argv(r) for r in legit]
        + [["--bootstrap-server", BOOTSTRAP, "describe-producers", "--topic", r["Topic"], "--partition",
            r["Partition"]] for r in legit])


def test_the_renamed_folders_are_findings_and_still_judged_but_never_planned(tmp_path):
    topic = HOSTILE_TOPICS[0]
    copy = _hostile_copy(tmp_path, topic)
    result = scan([copy], as_of_ms=int(AS_OF), bootstrap=BOOTSTRAP)
    folders = sorted(str(b / f"{topic}-{RENAMED[1]}") for b in copy.iterdir())
    illegal = [f for f in result.findings if f.reason == ILLEGAL_NAME]
    assert sorted(f.path for f in illegal) == folders
    assert all(repr(f"{topic}-{RENAMED[1]}") in f.message and "'.', '_' and '-'" in f.message for f in illegal)
    judged = [c for c in result.tables["hanging_candidates"] if (c["topic"], c["partition"]) == (topic, RENAMED[1])]
    assert len(judged) == 3 and all(c["hanging"] is True for c in judged)
    assert [(p["topic"], p["partition"]) for p in result.tables["abort_plans"]] == sorted(
        (r["Topic"], int(r["Partition"])) for r in _legit(_kafka_hanging()))
    # `logscan scan` prints the finding, the folder name quoted (no raw newline or $( ) from it).
    proc = run_cli("scan", str(copy), "--as-of", AS_OF)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr
    assert proc.stdout.count(f"partition folder {repr(topic + '-2')}: topic {topic!r} is not a name Kafka") == 3


BAD_BOOTSTRAPS = ["b1:9092;touch PWNED", "b1:9092\ntouch PWNED", "$(touch PWNED):9092", "b1:9092 b2:9092",
                  "`touch PWNED`:1", "b1:9092,", "b1", "b1:0", "b1:65536", "[::1;]:9092", "-b1:9092", ""]


@pytest.mark.parametrize("value", BAD_BOOTSTRAPS, ids=repr)
def test_a_bootstrap_server_that_is_not_host_port_is_a_usage_error(tmp_path, value):
    for args in (["plan", str(HANGING / "brokers")],
                 ["scan", str(HANGING / "brokers"), "--output", str(tmp_path / "tables")]):
        res = CliRunner().invoke(main, [*args, "--bootstrap-server", value])
        assert res.exit_code == 2, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)
        error = [line for line in res.output.splitlines() if line.startswith("Error:")]
        assert len(error) == 1 and "is not host:port" in error[0] and error[0].endswith("list of them")
        assert "kafka-transactions" not in res.output
    assert not (tmp_path / "tables").exists()


@pytest.mark.parametrize("value", BAD_BOOTSTRAPS[:3], ids=repr)
def test_the_spark_jobs_arguments_refuse_the_same_bootstrap_servers(value, capsys):
    from spark_jobs.scan import parse_args

    with pytest.raises(SystemExit) as stop:
        parse_args([str(HANGING / "brokers"), "--output", "/nonexistent", "--bootstrap-server", value])
    assert stop.value.code == 2
    assert "--bootstrap-server: " in capsys.readouterr().err
    assert parse_args([str(HANGING / "brokers"), "--output", "/x", "--bootstrap-server", BOOTSTRAP]
                      ).bootstrap_server == BOOTSTRAP


# --- the report's copy buttons -------------------------------------------------------------

class _Commands(HTMLParser):
    """The text of each <pre id=...> (what the copy button's innerText copies) and the ids
    the buttons copy."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pre: dict[str, str] = {}
        self.buttons: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "pre" and attrs.get("id"):
            self._in = attrs["id"]
            self.pre[self._in] = ""
        if tag == "button":
            self.buttons.append(re.fullmatch(r"copyCmd\('(\w+)',this\)", attrs["onclick"]).group(1))

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.pre[self._in] += data


def _page(plans: list[dict]) -> str:
    return render({
        "scan_id": "s1", "tables": "/t", "input": "/copy",
        "head": {"as_of": TRUTH["recorded_at_ms"], "replicas": 1, "partitions": 1, "brokers": 1,
                 "open_transactions": 1, "lagging_replicas": 1},
        "counts": {"corruptions": 0}, "partitions": [], "spans": [], "candidates": [], "corruptions": [],
        "plans": plans})


def _row(plan) -> dict:
    return {"topic": plan.topic, "partition": plan.partition, "producer_id": plan.producer_id,
            "producer_epoch": plan.producer_epoch, "start_offset": plan.start_offset, "reason": plan.reason,
            "risk": plan.risk, "risk_detail": plan.risk_detail, "command": plan.command,
            "command_explicit": plan.command_explicit, "preconditions": list(plan.preconditions),
            "effects": list(plan.effects)}


def test_the_report_copies_the_quoted_command_and_shows_it_escaped(tmp_path):
    txn = h.OpenTxn("hang", 2, producer_id=2, producer_epoch=0, start_offset=0, last_timestamp=0)
    plan = plan_abort(txn, h.Verdict(h.COORDINATOR_MOVED_ON, True, "missed marker"), -1, bootstrap=BOOTSTRAP)
    assert f"'{BOOTSTRAP}'" in plan.command                       # quoted, so the page must escape '
    page = _page([_row(plan)])
    assert plan.command not in page and f"&#x27;{BOOTSTRAP}&#x27;" in page
    parsed = _Commands()
    parsed.feed(page)
    # "copy all plans" (every plan's command, one per line), then each plan's two forms
    assert parsed.pre == {"cmdall": plan.command, "cmd0": plan.command, "cmd0x": plan.command_explicit}
    assert parsed.buttons == ["cmdall", "cmd0", "cmd0x"]
    calls = _run_in_bash(tmp_path, "\n".join(parsed.pre.values()) + "\n")
    assert calls == [["--bootstrap-server", BOOTSTRAP, "abort", "--topic", "hang", "--partition", "2",
                      "--start-offset", "0"]] * 2 + [
                     ["--bootstrap-server", BOOTSTRAP, "abort", "--topic", "hang", "--partition", "2",
                      "--producer-id", "2", "--producer-epoch", "0", "--coordinator-epoch", "0"]]


def test_the_report_offers_no_command_for_a_topic_kafka_would_refuse():
    """An abort_plans table written before topic names were checked may hold such a row."""
    command = "kafka-transactions.sh --bootstrap-server b:9092 abort --topic hang$(touch PWNED) --partition 2"
    row = {"topic": "hang$(touch PWNED)", "partition": 2, "producer_id": 2, "producer_epoch": 0, "start_offset": 0,
           "reason": "coordinator_moved_on", "risk": "low", "risk_detail": "x", "command": command + " --start-offset 0",
           "command_explicit": command + " --producer-id 2", "preconditions": ["p"], "effects": ["e"]}
    page = _page([row])
    parsed = _Commands()
    parsed.feed(page)
    assert parsed.pre == {} and parsed.buttons == []
    assert "--start-offset 0" not in page and "No command offered" in page


TERMINAL_HOSTILE = "hang\nDamage: 0 located findings\x1b[2J\x1b]0;owned\x07\u202e"


def test_names_from_the_copy_reach_the_terminal_escaped(tmp_path):
    # A folder name is anybody's bytes: a newline in it forged a line of `logscan scan`'s
    # report ("Damage: 0 ..."), an ESC sequence cleared the screen and retitled the window, a
    # bidi override reversed what followed. Every table cell, evidence and finding line shows
    # such characters as their backslash escapes.
    copy = _hostile_copy(tmp_path, TERMINAL_HOSTILE)
    proc = run_cli("scan", str(copy), "--as-of", AS_OF)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert not [c for c in stream if not c.isprintable() and c != "\n"], repr(stream)
        assert [ln for ln in stream.splitlines() if ln.startswith("Damage:")] == (
            ["Damage: 4 located findings"] if stream is proc.stdout else [])
    escaped = r"hang\nDamage: 0 located findings\x1b[2J\x1b]0;owned\x07\u202e-2"
    assert proc.stdout.count(escaped) >= 3 + 3   # the findings, and the candidates' rows and evidence
    # logscan sql's text rows too (render_rows: text escapes, JSON and CSV carry the value whole).
    import io

    from logscan.render import render_rows

    for fmt in ("text", "json", "csv"):
        buf = io.StringIO()
        render_rows(["topic"], [[TERMINAL_HOSTILE]], fmt, buf)
        assert ("\x1b" in buf.getvalue()) == (fmt == "csv"), (fmt, buf.getvalue())
        assert fmt != "text" or r"hang\nDamage: 0 located findings\x1b[2J" in buf.getvalue()
