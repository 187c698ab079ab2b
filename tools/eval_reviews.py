#!/usr/bin/env python3
"""Does graph memory help a reviewer? An end-to-end A/B of reviews, scored structurally.

    python tools/eval_reviews.py                        # replay the held-out split, offline
    python tools/eval_reviews.py --split dev            # the dev split (if recorded)
    python tools/eval_reviews.py --json                 # last line: {"cases": N, "split": ...,
                                                        #   "model": ..., "arms": {...}}
    python tools/eval_reviews.py --record --split heldout \\
        --base-url http://127.0.0.1:8765/v1 --model qwen2.5-coder-1.5b \\
        --tool-turn-max-tokens 128       # record (resumes); the forced memory turn capped

The cases (:mod:`cortex_agents.evaluation._reviews`) are claim reviews by three
analysts, each with one planted flaw in one analyst's finding, plus clean
controls; the merge summarises the branches without the flawed detail. Four
reviewers read each (:mod:`cortex_agents.evaluation._review_arms`): classic
(the merge only), topological (the shipped reviewer memory and
``cortex_memory_query``), seed (topological with the seed's ranking) and
oracle (the flawed analyst's output given directly: the ceiling). A review
detects the flaw when one of its gaps names the flawed branch's key or
analyst id (:mod:`cortex_agents.evaluation._review_score` defines the rule).

Recorded once against a local model (``--record``; cassettes and the recorded
table in ``cassettes/reviews/``); the default mode replays the cassettes with
the network blocked and recomputes the table, which must equal the recorded
one (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from cortex_agents._demo import RecordedModel  # noqa: E402
from cortex_agents.errors import CortexError  # noqa: E402
from cortex_agents.evaluation._review_arms import ARMS, ReviewRun  # noqa: E402
from cortex_agents.evaluation._review_runs import (  # noqa: E402
    load_recorded,
    record_split,
    replay_split,
)
from cortex_agents.evaluation._reviews import build_review_cases  # noqa: E402

FOLDER = ROOT / "cassettes" / "reviews"


def _interval(low_high: list[float]) -> str:
    return f"[{low_high[0]:.2f}, {low_high[1]:.2f}]"


def render_table(table: dict[str, Any]) -> str:
    """The table as aligned text (80 columns)."""
    lines = [
        f"{table['cases']} cases ({table['split']} split), model {table['model']}",
        f"{'arm':<12}{'detection':>10}{'95% CI':>14}{'false alarm':>13}{'95% CI':>14}"
        f"{'tools':>6}{'prompt':>8}{'out':>7}",
    ]
    for arm, s in table["arms"].items():
        lines.append(
            f"{arm:<12}{s['detection']:>10.2f}{_interval(s['detection_ci95']):>14}"
            f"{s['false_alarm']:>13.2f}{_interval(s['false_alarm_ci95']):>14}"
            f"{s['tool_calls']:>6}{s['prompt_tokens']:>8}{s['completion_tokens']:>7}"
        )
    for arm, s in table["arms"].items():
        kinds = ", ".join(f"{k} {d}/{n}" for k, (d, n) in s.get("by_kind", {}).items())
        lines.append(f"  {arm}: {kinds}")
    flawed = next(iter(table["arms"].values()), {}).get("flawed", 0)
    lines.append(
        f"detection over the {flawed} flawed cases; false alarms over all {table['cases']}; "
        "tools, prompt, out: totals"
    )
    unparsed = {a: s["unparsed"] for a, s in table["arms"].items() if s["unparsed"]}
    if unparsed:
        lines.append(f"answers that did not parse (counted as misses): {unparsed}")
    return "\n".join(lines)


def _progress(run: ReviewRun) -> None:
    gaps = (run.review or {}).get("gaps")
    print(f"  {run.case:<18} {run.arm:<12} gaps={gaps!r}", file=sys.stderr)


class PromptCheck:
    """The recording-time check of each new cassette: every tool result it recorded is in the
    prompt the server rendered from its request (``tools/prompt_check.py``: the server's own
    template, ``POST /apply-template``). Raises on a cassette that misses one."""

    def __init__(self, base_url: str) -> None:
        import prompt_check

        self._check = prompt_check.check_cassettes
        self._render = prompt_check.server_renderer(base_url)
        self.checked = 0

    def __call__(self, path: Path) -> None:
        count, problems = self._check([path], self._render)
        self.checked += count
        if problems:
            raise RuntimeError("tool results the model never saw:\n" + "\n".join(problems))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout"), default="heldout")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    parser.add_argument("--cassettes", type=Path, default=FOLDER, help="folder of the recording")
    parser.add_argument("--record", action="store_true", help="record live, then replay")
    parser.add_argument("--rerecord", action="store_true", help="with --record: record anew")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", ""))
    parser.add_argument("--model", default=os.environ.get("CORTEX_MODEL", "qwen2.5-coder-1.5b"))
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument(
        "--tool-turn-max-tokens",
        type=int,
        default=None,
        help="with --record: output cap of the forced memory-query turn (default: --max-tokens); "
        "128 fits every recorded call (DEVELOPERS.md)",
    )
    parser.add_argument("--verbose", action="store_true", help="print each review's gaps")
    args = parser.parse_args(argv)
    cases = build_review_cases(args.split)
    on_run = _progress if args.verbose or args.record else None
    try:
        if args.record:
            if not args.base_url:
                parser.error("--record needs --base-url (or OPENAI_BASE_URL)")
            settings = RecordedModel(
                base_url=args.base_url,
                model=args.model,
                max_tokens=args.max_tokens,
                max_tokens_field="max_tokens",
                structured_output="json_object",
                tool_force="required",
                resend_invalid="wrapped",
                tool_turn_max_tokens=args.tool_turn_max_tokens,
            )
            check = PromptCheck(args.base_url)
            table = record_split(
                args.cassettes,
                args.split,
                cases,
                settings,
                api_key=os.environ.get("OPENAI_API_KEY", "sk-local"),
                rerecord=args.rerecord,
                check=check,
                on_run=on_run,
            )
            recorded = table
            print(f"tool results checked in the rendered prompts: {check.checked}, all found")
        else:
            recorded = load_recorded(args.cassettes, args.split)["table"]
            table, _ = replay_split(args.cassettes, args.split, cases, arms=ARMS, on_run=on_run)
    except CortexError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(render_table(table), file=sys.stderr if args.json else sys.stdout)
    same = table == recorded
    if not same:
        print("error: the replay's table differs from the recorded one", file=sys.stderr)
    if args.json:
        print(json.dumps({k: table[k] for k in ("cases", "split", "model", "arms")}))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
