#!/usr/bin/env python3
"""What forced tool turns cost in the recorded cassettes, and what a cap on them would save.

    python tools/tool_turn_costs.py                      # every cassette, cap 128
    python tools/tool_turn_costs.py --cap 320 cassettes/*.yaml

Reads the recorded responses (llama.cpp's ``usage`` and ``timings``) of every
request that forced a tool (``tool_choice`` neither ``auto`` nor ``none``) and
prints one JSON object: per forced tool, the completion tokens of the turns
that made exactly one well-formed call and stopped by themselves (what one
call costs: the largest is the smallest safe cap), the turns that ran on to
``max_tokens`` writing more calls (the runtime runs only the first), and the
generation time a ``tool_turn_max_tokens`` of ``--cap`` would have saved on
them: ``(predicted_n - cap) * predicted_per_token_ms`` for each turn that
generated more than ``cap`` tokens. Prompt time and later turns are not
counted (a shorter forced turn also shortens the next turn's prompt).
Greedy decoding with a fixed seed makes the first ``cap`` tokens the same
with or without the cap, so the first call would be unchanged when the cap
covers it.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("cassettes/*.yaml", "cassettes/reviews/*/*.yaml", "tests/replay/cassettes/*.yaml")


def model_seconds(path: Path) -> float:
    """Prompt plus generation time of every recorded chat completion in one cassette."""
    total = 0.0
    for exchange in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
        try:
            timings = json.loads(exchange["response"]["body"]["string"]).get("timings", {})
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        total += (timings.get("prompt_ms", 0) + timings.get("predicted_ms", 0)) / 1000
    return total


def forced_turns(path: Path) -> list[dict[str, Any]]:
    """Each forced turn of one cassette: its tool, calls, tokens, stop reason, timing."""
    turns = []
    for exchange in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
        try:
            request = json.loads(exchange["request"]["body"])
            response = json.loads(exchange["response"]["body"]["string"])
        except (TypeError, ValueError, KeyError):  # not a chat completion (embeddings, errors)
            continue
        if request.get("tool_choice") in (None, "auto", "none") or "choices" not in response:
            continue
        choice = response["choices"][0]
        calls = choice["message"].get("tool_calls") or []
        timings = response.get("timings", {})
        turns.append(
            {
                "cassette": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
                "tool": "+".join(sorted(t["function"]["name"] for t in request["tools"])),
                "max_tokens": request.get("max_tokens", request.get("max_completion_tokens")),
                "finish": choice["finish_reason"],
                "calls": len(calls),
                "first_arguments_chars": len(calls[0]["function"]["arguments"]) if calls else 0,
                "completion_tokens": response["usage"]["completion_tokens"],
                "predicted_n": timings.get("predicted_n"),
                "predicted_ms": timings.get("predicted_ms"),
                "per_token_ms": timings.get("predicted_per_token_ms"),
            }
        )
    return turns


def summary(turns: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    """Per forced tool: one call's cost, the runaway turns, what ``cap`` saves."""
    out: dict[str, Any] = {}
    for tool in sorted({t["tool"] for t in turns}):
        mine = [t for t in turns if t["tool"] == tool]
        single = [t for t in mine if t["calls"] == 1 and t["finish"] != "length"]
        runaway = [t for t in mine if t["finish"] == "length" and t["calls"] > 1]
        timed = [t for t in mine if t["per_token_ms"] is not None]
        saved = sum(max(0, t["predicted_n"] - cap) * t["per_token_ms"] / 1000 for t in timed)
        out[tool] = {
            "forced_turns": len(mine),
            "single_call_turns": len(single),
            "single_call_tokens_max": max((t["completion_tokens"] for t in single), default=None),
            "single_call_tokens_min": min((t["completion_tokens"] for t in single), default=None),
            "single_call_arguments_chars_max": max(
                (t["first_arguments_chars"] for t in single), default=None
            ),
            "runaway_turns": len(runaway),
            "runaway_calls": sorted(t["calls"] for t in runaway),
            "runaway_first_arguments_chars_max": max(
                (t["first_arguments_chars"] for t in runaway), default=None
            ),
            "cut_by_max_tokens_with_one_call": sum(
                t["finish"] == "length" and t["calls"] <= 1 for t in mine
            ),
            "generation_s": round(sum(t["predicted_ms"] for t in timed) / 1000, 1),
            "generation_s_runaway": round(sum(t["predicted_ms"] for t in runaway) / 1000, 1),
            f"saved_s_at_cap_{cap}": round(saved, 1),
            # a cap below what one call costs cuts that call: unparsable arguments, nothing runs
            f"single_calls_cut_at_cap_{cap}": sum(t["completion_tokens"] > cap for t in single),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassettes", nargs="*", help="cassette files (default: all recorded)")
    parser.add_argument("--cap", type=int, default=128, help="tool_turn_max_tokens to price")
    parser.add_argument("--turns", action="store_true", help="also list every forced turn")
    args = parser.parse_args(argv)
    if args.cap < 1:
        parser.error(f"--cap must be a positive integer, got {args.cap}")
    paths = [Path(p) for p in args.cassettes] or sorted(
        Path(p) for pattern in DEFAULT for p in glob.glob(str(ROOT / pattern))
    )
    turns = [turn for path in paths for turn in forced_turns(path)]
    result: dict[str, Any] = {
        "cassettes": len(paths),
        "cap": args.cap,
        "model_s_all_turns": round(sum(model_seconds(p) for p in paths), 1),
        "tools": summary(turns, args.cap),
    }
    if args.turns:
        result["turns"] = turns
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
