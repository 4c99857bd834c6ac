"""A deliberately misbehaving Kafka client, for building hanging transactions on a live cluster.

A well-behaved transactional producer (librdkafka, the Java client) always registers a
partition with its coordinator (AddPartitionsToTxn, or KIP-890's implicit add under TV2)
before it writes transactional data there.  The hanging-transaction bugs that KIP-664's
``find-hanging`` and KIP-890's server-side defense exist for come from clients that did not:
the partition then holds an open transaction the coordinator will never send a marker to,
and its last stable offset (LSO) is pinned until an operator aborts it by hand.

Brokers only accept such a write when ``transaction.partition.verification.enable=false``
(KIP-890 part 1 turns verification on by default), so the fixture cluster for these cases
runs with that switch off and this module speaks the wire protocol directly: it sends the
few requests needed (ApiVersions, Metadata, FindCoordinator, InitProducerId,
AddPartitionsToTxn, Produce, EndTxn) in exactly the order the test case wants, skipping the
steps a real client would never skip.

Request/response bodies are encoded and decoded by kafka-python's JSON-schema protocol
classes; the record batch by kafka-python's ``DefaultRecordBatchBuilder`` (magic 2, with the
transactional attribute bit 4 set). Only the framing and the socket live here.
"""
from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

# Request framing: int32 size, then header + body (the protocol classes write both).
FRAME_SIZE = struct.Struct(">i")

# Versions pinned to ones Kafka 4.1.1 still serves and whose semantics are the "old client"
# ones: Produce < 12 and EndTxn < 5 keep the coordinator on transaction version 1 rules for
# this client (KIP-890 part 2 is negotiated by request version), AddPartitionsToTxn 3 is the
# last client-facing version (4+ is broker-to-coordinator batching).
API_VERSIONS_VERSION = 3
METADATA_VERSION = 9
FIND_COORDINATOR_VERSION = 3
INIT_PRODUCER_ID_VERSION = 4
ADD_PARTITIONS_TO_TXN_VERSION = 3
PRODUCE_VERSION = 9
END_TXN_VERSION = 3
# EndTxn 5+ is KIP-890 part 2's (TransactionCoordinator: the request's version picks the
# client's transaction version): what a TV2 client sends, for the scenarios that need one.
END_TXN_TV2_VERSION = 5
# InitProducerId 6 adds Enable2Pc and KeepPreparedTxn (KIP-939). Kafka 4.4.0 marks it
# latestVersionUnstable (served only with unstable.api.versions.enable=true), and its Java
# client never sets Enable2Pc (javap): a two-phase-commit producer on 4.4.0 is this request.
INIT_PRODUCER_ID_2PC_VERSION = 6

COORDINATOR_TYPE_TRANSACTION = 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
ACKS_ALL = -1
CODEC_NONE = 0


# Errors a fresh cluster returns while __transaction_state is being created or loaded, or
# while the previous transaction's markers are still being written: retry, do not fail.
CONCURRENT_TRANSACTIONS = 51
RETRIABLE = {
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    CONCURRENT_TRANSACTIONS: "CONCURRENT_TRANSACTIONS",
}
# A broker learns of a new topic from the controller a moment after it is created (in
# ZooKeeper mode by the controller's UpdateMetadata): until then its metadata answers these.
METADATA_PROPAGATING = {3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE"}
RETRY_BACKOFF_S = 0.5
RETRY_DEADLINE_S = 60.0


class KafkaProtocolError(RuntimeError):
    """A broker answered with a non-zero error code; `error_code` is Kafka's Errors code."""

    def __init__(self, api: str, error_code: int, detail: str = ""):
        super().__init__(f"{api} failed with Kafka error code {error_code} {detail}".rstrip())
        self.api = api
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class PartitionLeader:
    topic: str
    partition: int
    leader_id: int
    replica_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ProducedBatch:
    """Where the broker put a batch: `base_offset` is the offset find-hanging reports as StartOffset."""

    topic: str
    partition: int
    leader_id: int
    base_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    first_timestamp_ms: int


def _retrying(call, retriable=RETRIABLE):
    """Run `call()` until it stops raising a retriable KafkaProtocolError (or time runs out)."""
    deadline = time.monotonic() + RETRY_DEADLINE_S
    while True:
        try:
            return call()
        except KafkaProtocolError as e:
            if e.error_code not in retriable or time.monotonic() > deadline:
                raise
            time.sleep(RETRY_BACKOFF_S)


def build_transactional_batch(producer: ProducerIdAndEpoch, values: list[bytes],
                              timestamp_ms: int, base_sequence: int = 0,
                              keys: list[bytes] | None = None) -> bytes:
    """One magic-2 batch with the transactional attribute (bit 4), offsets 0..n-1 relative,
    every record stamped `timestamp_ms` (CreateTime); the broker assigns the base offset.
    `keys`, one per value (a compacted topic refuses a record without a key), else none."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=CODEC_NONE, is_transactional=True,
        producer_id=producer.producer_id, producer_epoch=producer.producer_epoch,
        base_sequence=base_sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp_ms, key=None if keys is None else keys[i], value=value, headers=[])
    return bytes(builder.build())


def _check(api: str, error_code: int, detail: str = "") -> None:
    if error_code != 0:
        raise KafkaProtocolError(api, error_code, detail)


class BrokerConnection:
    """One blocking TCP connection to one broker; one request in flight at a time."""

    def __init__(self, host: str, port: int, client_id: str = "logscan-rawclient", timeout_s: float = 30.0):
        self._sock = socket.create_connection((host, port), timeout=timeout_s)
        self._client_id = client_id
        self._correlation_id = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "BrokerConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _recv_exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self._sock.recv(n - got)
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {got} of {n} bytes")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def send(self, request, version: int, response_class):
        self._correlation_id += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation_id, client_id=self._client_id)
        self._sock.sendall(request.encode(header=True, framed=True))
        (size,) = FRAME_SIZE.unpack(self._recv_exactly(FRAME_SIZE.size))
        payload = self._recv_exactly(size)
        response = response_class[version].decode(payload, header=True)
        if response.header.correlation_id != self._correlation_id:
            raise ConnectionError(
                f"correlation id {response.header.correlation_id} != {self._correlation_id}")
        return response


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class RawClient:
    """Bootstrap + per-broker connections; each method is one Kafka request, nothing implied."""

    def __init__(self, bootstrap: str, client_id: str = "logscan-rawclient"):
        self._client_id = client_id
        self._bootstrap = _host_port(bootstrap.split(",")[0])
        self._brokers: dict[int, tuple[str, int]] = {}
        self._connections: dict[object, BrokerConnection] = {}

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _conn(self, node_id: int | None = None) -> BrokerConnection:
        key = "bootstrap" if node_id is None else node_id
        if key not in self._connections:
            host, port = self._bootstrap if node_id is None else self._brokers[node_id]
            self._connections[key] = BrokerConnection(host, port, self._client_id)
        return self._connections[key]

    def api_versions(self, node_id: int | None = None) -> dict[int, tuple[int, int]]:
        req = ApiVersionsRequest(client_software_name="logscan-rawclient", client_software_version="1")
        resp = self._conn(node_id).send(req, API_VERSIONS_VERSION, ApiVersionsResponse)
        _check("ApiVersions", resp.error_code)
        return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def metadata(self, topics: list[str]) -> list[PartitionLeader]:
        req = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        resp = self._conn().send(req, METADATA_VERSION, MetadataResponse)
        for b in resp.brokers:
            self._brokers[b.node_id] = (b.host, b.port)
        leaders = []
        for t in resp.topics:
            _check("Metadata", t.error_code, t.name)
            for p in t.partitions:
                _check("Metadata", p.error_code, f"{t.name}-{p.partition_index}")
                leaders.append(PartitionLeader(t.name, p.partition_index, p.leader_id, tuple(p.replica_nodes)))
        return sorted(leaders, key=lambda x: (x.topic, x.partition))

    def leader_of(self, topic: str, partition: int) -> PartitionLeader:
        for p in _retrying(lambda: self.metadata([topic]), METADATA_PROPAGATING):
            if p.partition == partition:
                return p
        raise KeyError(f"{topic}-{partition} not in metadata")

    def find_transaction_coordinator(self, transactional_id: str) -> int:
        return _retrying(lambda: self._find_transaction_coordinator(transactional_id))

    def _find_transaction_coordinator(self, transactional_id: str) -> int:
        req = FindCoordinatorRequest(key=transactional_id, key_type=COORDINATOR_TYPE_TRANSACTION)
        resp = self._conn().send(req, FIND_COORDINATOR_VERSION, FindCoordinatorResponse)
        _check("FindCoordinator", resp.error_code, resp.error_message or "")
        self._brokers[resp.node_id] = (resp.host, resp.port)
        return resp.node_id

    def init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int = 60000,
                         enable_2pc: bool = False) -> ProducerIdAndEpoch:
        """InitProducerId; with `transactional_id=None` the broker hands out an idempotent
        producer id the transaction coordinator has no record of (used for the "unknown
        producer id" hanging case); `enable_2pc` asks for two-phase commit (version 6,
        Enable2Pc, KeepPreparedTxn false)."""
        return _retrying(lambda: self._init_producer_id(transactional_id, transaction_timeout_ms, enable_2pc))

    def init_producer_id_once(self, transactional_id: str, transaction_timeout_ms: int = 60000) -> int:
        """One InitProducerId, as a restarted producer sends it, and its error code.

        When the id still has an Ongoing transaction the coordinator bumps the epoch, starts
        aborting that transaction (PrepareAbort) and answers CONCURRENT_TRANSACTIONS; a real
        client retries until the abort is complete, this method does not."""
        try:
            self._init_producer_id(transactional_id, transaction_timeout_ms)
        except KafkaProtocolError as e:
            return e.error_code
        return 0

    def _init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                          enable_2pc: bool = False) -> ProducerIdAndEpoch:
        node = None if transactional_id is None else self.find_transaction_coordinator(transactional_id)
        fields = {"enable2_pc": True, "keep_prepared_txn": False} if enable_2pc else {}
        req = InitProducerIdRequest(
            transactional_id=transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
            producer_id=NO_PRODUCER_ID,
            producer_epoch=NO_PRODUCER_EPOCH,
            **fields,
        )
        version = INIT_PRODUCER_ID_2PC_VERSION if enable_2pc else INIT_PRODUCER_ID_VERSION
        resp = self._conn(node).send(req, version, InitProducerIdResponse)
        _check("InitProducerId", resp.error_code, transactional_id or "")
        return ProducerIdAndEpoch(resp.producer_id, resp.producer_epoch)

    def add_partitions_to_txn(self, transactional_id: str, producer: ProducerIdAndEpoch,
                              partitions: list[tuple[str, int]]) -> None:
        # A coordinator that does not know a topic created a moment ago answers
        # UNKNOWN_TOPIC_OR_PARTITION, which Kafka's producer retries (TransactionManager's
        # AddPartitionsToTxnHandler re-enqueues the request): seen on a loaded machine, 2026-12-08.
        _retrying(lambda: self._add_partitions_to_txn(transactional_id, producer, partitions),
                  {**RETRIABLE, 3: METADATA_PROPAGATING[3]})

    def _add_partitions_to_txn(self, transactional_id: str, producer: ProducerIdAndEpoch,
                               partitions: list[tuple[str, int]]) -> None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        req = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer.producer_id,
            v3_and_below_producer_epoch=producer.producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        node = self.find_transaction_coordinator(transactional_id)
        resp = self._conn(node).send(req, ADD_PARTITIONS_TO_TXN_VERSION, AddPartitionsToTxnResponse)
        for topic in resp.results_by_topic_v3_and_below:
            for p in topic.results_by_partition:
                _check("AddPartitionsToTxn", p.partition_error_code, f"{topic.name}-{p.partition_index}")

    def end_txn(self, transactional_id: str, producer: ProducerIdAndEpoch, committed: bool,
                version: int = END_TXN_VERSION) -> ProducerIdAndEpoch | None:
        """EndTxn. ``version=END_TXN_TV2_VERSION`` asks for KIP-890 part 2 (transaction.version
        2): the coordinator bumps the epoch, writes the markers with it and answers the
        producer id and epoch to use next (returned); older versions return None."""
        return _retrying(lambda: self._end_txn(transactional_id, producer, committed, version))

    def _end_txn(self, transactional_id: str, producer: ProducerIdAndEpoch, committed: bool,
                 version: int = END_TXN_VERSION) -> ProducerIdAndEpoch | None:
        req = EndTxnRequest(
            transactional_id=transactional_id,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            committed=committed,
        )
        node = self.find_transaction_coordinator(transactional_id)
        resp = self._conn(node).send(req, version, EndTxnResponse)
        _check("EndTxn", resp.error_code, transactional_id)
        if version >= END_TXN_TV2_VERSION:
            return ProducerIdAndEpoch(resp.producer_id, resp.producer_epoch)
        return None

    def produce_transactional(self, transactional_id: str | None, producer: ProducerIdAndEpoch,
                              topic: str, partition: int, values: list[bytes], timestamp_ms: int,
                              base_sequence: int = 0, keys: list[bytes] | None = None) -> ProducedBatch:
        """Write one transactional batch straight to the partition leader.

        No AddPartitionsToTxn is sent: whether the coordinator knows about this partition is
        the caller's decision. `timestamp_ms` is the CreateTime of every record, so a time in
        the past makes find-hanging's `now - lastTimestamp > timeout` rule fire at once.
        """
        leader = self.leader_of(topic, partition)
        records = build_transactional_batch(producer, values, timestamp_ms, base_sequence, keys)
        req = ProduceRequest(
            transactional_id=transactional_id,
            acks=ACKS_ALL,
            timeout_ms=30000,
            topic_data=[ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=partition, records=records)],
            )],
        )
        resp = self._conn(leader.leader_id).send(req, PRODUCE_VERSION, ProduceResponse)
        (topic_resp,) = resp.responses
        (part_resp,) = topic_resp.partition_responses
        _check("Produce", part_resp.error_code, f"{topic}-{partition} {part_resp.error_message or ''}")
        return ProducedBatch(topic, partition, leader.leader_id, part_resp.base_offset,
                             producer.producer_id, producer.producer_epoch, base_sequence,
                             len(values), timestamp_ms)
