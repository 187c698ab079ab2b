"""A set in a stage's output is stored as a sorted list: the same JSON in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cortex_agents.runtime._stage import to_json_output

# Stored as pydantic iterates it, a set of strings followed the process's hash seed: under
# PYTHONHASHSEED 0, 1 and 2 these four sources came out in three different orders, so the
# snapshot's bytes, the node's body text (the memory results a model reads) and the
# log's hash chain differed between two runs of the same stage.
_CHILD = """
from cortex_agents.runtime._stage import to_json_output
import json
print(json.dumps(to_json_output({
    "sources": {"press release", "10-K 2023", "annual report", "analyst call"},
    "pairs": [frozenset({("b", 2), ("a", 1), ("a", 10)})],
})))
"""


def test_a_set_in_an_output_is_the_same_sorted_list_whatever_the_hash_seed() -> None:
    stored = set()
    for seed in range(3):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
        )
        stored.add(out.stdout)
    assert len(stored) == 1, stored
    assert json.loads(stored.pop()) == {
        "sources": ["10-K 2023", "analyst call", "annual report", "press release"],
        "pairs": [[["a", 10], ["a", 1], ["b", 2]]],  # by JSON text: '["a", 10]' < '["a", 1]'
    }


def test_numbers_come_before_strings_and_an_output_without_sets_is_unchanged() -> None:
    assert to_json_output({"mixed": {"b", 3, "a", 1.5}}) == {"mixed": [1.5, 3, "a", "b"]}
    output = {"kept": ["z", "a"], "nested": {"t": ("y", "x")}}
    assert to_json_output(output) == {"kept": ["z", "a"], "nested": {"t": ["y", "x"]}}


def test_a_cyclic_output_is_still_refused_not_walked_forever() -> None:
    import pytest

    from cortex_agents.errors import InvalidOutput

    loop: list[object] = [{"s": {"a"}}]
    loop.append(loop)
    with pytest.raises(InvalidOutput):
        to_json_output(loop)
