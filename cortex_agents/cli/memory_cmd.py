"""``cortex-agents memory query SNAPSHOT --origin ID ...``."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import JustifyMethod
from rich.table import Table

from cortex_agents.cli.app import fail_cleanly, memory_app, stdout
from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    Direction,
    GraphPrior,
    Match,
    MemoryHandle,
    Scope,
    TimeReference,
    Weights,
)
from cortex_agents.snapshot_file import SQLITE_HEADER, load_snapshot
from cortex_agents.timestamps import format_timestamp

_AXES = ("graph", "temporal", "semantic")


def parse_weights(text: str, base: Weights) -> Weights:
    """``graph=1,temporal=0`` over ``base``: named axes change, the others keep their value.

    Raises:
        InvalidArgument: an unknown axis, a repeated axis or a value that is not a number.
    """
    values: dict[str, float] = {}
    for part in text.split(","):
        axis, sep, raw = part.partition("=")
        axis = axis.strip()
        if not sep or axis not in _AXES:
            raise InvalidArgument(
                "--weights",
                "must be comma-separated AXIS=NUMBER with AXIS in graph, temporal, semantic",
                text,
            )
        if axis in values:
            raise InvalidArgument("--weights", f"names {axis!r} twice", text)
        try:
            value = float(raw)
        except ValueError:
            raise InvalidArgument("--weights", f"value of {axis!r} must be a number", raw) from None
        if not math.isfinite(value):
            raise InvalidArgument("--weights", f"value of {axis!r} must be finite", raw)
        values[axis] = value
    return dataclasses.replace(base, **values)


def _render(matches: tuple[Match, ...], title: str) -> None:
    rows = [
        [
            str(rank),
            m.node_id,
            m.kind,
            str(m.hops),
            f"{m.score:.3f}",
            f"{m.graph:.3f}",
            f"{m.temporal:.3f}",
            f"{m.semantic:.3f}",
            m.routing_key,
        ]
        for rank, m in enumerate(matches, 1)
    ]
    headers = ["#", "node", "kind", "hops", "score", "graph", "temporal", "semantic", "key"]
    table = Table(title=title, title_justify="left", expand=True)
    for i, header in enumerate(headers):
        width = max([len(header), *(len(row[i]) for row in rows)])
        justify: JustifyMethod = "right" if header in {"#", "hops"} else "left"
        table.add_column(header, justify=justify, no_wrap=True, min_width=width)
    table.add_column("body", overflow="ellipsis", no_wrap=True, ratio=1, min_width=12)
    for row, m in zip(rows, matches, strict=True):
        table.add_row(*row, " ".join(m.body_text.split()))  # one line per match
    stdout.print(table)
    if not matches:
        stdout.print("no matches")


def _is_sqlite_file(source: object) -> bool:
    path = Path(str(source))
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


@memory_app.command("query")
def query(
    source: Annotated[
        str,
        typer.Argument(
            help="A snapshot file, or a database (SQLite file or postgresql:// URL) with --thread."
        ),
    ],
    origin: Annotated[str, typer.Option(help="Node whose memory is queried.")],
    thread: Annotated[
        str | None,
        typer.Option("--thread", help="Read SOURCE as a database and query this thread."),
    ] = None,
    preset: Annotated[str, typer.Option(help="Preset the flags below override.")] = "default",
    direction: Annotated[Direction | None, typer.Option(help="Walk direction.")] = None,
    scope: Annotated[Scope | None, typer.Option(help="Which statuses may match.")] = None,
    max_distance: Annotated[int | None, typer.Option(min=1, help="Hop cut.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Matches kept after sorting.")] = None,
    text: Annotated[str | None, typer.Option(help="Query text for the semantic axis.")] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            help="Semantic scorer: jaccard, bm25, wordllama, wordllama+bm25, minilm, bge, ... "
            "(default: the preset's)."
        ),
    ] = None,
    routing_key: Annotated[str | None, typer.Option(help="Keep this routing key only.")] = None,
    kind: Annotated[
        list[str] | None, typer.Option(help="Keep these stage kinds (repeatable).")
    ] = None,
    weights: Annotated[
        str | None, typer.Option(help="Axis weights, e.g. graph=1,temporal=0,semantic=0.")
    ] = None,
    prior: Annotated[GraphPrior | None, typer.Option(help="Graph axis.")] = None,
    alpha: Annotated[float | None, typer.Option(help="Random-walk damping in [0, 1].")] = None,
    time_scale: Annotated[float | None, typer.Option(help="Seconds for temporal to halve.")] = None,
    time_reference: Annotated[
        TimeReference | None,
        typer.Option(help="Recency from the snapshot's time or the newest candidate's."),
    ] = None,
    support: Annotated[
        float | None, typer.Option(help="Edge support in [0, 1] (0 turns it off).")
    ] = None,
    named_evidence: Annotated[
        float | None, typer.Option(help="Gain when the text names a candidate's evidence.")
    ] = None,
    bridge: Annotated[
        float | None, typer.Option(help="Gain when the best match names a candidate's evidence.")
    ] = None,
    past_boundary: Annotated[
        str | None, typer.Option(help="Only nodes beyond the nearest node of this kind.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rank the settled memory of ORIGIN, referenced at the snapshot's entry time.

    From a database, the thread's latest checkpoint is queried, referenced at
    its newest event.
    """
    if thread is None and _is_sqlite_file(source):  # a usage error: exit 2
        raise typer.BadParameter(
            "is required when SOURCE is a SQLite database", param_hint="--thread"
        )
    with fail_cleanly():
        if thread is None:
            document = load_snapshot(source)
        else:
            from cortex_agents.cli.db_cmds import open_database
            from cortex_agents.persistence.transfer import export_document

            with open_database(source) as saver:
                document = export_document(saver, thread)
        base = BUILTIN_PRESETS.spec(preset)
        overrides: dict[str, Any] = {
            "direction": direction,
            "scope": scope,
            "max_distance": max_distance,
            "limit": limit,
            "prior": prior,
            "alpha": alpha,
            "time_scale": time_scale,
            "time_reference": time_reference,
            "support": support,
            "named_evidence": named_evidence,
            "bridge": bridge,
            "past_boundary": past_boundary,
        }
        if weights is not None:
            overrides["weights"] = parse_weights(weights, base.weights)
        spec = dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})
        handle = MemoryHandle(document.to_memory_snapshot(), origin)
        kinds = frozenset(kind) if kind else None
        matches = handle.query(
            spec,
            BUILTIN_PRESETS.query(
                preset, text=text, routing_key=routing_key, scorer=scorer, kinds=kinds
            ),
        )
        scorer_name = scorer or BUILTIN_PRESETS.resolve(preset).scorer
    if as_json:
        rows = [
            {
                "node_id": m.node_id,
                "score": m.score,
                "hops": m.hops,
                "graph": m.graph,
                "temporal": m.temporal,
                "semantic": m.semantic,
            }
            for m in matches
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    title = (
        f"memory of {origin!r} at {format_timestamp(document.entry_time)} — preset {preset}, "
        f"{spec.direction}, {spec.prior}, weights {spec.weights.as_dict()}, scorer {scorer_name}"
    )
    _render(matches, title)
