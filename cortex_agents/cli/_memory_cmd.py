"""``cortex-agents memory query SNAPSHOT --origin ID ...``."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from cortex_agents._timestamps import format_timestamp
from cortex_agents.cli._app import fail_cleanly, memory_app, stdout
from cortex_agents.cli._narrow import print_lines, wrap
from cortex_agents.cli._ranking_notes import column_legend, order_note, score_formula
from cortex_agents.errors import InvalidArgument
from cortex_agents.memory import (
    BUILTIN_PRESETS,
    Direction,
    GraphPrior,
    Match,
    MemoryHandle,
    Scope,
    TimeReference,
    WalkSpec,
    Weights,
)
from cortex_agents.snapshotfile import SQLITE_HEADER, SnapshotDocument, load_snapshot

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
        # float() accepts "nan" and "inf", which would make every score NaN or infinite.
        if not math.isfinite(value):
            raise InvalidArgument("--weights", f"value of {axis!r} must be finite", raw)
        values[axis] = value
    return dataclasses.replace(base, **values)


def _render(matches: tuple[Match, ...], heading: list[str], notes: list[str]) -> None:
    """The ranking at the terminal's width: ids and scores whole, the body preview cut to fit.

    No borders (they cost 10 columns at 80) and the axes headed ``tempo`` and
    ``seman`` (a legend below says so); a node id wider than its column folds
    onto the next line rather than being cut.
    """
    print_lines(stdout, heading)
    table = Table(
        box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False, expand=True
    )

    def widest(header: str, values: list[str]) -> int:  # a column's width if nothing folds
        return max([len(header), *map(len, values)])

    table.add_column("#", justify="right", no_wrap=True)
    for header in ("node", "kind"):
        values = [getattr(m, header if header == "kind" else "node_id") for m in matches]
        table.add_column(header, overflow="fold", min_width=widest(header, values))
    table.add_column("hops", justify="right", no_wrap=True)
    for header in ("score", "graph", "tempo", "seman"):
        table.add_column(header, justify="right", no_wrap=True, min_width=5)
    keys = [m.routing_key for m in matches]
    table.add_column("key", overflow="fold", min_width=widest("key", keys))
    table.add_column("body", overflow="ellipsis", no_wrap=True, ratio=1, min_width=8)
    for rank, m in enumerate(matches, 1):
        table.add_row(
            str(rank),
            m.node_id,
            m.kind,
            str(m.hops),
            *(f"{v:.3f}" for v in (m.score, m.graph, m.temporal, m.semantic)),
            m.routing_key,
            " ".join(m.body_text.split()),  # a preview: one line per match
        )
    if not matches:
        stdout.print("no matches")
        return
    stdout.print(table, soft_wrap=False)
    print_lines(stdout, [line for note in notes for line in wrap([note], stdout.width)])


def _is_sqlite_file(source: object) -> bool:
    path = Path(str(source))
    try:
        with path.open("rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


# `query`'s longer option types, named so its signature reads one flag a line (as db_cmds does)
_SourceArgument = Annotated[
    str,
    typer.Argument(
        help="A snapshot file, or a database (SQLite file or postgresql:// URL) with --thread."
    ),
]

_ThreadOption = Annotated[
    str | None,
    typer.Option("--thread", help="Read SOURCE as a database and query this thread."),
]

_ScorerOption = Annotated[
    str | None,
    typer.Option(
        help="Semantic scorer: jaccard, bm25, wordllama, wordllama+bm25, minilm, bge, ... "
        "(default: the preset's)."
    ),
]

_KindOption = Annotated[list[str] | None, typer.Option(help="Keep these stage kinds (repeatable).")]

_WeightsOption = Annotated[
    str | None, typer.Option(help="Axis weights, e.g. graph=1,temporal=0,semantic=0.")
]

_TimeReferenceOption = Annotated[
    TimeReference | None,
    typer.Option(help="Recency from the snapshot's time or the newest candidate's."),
]

_SupportOption = Annotated[
    float | None, typer.Option(help="Edge support in [0, 1] (0 turns it off).")
]

_NamedEvidenceOption = Annotated[
    float | None, typer.Option(help="Gain when the text names a candidate's evidence.")
]

_BridgeOption = Annotated[
    float | None, typer.Option(help="Gain when the best match names a candidate's evidence.")
]

_PastBoundaryOption = Annotated[
    str | None, typer.Option(help="Only nodes beyond the nearest node of this kind.")
]


@memory_app.command("query")
def query(
    source: _SourceArgument,
    origin: Annotated[str, typer.Option(help="Node whose memory is queried.")],
    thread: _ThreadOption = None,
    preset: Annotated[str, typer.Option(help="Preset the flags below override.")] = "default",
    direction: Annotated[Direction | None, typer.Option(help="Walk direction.")] = None,
    scope: Annotated[Scope | None, typer.Option(help="Which statuses may match.")] = None,
    max_distance: Annotated[int | None, typer.Option(min=1, help="Hop cut.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Matches kept after sorting.")] = None,
    text: Annotated[str | None, typer.Option(help="Query text for the semantic axis.")] = None,
    scorer: _ScorerOption = None,
    routing_key: Annotated[str | None, typer.Option(help="Keep this routing key only.")] = None,
    kind: _KindOption = None,
    weights: _WeightsOption = None,
    prior: Annotated[GraphPrior | None, typer.Option(help="Graph axis.")] = None,
    alpha: Annotated[float | None, typer.Option(help="Random-walk damping in [0, 1].")] = None,
    time_scale: Annotated[float | None, typer.Option(help="Seconds for temporal to halve.")] = None,
    time_reference: _TimeReferenceOption = None,
    support: _SupportOption = None,
    named_evidence: _NamedEvidenceOption = None,
    bridge: _BridgeOption = None,
    past_boundary: _PastBoundaryOption = None,
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
        document = _load_document(source, thread)
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
        spec = _walk_spec(preset, weights, overrides)
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
        _print_json(matches)
        return
    _print_ranking(matches, document.entry_time, origin, preset, spec, scorer_name)


def _load_document(source: str, thread: str | None) -> SnapshotDocument:
    """The snapshot file at ``source``, or ``thread``'s latest checkpoint in the database there."""
    if thread is None:
        return load_snapshot(source)
    from cortex_agents.cli._db_cmds import open_database
    from cortex_agents.persistence._transfer import export_document

    with open_database(source) as saver:
        return export_document(saver, thread)


def _walk_spec(preset: str, weights: str | None, overrides: dict[str, Any]) -> WalkSpec:
    """``preset``'s walk with the flags given on the command line (``None``: not given)."""
    base = BUILTIN_PRESETS.spec(preset)
    if weights is not None:
        overrides["weights"] = parse_weights(weights, base.weights)
    # None means the flag was not given: only given flags override the preset.
    return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})


def _print_json(matches: tuple[Match, ...]) -> None:
    """The ranking as JSON: one object per match, ids and scores only."""
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
    # Plain print, not rich: rich would wrap long lines and read `[...]` as markup.
    print(json.dumps(rows, indent=2, ensure_ascii=False))


def _print_ranking(
    matches: tuple[Match, ...],
    entry_time: datetime,
    origin: str,
    preset: str,
    spec: WalkSpec,
    scorer_name: str,
) -> None:
    """The ranking as a table under a heading that says how it was ranked, then the notes."""
    width = stdout.width
    heading = wrap(
        [
            f"memory of {origin!r} at {format_timestamp(entry_time)}:",
            f"preset {preset},",
            f"{spec.direction},",
            f"prior {spec.prior},",
            f"scorer {scorer_name}",
        ],
        width,
    )
    weights_as_dict = spec.weights.as_dict()
    notes = [
        score_formula(weights_as_dict),
        column_legend(origin, spec.prior),
        "tempo = temporal (recency); seman = semantic (text match)",
    ]
    if note := order_note([_as_row(m) for m in matches], weights_as_dict):
        notes.append(note)
    _render(matches, heading, notes)


def _as_row(match: Match) -> dict[str, Any]:
    return {
        "node_id": match.node_id,
        "score": match.score,
        **{axis: getattr(match, axis) for axis in _AXES},
    }
