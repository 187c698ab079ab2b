"""One bounded budget for what a branch derives from its events (issue 25 item 3).

The budget evicts, least recently used first, and never raises for lack of
room; a racing duplicate is discarded; and whatever it evicts, the branch
answers exactly as a fresh log of the same events does.
"""

from __future__ import annotations

import random
import threading

import pytest

from cortex_agents.errors import InvalidArgument
from cortex_agents.substrate import NodeScheduled, SubstrateLog, fold
from cortex_agents.substrate._branch import (
    DERIVED,
    FORMS,
    FORMS_KEPT,
    INDEX_LIMITS,
    MAX_DERIVED,
    STATE_CACHE,
    STATES,
)
from cortex_agents.substrate._budget import DerivedBudget
from cortex_agents.tools._latest_work import LatestWork, latest_work
from tests.support.helpers import at
from tests.support.substrate import random_run


def test_a_put_past_the_capacity_evicts_by_weight_instead_of_raising():
    budget = DerivedBudget(10)
    budget.put("index", "a", "A", weight=4)
    budget.put("index", "b", "B", weight=4)
    budget.put("walks", "c", "C", weight=1)
    assert budget.put("index", "d", "D", weight=6) == "D"  # 15 > 10: the oldest go first
    assert budget.peek("index", "a") is None and budget.peek("index", "b") is None
    assert budget.peek("walks", "c") == "C" and budget.peek("index", "d") == "D"
    assert budget.sizes() == {"index": 6, "walks": 1}
    assert budget.put("index", "huge", "H", weight=11) == "H"  # heavier than all: handed back only
    assert budget.peek("index", "huge") is None and budget.sizes() == {"index": 6, "walks": 1}


def test_the_least_recently_used_entry_is_evicted_first_and_a_kind_keeps_within_its_limit():
    budget = DerivedBudget(3, limits={"state": 2})
    for key in "abc":
        budget.put("derived", key, key.upper())
    assert budget.get("derived", "a") == "A"  # a is now the most recently used
    budget.put("derived", "d", "D")
    assert budget.keys("derived") == ("c", "a", "d")  # b was the least recently used
    assert budget.peek("derived", "c") == "C"  # a peek leaves the order as it was
    budget.put("derived", "e", "E")
    assert budget.keys("derived") == ("a", "d", "e")
    limited = DerivedBudget(10, limits={"state": 2})
    limited.put("forms", 0, "x")
    for length in (1, 2, 3):
        limited.put("state", length, length)
    assert limited.keys("state") == (2, 3) and limited.keys("forms") == (0,)  # its own oldest out


def test_evicting_a_kind_drops_only_that_kind_and_frees_its_weight():
    budget = DerivedBudget(8, limits={"state": 4})
    budget.put("state", 1, "s1", weight=2)
    budget.put("state", 2, "s2", weight=2)
    budget.put("derived", "index", "i", weight=3)
    assert budget.evict("state") == 2
    assert budget.keys("state") == () and budget.peek("derived", "index") == "i"
    assert budget.sizes() == {"state": 0, "derived": 3}
    budget.put("derived", "more", "m", weight=5)  # fits again: the freed weight counts
    assert budget.keys("derived") == ("index", "more")


def test_racing_puts_of_one_key_keep_one_value():
    budget = DerivedBudget(4)
    threads = 8
    barrier = threading.Barrier(threads)
    kept: list[object] = [None] * threads

    def derive_and_put(i: int) -> None:
        value = ["derived", i]  # each thread derives its own, equal in meaning
        barrier.wait()
        kept[i] = budget.put("state", 7, value)

    workers = [threading.Thread(target=derive_and_put, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    winner = budget.peek("state", 7)
    assert all(value is winner for value in kept)  # every thread goes on with the kept one
    assert len(budget) == 1 and budget.sizes() == {"state": 1}


def test_bad_weights_and_capacities_are_named():
    with pytest.raises(InvalidArgument, match="capacity"):
        DerivedBudget(0)
    with pytest.raises(InvalidArgument, match=r"limits\['state'\]"):
        DerivedBudget(4, limits={"state": 0})
    budget = DerivedBudget(4)
    with pytest.raises(InvalidArgument, match="weight"):
        budget.put("state", 1, "s", weight=0)
    assert len(budget) == 0  # nothing kept


def test_a_branch_answers_as_a_fresh_log_after_its_budget_evicted_everything():
    events = random_run(random.Random(3), 240)
    log = SubstrateLog(events)
    for n in range(20, 241, 20):  # more states than a branch keeps: some are evicted
        assert log.prefix(n).state == fold(events[:n])
    assert len(log.branch.cached_states()) == STATE_CACHE
    before = latest_work(log, "k0")
    kept = log.branch.budget.peek(DERIVED, ("latest_work", "k0"))
    assert isinstance(kept, LatestWork) and kept.length == len(events)
    assert log.branch.budget.evict(STATES) == STATE_CACHE
    assert log.branch.budget.evict(DERIVED) == 1
    assert log.branch.sizes()[STATES] == 0 and log.branch.sizes()[DERIVED] == 0
    fresh = SubstrateLog(events)
    for n in (240, 130, 7):  # re-derived from the events: equal to a log that never evicted
        assert log.prefix(n).state == fresh.prefix(n).state == fold(events[:n])
        assert latest_work(log.prefix(n), "k0") == latest_work(fresh.prefix(n), "k0")
    assert latest_work(log, "k0") == before


def test_a_branch_reports_what_each_kind_of_its_budget_holds():
    log = SubstrateLog(random_run(random.Random(9), 60))
    unused = dict.fromkeys(INDEX_LIMITS, 0)  # no memory index on this branch yet
    assert log.branch.sizes() == {STATES: 0, DERIVED: 0, FORMS: 0, **unused}
    for n in range(1, 11):
        _ = log.prefix(n).state
    for i in range(MAX_DERIVED + 2):
        latest_work(log, f"kind{i}")
    assert log.branch.sizes() == {STATES: STATE_CACHE, DERIVED: MAX_DERIVED, FORMS: 0, **unused}
    for i in range(FORMS_KEPT + 5):  # each append keeps the dicts it made of its events
        log = log.appended([NodeScheduled(node_id=f"new{i}", kind="k", at=at(10_000 + i))])
    kept = {STATES: STATE_CACHE, DERIVED: MAX_DERIVED, FORMS: FORMS_KEPT, **unused}
    assert log.branch.sizes() == kept


def test_the_saver_reports_its_branches_budgets(tmp_path):
    from cortex_agents.persistence import memory_saver
    from cortex_agents.runtime import Runtime, TickingClock, WireBuilder
    from tests.support.helpers import T0

    builder = WireBuilder("chain").kind("step", lambda ctx: {"ok": True})
    for i in range(6):
        builder.stage(f"s{i}", "step", after=[f"s{i - 1}"] if i else [])
    runtime = Runtime(builder.build(), memory_saver(), clock=TickingClock(T0))
    assert runtime.run("t").complete
    assert runtime.saver.cache_sizes()["branch.state"] == 0  # nothing read back from the store
    read = runtime.result("t").log  # a view of the store's buffer
    assert read.state == fold(list(read))  # folded once, kept in that branch's budget
    sizes = runtime.saver.cache_sizes()
    assert sizes["buffers"] >= 1
    assert 1 <= sizes["branch.state"] <= STATE_CACHE * sizes["buffers"]
    assert sizes["branch.derived"] <= MAX_DERIVED * sizes["buffers"]
    assert sizes["branch.forms"] <= FORMS_KEPT * sizes["buffers"]
