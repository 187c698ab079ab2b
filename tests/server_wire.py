"""A wire the LangGraph Server tests serve beside the shipped ones: two stages that each wait.

Served by file path (``tests/server_wire.py:graph``), the way a user serves a
wire of their own (``server_graph``). Each stage sleeps :data:`WAIT_S`, so two
runs submitted together overlap in time when the server runs them
concurrently, and not when something serialises them.
"""

from __future__ import annotations

import time
from typing import Any

from cortex_agents.runtime import StageContext, WireBuilder
from cortex_agents.server import server_graph

WAIT_S = 0.4


def wait(ctx: StageContext) -> dict[str, Any]:
    """Wait, then settle which stage of which job this was."""
    time.sleep(WAIT_S)
    return {"stage": ctx.stage_id, "job": ctx.run_input}


graph = server_graph(
    WireBuilder("waits")
    .kind("wait", wait)
    .stage("first", "wait")
    .stage("second", "wait", after=["first"])
    .build()
)
