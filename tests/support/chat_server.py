"""A local OpenAI-compatible chat endpoint for tests that record real HTTP (no external network)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatServer:
    """What the endpoint saw: its URL (``.../v1``), hit count and each request's headers and body."""

    url: str = ""
    hits: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)


def echo(body: dict[str, Any], hit: int) -> str:
    """The default answer: ``echo: <last message>``."""
    return f"echo: {body['messages'][-1]['content']}"


@contextmanager
def serve_chat(
    answer: Callable[[dict[str, Any], int], str | dict[str, Any]] = echo,
) -> Iterator[ChatServer]:
    """Serve ``/v1/chat/completions`` on 127.0.0.1 in a thread while the block runs.

    Args:
        answer: The assistant's text for a request body and the hit number
            (from 1), or its whole message as a dict (e.g. with ``tool_calls``).
            Each reply's ``id`` is ``reply-<hit>``, so two recordings of the
            same exchange differ on disk.
    """
    state = ChatServer()
    lock = threading.Lock()

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state.hits += 1
                hit = state.hits
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                state.bodies.append(body)
            said = answer(body, hit)
            message = (
                {"role": "assistant", **said}
                if isinstance(said, dict)
                else {"role": "assistant", "content": said}
            )
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            reply = {
                "id": f"reply-{hit}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": message,
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            data = json.dumps(reply).encode()
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
