#!/usr/bin/env python3
"""Record the shipped scenarios' LLM exchanges against an OpenAI-compatible endpoint.

Opt-in, never run by CI (CI only replays). Here the reachable endpoint is
llama.cpp's own ``llama-server --jinja`` serving Qwen2.5-Coder-1.5B-Instruct
with the model's own chat template (DEVELOPERS.md gives the recipe):

    python tools/record_cassettes.py --base-url http://127.0.0.1:8765/v1 --model qwen2.5-coder-1.5b

Writes ``cassettes/<scenario>.yaml`` (the exchanges, auth headers filtered)
and ``cassettes/<scenario>.json`` (the model settings replay must reuse);
test fixtures (``cortex_agents._demo.FIXTURES``, e.g. ``malformed_tool_call``)
go to ``tests/replay/cassettes/``.

Every stage asks for its answer with a JSON-schema response format; the form
is ``--structured-output`` (``json_object`` with the schema, the default,
which llama.cpp's servers honour and which keeps every bound — item counts,
string lengths — in the grammar; ``json_schema`` is OpenAI's strict form,
which drops them).
A tool the wire forces by name is forced as ``--tool-force`` says
(``required`` with that tool alone: ``llama-server`` ignores a named choice);
``--tool-turn-max-tokens`` caps such turns (a small model writes a dozen
calls there, of which one runs). Both are stored in ``<scenario>.json``.
After each scenario, every recorded request is rendered with the server's
template (``tools/prompt_check.py``) and the recording is refused when a tool
result is missing from the prompt the model read (``--no-prompt-check`` for a
server without ``/apply-template``).

Re-record one scenario at a time with ``--scenario NAME`` (repeatable): only
the named scenarios' two files are touched. Each scenario is recorded into a
staging folder inside ``--out`` and its files replace the old ones only when
the run completed and hit the scenario's point (``Scenario.misses``): the
rewrite outcomes it expects (a live model decides what it proposes), every
structured output parsed, no tool call refused as malformed — or, for the
malformed-call fixture, one that was. Otherwise the old files stay as they
were and the exit status is 1. ``--keep-mismatched`` installs a recording
that missed anyway.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path

from cortex_agents._demo import FIXTURES, SCENARIOS, RecordedModel, record_scenario
from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence import open_saver

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # the sibling script, also when loaded by path (tests)
from prompt_check import Render, check_cassettes, server_renderer  # noqa: E402

RECORDABLE = {**SCENARIOS, **FIXTURES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8765/v1")
    )
    parser.add_argument("--model", default=os.environ.get("CORTEX_MODEL", "qwen2.5-coder-1.5b"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=1024,
        help="output cap; room for a tool call whose bounded strings a small model fills up",
    )
    parser.add_argument(
        "--max-tokens-field",
        choices=["max_completion_tokens", "max_tokens"],
        default="max_tokens",
        help="request field of the cap (llama.cpp's server reads only max_tokens)",
    )
    parser.add_argument(
        "--frequency-penalty",
        type=float,
        default=0.0,
        help="sent with every request (0, the default, leaves it out): a very small model "
        "loops on a phrase inside a tool call's string until the cap cuts it",
    )
    parser.add_argument(
        "--structured-output",
        choices=["json_object", "json_schema", "off"],
        default="json_object",
        help="response-format form of every stage's answer (json_object with the schema, "
        "bounds kept, for llama.cpp's servers; OpenAI's strict json_schema drops bounds)",
    )
    parser.add_argument(
        "--tool-force",
        choices=["named", "required"],
        default="required",
        help="how a tool forced by name is asked for: required with that tool alone "
        "(llama-server ignores a named tool_choice) or OpenAI's named form",
    )
    parser.add_argument(
        "--resend-invalid",
        choices=["verbatim", "wrapped"],
        default="wrapped",
        help="how a call with unparsable arguments goes back to the model in later turns "
        "(llama-server refuses a history whose call arguments it cannot parse: wrapped)",
    )
    parser.add_argument(
        "--tool-turn-max-tokens",
        type=int,
        default=None,
        help="output cap of a turn that forces a tool (default: --max-tokens on every turn); "
        "must fit one whole call: tools/tool_turn_costs.py measures what one costs",
    )
    parser.add_argument(
        "--no-prompt-check",
        action="store_true",
        help="skip rendering each recorded request with the server's template "
        "(POST /apply-template) to prove every tool result reached the model",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(RECORDABLE),
        help="record only this scenario or fixture (repeatable); the others' files are not "
        "touched. Default: all",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "cassettes")
    parser.add_argument(
        "--fixtures-out", type=Path, default=ROOT / "tests" / "replay" / "cassettes"
    )
    parser.add_argument(
        "--keep-mismatched",
        action="store_true",
        help="install a recording even when it misses the scenario's point",
    )
    parser.add_argument(
        "--attempts",
        type=int,
        default=1,
        help="record a scenario again, up to this many times, until a recording hits its "
        "point (a live model's answers vary from one recording to the next)",
    )
    args = parser.parse_args(argv)
    # stopped with SIGTERM (kill, timeout): unwind, so the staging folder is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        settings = RecordedModel(
            base_url=args.base_url,
            model=args.model,
            seed=args.seed,
            max_tokens=args.max_tokens,
            max_tokens_field=args.max_tokens_field,
            structured_output=args.structured_output,
            frequency_penalty=args.frequency_penalty or None,
            tool_force=args.tool_force,
            resend_invalid=args.resend_invalid,
            tool_turn_max_tokens=args.tool_turn_max_tokens,
        )
    except InvalidArgument as error:
        parser.error(f"--tool-turn-max-tokens: {error}")
    check = None if args.no_prompt_check else server_renderer(args.base_url)
    missed = []
    for name in args.scenario or sorted(RECORDABLE):
        out = args.fixtures_out if name in FIXTURES else args.out
        out.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, args.attempts + 1):
            last = attempt == args.attempts
            keep = args.keep_mismatched and last
            if _record_one(name, settings, out, keep_mismatched=keep, check=check):
                break
            if not last:
                print(f"  {name}: attempt {attempt} of {args.attempts} missed; recording again")
        else:
            missed.append(name)
    return 1 if missed else 0


def _record_one(
    name: str,
    settings: RecordedModel,
    out: Path,
    *,
    keep_mismatched: bool,
    check: Render | None = None,
) -> bool:
    """Record scenario ``name`` into a staging folder; install its files if it is worth keeping."""
    scenario = RECORDABLE[name]
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
        if check is not None:
            checked, unread = check_cassettes([Path(staging) / f"{name}.yaml"], check)
            if unread:  # never kept, whatever --keep-mismatched says: the model did not read them
                print(f"  {name}: {'; '.join(unread)}", file=sys.stderr)
                return False
            print(f"  {name}: {checked} tool result(s), each in its rendered prompt")
        statuses = {n.id: n.status for n in result.state.nodes.values()}
        print(f"{name}: {statuses}; rewrites: {list(scenario.outcomes(result))}")
        if misses := scenario.misses(result):
            print(
                f"  {name}: {'; '.join(misses)}; the model decided otherwise this time: "
                "record it again"
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
