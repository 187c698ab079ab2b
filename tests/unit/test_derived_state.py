"""Every cache bounded and owned (issue 25; inventory in docs/design/derived-state.md).

* No module keeps an unbounded ``functools`` cache unless its key space is
  finite and the reason is listed here.
* The query memo's tables take their lock for every write: a write, its move
  to the end and its evictions are one step.
* "One per store" is done one way: weak keys, so a dropped store frees its entry.
"""

from __future__ import annotations

import ast
import gc
import threading
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from cortex_agents.memory._engine import MEMO_ENTRIES, QueryMemo
from cortex_agents.persistence import _wrap as wrap
from cortex_agents.scratch._atomic import ProcessLockGuard
from cortex_agents.tools import bind_to_graph, make_memory_tool

PACKAGE = Path(__file__).resolve().parents[2] / "cortex_agents"

# (module, function) -> why its unbounded cache cannot grow without bound
FINITE_KEYS = {
    ("tools/_tokens.py", "encoding"): "a name outside the two offline encodings raises first",
}


def _is_unbounded_cache(decorator: ast.expr) -> bool:
    """``@cache``, ``@functools.cache``, ``@lru_cache(None)`` or ``@lru_cache(maxsize=None)``."""
    call = decorator if isinstance(decorator, ast.Call) else None
    target = call.func if call is not None else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    if name == "cache":
        return True
    if name != "lru_cache" or call is None:
        return False  # not a cache, or a bare @lru_cache (128 entries)
    sizes = [k.value for k in call.keywords if k.arg == "maxsize"] + call.args[:1]
    return bool(sizes) and isinstance(sizes[0], ast.Constant) and sizes[0].value is None


def _unbounded_caches() -> set[tuple[str, str]]:
    """``(module path, function)`` of every unbounded ``functools`` cache in the package."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                _is_unbounded_cache(d) for d in node.decorator_list
            ):
                found.add((path.relative_to(PACKAGE).as_posix(), node.name))
    return found


def test_every_functools_cache_is_bounded_or_has_a_finite_key_space():
    assert _unbounded_caches() == set(FINITE_KEYS)


class _PausingKey:
    """A key whose first hash (the write's insert) waits until the test lets it go."""

    def __init__(self) -> None:
        self.hashes = 0
        self.inside = threading.Event()
        self.go = threading.Event()

    def __hash__(self) -> int:
        self.hashes += 1
        if self.hashes == 1:
            self.inside.set()
            self.go.wait(timeout=30)
        return 7

    def __eq__(self, other: object) -> bool:
        return other is self


def test_a_query_memo_write_holds_its_table_lock_until_it_has_evicted():
    memo = QueryMemo()
    table = memo.walks
    for i in range(MEMO_ENTRIES):
        table[(i, "descendants")] = f"walk {i}"
    key = _PausingKey()
    writer = threading.Thread(target=table.__setitem__, args=(key, "new"))
    writer.start()
    assert key.inside.wait(timeout=30)  # the write is inserting the key
    try:
        assert not table.lock.acquire(blocking=False)  # ... and holds the table: no one else in
    finally:
        key.go.set()
        writer.join()
    assert len(table) == MEMO_ENTRIES
    assert (0, "descendants") not in table  # the least recently used went
    assert table.recent(key) == "new"


def test_query_memo_tables_stay_within_their_bound_when_threads_race():
    memo = QueryMemo()
    table = memo.merged
    seen: list[int] = []

    def write(offset: int) -> None:
        for i in range(300):
            table[(offset, "descendants", "hops", float(i))] = i
            # another thread may have evicted it meanwhile; never a wrong value
            assert table.recent((offset, "descendants", "hops", float(i))) in (i, None)
            with table.lock:
                seen.append(len(table))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(seen) == MEMO_ENTRIES and len(table) == MEMO_ENTRIES


def test_a_graph_tool_keeps_one_guard_per_store_and_drops_it_with_the_store():
    tool = bind_to_graph(make_memory_tool())
    store = InMemoryStore()
    first = tool._scratch(store, "agent", "t1")
    second = tool._scratch(store, "agent", "t2")
    assert first is not None and second is not None
    assert isinstance(first.backend.guard, ProcessLockGuard)
    assert first.backend.guard.lock is second.backend.guard.lock  # one writer lock per store
    assert first.backend.guard == second.backend.guard
    other = tool._scratch(InMemoryStore(), "agent", "t1")
    assert other is not None and other.backend.guard.lock is not first.backend.guard.lock
    assert len(tool._guards) == 2
    del other
    gc.collect()
    assert len(tool._guards) == 1  # the unnamed store went with its last memory
    del first, second, store
    gc.collect()
    assert len(tool._guards) == 0


def test_a_dropped_in_memory_saver_frees_its_substrate_store():
    saver = InMemorySaver()
    store, _ = wrap._memory(saver, None)
    assert wrap._memory(saver, None)[0] is store  # one per saver
    held = len(wrap._MEMORY_STORES)
    del saver
    gc.collect()
    assert len(wrap._MEMORY_STORES) == held - 1
