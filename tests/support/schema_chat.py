"""A local OpenAI-shaped chat endpoint that answers from the request itself (no model, no network).

For end-to-end tests of LLM stages in another process (a LangGraph Server):
an answer turn gets the smallest JSON instance of the ``response_format``
schema it sends (``json_schema`` or ``json_object`` with a schema; the first
``enum`` value, one array item, every property); a turn that forces a tool
(``tool_choice`` naming a function) gets one call of that tool with ``{}``
arguments; anything else gets a short text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class SchemaChat:
    """The endpoint's URL (``.../v1``) and every request body it received."""

    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)


def instance(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """The smallest value ``schema`` accepts (as far as these tests need)."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {k: instance(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        return [instance(item, defs) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "string":
        text = "stated in the sources"[: schema.get("maxLength", 200)]
        return text.ljust(schema.get("minLength", 0), "x")
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 0.5))
    if kind == "boolean":
        return True
    return None


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a request body."""
    choice = body.get("tool_choice")
    answered = body["messages"] and body["messages"][-1].get("role") == "tool"
    if isinstance(choice, dict) and choice.get("type") == "function" and not answered:
        name = choice["function"]["name"]
        call = {
            "id": f"call_{name}",
            "type": "function",
            "function": {"name": name, "arguments": "{}"},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    form = body.get("response_format") or {}
    schema = (form.get("json_schema") or {}).get("schema") or form.get("schema")
    if schema:
        return {
            "role": "assistant",
            "content": json.dumps(instance(schema, schema.get("$defs", {}))),
        }
    return {"role": "assistant", "content": "noted"}


@contextmanager
def serve_schema_chat() -> Iterator[SchemaChat]:
    """Serve ``/v1/chat/completions`` on 127.0.0.1 in a thread while the block runs."""
    state = SchemaChat()
    lock = threading.Lock()

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state.bodies.append(body)
            message = reply(body)
            data = json.dumps(
                {
                    "id": f"reply-{len(state.bodies)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            "message": message,
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
