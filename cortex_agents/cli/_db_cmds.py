"""``cortex-agents export | import | inspect``: a thread's substrate in and out of a database."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from cortex_agents.cli._app import app, fail_cleanly, stderr, stdout, write_output
from cortex_agents.cli._narrow import print_lines, print_table, wrap
from cortex_agents.errors import InvalidArgument, InvalidSnapshot
from cortex_agents.persistence import CortexSaver, is_postgres_url, open_saver, require_database
from cortex_agents.persistence._backends import check_writable
from cortex_agents.persistence._inspection import describe_thread, list_threads
from cortex_agents.persistence._transactions import driver_errors
from cortex_agents.persistence._transfer import (
    export_as_seen_by,
    export_document,
    import_document,
    import_salvage,
    quarantined_rows,
)
from cortex_agents.snapshotfile import (
    check_identifier,
    checked_dump,
    load_snapshot,
    load_snapshot_forensic,
)

DbArgument = Annotated[str, typer.Argument(help="A SQLite file or a postgresql:// URL.")]
ThreadOption = Annotated[str, typer.Option("--thread", help="The thread (run) id.")]
AdoptOption = Annotated[
    bool,
    typer.Option(
        "--adopt", help="Add cortex tables to an existing database of another application."
    ),
]
SkipCheckOption = Annotated[
    bool,
    typer.Option(
        "--skip-integrity-check",
        help="Write to a SQLite file even if it fails SQLite's quick integrity check.",
    ),
]


@contextmanager
def open_database(
    db: str, *, create: bool = False, adopt: bool = False, check_integrity: bool = True
) -> Iterator[CortexSaver]:
    """Open a database for the CLI; driver errors inside the block become StorageError.

    Without ``create`` (commands that only read) it must already be a
    cortex-agents database, checked without writing anything. With it, an
    existing database must pass SQLite's quick integrity check and be a
    cortex-agents one, unless ``check_integrity=False`` / ``adopt=True``.
    """
    # A Postgres URL may hold a password: errors name it only as "database".
    with driver_errors(f"database {db!r}" if not is_postgres_url(db) else "database"):
        if create:
            check_writable(db, adopt=adopt, check_integrity=check_integrity)
        else:
            require_database(db)
        with open_saver(db) as saver:
            yield saver


def _database_files(db: str) -> list[Path]:
    """A SQLite database's files (itself, its journal and lock sidecars)."""
    if is_postgres_url(db):
        return []
    # SQLite's own sidecars, and the writer-lock file persistence keeps beside the database.
    return [Path(db + suffix) for suffix in ("", "-wal", "-shm", "-journal", ".cortex-locks")]


@contextmanager
def new_files_removed_on_failure(db: str) -> Iterator[None]:
    """If the block fails, delete the database files it created (a refusal leaves nothing)."""
    existed = {path for path in _database_files(db) if path.exists()}
    try:
        yield
    # BaseException: Ctrl-C or typer.Exit during an import must not leave a
    # half-created database behind either.
    except BaseException:
        for path in _database_files(db):
            if path not in existed:
                path.unlink(missing_ok=True)
        raise


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
        try:
            text = checked_dump(document)
        except InvalidSnapshot as exc:
            stderr.print(
                f"error: {thread!r} does not fit a snapshot file that `import` accepts; "
                f"nothing written ({len(exc.problems)} problems):",
                markup=False,
            )
            for problem in exc.problems:
                stderr.print(f"  {problem}", markup=False)
            raise typer.Exit(1) from None
        write_output(output, text)
        quarantined, _ = quarantined_rows(saver, thread) if as_seen_by is None else ((), ())
    if quarantined:
        stderr.print(
            f"note: {len(quarantined)} rows a forensic import quarantined in {thread!r} are not "
            f"exported; list them with `cortex-agents validate {db} --thread {thread}`",
            markup=False,
        )
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
        bool,
        typer.Option(
            help="Import an invalid file: the valid rows into the graph, every other row "
            "quarantined in the thread; then report them all."
        ),
    ] = False,
    adopt: AdoptOption = False,
    skip_integrity_check: SkipCheckOption = False,
) -> None:
    """Import a snapshot file as a new thread (strict: an invalid file writes nothing)."""
    with fail_cleanly():
        check_identifier(thread, "--thread")
        salvage = load_snapshot_forensic(snapshot) if forensic else None
        document = salvage.document if salvage else load_snapshot(snapshot)
        with (
            new_files_removed_on_failure(db),
            open_database(
                db, create=True, adopt=adopt, check_integrity=not skip_integrity_check
            ) as saver,
        ):
            if salvage is not None:
                report = import_salvage(saver, thread, salvage)
            else:
                report = import_document(saver, thread, document)
    stdout.print(
        f"imported {thread!r}: {report.nodes} nodes, {report.edges} edges, {report.events} events",
        markup=False,
    )
    if report.quarantined:
        stderr.print(
            f"quarantined in the thread, not in its graph ({len(report.quarantined)} rows, "
            f"{len(report.problems)} problems):",
            markup=False,
        )
        for row in report.quarantined:
            for problem in row.problems:
                stderr.print(f"  {problem} [{row.category}]", markup=False)
    if report.orphans:
        stderr.print(f"orphans ({len(report.orphans)}):", markup=False)
        for problem in report.orphans:
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
    if thread is None:
        with fail_cleanly(), open_database(db) as saver:
            threads = [t.to_dict() for t in list_threads(saver)]
        if as_json:
            print(json.dumps(threads, indent=2, ensure_ascii=False))
            return
        print_table(
            stdout,
            f"threads in {db}",
            ("thread", "events", "nodes", "settled", "failed", "rewrites", "last event"),
            [
                [
                    row["thread_id"],
                    *(str(row[k]) for k in ("events", "nodes", "settled", "failed", "rewrites")),
                    row["last_event_at"] or "",
                ]
                for row in threads
            ],
            right=frozenset({"events", "nodes", "settled", "failed", "rewrites"}),
        )
        return
    with fail_cleanly(), open_database(db) as saver:
        data = describe_thread(saver, thread)
    if as_json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    summary = data["summary"]
    width = stdout.width
    print_lines(
        stdout,
        wrap(
            [
                f"thread {thread!r}:",
                f"{summary['events']} events,",
                f"{summary['nodes']} nodes ({summary['settled']} settled, "
                f"{summary['failed']} failed),",
                f"{summary['rewrites']} rewrites",
            ],
            width,
        ),
    )
    print_table(
        stdout,
        "nodes",
        ("id", "kind", "status", "attempts", "captured", "completed"),
        [
            [
                n["id"],
                n["kind"],
                n["status"],
                str(n["attempts"]),
                n["captured_at"],
                n["completed_at"] or "",
            ]
            for n in data["nodes"]
        ],
        right=frozenset({"attempts"}),
    )
    edges = [f"{e['source']} -> {e['target']}" for e in data["edges"]] or ["none"]
    print_lines(stdout, wrap(edges, width, sep=", ", first="edges: ", indent="  "))
    if data["rewrites"]:
        rewrite_history(data)


def rewrite_history(data: Mapping[str, Any]) -> None:
    """One block per proposal: decision, proposer and form, outcome, cost, budget before -> after."""
    budget = data["budget"]
    print_lines(
        stdout,
        wrap(
            ["rewrite history", *([f"(run budget {_dims(budget)})"] if budget else [])],
            stdout.width,
        ),
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
        after = _dims(r["budget_after"]) if r["decision"] == "admitted" else "unchanged"
        # one line each (cost and budget apart: together they overran 80 columns)
        for first, line in (
            (f"#{i:<3} ", f"{head} · by {r['proposer']} · {r['operation']}"),
            ("     ", detail),
            ("     ", f"cost {_dims(r['cost']) or '-'}"),
            ("     ", f"budget {_dims(r['budget_before'])} -> {after}"),
        ):
            print_lines(stdout, wrap(line.split(" "), stdout.width, first=first, indent=" " * 7))


def _dims(values: dict[str, int] | None) -> str:
    """A budget or cost, compactly: ``nodes 14 · edges 30 · ...``."""
    short = {"nodes": "n", "edges": "e", "depth": "d", "breadth": "b", "operations": "ops"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in (values or {}).items())
