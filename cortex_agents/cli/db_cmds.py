"""``cortex-agents export | import | inspect``: a thread's substrate in and out of a database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cortex_agents.cli.app import app, fail_cleanly, stderr, stdout, write_output
from cortex_agents.errors import InvalidArgument
from cortex_agents.persistence import CortexSaver, open_saver, require_database
from cortex_agents.persistence.inspection import describe_thread, list_threads
from cortex_agents.persistence.transfer import export_as_seen_by, export_document, import_document
from cortex_agents.snapshot_file import dump_snapshot, load_snapshot, load_snapshot_forensic

DbArgument = Annotated[str, typer.Argument(help="A SQLite file or a postgresql:// URL.")]
ThreadOption = Annotated[str, typer.Option("--thread", help="The thread (run) id.")]


@contextmanager
def open_database(db: str, *, create: bool = False) -> Iterator[CortexSaver]:
    """Open a database for the CLI.

    Without ``create`` (commands that only read) it must already be a
    cortex-agents database, checked without writing anything.
    """
    if not create:
        require_database(db)
    with open_saver(db) as saver:
        yield saver


@app.command("export")
def export(
    db: DbArgument,
    thread: ThreadOption,
    output: Annotated[Path, typer.Option("-o", "--output", help="The snapshot file to write.")],
    checkpoint: Annotated[
        str | None, typer.Option(help="Export as of this checkpoint id (default: the latest).")
    ] = None,
    as_seen_by: Annotated[
        str | None,
        typer.Option("--as-seen-by", help="Export the snapshot this stage's memory saw at entry."),
    ] = None,
) -> None:
    """Write a thread's substrate as a snapshot file."""
    with fail_cleanly(), open_database(db) as saver:
        if as_seen_by is not None:
            if checkpoint is not None:
                raise InvalidArgument(
                    "--as-seen-by", "cannot be combined with --checkpoint", as_seen_by
                )
            document = export_as_seen_by(saver, thread, as_seen_by)
        else:
            document = export_document(saver, thread, checkpoint_id=checkpoint)
        text = dump_snapshot(document)
        write_output(output, text)
    stdout.print(
        f"exported {thread!r}: {len(document.nodes)} nodes, {len(document.edges)} edges -> {output}",
        markup=False,
    )


@app.command("import")
def import_(
    snapshot: Annotated[Path, typer.Argument(help="Snapshot file to import.")],
    db: DbArgument,
    thread: ThreadOption,
    forensic: Annotated[
        bool, typer.Option(help="Import the valid parts of an invalid file, then report the rest.")
    ] = False,
) -> None:
    """Import a snapshot file as a new thread (strict: an invalid file writes nothing)."""
    with fail_cleanly():
        if forensic:
            salvage = load_snapshot_forensic(snapshot)
            document, problems = salvage.document, list(salvage.problems)
        else:
            document, problems = load_snapshot(snapshot), []
        with open_database(db, create=True) as saver:
            report = import_document(saver, thread, document, problems=tuple(problems))
    stdout.print(
        f"imported {thread!r}: {report.nodes} nodes, {report.edges} edges, {report.events} events",
        markup=False,
    )
    if report.problems:
        stderr.print(f"left out ({len(report.problems)} problems):", markup=False)
        for problem in report.problems:
            stderr.print(f"  {problem}", markup=False)


@app.command()
def inspect(
    db: DbArgument,
    thread: Annotated[
        str | None, typer.Option("--thread", help="Show one thread in detail.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a database's threads, or one thread's nodes, edges and rewrites."""
    with fail_cleanly(), open_database(db) as saver:
        data = (
            describe_thread(saver, thread) if thread else [t.to_dict() for t in list_threads(saver)]
        )
    if as_json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if thread is None:
        table = Table(title=f"threads in {db}", title_justify="left")
        for column in ("thread", "events", "nodes", "settled", "failed", "rewrites", "last event"):
            table.add_column(column)
        for row in data:
            table.add_row(
                row["thread_id"],
                *(str(row[k]) for k in ("events", "nodes", "settled", "failed", "rewrites")),
                row["last_event_at"] or "",
            )
        stdout.print(table)
        return
    summary = data["summary"]
    stdout.print(
        f"thread {thread!r}: {summary['events']} events, {summary['nodes']} nodes "
        f"({summary['settled']} settled, {summary['failed']} failed), {summary['rewrites']} rewrites",
        markup=False,
    )
    nodes = Table(title="nodes", title_justify="left")
    for column in ("id", "kind", "status", "attempts", "captured", "completed"):
        nodes.add_column(column)
    for n in data["nodes"]:
        nodes.add_row(
            n["id"],
            n["kind"],
            n["status"],
            str(n["attempts"]),
            n["captured_at"],
            n["completed_at"] or "",
        )
    stdout.print(nodes)
    stdout.print(
        "edges: " + (", ".join(f"{e['source']} -> {e['target']}" for e in data["edges"]) or "none")
    )
    if data["rewrites"]:
        rewrite_history(data)


def rewrite_history(data: dict) -> None:
    """One block per proposal: decision, proposer and form, outcome, cost, budget before -> after."""
    budget = data["budget"]
    stdout.print(
        "rewrite history" + (f" (run budget {_dims(budget)})" if budget else ""), markup=False
    )
    for i, r in enumerate(data["rewrites"], 1):
        if r["decision"] == "admitted":
            head = f"admitted as rewrite {r['rewrite_id']}" + (
                "" if r["applied"] else " (not yet applied)"
            )
            detail = "new nodes: " + ", ".join(r["new_nodes"])
            if r["retired"]:
                detail += f"; retired: {', '.join(r['retired'])}"
        else:
            head = f"rejected: {r['code']} ({r['check']})"
            detail = r["reason"] or ""
        stdout.print(f"#{i:<3} {head} · by {r['proposer']} · {r['operation']}", markup=False)
        stdout.print(f"     {detail}", markup=False)
        after = _dims(r["budget_after"]) if r["decision"] == "admitted" else "unchanged"
        stdout.print(
            f"     cost {_dims(r['cost']) or '-'} · budget {_dims(r['budget_before'])} -> {after}",
            markup=False,
        )


def _dims(values: dict[str, int] | None) -> str:
    """A budget or cost, compactly: ``nodes 14 · edges 30 · ...``."""
    short = {"nodes": "n", "edges": "e", "depth": "d", "breadth": "b", "operations": "ops"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in (values or {}).items())
