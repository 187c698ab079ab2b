"""A :class:`~cortex_agents.picture.Picture` as an inline SVG drawing.

Boxes coloured by status, arrows with markers, a dashed violet outline and a
``rewrite #N`` badge on nodes a rewrite added, retired nodes greyed and
struck through under a ``retired`` rule. Every piece of run data is escaped;
each box carries a ``<title>`` (hover text) with its id, kind, status and
output or error.
"""

from __future__ import annotations

from html import escape
from typing import Final

from cortex_agents.picture._geometry import (
    BADGE_HEIGHT,
    BADGE_Y,
    EDGE_COLOR,
    ID_Y,
    REWRITE_COLOR,
    STATUS_COLORS,
    STATUS_Y,
    Geometry,
    badge_text,
    fit,
    place,
    status_line,
)
from cortex_agents.picture._layout import Layout, layout
from cortex_agents.picture._model import Picture, PictureNode

__all__ = ["to_svg"]

_FONT: Final = "font-family=\"ui-sans-serif, system-ui, 'Segoe UI', Helvetica, Arial, sans-serif\""


def _a(value: object) -> str:
    """An attribute value or text node, escaped."""
    return escape(str(value), quote=True)


def _tooltip(node: PictureNode) -> str:
    lines = [node.id, status_line(node), f"attempts: {node.attempts}"]
    if (badge := badge_text(node)) is not None:
        lines.append(badge)
    if node.error:
        lines.append(f"error: {node.error}")
    if node.output:
        lines.append(f"output: {node.output}")
    return "\n".join(lines)


def _node(node: PictureNode, geometry: Geometry) -> list[str]:
    box = geometry.boxes[node.id]
    palette = STATUS_COLORS.get(node.status, STATUS_COLORS["pending"])
    # 7 px per character (CHAR_WIDTH) after 8 px padding each side.
    chars = (box.width - 16) // 7
    added = node.rewrite_id is not None
    stroke = REWRITE_COLOR if added else palette.stroke
    dash = (
        # A rewrite-added node's long dash wins over the retired short dash: a node
        # both added and later retired is shown as added (its badge says the rest).
        ' stroke-dasharray="7 4"' if added else (' stroke-dasharray="3 3"' if node.retired else "")
    )
    classes = f"node status-{node.status}{' rewrite' if added else ''}"
    out = [
        f'<g class="{_a(classes)}" data-id="{_a(node.id)}">',
        f"<title>{_a(_tooltip(node))}</title>",
        f'<rect x="{box.x}" y="{box.y}" width="{box.width}" height="{box.height}" rx="7" '
        f'fill="{palette.fill}" stroke="{stroke}" stroke-width="{3 if added else 1.5}"{dash}/>',
    ]
    strike = ' text-decoration="line-through"' if node.retired else ""
    out.append(
        f'<text x="{box.centre_x}" y="{box.y + ID_Y}" dominant-baseline="central" '
        f'text-anchor="middle" font-size="13" font-weight="600" fill="{palette.text}"{strike}>'
        f"{_a(fit(node.id, chars))}</text>"
    )
    out.append(
        f'<text x="{box.centre_x}" y="{box.y + STATUS_Y}" dominant-baseline="central" '
        f'text-anchor="middle" font-size="11" fill="{palette.text}">'
        f"{_a(fit(status_line(node), chars + 2))}</text>"
    )
    if node.retired:  # an explicit rule: text-decoration is not drawn by every SVG viewer
        out.append(
            f'<line x1="{box.x + 8}" y1="{box.y + ID_Y}" x2="{box.x + box.width - 8}" '
            f'y2="{box.y + ID_Y}" stroke="{palette.stroke}" stroke-width="1.5"/>'
        )
    if (badge := badge_text(node)) is not None:
        width = 7 * len(badge) + 12
        x, y = box.centre_x - width // 2, box.y + BADGE_Y
        colour = REWRITE_COLOR if added else palette.stroke
        out.append(
            f'<rect class="badge" x="{x}" y="{y}" width="{width}" height="{BADGE_HEIGHT}" '
            f'rx="7" fill="{colour}"/><text x="{box.centre_x}" y="{y + BADGE_HEIGHT // 2 + 1}" '
            'dominant-baseline="central" text-anchor="middle" font-size="10.5" '
            f'font-weight="600" fill="#ffffff">{_a(badge)}</text>'
        )
    out.append("</g>")
    return out


def to_svg(picture: Picture, shape: Layout | None = None) -> str:
    """The SVG element drawing ``picture`` (no XML declaration: ready to inline in HTML).

    Args:
        picture: The render model.
        shape: Its layout (computed when ``None``).
    """
    shape = shape if shape is not None else layout(picture)
    geometry = place(picture, shape)
    w, h = geometry.width, geometry.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{_a(picture.title)}" {_FONT}>',
        "<defs>",
        '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        # refX=10 puts the arrow's tip, not its middle, on the line's end at the target's top.
        f'markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{EDGE_COLOR}"/></marker>',
        "</defs>",
        f'<rect width="{w}" height="{h}" fill="#ffffff"/>',
    ]
    for seg in geometry.segments:
        out.append(
            f'<line class="edge" data-source="{_a(seg.source)}" data-target="{_a(seg.target)}" '
            f'x1="{seg.x1}" y1="{seg.y1}" x2="{seg.x2}" y2="{seg.y2}" stroke="{EDGE_COLOR}" '
            'stroke-width="1.5" marker-end="url(#arrow)"/>'
        )
    if geometry.retired_rule is not None:
        y = geometry.retired_rule
        out.append(
            f'<line x1="12" y1="{y}" x2="{w - 12}" y2="{y}" stroke="#9ca3af" '
            'stroke-dasharray="6 4"/>'
            f'<text x="14" y="{y + 15}" font-size="12" fill="#6b7280">retired (out of the graph)</text>'
        )
    for node in picture.nodes:
        out.extend(_node(node, geometry))
    out.append("</svg>")
    return "\n".join(out)
