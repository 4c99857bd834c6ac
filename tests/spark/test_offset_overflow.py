"""A batch whose last offset passes 2^63-1 in both executors (issue 33).

The base offset is outside a v2 batch's CRC, so a real transactional batch of the tv2 cluster
(txn-a-0 on broker 0, lastOffsetDelta 2) moved to base offset 2^63-2 still checks; its last
offset, 2^63, fits no LongType column, and the Spark job died on it. Where rows are made
(logscan.scan.replica) it is now an ``offset-overflow`` finding and left out of every other
table, so the Spark job goes on and writes what the single-process scan gives.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from logscan.scan import rows as R  # noqa: E402
from logscan.scan.local import scan as local_scan  # noqa: E402
from spark_jobs import scan as spark_scan  # noqa: E402
from spark_jobs.session import DELTA_LIBS  # noqa: E402
from tests.robust.harness import batch_spans  # noqa: E402
from tests.scan.copy_shapes import copy_cluster  # noqa: E402
from tests.spark import assert_tables_equal, local_session  # noqa: E402

TV2 = Path(__file__).resolve().parents[2] / "fixtures" / "tv2"
LAST_DELTA_AT = 23
COMPARED = [t for t in R.TABLES if t != "batches"]

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(not list(DELTA_LIBS.glob("delta-spark_*.jar")),
                                 reason="Delta jars missing: run `make delta-jars`")]


@pytest.fixture(scope="module")
def spark():
    with local_session("logscan-tests-offset-overflow", 2) as session:
        yield session


def _overflowing(tmp_path) -> tuple[Path, Path, int]:
    copy = copy_cluster(TV2, tmp_path)
    log = copy / "broker-0" / "txn-a-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    at = next(p for p, _ in batch_spans(bytes(data)) if struct.unpack_from(">i", data, p + LAST_DELTA_AT)[0] == 2)
    struct.pack_into(">q", data, at, 2**63 - 2)
    log.write_bytes(bytes(data))
    return copy, log, at


def test_both_executors_make_it_a_finding_and_go_on(spark, tmp_path):
    as_of = json.loads((TV2 / "truth" / "truth.json").read_text())["recorded_at_ms"]
    copy, log, at = _overflowing(tmp_path)
    want = local_scan([copy], as_of_ms=as_of).tables
    [finding] = [f for f in want["corruptions"] if f["file"] == str(log)]
    assert (finding["position"], finding["reason"]) == (at, "offset-overflow")
    assert "passes 2^63-1" in finding["message"] and "-9223372036854775808" in finding["message"]
    output = str(tmp_path / "tables")

    scan_id, _ = spark_scan.run(spark, [copy], output, scan_id="overflow", as_of_ms=as_of)

    assert_tables_equal(spark, output, scan_id, want, COMPARED)
    # the other batches of the file are read: its replica has producer state as on its peers
    states = [r for r in want["partition_state"] if r["topic"] == "txn-a" and r["partition"] == 0]
    assert len(states) == 3
