"""A :class:`~cortex_agents.picture.Picture` as a PNG image (Pillow).

The same boxes and arrows as the SVG drawing (:func:`~cortex_agents.picture._geometry.place`),
a title and legend above, and a footer listing the admitted rewrites and the
rejected proposals. Pillow's bundled default font is used, so nothing is
fetched or looked up on the system, and no metadata chunk (time, software)
is written: the same picture gives the same bytes.

Pillow is the ``[png]`` extra (``pip install 'cortex-agents[png]'``);
without it, importing this module raises :class:`~cortex_agents.errors.MissingExtra`.
"""

from __future__ import annotations

import io
import math
from typing import Final

from cortex_agents.errors import MissingExtra

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError as missing:  # pillow is the [png] extra
    raise MissingExtra("png", "PNG output", "pillow") from missing

from cortex_agents.picture._geometry import (
    BADGE_HEIGHT,
    BADGE_Y,
    EDGE_COLOR,
    ID_Y,
    REWRITE_COLOR,
    STATUS_COLORS,
    STATUS_Y,
    Box,
    Geometry,
    badge_text,
    place,
    status_line,
)
from cortex_agents.picture._layout import Layout, layout
from cortex_agents.picture._model import Picture, PictureNode

__all__ = ["to_png"]

HEADER: Final = 56
LINE: Final = 16
_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


def _fonts() -> tuple[_Font, _Font, _Font]:
    return (
        # load_default(size=...) (Pillow >= 10.1, the extra's lower bound) gives the
        # bundled scalable font: no system font lookup, the same glyphs everywhere.
        ImageFont.load_default(size=13),
        ImageFont.load_default(size=11),
        ImageFont.load_default(size=16),
    )


def _fit(draw: ImageDraw.ImageDraw, text: str, font: _Font, width: float) -> str:
    """``text`` cut (with an ellipsis) to fit ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def _wrap(draw: ImageDraw.ImageDraw, text: str, font: _Font, width: float) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and draw.textlength(candidate, font=font) > width:
            lines.append(current)
            # A wrapped continuation is indented, so each footer entry reads as one item.
            current = "    " + word
        else:
            current = candidate
    if current:
        lines.append(current)
    return [_fit(draw, line, font, width) for line in lines]


def _arrow(draw: ImageDraw.ImageDraw, x1: int, y1: int, x2: int, y2: int) -> None:
    draw.line((x1, y1, x2, y2), fill=EDGE_COLOR, width=2)
    angle = math.atan2(y2 - y1, x2 - x1)
    head = [
        (x2, y2),
        (x2 - 10 * math.cos(angle - 0.4), y2 - 10 * math.sin(angle - 0.4)),
        (x2 - 10 * math.cos(angle + 0.4), y2 - 10 * math.sin(angle + 0.4)),
    ]
    # Rounded so last-bit differences of cos/sin between platforms' maths
    # libraries do not reach the pixels: the PNG must be the same bytes everywhere.
    draw.polygon([(round(x, 2), round(y, 2)) for x, y in head], fill=EDGE_COLOR)


def _dashed_rect(draw: ImageDraw.ImageDraw, box: Box, colour: str, width: int) -> None:
    x0, y0, x1, y1 = box.x, box.y, box.x + box.width, box.y + box.height
    for start in range(x0, x1, 11):
        end = min(start + 7, x1)
        draw.line((start, y0, end, y0), fill=colour, width=width)
        draw.line((start, y1, end, y1), fill=colour, width=width)
    for start in range(y0, y1, 11):
        end = min(start + 7, y1)
        draw.line((x0, start, x0, end), fill=colour, width=width)
        draw.line((x1, start, x1, end), fill=colour, width=width)


def _node(
    draw: ImageDraw.ImageDraw, node: PictureNode, box: Box, fonts: tuple[_Font, _Font, _Font]
) -> None:
    bold, small, _ = fonts
    palette = STATUS_COLORS.get(node.status, STATUS_COLORS["pending"])
    added = node.rewrite_id is not None
    rect = (box.x, box.y, box.x + box.width, box.y + box.height)
    draw.rounded_rectangle(rect, radius=7, fill=palette.fill, outline=palette.stroke, width=2)
    if added:
        _dashed_rect(draw, box, REWRITE_COLOR, 3)
    room = box.width - 14
    draw.text(
        (box.centre_x, box.y + ID_Y),
        _fit(draw, node.id, bold, room),
        font=bold,
        fill=palette.text,
        anchor="mm",
    )
    draw.text(
        (box.centre_x, box.y + STATUS_Y),
        _fit(draw, status_line(node), small, room),
        font=small,
        fill=palette.text,
        anchor="mm",
    )
    if node.retired:
        y = box.y + ID_Y
        draw.line((box.x + 8, y, box.x + box.width - 8, y), fill=palette.stroke, width=2)
    if (badge := badge_text(node)) is not None:
        width = int(draw.textlength(badge, font=small)) + 14
        x, y = box.centre_x - width // 2, box.y + BADGE_Y
        colour = REWRITE_COLOR if added else palette.stroke
        draw.rounded_rectangle((x, y, x + width, y + BADGE_HEIGHT), radius=7, fill=colour)
        draw.text(
            (box.centre_x, y + BADGE_HEIGHT // 2), badge, font=small, fill="#ffffff", anchor="mm"
        )


def _footer_lines(
    draw: ImageDraw.ImageDraw, picture: Picture, font: _Font, width: int
) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    if picture.admitted:
        lines.append(("admitted rewrites:", "#111827"))
        for r in picture.admitted:
            added = ", ".join(r.nodes) or "none"
            text = f"#{r.rewrite_id} by {r.proposer}: {r.op} at {r.anchor}, added {added}"
            text += "" if r.applied else " (not applied yet)"
            lines += [(line, REWRITE_COLOR) for line in _wrap(draw, text, font, width)]
    lines.append(
        ("rejected proposals:" if picture.rejected else "no rejected proposals", "#111827")
    )
    for p in picture.rejected:
        text = f"{p.proposer}: {p.code} ({p.check}) {p.reason}"
        lines += [(line, "#9a3412") for line in _wrap(draw, text, font, width)]
    return lines


def _header(
    draw: ImageDraw.ImageDraw, picture: Picture, fonts: tuple[_Font, _Font, _Font], width: int
) -> None:
    _, small, title = fonts
    draw.text((16, 10), _fit(draw, picture.title, title, width - 32), font=title, fill="#111827")
    x = 16
    for status, palette in STATUS_COLORS.items():
        draw.rectangle((x, 36, x + 18, 48), fill=palette.fill, outline=palette.stroke, width=2)
        draw.text((x + 24, 42), status, font=small, fill="#374151", anchor="lm")
        x += 30 + int(draw.textlength(status, font=small)) + 12
    _dashed_rect(draw, Box(x, 36, 18, 12), REWRITE_COLOR, 2)
    draw.text((x + 24, 42), "rewrite-added", font=small, fill="#374151", anchor="lm")


def to_png(picture: Picture, shape: Layout | None = None) -> bytes:
    """The PNG image of ``picture``, as bytes.

    Args:
        picture: The render model.
        shape: Its layout (computed when ``None``).
    """
    shape = shape if shape is not None else layout(picture)
    geometry: Geometry = place(picture, shape)
    fonts = _fonts()
    width = max(geometry.width, 640)
    # Text is measured on a 1x1 probe first: the footer's wrapped height decides
    # the image's size before the real image exists.
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    footer = _footer_lines(probe, picture, fonts[1], width - 32)
    height = HEADER + geometry.height + 12 + LINE * len(footer) + 12
    image = Image.new("RGB", (width, height), "#ffffff")
    draw = ImageDraw.Draw(image)
    _header(draw, picture, fonts, width)
    dx = (width - geometry.width) // 2
    for seg in geometry.segments:
        _arrow(draw, seg.x1 + dx, seg.y1 + HEADER, seg.x2 + dx, seg.y2 + HEADER)
    if geometry.retired_rule is not None:
        y = geometry.retired_rule + HEADER
        for start in range(12, width - 12, 10):
            draw.line((start, y, min(start + 6, width - 12), y), fill="#9ca3af", width=1)
        draw.text((14, y + 4), "retired (out of the graph)", font=fonts[1], fill="#6b7280")
    for node in picture.nodes:
        b = geometry.boxes[node.id]
        _node(draw, node, Box(b.x + dx, b.y + HEADER, b.width, b.height), fonts)
    y = HEADER + geometry.height + 12
    draw.line((12, y - 6, width - 12, y - 6), fill="#e5e7eb", width=1)
    for text, colour in footer:
        draw.text((16, y), text, font=fonts[1], fill=colour)
        y += LINE
    buffer = io.BytesIO()
    # Fixed encoder settings, no metadata: the same picture gives the same bytes.
    image.save(buffer, format="PNG", optimize=False, compress_level=9)
    return buffer.getvalue()
