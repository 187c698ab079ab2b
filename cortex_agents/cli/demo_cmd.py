"""``cortex-agents demo``: the claim-review workflow from recorded LLM exchanges, offline."""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table

from cortex_agents.cli.app import app, fail_cleanly, stdout
from cortex_agents.cli.db_cmds import open_database, rewrite_history
from cortex_agents.cli.run_cmd import _Printer, _summary
from cortex_agents.demo import SCENARIOS, run_recorded
from cortex_agents.persistence.inspection import describe_thread
from cortex_agents.runtime import RunResult
from cortex_agents.substrate import ToolCallMade

__all__ = ["demo"]


def _tool_calls(result: RunResult) -> None:
    for event in result.log:
        if not isinstance(event, ToolCallMade):
            continue
        arguments = json.dumps(dict(event.arguments), ensure_ascii=False)
        if len(arguments) > 160:  # the full arguments stay in the database (`inspect`)
            arguments = arguments[:159] + "…"
        outcome: Any = event.result or {}
        title = f"{event.node_id} called {event.tool}({arguments})"
        if outcome.get("status") != "success" or "matches" not in outcome:
            content = str(outcome.get("content", outcome))
            with contextlib.suppress(ValueError):  # tool answers are JSON: show them readably
                content = json.dumps(json.loads(content), indent=1, ensure_ascii=False)
            stdout.print(Panel(content, title=title, title_align="left"))
            continue
        table = Table(title=title, title_justify="left")
        for column in (
            "#",
            "node",
            "kind",
            "hops",
            "score",
            "graph",
            "temporal",
            "semantic",
            "key",
        ):
            table.add_column(
                column, justify="right" if column in ("#", "hops") else "left", no_wrap=True
            )
        for rank, m in enumerate(outcome["matches"], 1):
            table.add_row(
                str(rank),
                m["node_id"],
                m["kind"],
                str(m["hops"]),
                f"{m['score']:.3f}",
                f"{m['graph']:.3f}",
                f"{m['temporal']:.3f}",
                f"{m['semantic']:.3f}",
                m["routing_key"],
            )
        stdout.print(table)


def _report(result: RunResult) -> None:
    review = (result.outputs.get("reviewer") or {}).get("value", {})
    report = (result.outputs.get("rewriter") or {}).get("value", {})
    # A small model often answers beside the JSON asked for; say so rather than pass a guess off.
    unparsed = " (the model did not answer in the JSON asked for: inferred from its text)"
    if review:
        gaps = "; ".join(review.get("gaps", [])) or "none"
        note = "" if review.get("parsed", True) else unparsed
        stdout.print(
            Panel(
                f"verdict: {review.get('verdict')}{note}\ngaps: {gaps}\n{review.get('notes', '')}",
                title="review",
            )
        )
    if report:
        title = "final report" if report.get("parsed", True) else f"final report{unparsed}"
        stdout.print(Panel(str(report.get("report", "")) or "(empty)", title=title))


@app.command()
def demo(
    db: Annotated[
        str, typer.Option("--db", help="Where to write the run (SQLite file or postgresql:// URL).")
    ] = "demo.db",
    thread: Annotated[
        str | None, typer.Option("--thread", help="Thread id (default: the recorded one).")
    ] = None,
    scenario: Annotated[
        str, typer.Option(help=f"One of: {', '.join(sorted(SCENARIOS))}.")
    ] = "claim_review",
) -> None:
    """Run the claim-review workflow from its recorded LLM exchanges: no key, no network."""
    if scenario not in SCENARIOS:  # a usage error: exit 2, like any bad option value
        raise typer.BadParameter(f"must be one of {sorted(SCENARIOS)}", param_hint="--scenario")
    chosen = SCENARIOS[scenario]
    thread_id = thread or chosen.thread
    with fail_cleanly(), open_database(db, create=True) as saver:
        stdout.print(f"[bold]{chosen.name}[/bold]: {chosen.description}")
        stdout.print(
            f"input: {json.dumps(chosen.input)}  (replayed from recorded exchanges, network blocked)"
        )
        result = run_recorded(chosen, saver, thread=thread_id, on_progress=_Printer())
        described = describe_thread(saver, thread_id)
    _tool_calls(result)
    _summary(result.state.nodes.values())
    _report(result)
    if described["rewrites"]:
        rewrite_history(described)
    stdout.print(
        f"written to {db}, thread {thread_id}. Next: cortex-agents inspect {db} --thread {thread_id}  |  "
        f"cortex-agents export {db} --thread {thread_id} --as-seen-by reviewer -o seen.json"
    )
