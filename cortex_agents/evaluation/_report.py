"""Run configurations over cases and report: means per configuration and per family, a table, a chart."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from cortex_agents.evaluation._cases import LoadedCase
from cortex_agents.evaluation._configs import Config
from cortex_agents.evaluation._metrics import score_ranking

__all__ = ["METRICS", "evaluate", "html_chart"]

METRICS = ("recall@3", "ndcg@5", "mrr")


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}


def evaluate(
    cases: Sequence[LoadedCase],
    configs: Sequence[Config],
    *,
    advance: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Score every configuration on every case.

    Returns:
        ``{"cases": N, "configs": {name: {"recall@3", "ndcg@5", "mrr"}},
        "families": {family: {"cases": n, "configs": {name: {...}}}}}``;
        ``advance`` is called once per case.
    """
    overall: dict[str, list[dict[str, float]]] = defaultdict(list)
    by_family: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[str, int] = defaultdict(int)
    for case in cases:
        counts[case.family] += 1
        for config in configs:
            scores = score_ranking(config.rank(case), case.relevant)
            overall[config.name].append(scores)
            by_family[case.family][config.name].append(scores)
        advance()
    return {
        "cases": len(cases),
        "configs": {c.name: _mean(overall[c.name]) for c in configs},
        "families": {
            family: {
                "cases": counts[family],
                "configs": {c.name: _mean(by_family[family][c.name]) for c in configs},
            }
            for family in sorted(by_family)
        },
    }


def html_chart(result: dict[str, Any], title: str) -> str:
    """A self-contained HTML page: recall@3 per configuration, one bar group per family."""
    families = ["all", *result["families"]]
    names = list(result["configs"])
    palette = ["#1f6feb", "#8957e5", "#2da44e", "#bf8700", "#cf222e", "#57606a", "#0a7b83"]
    row_h, bar_h, label_w, plot_w = 16 * len(families) + 10, 14, 230, 560
    height = row_h * len(names) + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 60}" height="{height}" '
        'font-family="sans-serif" font-size="12">'
    ]
    for x in (0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0):
        px = label_w + x * plot_w
        parts.append(f'<line x1="{px}" y1="20" x2="{px}" y2="{height - 30}" stroke="#ddd"/>')
        parts.append(f'<text x="{px}" y="{height - 14}" text-anchor="middle">{x:g}</text>')
    for i, name in enumerate(names):
        top = 24 + i * row_h
        parts.append(
            f'<text x="{label_w - 8}" y="{top + row_h / 2}" text-anchor="end">{html.escape(name)}</text>'
        )
        for j, family in enumerate(families):
            value = (
                result["configs"][name]["recall@3"]
                if family == "all"
                else result["families"][family]["configs"][name]["recall@3"]
            )
            y = top + j * 16
            color = palette[j % len(palette)]
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{value * plot_w:.1f}" height="{bar_h}" fill="{color}">'
                f"<title>{html.escape(name)} / {family}: {value:.3f}</title></rect>"
            )
            parts.append(
                f'<text x="{label_w + value * plot_w + 4:.1f}" y="{y + 11}">{value:.2f}</text>'
            )
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="color:{palette[j % len(palette)]}">&#9632; {html.escape(f)}</span>'
        for j, f in enumerate(families)
    )
    rows = "".join(
        "<tr><td>{}</td>{}</tr>".format(
            html.escape(name),
            "".join(f"<td>{result['configs'][name][m]:.3f}</td>" for m in METRICS),
        )
        for name in names
    )
    return (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<h1>{html.escape(title)}</h1><p>recall@3 by configuration and family. {legend}</p>"
        + "".join(parts)
        + "<table border=1 cellpadding=4><tr><th>config</th>"
        + "".join(f"<th>{m}</th>" for m in METRICS)
        + f"</tr>{rows}</table>"
    )
