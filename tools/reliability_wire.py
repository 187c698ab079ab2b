"""The wire the reliability suite SIGKILLs (R1): layers of 3 no-LLM stages, each after 1-3 of
the layer before.

``CORTEX_RELIABILITY_LAYERS`` sets the number of layers (default 40: 120 stages). Each
stage works ``CORTEX_RELIABILITY_STAGE_SECONDS`` (default 0.005), then appends its id to ``CORTEX_CRASH_LOG`` (executions, which may exceed one per stage:
bodies run at least once) and outputs a digest of its inputs, so the final substrate is
the same however often the run was killed.
"""

from __future__ import annotations

import hashlib
import os
import random
import time

from cortex_agents.runtime import StageContext, WireBuilder

LAYERS = int(os.environ.get("CORTEX_RELIABILITY_LAYERS", "40"))
WIDTH = 3
WORK_S = float(os.environ.get("CORTEX_RELIABILITY_STAGE_SECONDS", "0.005"))


def work(ctx: StageContext) -> dict:
    """Work a little (so kills land mid-run), record the execution, output a digest of the inputs."""
    time.sleep(WORK_S)
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
    builder = WireBuilder("reliability_long").kind("step", work)
    previous: list[str] = []
    for layer in range(LAYERS):
        current = [f"s{layer:04d}-{i}" for i in range(WIDTH)]
        for stage in current:
            after = sorted(rng.sample(previous, rng.randint(1, len(previous)))) if previous else []
            builder.stage(stage, "step", after=after)
        previous = current
    return builder.build()


wire = _build()
