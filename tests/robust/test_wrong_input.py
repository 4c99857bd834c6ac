"""Input checks that never lie (issue 34 item 1): an INPUT where no Kafka log dir is found is
exit status 2 and one sentence naming what was looked for (and the path to give, when log dirs
lie deeper or the input is one partition's folder), never "Scanned 0 replicas ... exit 0" and
never a traceback; the Spark scan says it before Spark starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from logscan.cli import main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BROKERS = FIXTURES / "hanging" / "brokers"
CLUSTERS = sorted(p.parent for p in FIXTURES.glob("*/brokers/broker-0"))


def _inputs(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    """Each wrong input, with what its sentence must suggest."""
    (tmp_path / "empty").mkdir()
    junk = tmp_path / "notes"
    (junk / "old").mkdir(parents=True)
    (junk / "kafka.log").write_text("[2026-11-23 00:13:13,000] INFO starting (kafka.Kafka$)\n")
    (junk / "old" / "config.properties").write_text("log.dirs=/var/lib/kafka\n")
    partition = tmp_path / "copy" / "broker-0" / "hang-0"
    shutil.copytree(BROKERS, tmp_path / "copy")
    return {
        "empty": (tmp_path / "empty", ["the folder is empty"]),
        "non-kafka files": (junk, []),
        "one partition folder": (partition, [f"{tmp_path / 'copy'}, or this broker's, {partition.parent}"]),
        # the first five log-dir parents, in order, then "..." when there are more clusters
        "the fixtures folder": (FIXTURES, [", ".join(map(str, CLUSTERS[:5])) + (", ..." if len(CLUSTERS) > 5 else "")]),
        "two levels above": (FIXTURES / "hanging", [f"the log dirs are deeper, in {BROKERS}: give that folder"]),
    }


CASES = ["empty", "non-kafka files", "one partition folder", "the fixtures folder", "two levels above"]


def _error_sentence(res, root: Path, suggested: list[str]) -> None:
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output and "Scanned" not in res.output
    (line,) = [line for line in res.output.splitlines() if line.startswith("Error: ")]
    assert line.startswith(f"Error: no Kafka log dir in {root}")
    assert "meta.properties" in line and "topic-N partition folders" in line
    for path in suggested:
        assert path in line


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["scan", "plan"])
def test_no_log_dir_is_exit_2_and_one_sentence(tmp_path, case, command):
    root, suggested = _inputs(tmp_path)[case]
    res = CliRunner().invoke(main, [command, str(root), "--no-progress"])
    _error_sentence(res, root, suggested)


@pytest.mark.parametrize("case", CASES)
def test_the_spark_scan_refuses_it_before_spark_starts(tmp_path, monkeypatch, case):
    pytest.importorskip("pyspark")
    import spark_jobs.console

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started for an input with no log dir")

    monkeypatch.setattr(spark_jobs.console, "session", no_spark)
    root, suggested = _inputs(tmp_path)[case]
    out = tmp_path / "tables"
    res = CliRunner().invoke(main, ["scan", str(root), "--output", str(out), "--no-progress"])
    _error_sentence(res, root, suggested)
    assert not out.exists()


def test_the_spark_job_refuses_it_before_spark_starts(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyspark")
    from spark_jobs import scan as job

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started for an input with no log dir")

    monkeypatch.setattr(job, "build_session", no_spark)
    out = tmp_path / "tables"
    assert job.main([str(FIXTURES / "hanging"), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"spark_jobs/scan.py: no Kafka log dir in {FIXTURES / 'hanging'} or in its folders (a log dir "
                   f"holds meta.properties or topic-N partition folders); the log dirs are deeper, in {BROKERS}: "
                   "give that folder\n")
    assert not out.exists()
