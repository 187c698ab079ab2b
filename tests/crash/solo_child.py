"""Run a chain wire, SIGKILLed (optionally) just as a solo stage's writes would commit.

``python solo_child.py DB LOG KILL_AT``: stage bodies append their id to LOG;
with KILL_AT > 0 the process kills itself when the checkpoint after the
KILL_AT-th solo stage has taken that stage's held writes and is about to
commit them with it (persistence/solo.py) — the window in which both are lost.
"""

from __future__ import annotations

import os
import signal
import sys

from cortex_agents.persistence import open_saver
from cortex_agents.persistence._solo import SoloWrites
from cortex_agents.runtime import LogicalClock, Runtime, StageContext, WireBuilder

STAGES = 6


def work(ctx: StageContext) -> dict:
    fd = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.stage_id}\n".encode())
    finally:
        os.close(fd)
    return {"after": sorted(ctx.inputs), "id": ctx.stage_id}


def wire():
    builder = WireBuilder("solo_chain").kind("step", work)
    for i in range(STAGES):
        builder.stage(f"s{i}", "step", after=[f"s{i - 1}"] if i else [])
    return builder.build()


def main() -> None:
    from datetime import UTC, datetime

    db, kill_at = sys.argv[1], int(sys.argv[3])
    merges = 0
    take = SoloWrites.take

    def take_then_maybe_die(self: SoloWrites, *args: object) -> object:
        nonlocal merges
        held = take(self, *args)
        if held is not None:
            merges += 1
            if merges == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        return held

    SoloWrites.take = take_then_maybe_die  # type: ignore[method-assign]
    with open_saver(db) as saver:
        result = Runtime(wire(), saver, clock=LogicalClock(datetime(2026, 1, 1, tzinfo=UTC))).run(
            "solo"
        )
    print("complete" if result.complete else "incomplete", flush=True)


if __name__ == "__main__":
    main()
