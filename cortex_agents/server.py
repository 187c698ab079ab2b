"""Serve wires with LangGraph Server (``langgraph dev``, ``langgraph up``, a deployment).

``langgraph.json`` names the graphs below and this module's checkpointer::

    {
      "dependencies": ["."],
      "graphs": {
        "fanout_demo": "cortex_agents.server:fanout_demo",
        "claim_review": "cortex_agents.server:claim_review"
      },
      "checkpointer": {"path": "cortex_agents.server.checkpointer"}
    }

:func:`checkpointer` is the server's custom checkpointer (an alpha feature of
LangGraph Server): a :class:`~cortex_agents.persistence.CortexSaver` on the
database named by ``CORTEX_SERVER_DB`` — a SQLite file (default
``.langgraph_api/cortex.db``, beside the dev server's own files) or a
``postgresql://`` URL — so the substrate is stored as rows, one per event,
and ``cortex-agents export``, ``inspect`` and ``memory query`` read the
server's threads from that database.

The graphs carry no checkpointer of their own (the server refuses one) and
nothing unpicklable in their state or config. A graph factory checks, per
run, that the server's checkpointer stores the substrate: under the built-in
one a run fails at once with :class:`~cortex_agents.errors.UnsupportedCheckpointer`.

A run's input is the wire's run input under ``"input"``, e.g.
``{"input": {"claim": "..."}}``; to run an existing thread again (retry
failures, schedule what is new) send ``{"scanned": null, "retry": true}``.
LLM stages build their chat model from ``OPENAI_API_KEY``,
``OPENAI_BASE_URL`` and ``CORTEX_MODEL`` in the server's environment.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from cortex_agents._bundled import bundled_path
from cortex_agents.persistence._backends import aopen_saver, open_saver
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._urls import is_postgres_url
from cortex_agents.persistence._wrap import require_substrate_saver
from cortex_agents.runtime._clock import Clock, utc_clock
from cortex_agents.runtime._graph import RunState, WireGraph
from cortex_agents.runtime._wire import Wire
from cortex_agents.runtime._wire_file import load_wire
from cortex_agents.substrate._log import SubstrateLog

__all__ = [
    "DB_ENV",
    "DEFAULT_DB",
    "checkpointer",
    "claim_review",
    "fanout_demo",
    "served_database",
    "server_graph",
]

ServedGraph = Pregel[RunState, None, RunState, RunState]
"""A wire compiled for the server (its state is the runtime's :class:`RunState`)."""

DB_ENV = "CORTEX_SERVER_DB"
"""The environment variable naming the server's database (a SQLite path or a postgresql:// URL)."""
DEFAULT_DB = ".langgraph_api/cortex.db"
"""The database when ``CORTEX_SERVER_DB`` is unset (relative to the server's working directory)."""


def served_database() -> str:
    """The database the server's checkpointer uses: ``$CORTEX_SERVER_DB``, else :data:`DEFAULT_DB`."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


@asynccontextmanager
async def checkpointer() -> AsyncIterator[CortexSaver]:
    """LangGraph Server's custom checkpointer: a CortexSaver on :func:`served_database`.

    The server enters it once per event loop; every saver it yields works on
    the same database (SQLite: WAL, one writer lock file; Postgres: advisory locks).
    """
    db = served_database()
    if not is_postgres_url(db):
        # SQLite creates the file but not its folder, and the default's folder,
        # .langgraph_api/, may not exist yet in a fresh working directory.
        Path(db).parent.mkdir(parents=True, exist_ok=True)
    async with aopen_saver(db) as saver:
        yield saver


class _StoredFrontiers:
    """What a wire graph reads a resumed stage's frontier from, when the server runs it.

    The graph is compiled without a saver (the server gives it one per run).
    A stage finds its frontier in the graph's cache, filled as the run sends
    it; only a stage resumed in another process (a run continued after a
    restart) reads the checkpoint its task started from, through a
    synchronous saver opened on the server's database for that read.
    """

    def substrate(self, config: RunnableConfig) -> SubstrateLog | None:
        """The substrate of the checkpoint ``config`` names, in the served database."""
        with open_saver(served_database()) as saver:
            return saver.substrate(config)


# Stateless (it opens a saver per read), so one instance serves every graph and run.
_FRONTIERS = _StoredFrontiers()


def server_graph(
    wire: Wire,
    *,
    services: Mapping[str, Any] | None = None,
    clock: Clock = utc_clock,
) -> ServedGraph:
    """A wire compiled for LangGraph Server: no checkpointer of its own, its recursion limit set.

    Args:
        wire: The workflow.
        services: Shared services every stage gets as ``ctx.extras`` (e.g. a
            ``chat_model``; default: each LLM stage builds one from the environment).
        clock: The source of recorded times.
    """
    wiring = WireGraph(wire, _FRONTIERS, clock, services)
    limit = 4 * (len(wire.stages) + wire.budget.nodes) + 16  # as Runtime.config
    return wiring.build().compile(name=wire.name).with_config(recursion_limit=limit)


def _served(file: str) -> ServedGraph:
    return server_graph(load_wire(bundled_path("graphs", file)))


# Built at import: the server imports this module at startup, where loading the wires (and
# the scorers their presets name) may read files; on a request's event loop it may not.
_FANOUT = _served("fanout_demo.py")
_CLAIM_REVIEW = _served("claim_review.py")


def fanout_demo(config: RunnableConfig) -> ServedGraph:
    """The fan-out demo wire (``graphs/fanout_demo.py``), for the server.

    Raises:
        UnsupportedCheckpointer: the run's checkpointer does not store the substrate.
    """
    require_substrate_saver(config, "substrate")
    return _FANOUT


def claim_review(config: RunnableConfig) -> ServedGraph:
    """The claim-review wire (``graphs/claim_review.py``; LLM stages), for the server.

    Raises:
        UnsupportedCheckpointer: the run's checkpointer does not store the substrate.
    """
    require_substrate_saver(config, "substrate")
    return _CLAIM_REVIEW
