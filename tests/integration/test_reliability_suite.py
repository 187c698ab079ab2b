"""The reliability suite's short mode (tools/reliability.py) in CI: every zero-target met.

Each backend runs the whole suite once in a subprocess (R1 SIGKILLs its own child
processes, R2 spawns eight writers): SIGKILL-and-resume, concurrent writers on fresh
and existing databases, hostile tool calls through the real tool loop, malformed
snapshot files, hostile paths, checkpointer conformance, damaged databases and a
writer's lock lost mid-run. A regression in any of them shows up as a missed target
here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def short_suite(backend: str, postgres_url: str | None = None) -> dict:
    env = {**os.environ}
    if postgres_url:
        env["CORTEX_TEST_POSTGRES_URL"] = postgres_url
    done = subprocess.run(
        [sys.executable, "tools/reliability.py", "--backends", backend, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_the_short_suite_meets_every_zero_target(backend, request):
    url = request.getfixturevalue("postgres_server") if backend == "postgres" else None
    report = short_suite(backend, url)
    assert report["missed_targets"] == [], json.dumps(report["details"], indent=2)[:4000]
    figures = report["backends"][backend]
    # it really measured: kills landed, writers ran, every tool and variant was tried
    assert figures["r1_kills"] >= 3 and figures["r1_equal_final"] is True
    assert figures["r2_writers"] == 8
    assert set(figures["r3_calls"]) == {"cortex_memory_query", "memory", "propose_rewrite"}
    assert min(figures["r3_calls"].values()) >= 100
    assert figures["r4_variants"] >= 64 and figures["r5_paths"] >= 80
    assert figures["corruption_cases"] >= 90
    assert all(v.split("/")[1] != "0" for v in figures["r6_conformance"].values())
    assert figures["lock_loss_trials"] >= 3 and figures["lock_loss_replaced"] == 0
