"""A :class:`~cortex_agents.picture.Picture` as a Mermaid flowchart.

Node ids in the chart are ``n0``, ``n1``, ... (scheduling order), so no run's
ids — ``anchor:local`` included — can break the syntax; every label is
quoted with Mermaid's entity codes for the characters that would end or
re-interpret it. Nodes a rewrite added get the ``rewrite`` class on top of
their status class, retired nodes sit in a ``retired`` subgraph, and each
rejected proposal is both a ``%%`` comment and a note node in a
``rejected proposals`` subgraph.
"""

from __future__ import annotations

from typing import Final

from cortex_agents.errors import InvalidArgument
from cortex_agents.picture._geometry import REWRITE_COLOR, STATUS_COLORS, badge_text, fit
from cortex_agents.picture._layout import Layout, layout
from cortex_agents.picture._model import Picture

__all__ = ["CLASS_DEFS", "escape_label", "to_mermaid"]

_ENTITIES: Final = {
    '"': "#quot;",
    # `#` starts Mermaid's own entity codes, so a literal one must be escaped too.
    "#": "#35;",
    "&": "#amp;",
    "<": "#lt;",
    ">": "#gt;",
    "`": "#96;",
}
REASON_CHARS: Final = 160
"""How much of a rejection reason a note node shows (the ``%%`` comment keeps it whole)."""


def _class_defs() -> dict[str, str]:
    defs = {
        status: f"fill:{p.fill},stroke:{p.stroke},color:{p.text}"
        for status, p in STATUS_COLORS.items()
    }
    defs["retired"] += ",stroke-dasharray:2 2"
    defs["rewrite"] = f"stroke:{REWRITE_COLOR},stroke-width:3px,stroke-dasharray:6 3"
    defs["rejected"] = "fill:#fff7ed,stroke:#ea580c,color:#7c2d12"
    return defs


CLASS_DEFS: Final = _class_defs()
"""The chart's ``classDef`` styles by class name: one per status, ``rewrite`` and ``rejected``."""


def escape_label(text: str) -> str:
    """``text`` safe inside a quoted Mermaid label (one line; markup shown, not applied)."""
    out = []
    for ch in text:
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        # Control characters (newlines included) would end the statement: a label is one line.
        elif ch < " " or ch == "\x7f":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _comment(text: str) -> str:
    """One comment line; escaped too, so the source is safe pasted into an HTML page."""
    return escape_label(" ".join(text.split()))


def _node_label(node_id: str, kind: str, status: str, badge: str | None) -> str:
    label = f"{escape_label(node_id)}<br/>{escape_label(f'{kind} · {status}')}"
    if badge is not None:  # our own text: "#<digits>" before the closing quote is no entity
        label += f"<br/>{badge}"
    return label


def to_mermaid(picture: Picture, shape: Layout | None = None, *, direction: str = "TD") -> str:
    """The Mermaid source of ``picture``.

    Args:
        picture: The render model.
        shape: Its layout (computed when ``None``); nodes are declared layer by layer.
        direction: ``TD`` (top-down) or ``LR``.

    Raises:
        InvalidArgument: (a ``ValueError``) an unknown direction.
    """
    if direction not in ("TD", "LR"):
        raise InvalidArgument("direction", "must be 'TD' or 'LR'", direction)
    shape = shape if shape is not None else layout(picture)
    by_id = {n.id: n for n in picture.nodes}
    # Chart ids from scheduling order, not run ids: `anchor:local`, spaces or
    # Mermaid keywords (`end`) in a run id would break the syntax.
    ref = {n.id: f"n{n.order}" for n in picture.nodes}
    lines = [f"flowchart {direction}", f"%% {_comment(picture.title)}"]
    for r in picture.admitted:
        added = ", ".join(r.nodes) or "none"
        form = f"{r.op}{f'/{r.mode}' if r.mode else ''}"
        lines.append(
            f"%% admitted rewrite {r.rewrite_id} by "
            + _comment(f"{r.proposer}: {form} at {r.anchor}; added {added}")
            + ("" if r.applied else " (not applied yet)")
        )
    for p in picture.rejected:
        lines.append(
            "%% rejected proposal by " + _comment(f"{p.proposer}: {p.code} ({p.check}) {p.reason}")
        )
    for name, style in CLASS_DEFS.items():
        lines.append(f"classDef {name} {style}")

    def declare(node_id: str, indent: str = "    ") -> str:
        n = by_id[node_id]
        return f'{indent}{ref[n.id]}["{_node_label(n.id, n.kind, n.status, badge_text(n))}"]'

    for layer in shape.layers:
        lines.extend(declare(n) for n in layer)
    if shape.retired:
        lines.append('    subgraph retired_nodes["retired"]')
        lines.extend(declare(n, "        ") for n in shape.retired)
        lines.append("    end")
    # Edges after every declaration: Mermaid creates a node at its first mention,
    # and the declarations, layer by layer, are what give it its label and order.
    lines.extend(f"    {ref[s]} --> {ref[t]}" for s, t in picture.edges)
    if picture.rejected:
        lines.append('    subgraph rejected_proposals["rejected proposals"]')
        for p in picture.rejected:
            text = (
                f"{escape_label(p.proposer)}: {escape_label(p.code)}"
                f"<br/>{escape_label(p.check)}"
                f"<br/>{escape_label(fit(_comment(p.reason), REASON_CHARS))}"
            )
            lines.append(f'        r{p.index}["{text}"]')
        lines.append("    end")
    for status in STATUS_COLORS:
        members = [ref[n.id] for n in picture.nodes if n.status == status]
        if members:
            lines.append(f"class {','.join(members)} {status}")
    rewritten = [ref[n.id] for n in picture.nodes if n.rewrite_id is not None]
    if rewritten:
        # A second class, not a replacement: `rewrite` sets only the stroke, so the
        # node keeps its status fill and gains the rewrite outline.
        lines.append(f"class {','.join(rewritten)} rewrite")
    if picture.rejected:
        lines.append(f"class {','.join(f'r{p.index}' for p in picture.rejected)} rejected")
    return "\n".join(lines) + "\n"
