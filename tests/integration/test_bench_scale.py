"""tools/bench_scale.py on a tiny load: its report's shape and its validation, per backend.

Timings are the benchmark's business, not a test's: this checks that the tool
runs P worker processes and the one-process baseline to completion, counts
every stage, validates every thread, and prints the documented JSON last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
KEYS = {
    "processes",
    "threads",
    "stages_per_s",
    "single_process_stages_per_s",
    "speedup",
    "invalid_threads",
}


def bench(*args: str, postgres_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if postgres_url:
        env["CORTEX_TEST_POSTGRES_URL"] = postgres_url
    return subprocess.run(
        [sys.executable, "tools/bench_scale.py", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    ("backend", "kind"),
    [("sqlite", "cpu"), pytest.param("postgres", "io", marks=pytest.mark.postgres)],
)
def test_a_tiny_run_reports_every_key_and_validates_every_thread(backend, kind, request):
    url = request.getfixturevalue("postgres_server") if backend == "postgres" else None
    args = ["--backend", backend, "--processes", "2", "--threads", "2", "--stages", "3"]
    durability = "exit" if backend == "sqlite" else "async"
    options = ["--stage-ms", "1", "--stage-kind", kind, "--durability", durability, "--json"]
    done = bench(*args, *options, postgres_url=url)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(report) >= KEYS
    assert (report["processes"], report["threads"]) == (2, 2)
    assert (report["backend"], report["stage_kind"], report["durability"]) == (
        backend,
        kind,
        durability,
    )
    # both measurements ran every stage of every thread, and each thread validated
    assert report["stages_completed"] == {"many": 12, "one": 12}
    assert report["invalid_threads"] == 0 and report["invalid_thread_ids"] == []
    assert report["stages_per_s"] > 0 and report["single_process_stages_per_s"] > 0
    assert report["speedup"] == pytest.approx(
        report["stages_per_s"] / report["single_process_stages_per_s"], rel=0.02
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--processes", "0"], "--processes"),
        (["--threads", "-1"], "--threads"),
        (["--stage-ms", "nan"], "--stage-ms"),
        (["--stage-ms", "inf"], "--stage-ms"),
        (["--stage-kind", "gpu"], "--stage-kind"),
        (["--durability", "never"], "--durability"),
        (["--backend", "mysql"], "--backend"),
    ],
)
def test_bad_arguments_are_refused_naming_the_option(args, named):
    done = bench(*args, "--json")
    assert done.returncode == 2 and named in done.stderr
    assert done.stdout == ""
