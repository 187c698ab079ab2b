#!/usr/bin/env python3
"""Prove that a recorded model read its tool results: render each request, look for them.

A chat server turns a request's messages into one prompt with its chat
template. Some templates drop messages they have no case for (llama-cpp-python's
``chatml-function-calling`` renders a ``role: tool`` message as an empty turn),
so a recording can look right and still come from a model that never saw what
its tools returned. This script asks the server that recorded a cassette to
render every recorded request (llama.cpp's ``llama-server`` answers
``POST /apply-template`` with ``{"prompt": ...}``, the exact text it would
generate from) and checks that the text of every tool result is in it.

    python tools/prompt_check.py --base-url http://127.0.0.1:8765 cassettes/*.yaml

Exit status 1 names each request whose prompt misses a tool result; 0 when
every one was found (a cassette without tool results passes trivially, and
the count of checked results is printed so that shows).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

Render = Callable[[Mapping[str, Any]], str]
"""A request body in, the prompt the server builds from it out."""


def tool_results(body: Mapping[str, Any]) -> list[str]:
    """The text of every ``role: tool`` message of a chat request body."""
    texts = []
    for message in body.get("messages") or []:
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):  # content parts: the text parts, in order
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        texts.append(str(content or ""))
    return texts


def missing_results(bodies: Iterable[Mapping[str, Any]], render: Render) -> tuple[int, list[str]]:
    """How many tool results were checked, and a line per result missing from its prompt."""
    checked, problems = 0, []
    for number, body in enumerate(bodies, start=1):
        results = tool_results(body)
        if not results:
            continue
        prompt = render(body)
        for index, text in enumerate(results):
            checked += 1
            if text not in prompt:
                problems.append(
                    f"request {number}: tool result {index + 1} ({len(text)} characters, "
                    f"starting {text[:60]!r}) is not in the rendered prompt"
                )
    return checked, problems


def cassette_bodies(path: Path) -> list[dict[str, Any]]:
    """The JSON body of every chat-completions request recorded in a vcrpy cassette that the
    server answered (a request it refused with an HTTP error reached no model: llama-server
    refuses, and cannot render either, a history whose tool call the model left unclosed)."""
    recorded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    bodies = []
    for interaction in recorded.get("interactions", []):
        request = interaction.get("request", {})
        if not str(request.get("uri", "")).endswith("/chat/completions"):
            continue
        status = (interaction.get("response", {}).get("status") or {}).get("code", 200)
        if status != 200:
            continue
        body = request.get("body")
        if isinstance(body, dict):  # vcrpy may store {"string": ...}
            body = body.get("string")
        if isinstance(body, bytes):
            body = body.decode("utf-8")
        bodies.append(json.loads(body))
    return bodies


def server_renderer(base_url: str, timeout: float = 120.0) -> Render:
    """Render with a llama.cpp server's own template (``POST /apply-template``)."""
    root = base_url.removesuffix("/").removesuffix("/v1")

    def render(body: Mapping[str, Any]) -> str:
        sent = {k: body[k] for k in ("messages", "tools", "tool_choice") if k in body}
        response = httpx.post(f"{root}/apply-template", json=sent, timeout=timeout)
        response.raise_for_status()
        return str(response.json()["prompt"])

    return render


def check_cassettes(paths: Iterable[Path], render: Render) -> tuple[int, list[str]]:
    """Check every cassette; problems are prefixed with the cassette's name."""
    checked, problems = 0, []
    for path in paths:
        count, found = missing_results(cassette_bodies(path), render)
        checked += count
        problems += [f"{path.name}: {line}" for line in found]
    return checked, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8765")
    parser.add_argument("cassettes", nargs="+", type=Path)
    args = parser.parse_args(argv)
    checked, problems = check_cassettes(args.cassettes, server_renderer(args.base_url))
    for line in problems:
        print(line, file=sys.stderr)
    print(json.dumps({"tool_results_checked": checked, "missing": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
