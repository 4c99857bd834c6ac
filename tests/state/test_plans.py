"""Abort plans: commands, preconditions and refusals on tiny inputs."""

import pytest

from logscan.state import hanging as h
from logscan.state.plans import LOW, MEDIUM, plan_abort

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
