"""What ``cortex-agents demo`` prints about a recorded run, readable at 80 columns.

Everything shown is read back from the run (its substrate log and outputs)
and the scenario's wire; nothing is re-derived from the cassette. Text is
shown for a person: HTML entities a model echoed (``&amp;lt;`` for ``<``)
are unescaped and long values are shortened with a marker saying how much
was left out — for display only: the database and the cassette keep exactly
what the model saw and wrote (``cortex-agents inspect``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from cortex_agents._demo import Scenario
from cortex_agents.cli._demo_calls import calls_of, display, query_why, runs_of, tool_call_blocks
from cortex_agents.memory._strategy import Topological
from cortex_agents.persistence._saver import CortexSaver
from cortex_agents.persistence._transfer import thread_config
from cortex_agents.runtime import RunResult, Wire

__all__ = [
    "calls_of",
    "closing_panel",
    "display",
    "forced_lines",
    "memory_label",
    "new_thread",
    "next_commands",
    "recalled_by",
    "report_panels",
    "review_text",
    "rewrite_history",
    "stage_table",
    "tool_call_blocks",
    "value_of",
]


def memory_label(wire: Wire, node_id: str, kind: str, *, lines: bool = False) -> str:
    """How a node's memory was declared: ``classic`` or ``topological (preset …, filters)``
    (``lines``: one part per line, for a narrow column)."""
    strategy = wire.spec_for(node_id, kind).memory
    if not isinstance(strategy, Topological):
        return "classic"
    parts = [f"preset {strategy.preset}"]
    for name in (
        "upstream_of_kind",
        "past_boundary",
        "routing_key",
        "scorer",
        "projection",
        "second_pass",
        "diversity",
        "mmr_lambda",
    ):
        if (value := getattr(strategy, name)) is not None:
            parts.append(f"{name}={value}")
    if lines:
        return "\n".join(["topological", *parts])
    return f"topological ({', '.join(parts)})"


def value_of(result: RunResult, node_id: str) -> dict[str, Any]:
    """A stage's output value (empty: none)."""
    output = result.outputs.get(node_id)
    value = output.get("value") if isinstance(output, dict) else None
    return value if isinstance(value, dict) else {}


def recalled_by(result: RunResult, node_id: str) -> list[str]:
    """The nodes a stage's memory recalled into its prompt, in its order."""
    output = result.outputs.get(node_id)
    memory = output.get("memory") if isinstance(output, dict) else None
    return list(memory.get("recalled", [])) if isinstance(memory, dict) else []


def _saw(result: RunResult, node_id: str) -> str:
    inputs = list(result.state.predecessors(node_id))
    seen = ", ".join(inputs) if inputs else "the run input"
    if recalled := recalled_by(result, node_id):
        seen += "; recalled " + ", ".join(recalled)
    if calls := calls_of(result, node_id):
        statuses = [f"{c.tool} ({(c.result or {}).get('status', '?')})" for c in calls]
        seen += "; called " + ", ".join(
            f"{label} ×{len(same)}" if len(same) > 1 else label for label, same in runs_of(statuses)
        )
    return seen


def stage_table(result: RunResult, wire: Wire) -> Table:
    """One row per stage: its memory and what it saw (inputs, recalled nodes, tool calls)."""
    table = Table(
        title="stages: the memory each had, what each saw (✓ completed)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("stage", no_wrap=True)
    table.add_column("memory", min_width=24)
    table.add_column("saw: inputs; recalled; tool calls", ratio=1)
    for node in result.state.nodes.values():
        mark, style = {"completed": ("✓", "green"), "failed": ("✗", "red")}.get(
            node.status, ("…", "yellow")
        )
        stage = Text(f"{mark} ", style=style) + Text(node.id)
        if node.status not in ("completed", "failed"):
            stage += Text(f" ({node.status})")
        table.add_row(
            stage, memory_label(wire, node.id, node.kind, lines=True), _saw(result, node.id)
        )
    return table


def _inferred(value: Mapping[str, Any]) -> str:
    return (
        ""
        if value.get("parsed", True)
        else " (the model did not answer in the JSON asked for: inferred from its text)"
    )


def _once(items: Sequence[Any], limit: int) -> list[str]:
    counts: dict[str, int] = {}
    for item in items:
        shown = display(item, limit)
        counts[shown] = counts.get(shown, 0) + 1
    return [f"{text} (×{n})" if n > 1 else text for text, n in counts.items()]


def review_text(value: Mapping[str, Any]) -> Text:
    """A review's verdict, gaps, notes and citations, one per line (an item the model
    repeated is shown once, with how many times)."""
    gaps = "; ".join(_once(value.get("gaps", []), 160)) or "none"
    cited = ", ".join(_once(value.get("cited", []), 64)) or "none"
    return Text(
        f"verdict: {value.get('verdict')}{_inferred(value)}\n"
        f"gaps: {gaps}\n"
        f"notes: {display(value.get('notes', ''), 300) or '(none)'}\n"
        f"cited: {cited}"
    )


def report_panels(result: RunResult) -> list[Panel]:
    """The reviews and the final report (or reports), shown for reading."""
    panels = []
    for node in result.state.nodes.values():
        value = value_of(result, node.id)
        if node.kind == "reviewer" and value:
            panels.append(Panel(review_text(value), title=f"review by {node.id}"))
        elif node.kind == "rewriter" and value:
            report = display(value.get("report", ""), 600) or "(empty)"
            addressed = "; ".join(display(a, 160) for a in value.get("addressed", [])) or "none"
            panels.append(
                Panel(
                    Text(f"{report}\naddressed: {addressed}"),
                    title=f"final report by {node.id}{_inferred(value)}",
                )
            )
    return panels


def forced_lines(scenario: Scenario) -> list[str]:
    """What the scenario decided instead of the model, one line each."""
    return [f"• {line}" for line in scenario.forced] or ["• nothing: every choice is the model's"]


def _item(text: str, indent: int = 2) -> Padding:
    """A line of the closing panel; wrapped lines keep its indent."""
    return Padding(Text(text, overflow="fold"), (0, 0, 0, indent))


def closing_panel(
    runs: Sequence[tuple[RunResult, Wire, str]],
    forced: Sequence[str],
    *,
    changed: Sequence[str] = (),
    forced_by: str = "this scenario",
) -> Panel:
    """What to look at: what memory changed (``changed``, a comparison's lines), the memory
    each stage had, what the queries returned and why, what the runtime recorded, and the
    choices forced (``forced``, :func:`forced_lines`) — over ``runs``, the ``(result, wire,
    thread)`` of each run shown. The commands to run next are :func:`next_commands`, printed
    outside the panel so that they copy whole."""
    parts: list[Any] = []
    if changed:
        parts.append(Text("What memory changed", style="bold"))
        parts += [_item(line) for line in changed]
    # label -> node -> the threads where the node had it: a node named once when every run
    # gave it the same memory, with its threads when they differ (two arms of one wire)
    by_memory: dict[str, dict[str, list[str]]] = {}
    for result, wire, thread in runs:
        for node in result.state.nodes.values():
            label = memory_label(wire, node.id, node.kind)
            by_memory.setdefault(label, {}).setdefault(node.id, []).append(thread)
    parts.append(Text("Memory each stage had", style="bold"))
    for label, nodes in by_memory.items():
        named = ", ".join(
            n if len(threads) == len(runs) else f"{n} (thread {', '.join(threads)})"
            for n, threads in nodes.items()
        )
        if label == "classic":
            parts.append(_item(f"{named}: classic, their direct inputs only"))
        else:
            parts.append(
                _item(
                    f"{named}: {label}: direct inputs, plus the nodes their own "
                    "query recalled, plus cortex_memory_query"
                )
            )
    parts.append(Text("What the memory queries returned, and why that ranking", style="bold"))
    why = [lines for result, wire, _ in runs for lines in query_why(result, wire.presets)]
    for lines in why or [["no successful memory query in this run"]]:
        parts.append(_item(f"• {lines[0]}"))
        parts += [_item(line, 4) for line in lines[1:]]
    parts.append(Text("What the runtime recorded", style="bold"))
    for result, _, thread in runs:
        counts: dict[str, int] = {}
        for event in result.log:
            counts[type(event).__name__] = counts.get(type(event).__name__, 0) + 1
        parts.append(
            _item(
                f"{len(result.log)} events in thread {thread}: {counts.get('StageStarted', 0)} "
                f"stage starts, {counts.get('StageCompleted', 0)} completions, "
                f"{len(calls_of(result))} tool call(s) with their arguments and results, "
                f"{len(result.state.rewrites)} rewrite decision(s)"
            )
        )
    parts.append(Text(f"Forced by {forced_by}", style="bold"))
    parts += [_item(line) for line in forced]
    return Panel(Group(*parts), title="what to look at", title_align="left")


def new_thread(saver: CortexSaver, base: str, suffixes: Sequence[str] = ("",)) -> str:
    """``base`` if the database has none of the threads ``base + suffix``, else the first
    free ``base-N`` (N >= 2): a thread is one run, and a run is never replayed over another."""
    candidate, n = base, 1
    while any(saver.get_tuple(thread_config(candidate + s)) is not None for s in suffixes):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def next_commands(result: RunResult, *, db: str, thread: str) -> list[list[str]]:
    """The commands to run next on this run, as argument lists (printed whole, outside any box)."""
    return [
        ["cortex-agents", "inspect", db, "--thread", thread],
        [
            "cortex-agents",
            "export",
            db,
            "--thread",
            thread,
            "--as-seen-by",
            _last_reviewer(result),
            "-o",
            "seen.json",
        ],
    ]


def _dims(values: Mapping[str, int] | None) -> str:
    short = {"nodes": "n", "edges": "e", "depth": "d", "breadth": "b", "operations": "ops"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in (values or {}).items())


def rewrite_history(described: Mapping[str, Any]) -> Group:
    """Each proposal: its decision, proposer and form, outcome, cost, budget before -> after
    (``cortex-agents inspect`` prints the same history; this one wraps at words)."""
    budget = described.get("budget")
    lines: list[Any] = [
        Text("rewrite history" + (f" (run budget {_dims(budget)})" if budget else ""))
    ]
    for i, r in enumerate(described.get("rewrites", []), 1):
        if r["decision"] == "admitted":
            head = f"admitted as rewrite {r['rewrite_id']}"
            detail = "new nodes: " + ", ".join(r["new_nodes"])
        else:
            head = f"rejected: {r['code']} ({r['check']})"
            detail = display(r.get("reason") or "", 300)
        after = _dims(r["budget_after"]) if r["decision"] == "admitted" else "unchanged"
        lines.append(Text(f"#{i} {head} · by {r['proposer']} · {r['operation']}"))
        lines.append(_item(detail, 3))
        lines.append(_item(f"cost {_dims(r['cost']) or '-'}", 3))
        lines.append(_item(f"budget {_dims(r['budget_before'])} -> {after}", 3))
    return Group(*lines)


def _last_reviewer(result: RunResult) -> str:
    reviewers = [n.id for n in result.state.nodes.values() if n.kind == "reviewer"]
    # The last reviewer in scheduling order has seen the most of the run.
    return reviewers[-1] if reviewers else next(iter(result.state.nodes), "reviewer")


def print_blocks(console: Console, blocks: Sequence[Any]) -> None:
    """Print renderables separated by a blank line."""
    for block in blocks:
        console.print(block, soft_wrap=False)
        console.print()
