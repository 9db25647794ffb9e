"""The room's tally (kjoin_viz.room): what a workshop's predict widgets report, counted per exercise, for
the trainer only. The three-learner browser run is in tests/test_workshop.py."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

import kjoin
from kjoin_viz import Predict
from kjoin_viz.room import ROOM_URL, RoomServer, exercise_id, report


@pytest.fixture
def room(monkeypatch):
    server = RoomServer(0, token="secret")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(ROOM_URL, server.url)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _tally(server):
    return json.loads(urllib.request.urlopen(f"{server.url}/tally", timeout=5).read())


def test_predict_widgets_report_their_exercise_and_every_check(room):
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="2:L1", right="1:eur"))
    widget = Predict(trace, 1)
    (row,) = _tally(room)
    assert row["exercise"] == widget.exercise == exercise_id("", widget.prompt, 1, "fate+outputs")
    assert row["tried"] == 0 and "solution" not in row  # the room's counts carry no solution
    widget.check("joined", "Zq-zq")  # wrong outputs
    widget.check("joined", "L1-eur")  # right
    (row,) = _tally(room)
    assert (row["tried"], row["right_first"], row["right_now"], row["stuck"]) == (1, 0, 1, 0)
    assert row["wrong_answers"] == [["joined; Zq-zq", 1]]


def test_the_trainers_page_needs_its_token_and_shows_the_solution(room):
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="2:L1", right="1:eur"))
    widget = Predict(trace, 1)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{room.url}/trainer?token=guess", timeout=5)
    assert refused.value.code == 403
    page = urllib.request.urlopen(room.trainer_url, timeout=5).read().decode()
    assert widget.prompt in page and widget.solution().split(":")[0] in page


def test_bad_events_are_refused_and_a_missing_room_never_stops_an_exercise(room, monkeypatch):
    request = urllib.request.Request(f"{room.url}/answer", data=b'{"exercise": "x"}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 400  # no learner, no verdict
    assert report("answer", {"exercise": "x", "answer": "a", "correct": True}) is True
    monkeypatch.setenv(ROOM_URL, "http://127.0.0.1:9")  # nobody listens: the report is dropped
    assert report("answer", {"exercise": "x", "answer": "a", "correct": True}) is False
    monkeypatch.delenv(ROOM_URL)
    assert report("answer", {"exercise": "x", "answer": "a", "correct": True}) is False  # not in a workshop


def test_the_server_listens_on_the_loopback_only(room):
    assert room.server_address[0] == "127.0.0.1"


def test_notebook_07s_window_exercises_are_in_the_rooms_tally(room):
    """Exercises 6-8 of notebook 07 (session, sliding, suppress) report like every exercise: the room sees who
    tried, the wrong answers most given, and the trainer's page their solutions."""
    from kjoin.engine.aggregates import run_spec
    from tests.test_viz_predict import QUIZ_SESSIONS, QUIZ_SLIDING, QUIZ_SUPPRESS

    widgets = [
        Predict(run_spec(QUIZ_SESSIONS), 4),
        Predict(run_spec(QUIZ_SLIDING), 1),
        Predict(run_spec(QUIZ_SUPPRESS), 4),
    ]
    widgets[0].check("aggregated", "a@[22, 30]=2")  # the merged session's tombstone forgotten
    widgets[0].check("aggregated", "a@[30, 30]=null, a@[22, 30]=2")
    widgets[2].check("held", "none")  # suppress: nothing yet, the learner thinks
    rows = {row["exercise"]: row for row in _tally(room)}
    assert set(rows) == {widget.exercise for widget in widgets}
    sessions, suppress = rows[widgets[0].exercise], rows[widgets[2].exercise]
    assert (sessions["tried"], sessions["right_first"], sessions["right_now"]) == (1, 0, 1)
    assert sessions["wrong_answers"] == [["aggregated; a@[22, 30]=2", 1]]
    assert (suppress["tried"], suppress["stuck"]) == (1, 1)
    page = urllib.request.urlopen(room.trainer_url, timeout=5).read().decode()
    assert "a@[0, 10)=2@4, b@[0, 10)=1@9" in page and "a@[21, 31]=1@25, a@[15, 25]=2@25" in page


def test_every_row_names_its_notebook_and_number_from_the_page_voila_rendered(room, monkeypatch):
    monkeypatch.setenv("SCRIPT_NAME", "/voila/render/04_table_table_joins.ipynb")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="2:L1, 3:L2", right="1:eur"))
    first, second = Predict(trace, 1), Predict(trace, 2)
    Predict(trace, 1)  # the same exercise shown again keeps its number
    second.check("joined", "L2-eur")
    rows = _tally(room)
    assert [(r["notebook"], r["number"], r["exercise"]) for r in rows] == [
        ("04_table_table_joins.ipynb", first.number, first.exercise),
        ("04_table_table_joins.ipynb", second.number, second.exercise),
    ]
    assert second.number == first.number + 1
    page = urllib.request.urlopen(room.trainer_url, timeout=5).read().decode()
    assert page.count("<td class='notebook'>04_table_table_joins.ipynb</td>") == 2


def test_a_learner_is_the_browsers_cookie_across_kernels_and_the_answers_download_as_csv(room, monkeypatch):
    import csv
    import io

    from kjoin_viz.room import LEARNER, learner_id

    assert learner_id({"HTTP_COOKIE": "_xsrf=2|ab; kjoin_learner=b1e55ed0"}) == "b1e55ed0"
    assert learner_id({}) == LEARNER  # JupyterLab: the kernel is the learner
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="2:L1", right="1:eur"))
    for browser, answers in (("aaa", ["Zq-zq", "L1-eur"]), ("bbb", ["L1-eur"]), ("aaa", ["L1-eur"])):
        monkeypatch.setenv("HTTP_COOKIE", f"kjoin_learner={browser}")  # a reload: a new kernel, the same cookie
        widget = Predict(trace, 1)
        for outputs in answers:
            widget.check("joined", outputs)
    (row,) = _tally(room)
    assert (row["tried"], row["right_first"], row["right_now"]) == (2, 1, 2)
    assert room.room.learners() == 2
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{room.url}/answers.csv?token=guess", timeout=5)
    assert refused.value.code == 403
    text = urllib.request.urlopen(f"{room.url}/answers.csv?token=secret", timeout=5).read().decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["order"], r["learner"], r["answer"], r["correct"]) for r in rows] == [
        ("1", "aaa", "joined; Zq-zq", "False"),
        ("2", "aaa", "joined; L1-eur", "True"),
        ("3", "bbb", "joined; L1-eur", "True"),
        ("4", "aaa", "joined; L1-eur", "True"),
    ]
    assert {r["prompt"] for r in rows} == {widget.prompt} and {r["exercise"] for r in rows} == {str(widget.number)}
    page = urllib.request.urlopen(room.trainer_url, timeout=5).read().decode()
    assert "<b class='learners'>2</b>" in page and "answers.csv?token=secret" in page
