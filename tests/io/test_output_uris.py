"""The pieces of a scan's output at a URI that need no store: delta-rs's options from pyarrow's,
the printed flags (never a secret), and an output inside an input compared as places."""

from __future__ import annotations

import pickle
import shlex
import subprocess

import pytest

from logscan.logdir import store
from logscan.scan.output import Output, inside

S3 = {"endpoint_override": "127.0.0.1:9000", "scheme": "http", "access_key": "AK", "secret_key": "s3cr3t'$x",
      "region": "eu-west-1", "AWS_S3_LOCKING_PROVIDER": "dynamodb"}


def test_delta_options_are_pyarrows_in_delta_rs_spelling():
    assert store.delta_options("s3://b/t", S3) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t'$x", "AWS_REGION": "eu-west-1", "AWS_S3_LOCKING_PROVIDER": "dynamodb"}
    assert store.delta_options("s3a://b/t", {"endpoint_override": "https://s3.example:443"}) == {
        "AWS_ENDPOINT_URL": "https://s3.example:443"}
    assert store.delta_options("file:///tmp/t", S3) == {"AWS_S3_LOCKING_PROVIDER": "dynamodb"}


def test_a_delta_rs_only_option_is_not_given_to_pyarrow():
    made = store.store_with("s3://b/t", {"region": "eu-west-1", "AWS_S3_LOCKING_PROVIDER": "dynamodb"})
    assert made.fs.region == "eu-west-1"


def test_printed_flags_never_hold_the_secret_and_read_it_from_the_environment():
    flags = store.option_flags(["s3://b/t"], S3)
    assert "s3cr3t" not in flags and "AK" in flags
    assert store.option_flags(["/local/tables"], S3) == ""
    assert store.secret_variables(S3) == ["AWS_SECRET_ACCESS_KEY"]
    # what bash makes of the flags: the secret from its variable, the rest as given
    words = subprocess.run(["bash", "-c", f"printf '%s\\n' {flags}"], capture_output=True, text=True,
                           env={"AWS_SECRET_ACCESS_KEY": "from-env"}).stdout.splitlines()
    assert words == [w for k, v in {**S3, "secret_key": "from-env"}.items()
                     for w in ("--storage-option", f"{k}={v}")]
    assert shlex.split(flags)  # one shell-quoted text


def test_an_output_carries_its_options_through_a_pickle_and_prints_without_them():
    out = Output("s3://b/t", S3)
    back = pickle.loads(pickle.dumps(out))
    assert back == "s3://b/t" and back.storage_options == S3
    assert "s3cr3t" not in repr(out) + str(out) + f"{out}"


@pytest.mark.parametrize("output,root,want", [
    ("s3://b/copy/tables", "s3://b/copy", True), ("s3a://b/copy/", "s3://b/copy", True),
    ("s3://b/copy2", "s3://b/copy", False), ("s3://other/copy", "s3://b/copy", False),
    ("file:///tmp/x/copy/t", "/tmp/x/copy", True), ("/tmp/x/copy", "file:///tmp/x/copy", True),
    ("s3://tmp/x", "/tmp/x", False), ("/tmp/x/tables", "/tmp/x/copy", False)])
def test_an_output_inside_an_input_is_found_as_a_place(output, root, want):
    assert inside(output, root) is want
