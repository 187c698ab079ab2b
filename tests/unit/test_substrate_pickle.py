"""A substrate log survives pickling (LangGraph Server's dev runtime pickles each thread's state)."""

from __future__ import annotations

import copy
import pickle
import pickletools

from cortex_agents.substrate import SubstrateLog
from tests.support.graphs import expected_log


def test_a_pickled_log_comes_back_equal_with_the_same_chain_hash_and_state():
    log = expected_log(6)
    back = pickle.loads(pickle.dumps(log))
    assert isinstance(back, SubstrateLog) and back == log
    assert back.digest == log.digest
    assert back.state.nodes.keys() == log.state.nodes.keys()


def test_a_prefix_pickles_as_its_own_events_and_extends_like_the_original():
    log = expected_log(6)
    prefix = pickle.loads(pickle.dumps(log.prefix(8)))
    assert len(prefix) == 8 and prefix == log.prefix(8)
    assert log.extends(prefix)
    # appending to the copy never touches the original's buffer
    assert prefix.appended(log.since(8)) == log and len(log.prefix(8)) == 8


def test_deepcopy_of_state_holding_a_log_works():
    state = {"substrate": expected_log(2), "input": {"claim": "x"}}
    assert copy.deepcopy(state)["substrate"] == state["substrate"]


def test_a_pickle_names_the_package_not_a_private_module():
    # stored bytes must not depend on where inside the package the code lives (issue 25)
    data = pickle.dumps(expected_log(2))
    named = [arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)]
    assert "cortex_agents.substrate" in named
    assert [name for name in named if name.startswith("cortex_agents") and "._" in name] == []
    assert pickle.loads(data) == expected_log(2)
