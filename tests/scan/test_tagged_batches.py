"""rows.to_tagged_batch: a union of tables as one Arrow batch, each member's struct column built
from its own rows. It must give what one dict per row through pyarrow's from_pylist gives."""

import pyarrow as pa
import pytest

from logscan.scan import rows as R

_A = pa.schema([pa.field("broker", pa.int32()), pa.field("n", pa.int64()), pa.field("s", pa.string())])
_B = pa.schema([pa.field("topic", pa.string()), pa.field("xs", pa.list_(pa.int32()))])
_SCHEMA = R.tagged_schema({"a": _A, "b": _B, "c": _A}, [pa.field("topic", pa.string()), pa.field("broker", pa.int32())])


def _by_dicts(rows, schema, extra=None, extras=None):
    """The definition: one dict per row, the row under its member's name, null elsewhere."""
    keys = [n for n in schema.names[1:] if not pa.types.is_struct(schema.field(n).type)]
    members = [n for n in schema.names[1:] if n not in keys]
    extras = extras if extras is not None else [extra or {}] * len(rows)
    return pa.RecordBatch.from_pylist(
        [{"record_type": kind, **{k: ex.get(k, row.get(k)) for k in keys},
          **{m: (row if m == kind else None) for m in members}} for (kind, row), ex in zip(rows, extras)],
        schema=schema)


_ROWS = [
    ("a", {"broker": 1, "n": 5, "s": "x", "topic": "t0"}),
    ("b", {"topic": "t1", "xs": [1, 2]}),
    ("a", {"broker": 2, "n": None}),                        # a missing field: null
    ("b", {"topic": None, "xs": None, "unused": object()}),  # a key not in the schema: ignored
    ("a", {"broker": 3, "n": -1, "s": ""}),
]


@pytest.mark.parametrize("rows", [_ROWS, _ROWS[:1], [r for r in _ROWS if r[0] == "b"], list(reversed(_ROWS)), []])
def test_the_same_batch_as_one_dict_per_row(rows):
    got = R.to_tagged_batch(rows, _SCHEMA)
    assert got.schema == _SCHEMA and got.equals(_by_dicts(rows, _SCHEMA))
    assert got.column("record_type").to_pylist() == [k for k, _ in rows]   # in their order
    assert got.column("c").null_count == len(rows)                        # a member with no rows


def test_keys_from_extra_or_extras_before_the_row():
    extra = {"topic": "fixed"}
    assert R.to_tagged_batch(_ROWS, _SCHEMA, extra=extra).equals(_by_dicts(_ROWS, _SCHEMA, extra=extra))
    extras = [{"broker": i} for i in range(len(_ROWS))]
    got = R.to_tagged_batch(_ROWS, _SCHEMA, extras=extras)
    assert got.equals(_by_dicts(_ROWS, _SCHEMA, extras=extras))
    assert got.column("broker").to_pylist() == list(range(len(_ROWS)))
    assert got.column("topic").to_pylist() == ["t0", "t1", None, None, None]
