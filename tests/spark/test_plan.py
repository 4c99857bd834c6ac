"""The Spark job's driver-side pieces that need no Spark: task planning, --as-of, jar choice."""

from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from spark_jobs import scan  # noqa: E402
from spark_jobs.scan import default_scan_id, plan_tasks  # noqa: E402
from spark_jobs.session import delta_jars  # noqa: E402


def _units(*sizes):
    return [{"file": f"f{i}", "size": s} for i, s in enumerate(sizes)]


def test_small_files_share_tasks_and_a_large_file_is_alone():
    mib = 1 << 20
    groups = plan_tasks(_units(600 * mib, *[mib] * 300), parallelism=2, target_bytes=256 * mib)
    sizes = sorted(sum(u["size"] for u in g) for g in groups)
    assert len(groups) == 4  # ceil(900 MiB / 256 MiB)
    big = [g for g in groups if any(u["size"] == 600 * mib for u in g)]
    assert [len(g) for g in big] == [1]
    assert sizes == [100 * mib] * 3 + [600 * mib]
    assert sorted(u["file"] for g in groups for u in g) == sorted(f"f{i}" for i in range(301))
    assert all(u["task"] == i for i, g in enumerate(groups) for u in g)
    # A multiple of the cores: on 3, the 4 tasks of 256 MiB become 6 (no idle last wave).
    assert len(plan_tasks(_units(*[mib] * 900), parallelism=3, target_bytes=256 * mib)) == 6


def test_one_task_per_core_when_the_copy_is_small():
    groups = plan_tasks(_units(*[10] * 1000), parallelism=2)
    assert [len(g) for g in groups] == [500, 500]
    assert plan_tasks([], parallelism=2) == []
    assert len(plan_tasks(_units(5), parallelism=8)) == 1


def _replica(name, *sizes, ranges=1):
    """A replica's listing row and its units: one per segment, or ``ranges`` per segment."""
    info = {"broker": 1, "topic": name, "partition": 0,
            "segments": [{"base_offset": 100 * i, "file": f"{name}/{i}.log"} for i in range(len(sizes))]}
    units = [{"broker": 1, "topic": name, "partition": 0, "file": f"{name}/{i}.log", "segment_base_offset": 100 * i,
              "size": size, "bytes": -(-size // ranges), "range_index": r, "ranges": ranges}
             for i, size in enumerate(sizes) for r in range(ranges)]
    return info, units


def test_a_replica_within_a_task_share_is_one_piece_in_log_order():
    # Small replicas go whole to one task, their units in log order, the first carrying the
    # listing row; a replica above a task's share, or with a segment read as byte ranges, is
    # spread unit by unit with no listing row (the per-replica step replays it).
    mib = 1 << 20
    small = [_replica(f"s{i}", *[mib] * (1 + i % 3)) for i in range(40)]
    big = _replica("big", *[40 * mib] * 4)
    split = _replica("split", 3 * mib, ranges=3)
    replicas = [info for info, _ in small + [big, split]]
    units = [u for _, us in small + [big, split] for u in us]
    groups = plan_tasks(units, parallelism=4, target_bytes=256 * mib, replicas=replicas)
    assert len(groups) == 4
    placed = [u for g in groups for u in g]
    assert sorted((u["file"], u["range_index"]) for u in placed) == sorted((u["file"], u["range_index"]) for u in units)
    for info, own in small:
        task = [g for g in groups if any(u["topic"] == info["topic"] for u in g)]
        assert len(task) == 1
        at = [i for i, u in enumerate(task[0]) if u["topic"] == info["topic"]]
        assert at == list(range(at[0], at[0] + len(own)))  # together
        got = [task[0][i] for i in at]
        assert [u["segment_base_offset"] for u in got] == [s["base_offset"] for s in info["segments"]]
        assert [u.get("replica") for u in got] == [info] + [None] * (len(own) - 1)
    for name in ("big", "split"):
        assert all(u.get("replica") is None for u in placed if u["topic"] == name)
    assert len({i for i, g in enumerate(groups) for u in g if u["topic"] == "big"}) == 4  # spread
    # Without the listing rows, no unit carries one: every replica goes through the step.
    assert all(u.get("replica") is None for g in plan_tasks(units, parallelism=4) for u in g)


def test_scan_id_depends_on_the_inputs_not_their_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert default_scan_id([a, b]) == default_scan_id([b, a]) != default_scan_id([a])


def test_delta_jars_leave_out_what_pyspark_ships(tmp_path):
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar",
                 "jackson-databind-2.13.5.jar", "scala-library-2.13.17.jar", "zstd-jni-1.5.7-3.jar"):
        (tmp_path / name).write_bytes(b"")
    assert [Path(j).name for j in delta_jars(tmp_path)] == ["delta-spark_4.2_2.13-4.4.0.jar",
                                                            "delta-storage-4.4.0.jar"]
    with pytest.raises(FileNotFoundError, match="make delta-jars"):
        delta_jars(tmp_path / "nothing")


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _one_broker(tmp_path):
    import shutil

    cluster = sorted(p.parent.parent for p in FIXTURES.glob("*/truth/truth.json"))[0]
    broker = sorted(p for p in (cluster / "brokers").iterdir() if p.is_dir())[0]
    copy = tmp_path / "brokers" / broker.name
    shutil.copytree(broker, copy)
    return copy


def test_the_driver_lists_segments_checkpoints_and_skips(tmp_path):
    from spark_jobs.scan import list_inputs

    copy = _one_broker(tmp_path)
    (copy / "t-0.abc123-delete").mkdir()
    listing = list_inputs([tmp_path / "brokers"])
    assert sorted(u["file"] for u in listing.units) == sorted(str(p) for p in copy.glob("*/*.log"))
    assert len(listing.replicas) == len([p for p in copy.iterdir() if p.is_dir()]) - 1
    checkpoints = {Path(f["file"]).name: f["status"] for f in listing.files if f["kind"] == "checkpoint"}
    assert checkpoints["replication-offset-checkpoint"] == "ok"
    assert [f["file"] for f in listing.files if f["kind"] == "skipped"] == [str(copy / "t-0.abc123-delete")]
    assert listing.findings == []


def test_a_bad_checkpoint_is_a_finding_and_a_damaged_file(tmp_path):
    from spark_jobs.scan import list_inputs

    copy = _one_broker(tmp_path)
    (copy / "replication-offset-checkpoint").write_bytes(b"0\nnot a number\n")
    listing = list_inputs([tmp_path / "brokers"])
    bad = [f for f in listing.files if f["file"].endswith("replication-offset-checkpoint")]
    assert [(f["status"], f["error_count"]) for f in bad] == [("damaged", 1)]
    assert [f["file"] for f in listing.findings] == [str(copy)]
    assert all(r["hw_checkpoint"] is None for r in listing.replicas)


def test_write_tasks_give_each_task_at_most_its_bytes_and_keep_the_cores_busy():
    n, small = scan.WRITE_TASK_BYTES, scan.MIN_WRITE_TASK_BYTES
    # one core: a task per WRITE_TASK_BYTES of blobs, at least one
    assert [scan.write_tasks(b, 1) for b in (0, 1, n, n + 1, 10 * n)] == [1, 1, 1, 2, 10]
    # more cores than that makes: as many as the cores, each with at least MIN_WRITE_TASK_BYTES
    assert [scan.write_tasks(b, 16) for b in (0, small - 1, 3 * small, n, 16 * n)] == [1, 1, 3, 8, 16]


def test_tables_default_to_all_but_batches_and_refuse_unknown_names(capsys):
    assert scan.DEFAULT_TABLES == tuple(t for t in scan.TABLES if t != "batches")
    assert scan.parse_tables("all") == scan.TABLES and "batches" in scan.TABLES
    # the summary's tables are always written, in the tables' order
    assert scan.parse_tables(" batches,txn_log ") == ("files", "batches", "corruptions", "txn_log",
                                                      "partition_state", "hanging_candidates", "affected_groups",
                                                      "partition_impact")
    assert scan.parse_args(["in", "--output", "out"]).tables == scan.DEFAULT_TABLES
    assert scan.parse_args(["in", "--output", "out", "--tables", "all"]).tables == scan.TABLES
    for bad in ("batch", "all,batches", ","):
        with pytest.raises(SystemExit) as refused:
            scan.parse_args(["in", "--output", "out", "--tables", bad])
        assert refused.value.code == 2
        message = capsys.readouterr().err.strip().splitlines()[-1]
        assert message.endswith("give 'all' or a comma list of " + ", ".join(scan.TABLES)), message
    with pytest.raises(ValueError, match="unknown table batch; give 'all'"):
        scan.parse_tables("batch")
