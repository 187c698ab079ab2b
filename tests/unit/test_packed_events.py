"""Events held in compressed chunks: smaller, and read back exactly as appended, however read."""

from __future__ import annotations

import sys
from dataclasses import fields, is_dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_agents.persistence import InMemorySubstrateStore
from cortex_agents.substrate import (
    EdgeAdded,
    NodeScheduled,
    StageCompleted,
    StageStarted,
    SubstrateLog,
    ToolCallMade,
)
from cortex_agents.substrate._branch import chain_digest
from cortex_agents.substrate._log import LogBuffer
from cortex_agents.substrate._packed import CHUNK, SEALS_PER_EXTEND, EventList
from tests.support.helpers import at

TWO_HOURS = timezone(timedelta(hours=2))


def ranking(n: int = 10) -> dict[str, object]:
    """A tool result shaped like a memory query's: a dict per match, floats per score."""
    return {
        "status": "success",
        "query": {"preset": "default", "limit": n, "routing_key": None, "query_text": "bias"},
        "matches": [
            {"node_id": f"s{i:06d}", "score": 1 / (i + 3), "semantic": -0.0 if i == 0 else 0.5}
            for i in range(n)
        ],
    }


def event(i: int, odd: int = 0) -> Any:
    """The ``i``-th event of a stage-shaped run; ``odd`` picks one that JSON would not rebuild exactly.

    0: none (plain JSON); 1: a tuple in an output (comes back a list); 2: a time in
    another zone (comes back in UTC); 3: an int subclass (comes back an int). And 4:
    one JSON does rebuild exactly, though ``==`` would not tell (a whole float beside
    an int, ``-0.0``).
    """
    node = f"s{i // 4:06d}"
    when = at(i)
    if odd == 1:
        return StageCompleted(node_id=node, at=when, output={"ids": ("a", "b")})
    if odd == 2:
        return StageStarted(node_id=node, at=when.astimezone(TWO_HOURS))
    if odd == 3:
        return StageCompleted(node_id=node, at=when, output={"n": True, "m": _Int(3)})
    if odd == 4:
        return StageCompleted(node_id=node, at=when, output={"x": 1.0, "y": 1, "z": -0.0})
    kind = i % 4
    if kind == 0:
        return NodeScheduled(node_id=node, kind="work", at=when, tags=("t",))
    if kind == 1:
        return StageStarted(node_id=node, at=when, frontier=i)
    if kind == 2:
        return ToolCallMade(
            node_id=node,
            tool="q",
            call_id=f"c{i}",
            arguments={"q": "bias"},
            at=when,
            result=ranking(3),
        )
    return StageCompleted(node_id=node, at=when, output={"finding": f"f{i}", "score": i / 7})


class _Int(int):
    pass


def typed(value: Any) -> Any:
    """A value as a tree that tells apart everything `==` does not: types, -0.0, time zones."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if is_dataclass(value):
        return (type(value).__name__, [typed(getattr(value, f.name)) for f in fields(value)])
    if isinstance(value, datetime):
        return ("datetime", value.isoformat(), id(value.tzinfo))
    return (type(value).__name__, repr(value))


def assert_reads_as(held: EventList, plain: list[Any], data: st.DataObject | None = None) -> None:
    n = len(plain)
    assert len(held) == n
    assert typed(list(held)) == typed(plain)
    assert typed(list(held.range(0, n))) == typed(plain)
    if data is None or not n:
        return
    for _ in range(3):
        i = data.draw(st.integers(-n, n - 1))
        assert typed(held[i]) == typed(plain[i])
        start, stop = data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-n - 2, n + 2))
        step = data.draw(st.sampled_from([None, 1, 2, 3, -1, -5]))
        assert typed(held[start:stop:step]) == typed(plain[start:stop:step])
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n))
        assert typed(list(held.range(a, b))) == typed(plain[a:b])


odds = st.lists(st.sampled_from([0] * 12 + [1, 2, 3, 4]), min_size=0, max_size=90)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), batches=st.lists(odds, min_size=1, max_size=8))
def test_a_chunked_list_reads_as_a_plain_list_after_every_append_and_fork(data, batches):
    held, plain, forks = EventList(), [], []
    for batch in batches:
        new = [event(len(plain) + j, odd) for j, odd in enumerate(batch)]
        held.extend(new)
        plain.extend(new)
        assert_reads_as(held, plain, data)
        cut = data.draw(st.integers(0, len(plain)))
        fork = held.prefix(cut)
        forks.append((fork, plain[:cut]))
        extra = [event(cut + j, odd) for j, odd in enumerate(data.draw(odds))]
        fork.extend(extra)
        forks[-1][1].extend(extra)
    assert len(plain) < 2 * CHUNK or held.compressed > 0  # not trivially a plain list
    assert_reads_as(held, plain, data)  # the forks did not change it
    for fork, expected in forks:
        assert_reads_as(fork, expected, data)


def test_a_fork_inside_a_chunk_and_its_parent_grow_apart():
    events = [event(i) for i in range(700)]
    parent = EventList(events)
    cut = parent.compressed - CHUNK - 5  # inside a sealed chunk
    fork = parent.prefix(cut)
    fork_events = events[:cut] + [event(i, odd=i % 7 == 0) for i in range(cut, cut + 400)]
    more = [event(i) for i in range(700, 1100)]
    for i in range(0, 400, 10):  # a step's few events at a time, the two in turn
        fork.extend(fork_events[cut + i : cut + i + 10])
        parent.extend(more[i : i + 10])
    assert fork.compressed > cut and parent.compressed > 700
    assert typed(list(fork)) == typed(fork_events)
    assert typed(list(parent)) == typed(events + more)


def test_every_full_run_but_the_newest_is_sealed_and_held_in_a_fraction_of_the_bytes():
    events = [event(i) for i in range(5000)]
    held = EventList(events)
    # the newest CHUNK..2*CHUNK stay objects
    assert held.compressed == 5000 // CHUNK * CHUNK - CHUNK
    assert sum(len(c.data) for c in chunks(held)) * 10 < deep_size(events[: held.compressed])
    assert deep_size(held) * 4 < deep_size(events)  # objects kept at the end included
    assert typed(list(held)) == typed(events)
    assert held[-1] is events[-1] and held[held.compressed] is events[held.compressed]
    assert held[0] is not events[0]  # rebuilt from its chunk


def test_a_large_append_is_sealed_over_the_appends_that_follow_it():
    events = [event(i) for i in range(1000)]
    held = EventList()
    held.extend(events)
    assert held.compressed == 0  # an append never seals the events it adds
    held.extend([events.append(event(1000)) or events[-1]])
    assert held.compressed == SEALS_PER_EXTEND * CHUNK
    assert all(held[i] is events[i] for i in range(held.compressed, 1001))  # read without decoding
    for i in range(1001, 1040):
        held.extend([events.append(event(i)) or events[-1]])
    assert held.compressed == len(events) // CHUNK * CHUNK - CHUNK
    assert typed(list(held)) == typed(events)


def test_an_event_the_trip_would_not_rebuild_exactly_is_kept_as_itself_in_its_chunk():
    events = [event(i, odd=i % 5 if i % 9 == 0 else 0) for i in range(400)]
    held = EventList(events)
    assert held.compressed >= 256
    for i in range(0, held.compressed, 9):
        if i % 5 in (1, 2, 3):  # one the trip would change
            assert held[i] is events[i]
        else:
            assert held[i] is not events[i]
    assert typed(list(held)) == typed(events)


def test_a_log_of_chunked_events_hashes_folds_and_forks_as_its_events():
    events = [event(i) for i in range(900)]
    log = SubstrateLog(events)
    assert log.branch.events.compressed > 0
    digest = bytes(16)
    for e in events:
        digest = chain_digest(digest, e)
    assert log.digest == digest
    assert log.state == SubstrateLog(events[:100]).appended(events[100:]).state
    cut = CHUNK * 3 + 17  # inside a sealed chunk
    fork = log.prefix(cut).appended([EdgeAdded(source="s000000", target="s000001", at=at(9999))])
    assert typed(list(fork)[:cut]) == typed(events[:cut]) and log.branch is not fork.branch
    assert fork.prefix(cut).digest == log.prefix(cut).digest
    assert typed(list(log)) == typed(events)  # the fork did not change it


def test_a_cache_extended_from_the_run_shares_its_chunks_and_reads_the_same():
    run = SubstrateLog()
    cache, alone = LogBuffer(), LogBuffer()
    for step in range(100):
        new = [event(3 * step + j) for j in range(3)]
        before = len(run)
        run = run.appended(new)
        cache.extend(run.since(before), source=run)
        alone.extend(run.since(before))
    ours, theirs = chunks(cache._buffer.events), chunks(run.branch.events)
    assert len(ours) == len(theirs) >= 2
    assert all(a is b for a, b in zip(ours, theirs, strict=False))
    assert not any(a is b for a, b in zip(chunks(alone._buffer.events), theirs, strict=False))
    assert typed(list(cache.view(len(run)))) == typed(list(run))


def test_a_cache_committing_behind_the_run_shares_the_chunks_it_read_back():
    run, cache, committed, behind = SubstrateLog(), LogBuffer(), 0, 0
    for step in range(120):
        run = run.appended([event(10 * step + j) for j in range(10)])
        if step % 12 == 11:  # a commit of the last 12 steps: the run sealed some of them since
            behind += run.branch.events.compressed > committed
            cache.extend(run.since(committed), source=run)
            committed = len(run)
    ours, theirs = chunks(cache._buffer.events), chunks(run.branch.events)
    assert behind >= 5 and len(ours) >= 12
    assert all(a is b for a, b in zip(ours, theirs, strict=False))
    assert typed(list(cache.view(committed))) == typed(list(run))


def test_a_cache_does_not_share_a_chunk_made_from_other_objects():
    run, cache = SubstrateLog(), LogBuffer()
    copies = [event(i) for i in range(300)]  # equal, not the same objects
    for i in range(0, 300, 10):
        run = run.appended([event(j) for j in range(i, i + 10)])
        cache.extend(copies[i : i + 10], source=run)
    assert cache._buffer.events.compressed == run.branch.events.compressed > 0
    assert not any(
        a is b for a, b in zip(chunks(cache._buffer.events), chunks(run.branch.events), strict=True)
    )
    assert typed(list(cache.view(300))) == typed(copies)


def test_the_store_cache_of_a_committed_log_shares_the_runs_chunks():
    store = InMemorySubstrateStore()
    run, cursor = SubstrateLog(), None
    for step in range(100):
        before = len(run)  # a large first append (the wire scheduled), then a few per step
        run = run.appended([event(i) for i in range(before, 700 if step == 0 else before + 3)])
        cursor = store.append("t", "", cursor, run.since(before), None, run)
    committed = store.read("t", "", cursor)
    assert committed.branch is not run.branch
    ours, theirs = chunks(committed.branch.events), chunks(run.branch.events)
    assert len(ours) == len(theirs) == len(run) // CHUNK - 1
    assert all(a is b for a, b in zip(ours, theirs, strict=True))
    assert typed(list(committed)) == typed(list(run)) and committed.digest == run.digest


def chunks(held: EventList) -> list[object]:
    return held._parts[0][: held._parts[1]]


def deep_size(value: object) -> int:
    """Bytes of ``value`` and everything it holds (each object once)."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif hasattr(type(item), "__slots__"):
            stack.extend(getattr(item, s) for s in type(item).__slots__ if hasattr(item, s))
    return total


class _Key(str):
    pass


def test_a_key_of_a_str_subclass_is_kept_as_itself_in_its_chunk():
    # a str subclass (a StrEnum member) is a storable key and equal to its text, so
    # only its type tells that the trip would make it a plain str
    events = [event(i) for i in range(200)]
    events[3] = StageCompleted(node_id="s000000", at=at(3), output={_Key("k"): 1})
    events[7] = ToolCallMade(
        node_id="s000001", tool="q", call_id="c7", arguments={"a": [{_Key("b"): 2}]}, at=at(7)
    )
    held = EventList(events)
    assert held.compressed >= 64
    assert held[3] is events[3]
    assert held[7] is events[7]
    (key,) = held[3].output
    assert type(key) is _Key
    assert held[8] is not events[8]  # the plain ones of that chunk are still sealed


def test_a_seal_that_raised_half_way_leaves_no_chunk_behind(monkeypatch):
    # an append whose sealing fails (MemoryError, an interrupt) adds nothing; had it left
    # the chunk it did seal in the list, every later chunk would sit one place off
    import cortex_agents.substrate._packed as packed

    events = [event(i) for i in range(10 * CHUNK)]
    held = EventList()
    held.extend(events[: 4 * CHUNK])  # nothing sealed before an append: four runs wait
    real, calls = packed._sealed, []

    def second_fails(run: Any) -> Any:
        calls.append(len(run))
        if len(calls) == 2:
            raise MemoryError
        return real(run)

    monkeypatch.setattr(packed, "_sealed", second_fails)
    with pytest.raises(MemoryError):
        held.extend(events[4 * CHUNK : 5 * CHUNK])
    monkeypatch.setattr(packed, "_sealed", real)
    assert len(held) == 4 * CHUNK and held.compressed == 0  # the failed append added nothing
    held.extend(events[4 * CHUNK :])
    held.extend([])
    assert held.compressed >= 4 * CHUNK
    assert_reads_as(held, events)
    assert_reads_as(held.prefix(7 * CHUNK + 5), events[: 7 * CHUNK + 5])
