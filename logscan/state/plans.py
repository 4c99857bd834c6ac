"""Offline abort plans: the exact kafka-transactions command for each hanging transaction.

KIP-664's abort sends WriteTxnMarkers(ABORT) straight to the partition leader; the broker
accepts it only if the marker's producer epoch is not below the producer's current epoch
(and its coordinator epoch not below the recorded one), and with `--start-offset` the tool
first looks up, with describe-producers on the leader, a producer whose open transaction
starts at that offset. A plan is only made for verdicts that call the transaction hanging;
a transaction the coordinator is committing (PrepareCommit/PrepareAbort) never gets one.

The commands are pasted into a shell (`logscan plan`, the abort_plans table, the report's copy
buttons), so every value in them is shell-quoted, the bootstrap servers are checked where they
enter (check_bootstrap), and no plan is made for a topic whose name Kafka would refuse: such a
folder was not written by Kafka, and the plan's comment lines carry the topic unquoted.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import dataclass

from logscan.defaults import DEFAULT_BOOTSTRAP
from logscan.logdir.naming import is_legal_topic

from . import hanging

# Risk levels, from "the coordinator has forgotten this transaction" to "logscan cannot
# see enough to be sure".
LOW = "low"
MEDIUM = "medium"
HIGH = "high"

_RISK = {
    hanging.NO_COORDINATOR_RECORD: (LOW, "no transactional id owns this producer id any more; nothing "
                                         "will ever end this transaction"),
    hanging.COORDINATOR_MOVED_ON: (LOW, "the coordinator already completed this transaction; only this "
                                        "partition missed its marker"),
    hanging.PARTITION_NOT_IN_TRANSACTION: (MEDIUM, "the coordinator never registered this partition; if "
                                                   "the producer is still alive its later writes to this "
                                                   "partition at the same epoch are aborted with it"),
    hanging.REPLICAS_DISAGREE: (HIGH, "replicas disagree about this transaction; check the leader's "
                                      "describe-producers output before aborting"),
}


# One bootstrap.servers entry: a host name or IPv4 address, or a bracketed IPv6 address, then
# ":port". Underscores are allowed in names: container hosts (Docker services) often have them.
_HOST_PORT = re.compile(r"(?:(?P<name>[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?)"
                        r"|\[(?P<ipv6>[0-9A-Fa-f:.]+)\]):(?P<port>[0-9]{1,5})")


def check_bootstrap(value: str) -> str:
    """``value`` when it is a comma-separated list of host:port (host names, IPv4, [IPv6]);
    else ValueError, one sentence. Anything else (spaces, newlines, ``;``, ``$``) would be
    pasted into a shell with the commands."""
    for entry in value.split(","):
        match = _HOST_PORT.fullmatch(entry)
        if match is None or not 0 < int(match["port"]) <= 65535 or not _is_ipv6(match["ipv6"]):
            raise ValueError(f"{entry!r} is not host:port (a host name, an IPv4 address or a bracketed "
                             "IPv6 address, then a port from 1 to 65535); give a comma-separated list of them")
    return value


def _is_ipv6(text: str | None) -> bool:
    if text is None:
        return True
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class AbortPlan:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    reason: str
    risk: str
    command: str
    command_explicit: str
    preconditions: tuple[str, ...]
    effects: tuple[str, ...]
    risk_detail: str


def abort_commands(bootstrap: str, topic: str, partition: int, start_offset: int, producer_id: int,
                   producer_epoch: int, coordinator_epoch: int) -> tuple[str, str]:
    """The `--start-offset` form, and the explicit form older brokers need (and that skips
    the describe-producers lookup). A coordinator epoch of -1 (never touched by a marker)
    becomes 0, as the tool itself does. Strings are shell-quoted; numbers are ints."""
    base = (f"kafka-transactions.sh --bootstrap-server {shlex.quote(bootstrap)} abort "
            f"--topic {shlex.quote(topic)} --partition {int(partition)}")
    return (f"{base} --start-offset {int(start_offset)}",
            f"{base} --producer-id {int(producer_id)} --producer-epoch {int(producer_epoch)} "
            f"--coordinator-epoch {max(int(coordinator_epoch), 0)}")


def describe_producers_command(bootstrap: str, topic: str, partition: int) -> str:
    """What to run on the leader first: its producers and their open transactions."""
    return (f"kafka-transactions.sh --bootstrap-server {shlex.quote(bootstrap)} describe-producers "
            f"--topic {shlex.quote(topic)} --partition {int(partition)}")


def plan_abort(txn: hanging.OpenTxn, verdict: hanging.Verdict, coordinator_epoch: int, *,
               bootstrap: str = DEFAULT_BOOTSTRAP, high_watermark: int | None = None,
               next_lso: int | None = None) -> AbortPlan | None:
    """A plan for one hanging transaction; None when the verdict says not to abort, or when
    the topic is not a name Kafka allows (the listing reports that folder)."""
    if verdict.hanging is not True or verdict.reason not in _RISK or not is_legal_topic(txn.topic):
        return None
    risk, detail = _RISK[verdict.reason]
    command, explicit = abort_commands(bootstrap, txn.topic, txn.partition, txn.start_offset,
                                       txn.producer_id, txn.producer_epoch, coordinator_epoch)
    preconditions = (
        f"the leader of {txn.topic}-{txn.partition} still shows producer {txn.producer_id} with "
        f"CurrentTransactionStartOffset {txn.start_offset} "
        f"({describe_producers_command(bootstrap, txn.topic, txn.partition)})",
        f"its ProducerEpoch is still {txn.producer_epoch}: the broker rejects a marker with a lower "
        f"epoch (INVALID_PRODUCER_EPOCH)",
        f"its LatestCoordinatorEpoch is at most {max(coordinator_epoch, 0)} "
        f"(else TRANSACTION_COORDINATOR_FENCED)",
        "the partition's message format is v2 and the caller has ALTER (or CLUSTER_ACTION) on the cluster",
    )
    lso_after = ("the next open transaction's first offset or the high watermark" if next_lso is None
                 else str(next_lso))
    effects = (
        f"an ABORT marker is appended to {txn.topic}-{txn.partition} (producer {txn.producer_id}, epoch "
        f"{txn.producer_epoch}); the transaction's records from offset {txn.start_offset} become aborted "
        f"and are listed in the segment's .txnindex",
        f"the last stable offset moves from {txn.start_offset} to {lso_after}"
        + ("" if high_watermark is None else f" (high watermark {high_watermark})")
        + "; read_committed consumers resume and skip the aborted records",
        "on a compacted topic the cleaner can clean past the old LSO again and remove the aborted "
        "records; the marker itself is removed after delete.retention.ms",
        "the transaction coordinator is not told: its own state for the transactional id is unchanged",
    )
    return AbortPlan(txn.topic, txn.partition, txn.producer_id, txn.producer_epoch, coordinator_epoch,
                     txn.start_offset, verdict.reason, risk, command, explicit, preconditions, effects, detail)
