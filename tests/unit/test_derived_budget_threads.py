"""A branch's budget under threads: appends, forks, states, hashes and evicted structures.

Review of the derived-budget merge. One writer extends a log in place
while readers ask its views for states, chain hashes, event dicts and more
derived structures than a branch keeps (so they are evicted and re-created
all the time), and fork it. Every answer must equal the single-threaded one,
and a structure is only ever extended while it is the one the budget keeps
(one that was evicted is never mutated again, so two live copies never
diverge). A deadlock (Branch.lock against the budget's lock) leaves a thread
unfinished.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Sequence

from cortex_agents.substrate import GraphState, SubstrateLog, fold
from cortex_agents.substrate._branch import DERIVED, MAX_DERIVED, Branch
from cortex_agents.substrate._events import Event, event_to_dict
from tests.support.substrate import random_run

KEYS = MAX_DERIVED + 6  # more structures than a branch keeps: evictions all the time


class Counted:
    """A derived structure: how many events of each type it took in, per prefix length."""

    def __init__(self, branch: Branch, key: int, mistakes: list[str]) -> None:
        self.branch, self.key, self.mistakes = branch, key, mistakes
        self.length = 0
        self.prefixes: list[tuple[str, ...]] = [()]

    def extend(self, events: Sequence[Event], state: GraphState) -> None:
        if self.branch.budget.peek(DERIVED, ("counted", self.key)) is not self:
            self.mistakes.append(f"structure {self.key} extended after it was evicted")
        for event in events:
            time.sleep(0)  # let another thread in mid-extension, if anything lets it
            self.prefixes.append((*self.prefixes[-1], type(event).__name__))
        self.length += len(events)
        if state.seq != self.length:
            self.mistakes.append(f"state at {state.seq} handed with {self.length} events")

    def at(self, length: int) -> tuple[str, ...]:
        return self.prefixes[length]


def counted(log: SubstrateLog, key: int, mistakes: list[str]) -> tuple[str, ...]:
    return log.derived(("counted", key), lambda: Counted(log.branch, key, mistakes))


def test_threads_sharing_one_branch_get_single_threaded_answers():
    rng = random.Random(25)
    events = random_run(rng, 240)
    fresh = SubstrateLog(events)
    states = [fold(events[:n]) for n in range(len(events) + 1)]
    digests = [fresh.prefix(n).digest for n in range(len(events) + 1)]
    names = [type(e).__name__ for e in events]
    published = [SubstrateLog(events[:60])]
    mistakes: list[str] = []
    done = threading.Event()

    def write() -> None:
        log = published[0]
        for start in range(60, len(events), 6):
            log = log.appended(events[start : start + 6])
            published.append(log)
        done.set()

    def read(seed: int) -> None:
        local = random.Random(seed)
        while not done.is_set() or local.random() < 0.9:
            log = local.choice(published)
            n = local.randint(0, len(log))
            view = log.prefix(n)
            if view.state != states[n] or view.digest != digests[n]:
                mistakes.append(f"state or hash of {n} events wrong")
            if counted(view, local.randrange(KEYS), mistakes) != tuple(names[:n]):
                mistakes.append(f"structure at {n} wrong")
            start = max(0, n - 6)
            if view.event_dicts(start) != [event_to_dict(e) for e in events[start:n]]:
                mistakes.append(f"event dicts before {n} wrong")
            if local.random() < 0.1 and 0 < n < len(events):  # a fork: the same next event
                forked = view.appended([events[n]])
                if counted(forked, local.randrange(KEYS), mistakes) != tuple(names[: n + 1]):
                    mistakes.append(f"forked structure at {n + 1} wrong")
                if forked.digest != digests[n + 1]:
                    mistakes.append(f"forked hash at {n + 1} wrong")

    threads = [threading.Thread(target=write)]
    threads += [threading.Thread(target=read, args=(seed,)) for seed in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: interleavings, not luck
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not any(thread.is_alive() for thread in threads)  # no lock-order deadlock
    assert mistakes == []
    final = published[-1]
    assert len(final) == len(events) and final.branch is published[0].branch  # extended in place
    assert len(final.branch.budget.keys(DERIVED)) <= MAX_DERIVED
