"""Record a workflow's LLM HTTP exchanges once; replay them offline in tests.

:func:`replay` plays a cassette back with the network blocked: every request
must match a recorded one on method, URL *and body* (so a changed prompt is
an error, not a stale answer), auth headers are never stored, and record mode
is ``none``. :func:`record` writes a cassette from live exchanges;
:func:`use_cassette` picks one of the two from a record mode. Modules:
:mod:`~cortex_agents.testing._cassettes` (the cassettes and their settings),
:mod:`~cortex_agents.testing._network` (blocking the network),
:mod:`~cortex_agents.testing.pytest_plugin` (the pytest plugin).

With pytest, installing cortex-agents registers the plugin (entry point
``pytest11``); it speaks pytest-recording's conventions::

    @pytest.mark.vcr                      # cassettes/<test module>/<test name>.yaml
    def test_review():
        result = runtime.run("t", {"claim": "..."})

``pytest --record-mode=once`` records the missing cassettes against the live
endpoint, ``--record-mode=all`` re-records (``pytest path::test_x
--record-mode=all`` re-records that one test's cassette and no other), and
the default ``none`` replays with the network blocked. A ``vcr_config``
fixture overrides the settings; the ``llm_cassette(path)`` fixture wraps any
block of a test in a cassette at an explicit path. When pytest-recording is
installed too, it owns ``@pytest.mark.vcr`` and ``--record-mode``; return
:func:`cassette_config` from your ``vcr_config`` fixture to keep these
defaults (the run's header says which plugin is in charge).

Prompts must be byte-stable between runs for replay to match: inject the
clock (:class:`~cortex_agents.runtime.LogicalClock` keeps parallel stages'
times stable too), and render nothing unordered or random into a request.

:func:`query_reference` is the memory engine's test oracle (the reference
pipeline, :mod:`cortex_agents.reference`): plain Python, slow, and equal to
:meth:`~cortex_agents.memory.MemoryHandle.query`'s engine to the last bit, for
tests that check a ranking against its definition. It is imported on first
use, so loading the pytest plugin does not load numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cortex_agents.testing._cassettes import (
    MATCH_ON,
    RECORD_MODES,
    cassette_config,
    cassette_vcr,
    record,
    replay,
    use_cassette,
)
from cortex_agents.testing._network import NetworkBlocked, network_blocked

if TYPE_CHECKING:
    from cortex_agents.reference import query_reference

__all__ = [
    "MATCH_ON",
    "RECORD_MODES",
    "NetworkBlocked",
    "cassette_config",
    "cassette_vcr",
    "network_blocked",
    "query_reference",
    "record",
    "replay",
    "use_cassette",
]


def __getattr__(name: str) -> Any:
    # The oracle pulls in memory (numpy, scipy); the plugin that imports this
    # package runs in every pytest session, so it is loaded only when asked for.
    if name == "query_reference":
        from cortex_agents.reference import query_reference

        return query_reference
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
