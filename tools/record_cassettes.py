#!/usr/bin/env python3
"""Record the shipped scenarios' LLM exchanges against an OpenAI-compatible endpoint.

Opt-in, never run by CI (CI only replays). Here the reachable endpoint is a
local llama.cpp server with the gemma3 270M model (see DEVELOPERS.md):

    python tools/record_cassettes.py --base-url http://127.0.0.1:8765/v1 --model gemma3-270m

Writes ``cassettes/<scenario>.yaml`` (the exchanges, auth headers filtered)
and ``cassettes/<scenario>.json`` (the model settings replay must reuse).

Re-record one scenario at a time with ``--scenario NAME`` (repeatable): only
the named scenarios' two files are touched. Each scenario is recorded into a
staging folder inside ``--out`` and its files replace the old ones only when
the run completed and showed the rewrite outcomes the scenario expects (a
live model decides what it proposes); otherwise the old files stay as they
were and the exit status is 1. ``--keep-mismatched`` installs a recording
whose outcomes differ anyway.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from cortex_agents.demo import SCENARIOS, RecordedModel, record_scenario
from cortex_agents.persistence import open_saver

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8765/v1")
    )
    parser.add_argument("--model", default=os.environ.get("CORTEX_MODEL", "gemma3-270m"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument(
        "--max-tokens-field",
        choices=["max_completion_tokens", "max_tokens"],
        default="max_tokens",
        help="request field of the cap (llama.cpp's server reads only max_tokens)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(SCENARIOS),
        help="record only this scenario (repeatable); the others' files are not touched. "
        "Default: all",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "cassettes")
    parser.add_argument(
        "--keep-mismatched",
        action="store_true",
        help="install a recording even when its rewrite outcomes differ from the expected ones",
    )
    args = parser.parse_args(argv)
    settings = RecordedModel(
        base_url=args.base_url,
        model=args.model,
        seed=args.seed,
        max_tokens=args.max_tokens,
        max_tokens_field=args.max_tokens_field,
    )
    missed = []
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenario or sorted(SCENARIOS):
        if not _record_one(name, settings, args.out, keep_mismatched=args.keep_mismatched):
            missed.append(name)
    return 1 if missed else 0


def _record_one(name: str, settings: RecordedModel, out: Path, *, keep_mismatched: bool) -> bool:
    """Record scenario ``name`` into a staging folder; install its files if it is worth keeping."""
    scenario = SCENARIOS[name]
    with (
        tempfile.TemporaryDirectory(dir=out, prefix=f".recording-{name}-") as staging,
        tempfile.TemporaryDirectory() as tmp,
        open_saver(Path(tmp) / "record.db") as saver,
    ):
        try:
            result = record_scenario(
                scenario,
                saver,
                settings,
                folder=Path(staging),
                api_key=os.environ.get("OPENAI_API_KEY", "sk-local"),
            )
        except Exception as error:  # the endpoint down, a stage failing: keep the old files
            print(
                f"  {name}: recording failed ({error!r}); its cassette is unchanged",
                file=sys.stderr,
            )
            return False
        statuses = {n.id: n.status for n in result.state.nodes.values()}
        outcomes = scenario.outcomes(result)
        print(f"{name}: {statuses}; rewrites: {list(outcomes)}")
        matched = outcomes == scenario.expect
        if not matched:
            print(
                f"  {name}: expected rewrite outcomes {list(scenario.expect)}, got {list(outcomes)}; "
                "the model decided otherwise this time: record it again"
                + ("" if keep_mismatched else f" (kept the old {name}.yaml and {name}.json)"),
                file=sys.stderr,
            )
            if not keep_mismatched:
                return False
        for suffix in (".yaml", ".json"):
            os.replace(Path(staging) / f"{name}{suffix}", out / f"{name}{suffix}")
        print(f"  wrote {out / name}.yaml and .json")
        return True


if __name__ == "__main__":
    sys.exit(main())
