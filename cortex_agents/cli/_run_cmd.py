"""``cortex-agents run WIRE --db DB --thread T [--input JSON]``: run or resume a wire."""

from __future__ import annotations

import json
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cortex_agents.cli._app import app, fail_cleanly, stderr, stdout
from cortex_agents.cli._db_cmds import AdoptOption, SkipCheckOption, open_database
from cortex_agents.embeddings._store_cache import StoreEmbeddingCache
from cortex_agents.errors import InvalidArgument, RunFailed
from cortex_agents.memory._strategy import Topological
from cortex_agents.persistence._transfer import thread_config
from cortex_agents.runtime import Progress, Runtime, Wire, load_wire
from cortex_agents.scratch import open_scratch
from cortex_agents.snapshotfile import check_identifier
from cortex_agents.stages import KINDS
from cortex_agents.stages._llm import CHAT_MODEL, ModelUnavailable, chat_model_from_env
from cortex_agents.substrate import NodeScheduled, StageCompleted, StageFailed, StageStarted

__all__ = ["model_stages", "run"]


def model_stages(wire: Wire) -> list[str]:
    """Ids of the stages that need a chat model.

    Those of the shipped LLM kinds (:data:`cortex_agents.stages.KINDS`), and of
    any kind whose function says so with a truthy ``needs_chat_model`` attribute.
    """
    llm = set(KINDS.values())
    return [
        stage.id
        for stage in wire.stages
        if (fn := wire.kinds[stage.kind].fn) in llm or getattr(fn, "needs_chat_model", False)
    ]


def _require_model(wire: Wire, model: Any) -> None:
    """Refuse, before anything is created, a wire with LLM stages and no model configured."""
    needing = model_stages(wire) if model is None else []
    if needing:
        shown = ", ".join(needing[:4]) + (", ..." if len(needing) > 4 else "")
        raise ModelUnavailable(
            f"wire {wire.name!r} has stages that need a chat model ({shown}) and none is "
            "configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible "
            "server); nothing was created"
        )


def _check_input(runtime: Runtime, thread_id: str, run_input: Any) -> Any:
    """The input to pass: ``None`` to resume an existing thread with the input it started with.

    A thread is one run of one input: a different ``--input`` on an existing
    thread is refused (nothing is written), never mixed into it.
    """
    if runtime.saver.get_tuple(thread_config(thread_id)) is None:
        return run_input
    if run_input is not None:
        # Compared as parsed JSON, so `{"a":1}` and `{ "a": 1 }` are the same input.
        recorded = runtime.graph.get_state(runtime.config(thread_id)).values.get("input")
        if recorded != run_input:
            shown = json.dumps(recorded, ensure_ascii=False)
            raise InvalidArgument(
                "--input",
                f"differs from the input thread {thread_id!r} started with ({shown[:200]}); "
                "run without --input to resume it, or use a new --thread for a new input; "
                "nothing was run",
                run_input,
            )
    return None


def parse_input(text: str | None) -> Any:
    """The run input from ``--input`` (JSON; a bare string is taken as a string)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            "--input", f"must be JSON ({exc.msg} at column {exc.colno})", text
        ) from None


class _Printer:
    """Prints one line per stage transition, as the run streams them.

    ``replayed``: the model's answers come from a cassette, so a stage's wall
    time measures the cassette lookup (about 0.00s), not the model, and the
    cassette keeps no duration to show instead: the line says "replayed".
    """

    def __init__(self, *, replayed: bool = False) -> None:
        self.started: dict[str, float] = {}
        self.scheduled = 0
        self.replayed = replayed

    def __call__(self, progress: Progress) -> None:
        event = progress.event
        if isinstance(event, NodeScheduled):
            self.scheduled += 1
            return
        if self.scheduled:
            stdout.print(f"[dim]scheduled {self.scheduled} stage(s)[/dim]")
            self.scheduled = 0
        if isinstance(event, StageStarted):
            self.started[event.node_id] = time.monotonic()
        elif isinstance(event, StageCompleted):
            # A stage that started before this process (a resumed run) has no start time here: 0.00s.
            took = time.monotonic() - self.started.get(event.node_id, time.monotonic())
            how = "replayed" if self.replayed else f"{took:.2f}s"
            stdout.print(f"[green]✓[/green] {event.node_id} [dim]({progress.node}, {how})[/dim]")
        elif isinstance(event, StageFailed):
            stdout.print(
                f"[red]✗[/red] {event.node_id} [dim]({progress.node})[/dim]: {event.error}",
                markup=True,
            )


@app.command()
def run(
    wire_path: Annotated[
        Path, typer.Argument(metavar="WIRE", help="A wire: .py (exposing `wire`), .toml or .yaml.")
    ],
    db: Annotated[
        str, typer.Option("--db", help="SQLite file (created if missing) or postgresql:// URL.")
    ] = "cortex.db",
    thread: Annotated[
        str | None, typer.Option("--thread", help="Thread (run) id; an existing one is resumed.")
    ] = None,
    input_json: Annotated[
        str | None, typer.Option("--input", help="The run's input, as JSON.")
    ] = None,
    lock_timeout: Annotated[
        float,
        typer.Option(min=0, help="Seconds to wait if another process is advancing the thread."),
    ] = 0.0,
    adopt: AdoptOption = False,
    skip_integrity_check: SkipCheckOption = False,
) -> None:
    """Run a wire on a thread until nothing is runnable (resuming it if it exists).

    An existing thread resumes with the input it started with: ``--input``
    may repeat that input, and a different one is refused.
    """
    # Twelve hex digits (48 bits): short enough to retype from the output,
    # and unlikely to meet another run's in one database.
    thread_id = thread or uuid.uuid4().hex[:12]
    with fail_cleanly():
        check_identifier(thread_id, "--thread")
        wire = load_wire(wire_path)
        run_input = parse_input(input_json)
        model = chat_model_from_env()
        _require_model(wire, model)  # before the database or the thread exists
        with ExitStack() as stack:
            saver = stack.enter_context(
                open_database(
                    db, create=True, adopt=adopt, check_integrity=not skip_integrity_check
                )
            )
            # the LangGraph store in the same database holds scratch memory, if the wire
            # declares any, and the body vectors of embedding scorers (embedded once per body)
            recalls = any(isinstance(s.memory, Topological) for s in wire.stages)
            store = stack.enter_context(open_scratch(db)) if wire.uses_scratch or recalls else None
            runtime = Runtime(
                wire,
                saver,
                lock_timeout=lock_timeout,
                services={CHAT_MODEL: model} if model else {},
                scratch=store if wire.uses_scratch else None,
                embedding_cache=StoreEmbeddingCache(store.store) if recalls and store else None,
            )
            run_input = _check_input(runtime, thread_id, run_input)
            stdout.print(
                f"running [bold]{wire.name}[/bold] on thread [bold]{thread_id}[/bold] in {db}"
            )
            try:
                result = runtime.run(thread_id, run_input, on_progress=_Printer())
            except RunFailed:
                # The stages that did run are still worth a table before the error's message.
                result = runtime.result(thread_id)
                _summary(result.state.nodes.values())
                raise
    _summary(result.state.nodes.values())
    status = "complete" if result.complete else "stopped (nothing runnable)"
    stdout.print(f"thread {thread_id}: {status}")


def _summary(nodes: Any) -> None:
    table = Table(title="stages", title_justify="left", expand=True)
    for column in ("stage", "kind", "status", "attempts", "output"):
        table.add_column(
            column, overflow="ellipsis", no_wrap=True, ratio=1 if column == "output" else None
        )
    for node in nodes:
        preview = "" if node.output is None else json.dumps(node.output, ensure_ascii=False)
        style = {"completed": "green", "failed": "red"}.get(node.status, "yellow")
        table.add_row(
            node.id,
            node.kind,
            f"[{style}]{node.status}[/{style}]",
            str(node.attempts),
            preview[:200],
        )
    # A failed run's table goes to stderr, beside the error it explains.
    (stderr if any(n.status == "failed" for n in nodes) else stdout).print(table)
