"""A long no-LLM wire for the crash tests: 300 stages in 100 layers of 3 (``CORTEX_CRASH_WIDTH``).

With a width of 1 it is a chain: every stage is alone in its superstep, so its
pending writes commit with the next checkpoint (persistence/solo.py).

Each stage sleeps a little (so kills land mid-run), appends its id to the
file named by ``CORTEX_CRASH_LOG`` (counting executions, which may exceed one
per stage: bodies run at least once) and outputs a digest of its inputs, so
the final substrate is the same however often the run was killed.
"""

from __future__ import annotations

import hashlib
import os
import random
import time

from cortex_agents.runtime import StageContext, WireBuilder

WIDTH = int(os.environ.get("CORTEX_CRASH_WIDTH", "3"))  # 1: a chain, every stage solo
LAYERS = 300 // WIDTH


def work(ctx: StageContext) -> dict:
    time.sleep(0.02)  # long enough that 20 kills land before the end, however fast the runtime
    log = os.environ.get("CORTEX_CRASH_LOG")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.stage_id}\n".encode())
        finally:
            os.close(fd)
    digest = hashlib.sha256(ctx.stage_id.encode())
    for source in sorted(ctx.inputs):
        digest.update(ctx.inputs[source]["digest"].encode())
    return {"digest": digest.hexdigest()[:16], "inputs": sorted(ctx.inputs)}


def _build():
    rng = random.Random(2026)
    builder = WireBuilder("crash_long").kind("step", work)
    previous: list[str] = []
    for layer in range(LAYERS):
        current = [f"s{layer:03d}-{i}" for i in range(WIDTH)]
        for stage in current:
            after = sorted(rng.sample(previous, rng.randint(1, len(previous)))) if previous else []
            builder.stage(stage, "step", after=after)
        previous = current
    return builder.build()


wire = _build()
