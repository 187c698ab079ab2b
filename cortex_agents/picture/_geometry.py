"""Pixel geometry and palette shared by the SVG and PNG drawings.

:func:`place` turns a :class:`~cortex_agents.picture.Layout` into
boxes and arrow segments on a canvas (layers as rows, top to bottom, each
row centred; retired nodes in a last row under a rule). Pure and integer-valued,
so both drawings put everything in the same place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cortex_agents.picture._layout import Layout
from cortex_agents.picture._model import Picture, PictureNode

__all__ = [
    "BADGE_HEIGHT",
    "BADGE_Y",
    "BOX_HEIGHT",
    "EDGE_COLOR",
    "ID_Y",
    "REWRITE_COLOR",
    "STATUS_COLORS",
    "Box",
    "Geometry",
    "Palette",
    "STATUS_Y",
    "Segment",
    "badge_text",
    "fit",
    "place",
    "status_line",
]


@dataclass(frozen=True, slots=True)
class Palette:
    """How one status is painted.

    Attributes:
        fill: Box fill.
        stroke: Box border.
        text: Text colour.
    """

    fill: str
    stroke: str
    text: str


STATUS_COLORS: Final[Mapping[str, Palette]] = {
    "pending": Palette("#f3f4f6", "#6b7280", "#111827"),
    "running": Palette("#dbeafe", "#2563eb", "#1e3a8a"),
    "completed": Palette("#dcfce7", "#16a34a", "#14532d"),
    "failed": Palette("#fee2e2", "#dc2626", "#7f1d1d"),
    "retired": Palette("#e5e7eb", "#9ca3af", "#6b7280"),
}
REWRITE_COLOR: Final = "#7c3aed"
"""The outline and badge of nodes an admitted rewrite added."""
EDGE_COLOR: Final = "#374151"

BOX_HEIGHT: Final = 64
ID_Y: Final = 18
"""Where, below a box's top, the centre of its id line is; then its ``kind · status`` line."""
STATUS_Y: Final = 35
BADGE_Y: Final = 44
"""Top of the ``rewrite #N`` badge, inside the box so no arrowhead ever covers it."""
BADGE_HEIGHT: Final = 15
MIN_BOX_WIDTH: Final = 150
MAX_BOX_WIDTH: Final = 260
CHAR_WIDTH: Final = 7
"""Average advance of a 12px sans-serif character, for sizing boxes and cutting labels."""
GAP_X: Final = 36
GAP_Y: Final = 56
MARGIN: Final = 24
RETIRED_GAP: Final = 40


@dataclass(frozen=True, slots=True)
class Box:
    """A node's rectangle (top-left corner, size)."""

    x: int
    y: int
    width: int
    height: int

    @property
    def centre_x(self) -> int:
        """The horizontal middle."""
        return self.x + self.width // 2


@dataclass(frozen=True, slots=True)
class Segment:
    """An arrow from ``(x1, y1)`` on the source's bottom to ``(x2, y2)`` on the target's top."""

    source: str
    target: str
    x1: int
    y1: int
    x2: int
    y2: int


@dataclass(frozen=True, slots=True)
class Geometry:
    """The drawing's layout in pixels.

    Attributes:
        width: Canvas width.
        height: Canvas height (graph area only; renderers add their own header or footer).
        boxes: Every node's box, by id.
        segments: Every live edge, in the picture's edge order.
        retired_rule: The y of the rule above the retired row, ``None`` when none retired.
        box_width: The common box width.
    """

    width: int
    height: int
    boxes: Mapping[str, Box]
    segments: tuple[Segment, ...]
    retired_rule: int | None
    box_width: int


def status_line(node: PictureNode) -> str:
    """A node's second label line: ``kind · status``."""
    return f"{node.kind} · {node.status}"


def badge_text(node: PictureNode) -> str | None:
    """The badge of a rewrite-added or rewrite-retired node, else ``None``."""
    if node.rewrite_id is not None:
        return f"rewrite #{node.rewrite_id}"
    if node.retired_by is not None:
        return f"retired by #{node.retired_by}"
    return None


def fit(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, with an ellipsis when cut."""
    return text if len(text) <= chars else text[: max(1, chars - 1)] + "…"


def _row(ids: tuple[str, ...], y: int, box_width: int, width: int) -> dict[str, Box]:
    span = len(ids) * box_width + (len(ids) - 1) * GAP_X
    left = (width - span) // 2
    return {
        n: Box(left + j * (box_width + GAP_X), y, box_width, BOX_HEIGHT) for j, n in enumerate(ids)
    }


def _ports(count: int, box: Box) -> list[int]:
    """``count`` attachment points spread along a box's width."""
    # Evenly inside the box, never at its corners; integer division keeps SVG and
    # PNG coordinates identical.
    return [box.x + box.width * (k + 1) // (count + 1) for k in range(count)]


def place(picture: Picture, shape: Layout) -> Geometry:
    """Boxes and arrows for ``shape``, the layout of ``picture``."""
    longest = max(
        (max(len(n.id), len(status_line(n))) for n in picture.nodes),
        default=0,
    )
    # One width for every box, so rows line up; 20 px pads the text; past
    # MAX_BOX_WIDTH labels are cut with `fit` rather than widening the canvas.
    box_width = min(MAX_BOX_WIDTH, max(MIN_BOX_WIDTH, longest * CHAR_WIDTH + 20))
    rows = [*shape.layers, shape.retired] if shape.retired else list(shape.layers)
    widest = max((len(r) for r in rows), default=1)
    width = 2 * MARGIN + max(1, widest) * box_width + max(0, widest - 1) * GAP_X
    boxes: dict[str, Box] = {}
    y = MARGIN
    for layer in shape.layers:
        boxes.update(_row(layer, y, box_width, width))
        y += BOX_HEIGHT + GAP_Y
    retired_rule = None
    if shape.retired:
        # y - GAP_Y is the bottom of the last live row; the rule goes half a
        # RETIRED_GAP below it, and the retired row a whole RETIRED_GAP below the rule.
        retired_rule = y - GAP_Y + RETIRED_GAP // 2 if shape.layers else y
        y = retired_rule + RETIRED_GAP
        boxes.update(_row(shape.retired, y, box_width, width))
        y += BOX_HEIGHT + GAP_Y
    height = max(y - GAP_Y + MARGIN, 2 * MARGIN + BOX_HEIGHT)
    segments = _segments(picture, boxes)
    return Geometry(width, height, boxes, segments, retired_rule, box_width)


def _segments(picture: Picture, boxes: Mapping[str, Box]) -> tuple[Segment, ...]:
    # Ports are ordered by the far end's x so arrows leaving or entering a box do not cross there.
    outgoing: dict[str, list[str]] = {}
    incoming: dict[str, list[str]] = {}
    for source, target in picture.edges:
        outgoing.setdefault(source, []).append(target)
        incoming.setdefault(target, []).append(source)
    start: dict[tuple[str, str], int] = {}
    for source, targets in outgoing.items():
        ordered = sorted(targets, key=lambda t: (boxes[t].x, boxes[t].y))
        for t, x in zip(ordered, _ports(len(ordered), boxes[source]), strict=True):
            start[source, t] = x
    end: dict[tuple[str, str], int] = {}
    for target, sources in incoming.items():
        ordered = sorted(sources, key=lambda s: (boxes[s].x, boxes[s].y))
        for s, x in zip(ordered, _ports(len(ordered), boxes[target]), strict=True):
            end[s, target] = x
    return tuple(
        Segment(
            s,
            t,
            start[s, t],
            boxes[s].y + boxes[s].height,
            end[s, t],
            boxes[t].y,
        )
        for s, t in picture.edges
    )
