"""The per-branch view: incremental state, chain hashes, times and derived structures, exact.

Every log in these tests is compared with a from-scratch rebuild of its own
events (a fresh :class:`SubstrateLog`, a fresh fold) after every step of
random runs that append, fork older views and take prefixes.
"""

from __future__ import annotations

import random
import sys
import threading
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.errors import InvalidArgument, InvalidEvent
from cortex_agents.substrate import (
    EdgeAdded,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    ToolCallMade,
    event_to_dict,
    fold,
)
from cortex_agents.substrate._branch import (
    DERIVED,
    EMPTY_DIGEST,
    MAX_DERIVED,
    STATE_CACHE,
    chain_digest,
)
from tests.support.helpers import T0, at
from tests.support.substrate import next_event, random_run


def fresh(log: SubstrateLog) -> SubstrateLog:
    """The same events in a new log: nothing cached, nothing shared."""
    return SubstrateLog(list(log))


def assert_exact(log: SubstrateLog) -> None:
    events = list(log)
    assert log.state == fold(events)
    assert log.digest == fresh(log).digest
    assert log.latest == max((e.at for e in events), default=None)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_views_equal_a_from_scratch_rebuild_after_every_step_of_forked_runs(seed):
    rng = random.Random(seed)
    logs = [SubstrateLog()]
    seen: list[tuple[SubstrateLog, object, bytes]] = []  # (view, its state then, its hash then)
    for tick in range(80):
        base = rng.choice(logs)
        if rng.random() < 0.2 and len(base):  # a prefix, then maybe a fork from it
            base = base.prefix(rng.randrange(len(base) + 1))
        state, batch = base.state, []
        for step in range(rng.randint(1, 4)):
            event = next_event(state, rng, tick * 10 + step)
            state = fold([event], state)
            batch.append(event)
        log = base.appended(batch)
        assert_exact(log)
        assert log.extends(base) and log.prefix(len(base)).digest == base.digest
        logs.append(log)
        seen.append((log, log.state, log.digest))
    for log, state, digest in seen:  # snapshots taken earlier never changed
        assert log.state == state and log.digest == digest
        assert_exact(log)


def test_two_forks_with_equal_length_and_equal_last_event_have_different_identities():
    common = [NodeScheduled(node_id="a", kind="k", at=at(0)), StageStarted(node_id="a", at=at(1))]
    last = ToolCallMade(node_id="a", tool="t", call_id="1", arguments={}, at=at(3))
    root = SubstrateLog(common)
    one = root.appended([StageCompleted(node_id="a", at=at(2), output="one"), last])
    two = root.appended([StageCompleted(node_id="a", at=at(2), output="two"), last])
    assert len(one) == len(two) and one[-1] == two[-1]
    assert one.digest != two.digest
    assert not one.extends(two) and not two.extends(one)
    assert one.extends(root) and two.extends(root)
    assert one.prefix(2).digest == two.prefix(2).digest == root.digest


def test_the_chain_hash_covers_every_event_before_the_last():
    events = random_run(random.Random(7), 30)
    digest = EMPTY_DIGEST
    for event in events:
        digest = chain_digest(digest, event)
    assert SubstrateLog(events).digest == digest
    assert SubstrateLog().digest == EMPTY_DIGEST
    changed = [NodeScheduled(node_id="n000", kind="other", at=events[0].at), *events[1:]]
    assert changed[0] != events[0] and changed[-1] == events[-1]
    assert SubstrateLog(changed).digest != SubstrateLog(events).digest


def test_the_state_cache_stays_bounded_over_many_appends():
    log = SubstrateLog()
    for i in range(1000):
        log = log.appended(
            [
                NodeScheduled(node_id=f"n{i}", kind="k", at=T0 + timedelta(seconds=i)),
                StageStarted(node_id=f"n{i}", at=T0 + timedelta(seconds=i)),
            ]
        )
        if i % 97 == 0:
            assert log.prefix(len(log) // 2).state.seq == len(log) // 2  # an old view asks too
    assert len(log.branch.cached_states()) <= STATE_CACHE
    assert log.state == fold(list(log))


def test_parallel_readers_of_one_log_never_see_a_missing_cache_entry():
    events = random_run(random.Random(3), 400)
    log = SubstrateLog(events)
    expected = {n: fold(events[:n]) for n in range(0, 401, 10)}
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(150):
                n = rng.choice(list(expected))
                assert log.prefix(n).state == expected[n]
        except BaseException as exc:  # reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the readers as much as the interpreter can
    try:
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def test_appending_events_the_branch_already_holds_adopts_them_instead_of_copying():
    root = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=at(0))])
    step = [StageStarted(node_id="a", at=at(1)), StageCompleted(node_id="a", at=at(2))]
    ahead = root.appended(step)
    again = root.appended(step)  # the same step folded twice: one branch
    assert again.branch is ahead.branch and again == ahead
    other = root.appended([StageStarted(node_id="a", at=at(9))])  # different: a fork
    assert other.branch is not ahead.branch
    assert list(ahead) == [*root, *step] and len(root) == 1


def test_a_fork_starts_from_the_parents_cached_state_not_from_the_first_event():
    events = random_run(random.Random(5), 200)
    log = SubstrateLog(events)
    cut = 150
    at_cut = log.prefix(cut).state  # cached on the parent branch
    fork = log.prefix(cut).appended([NodeScheduled(node_id="fork-only", kind="k", at=at(999))])
    assert fork.branch is not log.branch
    assert fork.prefix(cut).state is at_cut  # shared, not folded again
    assert fork.prefix(cut).state == fold(events[:cut])


def test_the_same_update_objects_twice_are_adopted_only_where_they_were_appended():
    # LangGraph hands a step's update to the reducer twice (conditional edges, then the
    # channel); the second call adopts by identity, but only after the same view
    root = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=at(0))])
    update = [event_to_dict(NodeScheduled(node_id="b", kind="k", at=at(1)))]
    first = root.appended(update)
    second = root.appended(update)
    assert second.branch is first.branch and second == first and len(second) == 2
    with pytest.raises(InvalidEvent, match="b"):  # after itself it is a duplicate node
        first.appended(update)
    equal_copy = [dict(update[0])]  # equal, not identical: compared as stored JSON instead
    assert root.appended(equal_copy).branch is first.branch
    assert root.appended([{**update[0], "kind": "other"}]).branch is not first.branch


class Settled:
    """A derived structure: the ids of settled nodes in settle order (an append-only index)."""

    def __init__(self) -> None:
        self.length = 0
        self.ids: list[str] = []
        self.marks: list[int] = []  # ids known after each event
        self.extends = 0

    def extend(self, events, state) -> None:
        self.extends += 1
        for event in events:
            if isinstance(event, StageCompleted):
                self.ids.append(event.node_id)
            self.marks.append(len(self.ids))
        self.length += len(events)
        assert all(state.node(i).settled for i in self.ids)

    def at(self, length: int) -> tuple[str, ...]:
        return tuple(self.ids[: self.marks[length - 1]]) if length else ()


def test_a_derived_structure_grows_by_new_events_and_answers_for_any_prefix():
    events = random_run(random.Random(11), 300)
    log = SubstrateLog(events)
    checkpoints = list(range(0, 301, 25))
    for n in checkpoints:
        got = log.prefix(n).derived("settled", Settled)
        want = tuple(e.node_id for e in events[:n] if isinstance(e, StageCompleted))
        assert got == want
    structure = log.branch.budget.peek(DERIVED, "settled")
    assert structure.length == 300 and structure.extends == len(checkpoints) - 1
    assert log.prefix(10).derived("settled", Settled) == tuple(
        e.node_id for e in events[:10] if isinstance(e, StageCompleted)
    )


def test_a_derived_structure_that_skips_events_fails_loudly():
    class Lazy(Settled):
        def extend(self, events, state) -> None:
            self.length += len(events) - 1  # drops one: stale

    log = SubstrateLog(random_run(random.Random(5), 20))
    with pytest.raises(InvalidArgument, match="must have taken in 20 events"):
        log.derived("lazy", Lazy)


def test_more_derived_structures_than_the_bound_evict_the_least_recently_used_and_rebuild():
    events = random_run(random.Random(7), 200)
    log = SubstrateLog(events)
    want = tuple(e.node_id for e in events if isinstance(e, StageCompleted))
    made: list[str] = []

    def factory(key: str):
        def make() -> Settled:
            made.append(key)
            return Settled()

        return make

    keys = [f"kind{i}" for i in range(MAX_DERIVED + 3)]  # more than one branch keeps
    for key in keys:
        assert log.derived(key, factory(key)) == want  # never "derived structure #9"
        assert log.derived("kind0", factory("kind0")) == want  # kind0 stays recently used
    assert log.branch.sizes()[DERIVED] == MAX_DERIVED
    assert log.branch.budget.keys(DERIVED)[-1] == "kind0" and "kind1" not in log.branch.budget.keys(
        DERIVED
    )
    assert made == keys  # each built once so far
    assert log.derived("kind1", factory("kind1")) == want  # evicted: built again, same answer
    assert made == [*keys, "kind1"]
    assert log.prefix(50).derived("kind1", factory("kind1")) == tuple(
        e.node_id for e in events[:50] if isinstance(e, StageCompleted)
    )
    assert made == [*keys, "kind1"]  # kept this time: it was just used


def test_edges_keep_their_order_in_forks():
    a, b, c = (NodeScheduled(node_id=n, kind="k", at=at(0)) for n in "abc")
    root = SubstrateLog([a, b, c, EdgeAdded(source="a", target="b", at=at(0))])
    fork = root.prefix(3).appended([EdgeAdded(source="a", target="c", at=at(0))])
    assert [(e.source, e.target) for e in fork.state.edges] == [("a", "c")]
    assert [(e.source, e.target) for e in root.state.edges] == [("a", "b")]


def test_events_equal_in_python_but_not_as_json_fork_instead_of_being_adopted():
    root = SubstrateLog(
        [NodeScheduled(node_id="a", kind="k", at=at(0)), StageStarted(node_id="a", at=at(1))]
    )
    as_int = root.appended([StageCompleted(node_id="a", at=at(2), output={"v": 1})])
    as_bool = root.appended([StageCompleted(node_id="a", at=at(2), output={"v": True})])
    assert as_int[-1] == as_bool[-1]  # Python says 1 == True ...
    assert as_bool.branch is not as_int.branch  # ... the substrate stores different JSON
    assert as_bool.state.node("a").output["v"] is True
    assert as_int.digest != as_bool.digest


def test_the_dicts_made_checking_a_step_are_what_it_writes_hashes_and_stores():
    # A stage's events become dicts once (when appended and checked); the channel's
    # reducer adopts those very dicts, and the chain hash and the stored rows are
    # exactly what converting the events again would give.
    from cortex_agents.persistence._store import encode_event
    from cortex_agents.substrate import append_events

    root = SubstrateLog([NodeScheduled(node_id="a", kind="k", at=at(0))])
    step = [
        StageStarted(node_id="a", at=at(1)),
        StageCompleted(node_id="a", at=at(2), output={"z": [1, 2.5, "é"], "a": {"n": None}}),
    ]
    now = root.appended(step)
    dicts = now.event_dicts(len(root))
    assert dicts == [event_to_dict(e) for e in step]
    assert now.event_dicts(len(root))[1] is dicts[1]  # kept, not made again
    assert append_events(root, dicts).branch is now.branch  # adopted by identity
    assert now.digest == fresh(now).digest  # the same chain hash
    assert [encode_event(e, d) for e, d in zip(step, dicts, strict=True)] == [
        encode_event(e) for e in step
    ]
    # a range no single append made, or made of event dicts, is converted afresh
    assert now.event_dicts(0) == [event_to_dict(e) for e in now]
    from_dicts = root.appended([event_to_dict(e) for e in step])
    assert from_dicts.event_dicts(len(root)) == dicts


def test_the_dicts_of_a_step_outlive_the_next_steps_for_a_late_checkpoint():
    # under durability="async" a step's checkpoint may be stored after later steps ran
    from cortex_agents.substrate._branch import FORMS_KEPT

    log = SubstrateLog([NodeScheduled(node_id=f"n{i}", kind="k", at=at(0)) for i in range(40)])
    starts, i = [], 0
    for i in range(FORMS_KEPT + 3):
        starts.append(len(log))
        log = log.appended([StageStarted(node_id=f"n{i}", at=at(1 + i))])
    kept = [s for s in starts if log.branch.forms(s, s + 1) is not None]
    assert kept == starts[-FORMS_KEPT:]  # bounded, the oldest out first
    for s in starts:  # kept or not, the dicts are right
        assert log.prefix(s + 1).event_dicts(s) == [event_to_dict(log[s])]
