"""The room's tally: where a workshop's learners are stuck, for the trainer only.

``make workshop`` starts this small server on 127.0.0.1 (``python -m kjoin_viz.room``) and gives every
Voila kernel its address (``KJOIN_ROOM_URL``). Each :class:`~kjoin_viz.Predict` widget then reports to it:

- when it is shown, the exercise (``register``: its notebook, its number in the notebook, prompt and solution);
- at every **check**, the learner's answer and whether it was right (``answer``, with the notebook and number too).

A learner is a browser: the workshop's pages (the Voila template ``kjoin``, ``jupyter/voila/templates/kjoin``) keep
a random id in the browser's local storage and in a cookie, which Voila hands to every kernel the browser opens
(``HTTP_COOKIE``, Voila's ``http_header_envs``), so reloading a page or opening another notebook is the same
learner. A kernel without that cookie (JupyterLab) is a learner of its own, named by a random id. Nothing else
about a learner is sent.

The trainer opens ``/trainer?token=…`` (the token is printed at start): how many learners have answered, and per
exercise (notebook and number), how many learners tried it, how many got it right at the first check and by now,
the wrong answers most given, and the solution. ``/answers.csv?token=…`` downloads every answer of the room (one
row per check). ``/tally`` gives the counts as JSON without the solutions. Nothing leaves the machine: the server
listens on 127.0.0.1 only, the kernels run on the same machine, and a report that fails is dropped without a word
(an exercise never waits for the tally).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
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

__all__ = [
    "Room",
    "RoomServer",
    "report",
    "exercise_id",
    "learner_id",
    "page_notebook",
    "ROOM_URL",
    "LEARNER",
    "LEARNER_COOKIE",
]

ROOM_URL = "KJOIN_ROOM_URL"
"""The environment variable that names the tally server (unset: nothing is reported)."""
LEARNER_COOKIE = "kjoin_learner"
"""The cookie that names a learner's browser (the workshop's Voila template sets it: ``jupyter/voila/templates``)."""
LEARNER = uuid.uuid4().hex[:12]
"""This kernel's own id: the learner of a kernel whose page sent no learner cookie."""
TIMEOUT_S = 2.0
CSV_COLUMNS = ("order", "learner", "notebook", "exercise", "prompt", "answer", "correct")
"""The columns of ``/answers.csv``: one row per check, in the order the room received them."""


def learner_id(environ: dict[str, str] | None = None) -> str:
    """The learner of this kernel: the browser's id from the cookie Voila passes (``HTTP_COOKIE``), or the kernel's
    own random id (:data:`LEARNER`)."""
    environ = os.environ if environ is None else environ
    for part in environ.get("HTTP_COOKIE", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == LEARNER_COOKIE and value.strip():
            return value.strip()[:64]
    return LEARNER


def page_notebook(environ: dict[str, str] | None = None) -> str:
    """The notebook this kernel runs: JupyterLab's session name, or the page Voila rendered (``SCRIPT_NAME``,
    ``/voila/render/02_eras.ipynb``); ``""`` if neither says."""
    environ = os.environ if environ is None else environ
    for name in ("JPY_SESSION_NAME", "SCRIPT_NAME"):
        path = environ.get(name, "").split("?")[0]
        if path.endswith(".ipynb"):
            return os.path.basename(path)
    return ""


def exercise_id(notebook: str, prompt: str, step: int, ask: str) -> str:
    """An exercise's id: the same in every learner's kernel (the notebook, its question and step)."""
    return hashlib.sha1(f"{notebook}\n{prompt}\n{step}\n{ask}".encode()).hexdigest()[:12]


def report(kind: str, payload: dict[str, Any]) -> bool:
    """POST one event to the room's tally, if ``KJOIN_ROOM_URL`` is set; whether it was delivered."""
    url = os.environ.get(ROOM_URL)
    if not url:
        return False
    body = json.dumps({**payload, "learner": learner_id()}).encode()
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
    number: int
    """Its place among the notebook's exercises (1 for the first; 0: unknown)."""
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
        self.answers: list[tuple[str, str, bool]] = []
        """Every check, in the order received: (exercise id, learner, answer, right)."""
        self._lock = threading.Lock()

    def _exercise(self, event: dict[str, Any]) -> Exercise:
        """The event's exercise, added if new; a notebook or number the event brings fills in one not yet known."""
        exercise = self.exercises.get(event["exercise"])
        if exercise is None:
            exercise = self.exercises[event["exercise"]] = Exercise(
                str(event.get("notebook", "")),
                _number(event.get("number")),
                str(event.get("prompt", "")),
                str(event.get("solution", "")),
                len(self.exercises),
            )
        exercise.notebook = exercise.notebook or str(event.get("notebook", ""))
        exercise.number = exercise.number or _number(event.get("number"))
        exercise.solution = exercise.solution or str(event.get("solution", ""))
        return exercise

    def register(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._exercise(event)

    def answer(self, event: dict[str, Any]) -> None:
        with self._lock:
            exercise = self._exercise(event)  # an answer before its registration (a restarted server): keep it
            learner, answer, right = str(event["learner"]), str(event.get("answer", "")), bool(event["correct"])
            exercise.first.setdefault(learner, right)
            exercise.latest[learner] = (answer, right)
            if not right:
                exercise.wrong[answer] += 1
            self.answers.append((str(event["exercise"]), learner, answer, right))

    def learners(self) -> int:
        """How many learners (browsers) have answered at least once."""
        with self._lock:
            return len({learner for _, learner, _, _ in self.answers})

    def answers_csv(self) -> str:
        """Every answer of the room as CSV (:data:`CSV_COLUMNS`), in the order received."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        with self._lock:
            for order, (key, learner, answer, right) in enumerate(self.answers, start=1):
                exercise = self.exercises[key]
                writer.writerow(
                    [order, learner, exercise.notebook, exercise.number or "", exercise.prompt, answer, right]
                )
        return out.getvalue()

    def tally(self, solutions: bool = False) -> list[dict[str, Any]]:
        """Per exercise, in the course's order (notebook, then its number; an unknown notebook last, in the order
        first shown): tried, right at first, right now, stuck (wrong at their latest check), the wrong answers most
        given; the solution only with ``solutions``."""
        with self._lock:
            rows = []
            for exercise_key, exercise in sorted(self.exercises.items(), key=lambda item: _place(item[1])):
                row = {
                    "exercise": exercise_key,
                    "notebook": exercise.notebook,
                    "number": exercise.number,
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

    def trainer_html(self, token: str = "") -> str:
        rows = []
        for row in self.tally(solutions=True):
            wrong = "; ".join(f"{html.escape(answer or '(empty)')} ×{count}" for answer, count in row["wrong_answers"])
            rows.append(
                "<tr>"
                f"<td class='notebook'>{html.escape(row['notebook'] or '(unknown)')}</td>"
                f"<td class='number'>{row['number'] or ''}</td><td class='prompt'>{html.escape(row['prompt'])}</td>"
                f"<td class='tried'>{row['tried']}</td><td class='right-first'>{row['right_first']}</td>"
                f"<td class='right-now'>{row['right_now']}</td>"
                f"<td class='stuck' style='{'color:#b22;font-weight:bold' if row['stuck'] else ''}'>{row['stuck']}</td>"
                f"<td>{wrong or '-'}</td><td class='solution'>{html.escape(row['solution'])}</td>"
                "</tr>"
            )
        body = "".join(rows) or "<tr><td colspan='9'>no exercise shown yet</td></tr>"
        return (
            "<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='5'>"
            "<title>kjoin workshop: the room</title><style>body{font:14px sans-serif;margin:16px}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;"
            "vertical-align:top}</style></head><body><h2>The room's answers (refreshes every 5 s)</h2>"
            "<p>For the trainer only: the solutions are on this page. A learner is a browser (its pages and reloads "
            f"are one learner). Learners who have answered: <b class='learners'>{self.learners()}</b>. "
            f"<a class='csv' href='/answers.csv?token={html.escape(token)}' download='answers.csv'>"
            "Download every answer (CSV)</a></p>"
            "<table class='kjoin-tally'><tr><th>notebook</th><th>exercise</th><th>question</th><th>tried</th>"
            "<th>right at first</th>"
            "<th>right now</th><th>stuck</th><th>wrong answers most given</th><th>solution</th></tr>"
            f"{body}</table></body></html>"
        )


def _number(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def _place(exercise: Exercise) -> tuple[int, str, int, int]:
    """Where an exercise stands in the trainer's table: by notebook and number; unknown ones last."""
    return (not exercise.notebook, exercise.notebook, exercise.number or 10**6, exercise.order)


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
        elif url.path in ("/trainer", "/answers.csv"):
            token = parse_qs(url.query).get("token", [""])[0]
            if not secrets.compare_digest(token, self.server.token):
                self._send(403, b"the trainer's page needs the token printed when the room started")
                return
            if url.path == "/trainer":
                self._send(200, self.server.room.trainer_html(token).encode(), "text/html; charset=utf-8")
            else:
                self._send(200, self.server.room.answers_csv().encode(), "text/csv; charset=utf-8")
        else:
            self._send(404, b"GET /tally, /trainer?token=... or /answers.csv?token=...")


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
