"""The wire the fencing tests run with ``cortex-agents run``: a chain of stages ``s0``, ``s1``, ...

``FENCING_STAGES`` stages (default 8), each working ``FENCING_SECONDS`` (default 0)
before it returns; ``tools/reliability.py``'s lock-loss probe runs it too.

Each stage body appends ``<writer> <stage>`` to ``FENCING_LOG`` as it begins, and outputs
``{"writer": <writer>}`` (the writer is ``FENCING_WRITER``), so the final substrate shows
whose output each stage kept. In the writer whose stage is ``FENCING_HOLD_AT``, that body
prints ``in flight <stage>`` on stdout and waits for a line on stdin: the test decides
when it ends, with no sleep.
"""

from __future__ import annotations

import os
import sys
import time

from cortex_agents.runtime import StageContext, WireBuilder

STAGES = int(os.environ.get("FENCING_STAGES", "8"))
WORK_S = float(os.environ.get("FENCING_SECONDS", "0"))


def body(ctx: StageContext) -> dict:
    writer = os.environ.get("FENCING_WRITER", "?")
    with open(os.environ["FENCING_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{writer} {ctx.stage_id}\n")
    if ctx.stage_id == os.environ.get("FENCING_HOLD_AT"):
        print(f"in flight {ctx.stage_id}", flush=True)
        sys.stdin.readline()
    time.sleep(WORK_S)
    return {"writer": writer}


def _build():
    builder = WireBuilder("fencing_chain").kind("step", body)
    for i in range(STAGES):
        builder.stage(f"s{i}", "step", after=[f"s{i - 1}"] if i else [])
    return builder.build()


wire = _build()
