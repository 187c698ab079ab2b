"""Pictures of a run: its materialized graph as Mermaid, a self-contained HTML page or a PNG.

:func:`picture_of` reads a :class:`~cortex_agents.substrate.GraphState` into
a render model and :func:`layout` lays it out in layers (both pure and
deterministic); :func:`to_mermaid`, :func:`to_html` and :func:`to_png` draw
it — status per node, the nodes admitted rewrites added marked ``rewrite #N``,
retired nodes set apart, and the rejected proposals listed::

    picture = picture_of(result.state, title="run-1")
    Path("run-1.html").write_text(to_html(picture), encoding="utf-8")

Pillow is imported on first use of :func:`to_png`, so the pure parts load without it.
"""

from typing import Any

from cortex_agents.picture._html import to_html
from cortex_agents.picture._layout import Layout, layout
from cortex_agents.picture._mermaid import to_mermaid
from cortex_agents.picture._model import (
    AdmittedRewrite,
    Picture,
    PictureNode,
    RejectedProposal,
    picture_of,
)
from cortex_agents.picture._svg import to_svg

__all__ = [
    "AdmittedRewrite",
    "Layout",
    "Picture",
    "PictureNode",
    "RejectedProposal",
    "layout",
    "picture_of",
    "to_html",
    "to_mermaid",
    "to_png",
    "to_svg",
]


def __getattr__(name: str) -> Any:
    if name == "to_png":
        from cortex_agents.picture._png import to_png

        return to_png
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
