"""Abort plans: commands, preconditions and refusals on tiny inputs."""

import dataclasses
import json
import os
import shlex
import subprocess
import sys

import pytest

from logscan.state import hanging as h
from logscan.state.plans import LOW, MEDIUM, abort_commands, check_bootstrap, plan_abort

T = h.OpenTxn("orders", 3, producer_id=5, producer_epoch=2, start_offset=40, last_timestamp=1_000)


def test_plan_has_both_command_forms_and_maps_coordinator_epoch_minus_one_to_zero():
    plan = plan_abort(T, h.Verdict(h.NO_COORDINATOR_RECORD, True, "gone"), -1, bootstrap="b:9092",
                      high_watermark=55, next_lso=55)
    assert plan.command == ("kafka-transactions.sh --bootstrap-server b:9092 abort --topic orders "
                            "--partition 3 --start-offset 40")
    assert plan.command_explicit.endswith("--producer-id 5 --producer-epoch 2 --coordinator-epoch 0")
    assert plan.risk == LOW
    assert any("from 40 to 55 (high watermark 55)" in e for e in plan.effects)


def test_partition_never_added_is_medium_risk():
    plan = plan_abort(T, h.Verdict(h.PARTITION_NOT_IN_TRANSACTION, True, "x"), 3)
    assert plan.risk == MEDIUM and "--coordinator-epoch 3" in plan.command_explicit


@pytest.mark.parametrize("verdict", [
    h.Verdict(h.MARKERS_PENDING, False, "committing"),
    h.Verdict(h.COORDINATOR_ONGOING, False, "live"),
    h.Verdict(h.COORDINATOR_NOT_IN_COPY, None, "unknown"),
    h.Verdict(h.REPLICAS_DISAGREE, False, "lagging follower"),
])
def test_never_plan_an_abort_unless_hanging(verdict):
    assert plan_abort(T, verdict, 0) is None


# What a shell would expand, split or run if it were not quoted.
HOSTILE = ["hang$(touch PWNED)", "a b", "it's", "x;y", "`id`", "a\nb", "*", "~root", ""]


def _bash_argv(command: str, cwd) -> list[str]:
    """The argv bash gives kafka-transactions.sh for ``command`` (globs, ~ and $ expanded as
    in a terminal; a file in ``cwd`` for ``*`` to match)."""
    (cwd / "a-file").write_text("")
    tool = 'kafka-transactions.sh() { "$PY" -c "import json, sys; print(json.dumps(sys.argv[1:]))" "$@"; }\n'
    proc = subprocess.run(["bash", "-c", tool + command], cwd=cwd, capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PY=sys.executable))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("topic", HOSTILE, ids=repr)
def test_abort_commands_quote_every_string_so_the_shell_gives_the_tool_each_value_whole(topic, tmp_path):
    bootstrap = "b1:9092,[::1]:9093"
    start, explicit = abort_commands(bootstrap, topic, 7, 40, 5, 2, -1)
    head = ["--bootstrap-server", bootstrap, "abort", "--topic", topic, "--partition", "7"]
    assert _bash_argv(start, tmp_path) == head + ["--start-offset", "40"]
    assert _bash_argv(explicit, tmp_path) == head + ["--producer-id", "5", "--producer-epoch", "2",
                                                     "--coordinator-epoch", "0"]
    assert shlex.split(start)[1:] == head + ["--start-offset", "40"]
    assert list(tmp_path.iterdir()) == [tmp_path / "a-file"]


def test_legal_names_are_printed_as_they_are():
    start, _ = abort_commands("b:9092", "my.topic_x-1", 0, 0, 1, 0, 0)
    assert start == "kafka-transactions.sh --bootstrap-server b:9092 abort --topic my.topic_x-1 --partition 0 --start-offset 0"


def test_no_plan_for_a_topic_kafka_would_refuse_though_it_hangs():
    txn = h.OpenTxn("hang$(touch PWNED)", 2, producer_id=2, producer_epoch=0, start_offset=0, last_timestamp=0)
    verdict = h.Verdict(h.COORDINATOR_MOVED_ON, True, "missed")
    assert plan_abort(txn, verdict, 0) is None
    assert plan_abort(dataclasses.replace(txn, topic="x" * 249), verdict, 0) is not None
    assert plan_abort(dataclasses.replace(txn, topic="x" * 250), verdict, 0) is None


def test_the_describe_producers_check_is_a_whole_quoted_command():
    plan = plan_abort(T, h.Verdict(h.NO_COORDINATOR_RECORD, True, "gone"), -1, bootstrap="[::1]:9092")
    assert plan.preconditions[0].endswith(
        "(kafka-transactions.sh --bootstrap-server '[::1]:9092' describe-producers --topic orders --partition 3)")


@pytest.mark.parametrize("value", ["BOOTSTRAP:9092", "b1:9092", "b1.example.com:9092,b2.example.com:9093",
                                   "10.0.0.1:9092", "[::1]:9092", "[2001:db8::7]:1",
                                   "kafka_1:65535", "a:1,b:2,c:3"])
def test_bootstrap_servers_that_are_host_port_lists_pass(value):
    assert check_bootstrap(value) == value


@pytest.mark.parametrize("value", ["", "b1", "b1:", ":9092", "b1:0", "b1:65536", "b1:123456", "b1:9092,",
                                   ",b1:9092", "b1:9092 ", " b1:9092", "b1:9092;id", "b1:9092\nid", "$(id):9092",
                                   "`id`:1", "b1:9092&", "b1|x:1", "-b1:9092", "b1-:9092", "[::1:9092",
                                   "[xyz]:9092", "[::1]", "::1:9092", "b1:9092:1", "b\u00e9:9092", "b1:+9092"])
def test_anything_else_is_refused_in_one_sentence(value):
    with pytest.raises(ValueError) as refused:
        check_bootstrap(value)
    message = str(refused.value)
    assert "\n" not in message and message.count(". ") == 0 and "is not host:port" in message
