"""A stand-in for an OpenAI-compatible embeddings endpoint, on a real socket (port chosen by the OS).

It answers POST /v1/embeddings like OpenAI does: `{"object": "list", "data": [{"object": "embedding",
"index": i, "embedding": [...]}], "model": ..., "usage": {...}}`, with a vector made from each text's
letters (texts sharing letters point the same way). It records every request, and can be told to
answer an error status or to be slow.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

DIMENSION = 26
# How often the serving loop looks whether it was told to stop: stopping waits for it (at most this long).
STOP_POLL_SECONDS = 0.02


def letters_vector(text: str) -> list[float]:
    vector = np.zeros(DIMENSION)
    for letter in text.lower():
        if "a" <= letter <= "z":
            vector[ord(letter) - ord("a")] += 1
    return vector.tolist()


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict


@dataclass
class StandIn:
    url: str = ""
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    delay_seconds: float = 0.0
    reply_override: bytes | None = None
    server: ThreadingHTTPServer | None = None

    def texts(self) -> list[str]:
        """Every text the endpoint was asked to embed, in the order received."""
        return [text for request in self.requests for text in request.body.get("input", [])]

    def stop(self) -> None:
        """Stop serving; once stopped, stopping again does nothing."""
        if self.server is None:
            return
        self.server.shutdown()
        self.server.server_close()
        self.server = None


def start_stand_in() -> StandIn:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if state.delay_seconds:
                time.sleep(state.delay_seconds)
            if self.path != "/v1/embeddings":
                return self._answer(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            if state.status != 200:
                return self._answer(state.status, {"error": {"message": "stand-in error", "type": "server_error"}})
            if state.reply_override is not None:
                return self._send(200, state.reply_override)
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [{"object": "embedding", "index": i, "embedding": letters_vector(t)} for i, t in enumerate(texts)]
            data.reverse()  # OpenAI does not promise the order: the index says it
            self._answer(200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1}})

        def _answer(self, status: int, payload: dict) -> None:
            self._send(status, json.dumps(payload).encode())

        def _send(self, status: int, raw: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.server = server
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, args=(STOP_POLL_SECONDS,), daemon=True).start()
    return state
