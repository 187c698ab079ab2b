"""``cortex-agents validate SNAPSHOT`` and ``cortex-agents validate DB [--thread T]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cortex_agents.cli._app import app, fail_cleanly, stderr, stdout
from cortex_agents.cli._db_cmds import open_database
from cortex_agents.errors import InvalidSnapshot
from cortex_agents.persistence import is_postgres_url
from cortex_agents.persistence._validation import ThreadReport, stored_threads, validate_thread
from cortex_agents.snapshotfile import SQLITE_HEADER, load_snapshot

__all__ = ["validate"]


def _is_database(target: str) -> bool:
    if is_postgres_url(target):
        return True
    try:
        with Path(target).open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _file(snapshot: str, as_json: bool) -> None:
    try:
        document = load_snapshot(snapshot)
    except InvalidSnapshot as exc:
        if as_json:
            print(json.dumps({"valid": False, "problems": [str(p) for p in exc.problems]}))
            # JSON asked for: the verdict goes to stdout as JSON, not as fail_cleanly's text.
            raise typer.Exit(1) from None
        raise
    if as_json:
        print(json.dumps({"valid": True, "problems": []}))
        return
    stdout.print(
        f"valid: {snapshot} ({len(document.nodes)} nodes, {len(document.edges)} edges, "
        f"{len(document.rewrites)} rewrites)",
        markup=False,
    )


def _print_thread(db: str, report: ThreadReport) -> None:
    if report.valid:
        stdout.print(
            f"valid: thread {report.thread_id!r} in {db} "
            f"({report.nodes} nodes, {report.edges} edges)",
            markup=False,
        )
    else:
        lines = report.report()
        count = len(lines)
        stderr.print(
            f"invalid thread {report.thread_id!r} in {db} ({count} problem{'s' * (count != 1)}):",
            markup=False,
        )
        for line in lines:
            stderr.print(f"  {line}", markup=False)
    if report.orphans:
        stderr.print(f"orphans ({len(report.orphans)}):", markup=False)
        for problem in report.orphans:
            stderr.print(f"  {problem}", markup=False)


@app.command()
def validate(
    target: Annotated[
        str,
        typer.Argument(
            metavar="SNAPSHOT|DB",
            help="A snapshot file (JSON), or a database (SQLite file or postgresql:// URL).",
        ),
    ],
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            help="Validate only this stored thread of the database TARGET (default: every thread).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check a snapshot file, or a database's stored threads; list every problem with its location.

    A database is checked thread by thread: every thread, or only the one
    named by --thread (with --json: a list of reports, or that thread's
    report). A stored thread is checked as its export would be (so it is valid exactly
    when its export imports), plus its database's integrity and every row a
    forensic import quarantined in it (dangling edges, cycles, orphans).
    """
    with fail_cleanly():
        # With --thread the target can only be a database, so it is never read as a file.
        if thread is None and not _is_database(target):
            _file(target, as_json)
            return
        with open_database(target) as saver:
            names = [thread] if thread is not None else stored_threads(saver)
            reports = [validate_thread(saver, name) for name in names]
    if as_json:
        shown = reports[0].to_dict() if thread is not None else [r.to_dict() for r in reports]
        print(json.dumps(shown, indent=2, ensure_ascii=False))
    elif not reports:
        stdout.print(f"valid: no threads in {target}", markup=False)
    else:
        for report in reports:
            _print_thread(target, report)
    if not all(report.valid for report in reports):
        raise typer.Exit(1)
