"""How ``cortex-agents demo`` shows tool calls: each call's arguments, its ranking and why.

Split from :mod:`cortex_agents.cli._demo_view` (which re-exports
:func:`tool_call_blocks`, :func:`display` and :func:`calls_of`); the same
display rules hold: entities unescaped, long values shortened with a marker.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from cortex_agents.cli._ranking_notes import AXES, column_legend, order_note, score_formula
from cortex_agents.memory._presets import PresetRegistry
from cortex_agents.runtime import RunResult
from cortex_agents.substrate import ToolCallMade

__all__ = ["calls_of", "display", "query_why", "runs_of", "tool_call_blocks"]

_CONTROL: Final = re.compile(r"\s+")


def display(value: Any, limit: int | None = None) -> str:
    """``value`` as one line for a person: entities unescaped, whitespace folded, maybe shortened.

    A shortened value ends with ``… [+N chars]`` (N counts what was left out),
    cut at a word boundary when one is near.
    """
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    for _ in range(4):  # a model echoes text escaped up to three times (&amp;amp;lt;)
        unescaped = html.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    text = _CONTROL.sub(" ", text).strip()
    if limit is None or len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    # A word boundary only when it keeps at least two thirds of the room; else cut mid-word.
    cut = cut if cut > limit * 2 // 3 else limit
    return f"{text[:cut].rstrip()} … [+{len(text) - cut} chars]"


def calls_of(result: RunResult, node_id: str | None = None) -> list[ToolCallMade]:
    """The tool calls of a run (of one stage, given ``node_id``), in order."""
    return [
        e
        for e in result.log
        if isinstance(e, ToolCallMade) and (node_id is None or e.node_id == node_id)
    ]


def runs_of(items: Sequence[Any], key: Any = None) -> list[tuple[Any, list[Any]]]:
    """Consecutive items grouped by ``key(item)`` (the item itself by default), in order."""
    runs: list[tuple[Any, list[Any]]] = []
    for item in items:
        k = item if key is None else key(item)
        if runs and runs[-1][0] == k:
            runs[-1][1].append(item)
        else:
            runs.append((k, [item]))
    return runs


def _arguments(arguments: Mapping[str, Any]) -> str:
    if set(arguments) == {"raw"}:  # not a JSON object: what the model sent, as text
        return display(arguments["raw"], 160)
    return " ".join(
        f"{k}={display(json.dumps(v, ensure_ascii=False), 90)}" for k, v in arguments.items()
    )


def _weights(presets: PresetRegistry, preset: str) -> dict[str, float] | None:
    try:
        return presets.resolve(preset).spec.weights.as_dict()
    except Exception:  # a preset the registry does not hold (another wire's)
        return None


def _prior(presets: PresetRegistry, preset: str) -> str | None:
    try:
        return str(presets.resolve(preset).spec.prior)
    except Exception:  # as in _weights
        return None


def _filters(presets: PresetRegistry, query: Mapping[str, Any]) -> str:
    """The walk and filters that decided which candidates there were."""
    parts = [f"walked {query.get('direction')}", "settled outputs only"]
    if query.get("scope") != "settled_only":
        parts[-1] = f"scope {query.get('scope')}"
    try:
        preset = presets.resolve(str(query.get("preset")))
    except Exception:
        preset = None
    if preset is not None and preset.exclude_kinds:
        parts.append("kinds left out: " + ", ".join(sorted(preset.exclude_kinds)))
    if preset is not None and preset.kinds is not None:
        parts.append("kinds kept: " + ", ".join(sorted(preset.kinds)))
    for key, label in (
        ("routing_key", "routing key"),
        ("max_graph_distance", "at most hops"),
        ("limit", "limit"),
    ):
        if query.get(key) is not None:
            parts.append(f"{label} {query[key]}")
    return "; ".join(parts)


def _matches_table(title: str, matches: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True, min_width=2)
    table.add_column("node", overflow="fold")
    table.add_column("kind", overflow="fold")
    table.add_column("hops", justify="right", no_wrap=True, min_width=4)
    for header in ("score", *(a[:5] for a in AXES)):  # graph, tempo, seman: legend below
        table.add_column(header, justify="right", no_wrap=True, min_width=5)
    table.add_column("key", overflow="fold")
    for rank, m in enumerate(matches, 1):
        table.add_row(
            str(rank),
            str(m.get("node_id")),
            str(m.get("kind")),
            str(m.get("hops")),
            *(f"{float(m.get(a, 0.0)):.3f}" for a in ("score", *AXES)),
            str(m.get("routing_key")),
        )
    return table


def tool_call_blocks(result: RunResult, presets: PresetRegistry) -> list[Any]:
    """A block per tool call: its arguments, then its ranking (and why) or its answer.

    Consecutive calls of one stage refused with the same answer (a small model writes a
    dozen calls in a turn that runs one) share a block listing each call's arguments.
    """
    blocks: list[Any] = []
    for (node, tool, refusal), events in runs_of(calls_of(result), key=_refusal):
        if refusal is not None and len(events) > 1:
            each = " | ".join(_arguments(dict(e.arguments)) or "(none)" for e in events)
            head = f"{node} called {tool} {len(events)} times in a row, each refused"
            blocks.append(
                Group(
                    Text(head, style="bold"),
                    Text(f"arguments, call by call: {display(each, 400)}"),
                    Text(f"answer to each (error): {_answer(refusal)}"),
                )
            )
        else:
            blocks += [_call_block(event, presets) for event in events]
    return blocks


def _call_block(event: ToolCallMade, presets: PresetRegistry) -> Group:
    """One call: its arguments, then its ranking (and why) or its answer."""
    outcome: Any = event.result or {}
    head = Text(f"{event.node_id} called {event.tool}", style="bold")
    args = Text(f"arguments: {_arguments(dict(event.arguments)) or '(none)'}")
    if outcome.get("status") != "success" or "matches" not in outcome:
        content = str(outcome.get("content", outcome))
        return Group(head, args, Text(f"answer ({outcome.get('status')}): {_answer(content)}"))
    query = outcome.get("query") or {}
    weights = _weights(presets, str(query.get("preset")))
    lines = [
        f"resolved: preset {query.get('preset')} · scorer {query.get('scorer')} · "
        f"limit {query.get('limit')}",
        f"filters: {_filters(presets, query)}",
        f"{outcome.get('total')} candidates passed the filters; "
        f"{outcome.get('shown')} shown to the model",
    ]
    matches = outcome["matches"]
    legend = []
    if weights:
        legend.append(score_formula(weights))
    legend.append(column_legend(event.node_id, _prior(presets, str(query.get("preset")))))
    legend.append("tempo = temporal (recency); seman = semantic (text match)")
    if weights and (decided := order_note(matches, weights)):
        legend.append(decided)
    return Group(
        head,
        args,
        *(Text(line) for line in lines),
        _matches_table("what it returned, best first", matches),
        *(Text(line, style="dim") for line in legend),
    )


def _refusal(event: ToolCallMade) -> tuple[str, str, str | None]:
    """What groups consecutive refused calls: the stage, the tool and the refusal's text
    (``None``: the call was not refused)."""
    outcome: Any = event.result or {}
    if outcome.get("status") != "error":
        return (event.node_id, event.tool, None)
    return (event.node_id, event.tool, str(outcome.get("content", outcome)))


def _answer(content: str) -> str:
    """A tool's answer in a line: an error's code and message, a rewrite's decision, else the text."""
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return display(content, 240)
    error = parsed.get("error")
    if isinstance(error, dict):
        return f"{error.get('code')}: {display(str(error.get('message', '')), 240)}"
    if "decision" in parsed:  # propose_rewrite
        new = ", ".join(str(n) for n in parsed.get("new_nodes") or []) or "none"
        left = parsed.get("budget_remaining") or {}
        budget = ", ".join(f"{k} {v}" for k, v in left.items())
        return display(
            f"{parsed['decision']} (rewrite {parsed.get('rewrite_id')}); new nodes: {new}; "
            f"budget left: {budget}",
            240,
        )
    return display(content, 240)


def query_why(result: RunResult, presets: PresetRegistry) -> list[list[str]]:
    """Per successful memory query: what it returned, the filters, and what ranked it."""
    found_why = []
    for call in calls_of(result):
        outcome: Any = call.result or {}
        if outcome.get("status") != "success" or "matches" not in outcome:
            continue
        query = outcome.get("query") or {}
        found = [str(m.get("node_id")) for m in outcome["matches"]]
        text = display(query.get("query_text") or "-", 60)
        lines = [
            f"{call.node_id}'s query (text {text!r}) returned "
            f"{', '.join(found) or 'nothing'}, of {outcome.get('total')} candidates",
            f"filters: {_filters(presets, query)}",
        ]
        weights = _weights(presets, str(query.get("preset")))
        ranking = f"ranking: scorer {query.get('scorer')}"
        if weights:
            ranking += f"; {score_formula(weights)}"
            if decided := order_note(outcome["matches"], weights):
                ranking += f"; {decided}"
        found_why.append([*lines, ranking])
    return found_why
