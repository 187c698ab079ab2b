"""``cortex-agents validate SNAPSHOT``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cortex_agents.cli.app import app, fail_cleanly, stdout
from cortex_agents.snapshot_file import load_snapshot


@app.command()
def validate(
    snapshot: Annotated[Path, typer.Argument(help="Snapshot file (JSON, schema version 1).")],
) -> None:
    """Check a snapshot file; list every problem with its location."""
    with fail_cleanly():
        document = load_snapshot(snapshot)
    stdout.print(
        f"valid: {snapshot} ({len(document.nodes)} nodes, {len(document.edges)} edges, "
        f"{len(document.rewrites)} rewrites)",
        markup=False,
    )
