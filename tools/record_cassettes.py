#!/usr/bin/env python3
"""Record the shipped scenarios' LLM exchanges against an OpenAI-compatible endpoint.

Opt-in, never run by CI (CI only replays). Here the reachable endpoint is a
local llama.cpp server with the gemma3 270M model (see DEVELOPERS.md):

    python tools/record_cassettes.py --base-url http://127.0.0.1:8765/v1 --model gemma3-270m

Writes ``cassettes/<scenario>.yaml`` (the exchanges, auth headers filtered)
and ``cassettes/<scenario>.json`` (the model settings replay must reuse).
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
        "--scenario", action="append", choices=sorted(SCENARIOS), help="default: all"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "cassettes")
    args = parser.parse_args(argv)
    settings = RecordedModel(
        base_url=args.base_url,
        model=args.model,
        seed=args.seed,
        max_tokens=args.max_tokens,
        max_tokens_field=args.max_tokens_field,
    )
    missed = []
    for name in args.scenario or sorted(SCENARIOS):
        scenario = SCENARIOS[name]
        with tempfile.TemporaryDirectory() as tmp, open_saver(Path(tmp) / "record.db") as saver:
            result = record_scenario(
                scenario,
                saver,
                settings,
                folder=args.out,
                api_key=os.environ.get("OPENAI_API_KEY", "sk-local"),
            )
        statuses = {n.id: n.status for n in result.state.nodes.values()}
        outcomes = scenario.outcomes(result)
        print(f"{name}: {statuses}; rewrites: {list(outcomes)}")
        if outcomes != scenario.expect:
            missed.append(name)
            print(
                f"  {name}: expected rewrite outcomes {list(scenario.expect)}, got {list(outcomes)}; "
                "the model decided otherwise this time: record it again",
                file=sys.stderr,
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
