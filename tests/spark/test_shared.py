"""spark_jobs.shared.Shared: a value pickled into every task's closure, unpickled once per process.

No Spark here: a task's closure is unpickled by its Python worker, and a reused worker unpickles
one closure per task; these tests do the unpickling themselves, in this process and in fresh
ones. tests/spark/test_connect.py checks the same on a Spark Connect server's workers.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from spark_jobs import shared
from spark_jobs.shared import KEPT, Shared

REPO = Path(__file__).resolve().parents[2]


def _index(n: int = 2000) -> dict[int, list]:
    return {pid: [f"txn-{pid}", pid * 7] for pid in range(n)}


def test_the_payload_is_unpickled_once_per_process_however_many_tasks_unpickle_it():
    value = _index()
    job = Shared(value)
    assert job.value is value   # the client's own value, never re-read
    closure = pickle.dumps(job)
    assert len(closure) < len(pickle.dumps(value)) + 200   # the payload and the key, nothing more
    before = shared.loads
    handles = [pickle.loads(closure) for _ in range(5)]   # five tasks of one worker
    assert shared.loads == before   # unpickling a handle loads nothing
    assert all(h.value == value for h in handles)
    assert shared.loads == before + 1
    assert handles[0].value is handles[4].value   # the process's one copy


def test_a_fresh_process_loads_it_once_for_all_its_tasks(tmp_path):
    (tmp_path / "closure").write_bytes(pickle.dumps(Shared(_index())))
    code = ("import pickle, sys; from spark_jobs import shared; data = open(sys.argv[1], 'rb').read(); "
            "values = [pickle.loads(data).value for _ in range(4)]; "
            "print(shared.loads, len(values[0]), all(v is values[0] for v in values))")
    for _ in range(2):   # each process its own load
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "closure")], capture_output=True,
                             text=True, cwd=REPO, check=True, env={"PYTHONPATH": str(REPO)}).stdout.split()
        assert out == ["1", "2000", "True"]


def test_each_value_has_its_key_and_a_process_keeps_the_last_few():
    first = Shared({"scan": 1})
    second = Shared({"scan": 2})
    assert first.key != second.key
    a, b = pickle.loads(pickle.dumps(first)), pickle.loads(pickle.dumps(second))
    assert (a.value, b.value) == ({"scan": 1}, {"scan": 2})
    later = [Shared(i) for i in range(KEPT)]
    for s in later:
        assert pickle.loads(pickle.dumps(s)).value == s.value
    assert first.key not in shared._values and len(shared._values) <= KEPT
    before = shared.loads
    assert pickle.loads(pickle.dumps(first)).value == {"scan": 1}   # loaded again: evicted, not lost
    assert shared.loads == before + 1


def test_a_destroyed_value_goes_to_no_task():
    job = Shared([1, 2, 3])
    handle = pickle.loads(pickle.dumps(job))
    assert handle.value == [1, 2, 3]
    job.destroy()
    assert job.key not in shared._values
    with pytest.raises(ValueError, match="destroyed"):
        pickle.dumps(job)
    with pytest.raises(ValueError, match="destroyed"):
        job.value
