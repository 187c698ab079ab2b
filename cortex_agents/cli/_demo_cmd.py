"""``cortex-agents demo``: the claim-review workflow from recorded LLM exchanges, offline.

It replays a scenario (:data:`cortex_agents._demo.SCENARIOS`) into a database
and explains the run (:mod:`cortex_agents.cli._demo_view`): the memory each
stage had, what the memory queries returned and why, the reviews and the
report, what the runtime recorded, and what the scenario forced.

A thread is one run. Run again on the same database, the demo replays into a
new thread (``demo-2``, ``demo-3``, ...) and says so; given ``--thread`` of
a thread that already holds the run, it shows that recorded run and says so.

``--compare`` shows instead a held-out case of the review eval, its classic
and topological reviewers side by side (:mod:`cortex_agents.cli._demo_compare`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from cortex_agents._demo import SCENARIOS, Scenario, recorded_result, run_recorded
from cortex_agents.cli._app import app, fail_cleanly, stdout
from cortex_agents.cli._db_cmds import open_database
from cortex_agents.cli._narrow import chain, command_lines, print_lines, wrap
from cortex_agents.cli._run_cmd import _Printer
from cortex_agents.persistence._inspection import describe_thread

if TYPE_CHECKING:
    from cortex_agents.persistence._saver import CortexSaver
    from cortex_agents.runtime import RunResult, Wire

__all__ = ["demo"]

COMPARE = "claim_review_compare"


def _header(chosen: Scenario, db: str) -> None:
    from cortex_agents.cli._demo_view import forced_lines

    width = stdout.width
    title = chain(f"{chosen.name}: {chosen.description}", width)
    # The first line starts with the name however chain() wraps (no first-line indent).
    stdout.print(Text(title[0][: len(chosen.name)], style="bold") + title[0][len(chosen.name) :])
    print_lines(stdout, title[1:])
    print_lines(stdout, wrap([f"input: {json.dumps(chosen.input, ensure_ascii=False)}"], width))
    print_lines(
        stdout,
        wrap(
            [
                "LLM exchanges replayed",
                f"from cassettes/{chosen.name}.yaml",
                "(network blocked),",
                f"into {db}",
            ],
            width,
        ),
    )
    stdout.print("forced by this scenario:")
    for line in forced_lines(chosen):
        print_lines(stdout, wrap([line], width, first="  ", indent="    "))
    stdout.print()


def _compare(db: str, thread: str | None, scenario: str) -> None:
    """``demo --compare``: a held-out case of the review eval (:mod:`.demo_compare`)."""
    from cortex_agents.cli._demo_compare import show_heldout

    if thread is not None:
        raise typer.BadParameter(
            "does not apply to --compare, which replays into two new threads it names",
            param_hint="--thread",
        )
    if scenario != "claim_review":
        raise typer.BadParameter(
            f"does not apply to --compare, which shows a held-out eval case (the {COMPARE} "
            f"scenario is --scenario {COMPARE})",
            param_hint="--scenario",
        )
    with fail_cleanly(), open_database(db, create=True) as saver:
        show_heldout(saver, db)


@app.command()
def demo(
    db: Annotated[
        str, typer.Option("--db", help="Where to write the run (SQLite file or postgresql:// URL).")
    ] = "demo.db",
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            help="Thread id (default: the scenario's, or a new one if the database holds it). "
            "A thread that already holds the run is shown, not replayed.",
        ),
    ] = None,
    scenario: Annotated[
        str, typer.Option(help=f"One of: {', '.join(sorted(SCENARIOS))}.")
    ] = "claim_review",
    compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="What memory buys: a held-out case of the review eval where the classic and "
            "the topological reviewer differ, side by side (replayed into two new threads).",
        ),
    ] = False,
) -> None:
    """Run the claim-review workflow from its recorded LLM exchanges: no key, no network."""
    if scenario not in SCENARIOS:  # a usage error: exit 2, like any bad option value
        raise typer.BadParameter(f"must be one of {sorted(SCENARIOS)}", param_hint="--scenario")
    if compare:
        _compare(db, thread, scenario)
        return
    chosen = SCENARIOS[scenario]
    wire = chosen.load_wire()
    with fail_cleanly(), open_database(db, create=True) as saver:
        _header(chosen, db)
        thread_id, result = _replay_or_show(chosen, saver, db, thread)
        described = describe_thread(saver, thread_id)
    _print_run(chosen, wire, result, described, db, thread_id)


def _replay_or_show(
    chosen: Scenario, saver: CortexSaver, db: str, thread: str | None
) -> tuple[str, RunResult]:
    """The run to show: ``thread``'s if it holds a finished one, else one replayed now."""
    from cortex_agents.cli import _demo_view as view

    shown = recorded_result(chosen, saver, thread) if thread is not None else None
    # An unfinished run on that thread is resumed by the replay below, not shown as is.
    if shown is not None and shown.complete:
        thread_id = str(thread)
        stdout.print(
            f"thread {thread_id} in {db} already holds this run: showing what was recorded "
            "(nothing replayed; omit --thread to replay into a new thread)",
            soft_wrap=False,
        )
        return thread_id, shown
    thread_id = thread or view.new_thread(saver, chosen.thread)
    if thread is None and thread_id != chosen.thread:
        stdout.print(
            f"thread {chosen.thread} in {db} already holds a run: replaying into a new "
            f"thread, {thread_id}",
            soft_wrap=False,
        )
    elif shown is not None:
        stdout.print(f"thread {thread_id} holds an unfinished run: resuming it")
    return thread_id, run_recorded(
        chosen, saver, thread=thread_id, on_progress=_Printer(replayed=True)
    )


def _print_run(
    chosen: Scenario,
    wire: Wire,
    result: RunResult,
    described: dict[str, Any],
    db: str,
    thread_id: str,
) -> None:
    """The run's stages, tool calls, report (or comparison), rewrites and what to try next."""
    from cortex_agents.cli import _demo_view as view

    stdout.print()
    view.print_blocks(stdout, [view.stage_table(result, wire)])
    view.print_blocks(stdout, view.tool_call_blocks(result, wire.presets))
    changed: list[str] = []
    if chosen.name == COMPARE:
        from cortex_agents.cli._demo_compare import Side, compare_sentence, compare_table

        left, right = (
            Side(n, result, wire, n) for n in ("reviewer-classic", "reviewer-topological")
        )
        view.print_blocks(stdout, [compare_table(left, right)])
        changed.append(compare_sentence(left, right))
    else:
        view.print_blocks(stdout, view.report_panels(result))
    if described["rewrites"]:
        view.print_blocks(stdout, [view.rewrite_history(described)])
    panel = view.closing_panel(
        [(result, wire, thread_id)], view.forced_lines(chosen), changed=changed
    )
    view.print_blocks(stdout, [panel])
    stdout.print("[bold]Next[/bold]")
    for command in view.next_commands(result, db=db, thread=thread_id):
        print_lines(stdout, command_lines(command, stdout.width))
