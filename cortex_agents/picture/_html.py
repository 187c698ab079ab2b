"""A :class:`~cortex_agents.picture.Picture` as one self-contained HTML page.

No scripts, no external assets: inline CSS, the inline SVG drawing, a
legend, and tables of the admitted rewrites, the rejected proposals and the
nodes. Everything taken from the run is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Final

from cortex_agents.picture._geometry import REWRITE_COLOR, STATUS_COLORS, badge_text
from cortex_agents.picture._layout import Layout, layout
from cortex_agents.picture._model import Picture
from cortex_agents.picture._svg import to_svg

__all__ = ["to_html"]

_CSS: Final = """
body{font-family:ui-sans-serif,system-ui,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px;color:#111827}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.summary{color:#4b5563;margin:0 0 16px}
figure{margin:0;overflow-x:auto;border:1px solid #e5e7eb;border-radius:8px;display:inline-block;max-width:100%}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:12px 0;padding:0;list-style:none;font-size:13px}
.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:22px;height:14px;border-radius:3px;border:1.5px solid}
table{border-collapse:collapse;font-size:13px;margin-bottom:8px}
th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f9fafb}
td.data{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;max-width:520px;overflow-wrap:anywhere}
.none{color:#6b7280;font-style:italic}
""".strip()


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _budget(values: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items()) or "—"


def _table(headers: Iterable[str], rows: list[list[str]], data_columns: set[int]) -> str:
    """A table whose cells are already escaped."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="data">{cell}</td>' if i in data_columns else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _legend() -> str:
    items = [
        f'<li><span class="swatch" style="background:{p.fill};border-color:{p.stroke}"></span>'
        f"{_e(status)}</li>"
        for status, p in STATUS_COLORS.items()
    ]
    items.append(
        f'<li><span class="swatch" style="background:#ffffff;border:3px dashed {REWRITE_COLOR}">'
        "</span>added by an admitted rewrite (badge: rewrite #N)</li>"
    )
    items.append("<li>retired: greyed, struck through, in the bottom row (no edges)</li>")
    return f'<ul class="legend">{"".join(items)}</ul>'


def _admitted(picture: Picture) -> str:
    if not picture.admitted:
        return '<p class="none">No rewrite was admitted.</p>'
    rows = [
        [
            _e(r.rewrite_id),
            _e(r.proposer),
            _e(f"{r.op}{f' ({r.mode})' if r.mode else ''} at {r.anchor}"),
            _e(", ".join(r.nodes) or "—")
            + (f"<br>retired: {_e(', '.join(r.retired))}" if r.retired else "")
            + ("" if r.applied else "<br><em>not applied yet</em>"),
            _e(_budget(r.cost)),
            f"{_e(_budget(r.budget_before))}<br>→ {_e(_budget(r.budget_after))}",
            _e(r.rationale or ""),
        ]
        for r in picture.admitted
    ]
    headers = ("#", "proposer", "op / anchor", "new nodes", "cost", "budget before → after")
    # Columns 3-6 hold run data (ids, budgets, the model's rationale): monospace,
    # and wrapped anywhere so a long id cannot widen the page.
    return _table((*headers, "rationale"), rows, {3, 4, 5, 6})


def _rejected(picture: Picture) -> str:
    if not picture.rejected:
        return '<p class="none">No proposal was rejected.</p>'
    rows = [
        [
            _e(p.proposer),
            _e(p.code),
            _e(p.check),
            _e(p.reason),
            _e(f"{p.op or '?'} at {p.anchor or '?'}"),
            _e(_budget(p.budget_before)),
        ]
        for p in picture.rejected
    ]
    headers = ("proposer", "code", "check", "reason", "op / anchor", "budget before")
    return _table(headers, rows, {3, 5})


def _nodes(picture: Picture) -> str:
    rows = [
        [
            _e(n.id),
            _e(n.kind),
            _e(n.status),
            _e(n.attempts),
            _e(badge_text(n) or ""),
            _e(n.error) if n.error else _e(n.output or ""),
        ]
        for n in picture.nodes
    ]
    headers = ("id", "kind", "status", "attempts", "rewrite", "output / error")
    return _table(headers, rows, {5})


def _summary(picture: Picture) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in picture.status_counts().items())
    text = (
        f"{len(picture.nodes)} nodes ({counts or 'none'}), {len(picture.edges)} edges; "
        f"{len(picture.admitted)} rewrites admitted, {len(picture.rejected)} proposals rejected"
    )
    if picture.budget is not None:
        text += f"; rewrite budget {_budget(picture.budget)}"
    return f'<p class="summary">{_e(text)}</p>'


def to_html(picture: Picture, shape: Layout | None = None) -> str:
    """The HTML page of ``picture``.

    Args:
        picture: The render model.
        shape: Its layout (computed when ``None``).
    """
    shape = shape if shape is not None else layout(picture)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(picture.title)}</title>",
        f"<style>{_CSS}</style></head>",
        "<body>",
        f"<h1>{_e(picture.title)}</h1>",
        _summary(picture),
        _legend(),
        f"<figure>{to_svg(picture, shape)}</figure>",
        "<h2>Admitted rewrites</h2>",
        _admitted(picture),
        "<h2>Rejected proposals</h2>",
        _rejected(picture),
        "<h2>Nodes</h2>",
        _nodes(picture),
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"
