"""The room's tally: where a workshop's learners are stuck, for the trainer only.

``make workshop`` starts this small server on 127.0.0.1 (``python -m kjoin_viz.room``) and gives every
Voila kernel its address (``KJOIN_ROOM_URL``). Each :class:`~kjoin_viz.Predict` widget then reports to it:

- when it is shown, the exercise (``register``: its notebook, prompt and solution);
- at every **check**, the learner's answer and whether it was right (``answer``). A learner is a kernel
  (one per Voila page), named by a random id; nothing else about them is sent.

The trainer opens ``/trainer?token=…`` (the token is printed at start): per exercise, how many learners
tried it, how many got it right at the first check and by now, the wrong answers most given, and the
solution. ``/tally`` gives the same counts as JSON without the solutions. Nothing leaves the machine: the
server listens on 127.0.0.1 only, the kernels run on the same machine, and a report that fails is
dropped without a word (an exercise never waits for the tally).
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import secrets
import threading
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

__all__ = ["Room", "RoomServer", "report", "exercise_id", "ROOM_URL", "LEARNER"]

ROOM_URL = "KJOIN_ROOM_URL"
"""The environment variable that names the tally server (unset: nothing is reported)."""
LEARNER = uuid.uuid4().hex[:12]
"""This kernel's learner id: random, one per kernel (one per Voila page)."""
TIMEOUT_S = 2.0


def exercise_id(notebook: str, prompt: str, step: int, ask: str) -> str:
    """An exercise's id: the same in every learner's kernel (the notebook, its question and step)."""
    return hashlib.sha1(f"{notebook}\n{prompt}\n{step}\n{ask}".encode()).hexdigest()[:12]


def report(kind: str, payload: dict[str, Any]) -> bool:
    """POST one event to the room's tally, if ``KJOIN_ROOM_URL`` is set; whether it was delivered."""
    url = os.environ.get(ROOM_URL)
    if not url:
        return False
    body = json.dumps({**payload, "learner": LEARNER}).encode()
    request = urllib.request.Request(
        f"{url.rstrip('/')}/{kind}", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status == 204
    except OSError:
        return False


# -- the tally --------------------------------------------------------------------------------------
@dataclass
class Exercise:
    notebook: str
    prompt: str
    solution: str
    order: int
    first: dict[str, bool] = field(default_factory=dict)
    """Each learner's first check: right or not."""
    latest: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Each learner's latest answer and whether it was right."""
    wrong: Counter = field(default_factory=Counter)
    """Every wrong answer given, counted."""


class Room:
    """The answers of a room, per exercise (thread-safe)."""

    def __init__(self) -> None:
        self.exercises: dict[str, Exercise] = {}
        self._lock = threading.Lock()

    def register(self, event: dict[str, Any]) -> None:
        with self._lock:
            if event["exercise"] not in self.exercises:
                self.exercises[event["exercise"]] = Exercise(
                    str(event.get("notebook", "")),
                    str(event.get("prompt", "")),
                    str(event.get("solution", "")),
                    len(self.exercises),
                )

    def answer(self, event: dict[str, Any]) -> None:
        with self._lock:
            exercise = self.exercises.get(event["exercise"])
            if exercise is None:  # an answer before its registration (a restarted server): keep it
                exercise = self.exercises[event["exercise"]] = Exercise(
                    str(event.get("notebook", "")), str(event.get("prompt", "")), "", len(self.exercises)
                )
            learner, answer, right = str(event["learner"]), str(event.get("answer", "")), bool(event["correct"])
            exercise.first.setdefault(learner, right)
            exercise.latest[learner] = (answer, right)
            if not right:
                exercise.wrong[answer] += 1

    def tally(self, solutions: bool = False) -> list[dict[str, Any]]:
        """Per exercise, in the order they were first shown: tried, right at first, right now, stuck (wrong
        at their latest check), the wrong answers most given; the solution only with ``solutions``."""
        with self._lock:
            rows = []
            for exercise_key, exercise in sorted(self.exercises.items(), key=lambda item: item[1].order):
                row = {
                    "exercise": exercise_key,
                    "notebook": exercise.notebook,
                    "prompt": exercise.prompt,
                    "tried": len(exercise.latest),
                    "right_first": sum(exercise.first.values()),
                    "right_now": sum(right for _, right in exercise.latest.values()),
                    "stuck": sum(not right for _, right in exercise.latest.values()),
                    "wrong_answers": exercise.wrong.most_common(3),
                }
                if solutions:
                    row["solution"] = exercise.solution
                rows.append(row)
            return rows

    def trainer_html(self) -> str:
        rows = []
        for row in self.tally(solutions=True):
            wrong = "; ".join(f"{html.escape(answer or '(empty)')} ×{count}" for answer, count in row["wrong_answers"])
            rows.append(
                "<tr>"
                f"<td>{html.escape(row['notebook'])}</td><td>{html.escape(row['prompt'])}</td>"
                f"<td class='tried'>{row['tried']}</td><td class='right-first'>{row['right_first']}</td>"
                f"<td class='right-now'>{row['right_now']}</td>"
                f"<td class='stuck' style='{'color:#b22;font-weight:bold' if row['stuck'] else ''}'>{row['stuck']}</td>"
                f"<td>{wrong or '-'}</td><td class='solution'>{html.escape(row['solution'])}</td>"
                "</tr>"
            )
        body = "".join(rows) or "<tr><td colspan='8'>no exercise shown yet</td></tr>"
        return (
            "<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='5'>"
            "<title>kjoin workshop: the room</title><style>body{font:14px sans-serif;margin:16px}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;"
            "vertical-align:top}</style></head><body><h2>The room's answers (refreshes every 5 s)</h2>"
            "<p>For the trainer only: the solutions are on this page. A learner is a kernel (one per page).</p>"
            "<table class='kjoin-tally'><tr><th>notebook</th><th>exercise</th><th>tried</th><th>right at first</th>"
            "<th>right now</th><th>stuck</th><th>wrong answers most given</th><th>solution</th></tr>"
            f"{body}</table></body></html>"
        )


# -- the server -------------------------------------------------------------------------------------
class RoomServer(ThreadingHTTPServer):
    """The tally on ``127.0.0.1:port`` (0: a free port); ``token`` guards the trainer's page."""

    daemon_threads = True

    def __init__(self, port: int = 0, token: str | None = None) -> None:
        self.room = Room()
        self.token = token or secrets.token_urlsafe(12)
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def trainer_url(self) -> str:
        return f"{self.url}/trainer?token={self.token}"


class _Handler(BaseHTTPRequestHandler):
    server: RoomServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: a room of learners checks often
        pass

    def _send(self, status: int, body: bytes = b"", kind: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        path = urlparse(self.path).path
        try:
            event = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not isinstance(event, dict) or "exercise" not in event or "learner" not in event:
                raise ValueError("an event has an exercise and a learner")
            if path == "/register":
                self.server.room.register(event)
            elif path == "/answer":
                if "correct" not in event:
                    raise ValueError("an answer says whether it was correct")
                self.server.room.answer(event)
            else:
                self._send(404, b"POST /register or /answer")
                return
        except (ValueError, KeyError) as error:
            self._send(400, str(error).encode())
            return
        self._send(204)

    def do_GET(self) -> None:  # noqa: N802
        url = urlparse(self.path)
        if url.path == "/tally":
            body = json.dumps(self.server.room.tally()).encode()
            self._send(200, body, "application/json")
        elif url.path == "/trainer":
            token = parse_qs(url.query).get("token", [""])[0]
            if not secrets.compare_digest(token, self.server.token):
                self._send(403, b"the trainer's page needs the token printed when the room started")
                return
            self._send(200, self.server.room.trainer_html().encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"GET /tally or /trainer?token=...")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kjoin_viz.room", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8870, help="port on 127.0.0.1 (default 8870)")
    parser.add_argument("--token", default=os.environ.get("KJOIN_TRAINER_TOKEN"), help="the trainer page's token")
    args = parser.parse_args(argv)
    server = RoomServer(args.port, args.token)
    print(f"the room's tally for the trainer: {server.trainer_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
