"""The single process's entry points take URIs as well as paths: `logscan dump file:///...`
prints what the path form prints (the file named as given), `logscan scan URI` and `logscan
plan URI` what they print for the folder; a bad URI or storage option is a usage error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import FIXTURES

HANGING = (FIXTURES / "hanging" / "brokers").resolve()
BROKER = HANGING / "broker-0"


def logscan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from logscan.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=300)


DUMPED = [BROKER / "__transaction_state-0" / "00000000000000000000.log",
          BROKER / "__transaction_state-0" / "00000000000000000000.index",
          BROKER / "hang-0" / "00000000000000000004.snapshot",
          BROKER / "hang-0" / "00000000000000000000.log",
          BROKER / "hang-0" / "00000000000000000000.timeindex",
          BROKER / "__cluster_metadata-0" / "00000000000000000000.log"]


@pytest.mark.parametrize("path", DUMPED, ids=[f"{p.parent.name}/{p.name}" for p in DUMPED])
def test_dump_of_a_uri_prints_what_the_path_form_prints(path):
    assert path.exists()
    uri = f"file://{path}"
    by_path = logscan("dump", "--deep-iteration", "--print-data-log", str(path))
    by_uri = logscan("dump", "--deep-iteration", "--print-data-log", uri)
    assert by_path.returncode == by_uri.returncode == 0, by_uri.stderr
    assert by_path.stdout.count("\n") > 1
    assert by_uri.stdout.replace(uri, str(path)) == by_path.stdout
    assert by_uri.stdout.startswith(f"Dumping {uri}\n")  # the file as it was named
    assert by_uri.stderr.replace(uri, str(path)) == by_path.stderr


def test_dump_of_a_missing_object_is_a_located_finding():
    uri = f"file://{BROKER}/hang-0/00000000000000000099.log"
    out = logscan("dump", uri)
    assert out.returncode == 3
    assert out.stderr.startswith(f"logscan: {uri}: file: cannot read file: ")
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("command", ["scan", "plan"])
def test_scan_and_plan_of_a_uri_print_what_they_print_for_the_folder(command):
    uri = f"file://{HANGING}"
    by_path = logscan(command, "--no-progress", str(HANGING))
    by_uri = logscan(command, "--no-progress", uri)
    assert by_path.returncode == by_uri.returncode == 4  # hanging transactions found
    assert by_uri.stdout.replace(uri, str(HANGING)) == by_path.stdout
    assert uri in by_uri.stdout if command == "scan" else True


def test_a_plain_path_stays_a_path():
    """``s3:/x`` (one slash) is a local folder name, which does not exist: click's usage error,
    not a store."""
    out = logscan("scan", "s3:/bucket/copy")
    assert out.returncode == 2
    assert "'s3:/bucket/copy' does not exist" in out.stderr


@pytest.mark.parametrize("args, said", [
    (["--storage-option", "endpoint_override"], "is not key=value"),
    (["--storage-option", "no_such_option=1"], "a storage option S3FileSystem does not take"),
    (["--storage-option", "scheme=http"], None),
])
def test_storage_options_reach_the_store_or_are_a_usage_error(args, said):
    out = logscan("scan", *args, "--storage-option", "endpoint_override=127.0.0.1:9",
                  "--storage-option", "connect_timeout=0.2", "--storage-option", "request_timeout=0.2",
                  "s3://bucket/copy")
    assert "Traceback" not in out.stderr
    if said is not None:
        assert out.returncode == 2 and said in out.stderr
    else:
        # a store nobody answers: the listing's located finding, then the scan's summary
        assert out.returncode == 1, out.stderr
        assert "logscan: s3://bucket/copy: file: input folder cannot be listed" in out.stdout


def test_scan_output_of_a_uri_writes_the_tables_of_the_folder(tmp_path):
    """--output with a URI input (the local executor; tests/io/test_s3_inputs.py has both
    executors on a real S3 store): the tables hold the rows of the folder, named by the URI."""
    uri = f"file://{HANGING}"
    for name, given in (("uri", uri), ("path", str(HANGING))):
        out = logscan("scan", given, "--output", str(tmp_path / name), "--executor", "local", "--scan-id", "s",
                      "--no-progress")
        assert out.returncode == 4, out.stderr
    by_uri = logscan("sql", "--tables", str(tmp_path / "uri"), "--format", "json",
                     "SELECT * EXCLUDE (as_of) FROM files ORDER BY file")
    by_path = logscan("sql", "--tables", str(tmp_path / "path"), "--format", "json",
                      "SELECT * EXCLUDE (as_of) FROM files ORDER BY file")
    assert by_uri.returncode == by_path.returncode == 0, by_uri.stderr
    assert by_uri.stdout.count("\n") > 10 and by_uri.stdout.count(uri) > 10
    assert by_uri.stdout.replace(uri, str(HANGING)) == by_path.stdout
