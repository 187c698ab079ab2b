"""A wire the LangGraph Server tests serve beside the shipped ones: two stages, the first a meeting.

Served by file path (``tests/support/server_wire.py:graph``), the way a user serves a
wire of their own (``server_graph``). When ``CORTEX_TEST_MEETING`` names a
folder, each run's ``first`` stage leaves its job's mark there and waits until
:data:`RUNS` runs have left theirs: it returns only if that many runs are in
flight at once, and fails after :data:`MEETING_S` when something serialises them.
Without it the stages return at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from cortex_agents.runtime import StageContext, WireBuilder
from cortex_agents.server import server_graph

RUNS = 2
MEETING_S = 60.0
"""Only a safety net: served concurrently, the runs meet as soon as the second starts."""


def meet(ctx: StageContext) -> dict[str, Any]:
    """In ``first``: mark this job, then wait for every run's mark; settle which stage of which job."""
    folder = os.environ.get("CORTEX_TEST_MEETING")
    if folder and ctx.stage_id == "first":
        (Path(folder) / f"job-{ctx.run_input['job']}").touch()
        deadline = time.monotonic() + MEETING_S
        while len(list(Path(folder).iterdir())) < RUNS:  # a condition polled, not a guessed delay
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"job {ctx.run_input['job']}'s first stage waited {MEETING_S:.0f} s and "
                    f"{RUNS} runs were never in flight at once: the server serialised them"
                )
            time.sleep(0.01)
    return {"stage": ctx.stage_id, "job": ctx.run_input}


graph = server_graph(
    WireBuilder("waits")
    .kind("wait", meet)
    .stage("first", "wait")
    .stage("second", "wait", after=["first"])
    .build()
)
