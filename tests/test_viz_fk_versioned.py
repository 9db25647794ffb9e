"""What the widgets show for foreign-key joins (messages in flight, the subscription store, the
hash check) and for versioned tables (history, retention, the grace buffer).

Every assertion reads what a widget renders: its text, its HTML panes or its SVG."""

from __future__ import annotations

import re

import pytest

import kjoin
from kjoin.joins.fk_protocol import short_hash, value_hash
from kjoin.state import StoreId
from kjoin_viz import Stepper, Variants, versioned_mode_traces
from kjoin_viz.flight import MAX_ARROWS, flight_svg
from kjoin_viz.store_view import store_tables


def L(key, fk, ts, **more):
    return {"side": "left", "key": key, "value": {"fk": fk, **more}, "ts": ts}


def R(key, value, ts):
    return {"side": "right", "key": key, "value": value, "ts": ts}


def fk(events, **options) -> kjoin.Scenario:
    return kjoin.Scenario.from_dict(
        {"join": "fk", "variant": "inner", "foreign_key": "fk", "events": events, **options}
    )


# Seed 001's race: A|Y,1 then A|Y,2; the first subscription's answer arrives after the second update.
RACE = [
    R("Y", "bar", 1),
    L("A", "Y", 2, v=1),
    L("A", "Y", 3, v=2),
    {"deliver": "subscription"},
    {"deliver": "response"},
    {"deliver": "all"},
]
HASH_1, HASH_2 = short_hash(value_hash({"fk": "Y", "v": 1})), short_hash(value_hash({"fk": "Y", "v": 2}))


@pytest.fixture(scope="module")
def race():
    return kjoin.run(fk(RACE, delivery="explicit"))


def _store_html(html: str, title: str) -> str:
    """The store's table, without its inline styles (only the cells and their classes)."""
    html = re.sub(r""" style=("[^"]*"|'[^']*')""", "", html)
    start = html.index(f'data-store="{title}"')
    return html[start : html.index("</table>", start)]


def _messages(svg: str) -> list[tuple[str, str]]:
    """``(id, situation)`` of every arrow drawn, top to bottom."""
    return re.findall(r'class="kjoin-message kjoin-(\w+)" data-message="(m\d+)"', svg)


def test_the_flight_diagram_shows_messages_sent_waiting_and_delivered(race):
    stepper = Stepper(race, step=1)
    assert _messages(stepper.panes["timeline"].value) == [("sent", "m1")]
    stepper.step = 2
    assert _messages(stepper.panes["timeline"].value) == [("waiting", "m1"), ("sent", "m2")]
    stepper.press("next")  # step 3: m1 arrives at the right side, m3 answers
    svg = stepper.panes["timeline"].value
    assert _messages(svg) == [("delivered", "m1"), ("waiting", "m2"), ("sent", "m3")]
    assert f"m3 response sent: A ← bar {HASH_1} @2 → task 0" in svg
    assert "delivered subscription m1 (Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE" in stepper.panes["header"].value
    stepper.press("last")
    assert _messages(stepper.panes["timeline"].value) == [("delivered", "m4")]


def test_the_messages_as_text(race):
    text = Stepper(race, step=3).text()
    lines = text.splitlines()
    start = lines.index("messages:")
    rows = [[cell.strip() for cell in line.split("|")] for line in lines[start + 3 : start + 6]]
    assert rows == [
        ["m1 subscription", "delivered", "left → right", "0", "(Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE", HASH_1, "2"],
        # an update that keeps its foreign key asks only for an existing result (3.9.1+)
        ["m2 subscription", "waiting", "left → right", "0", "(Y, A) PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE", HASH_2, "3"],
        ["m3 response", "sent", "right → left", "0", "A ← bar", HASH_1, "2"],
    ]
    assert "task 0: in flight" not in text  # shown once, as messages, not again as a store
    assert "messages: none in flight" in Stepper(race, step=0).text()


def test_the_subscription_store_shows_fk_pk_hash_and_instruction(race):
    stepper = Stepper(race, step=3)  # the hashes are no internals here: the hash check is what 05 teaches
    store = _store_html(stepper.panes["state"].value, "task 0: subscription store")
    assert (
        f"<tr class='changed'><td>Y</td><td>A</td><td>{HASH_1}</td>"
        "<td>PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE</td><td>2</td></tr>"
    ) in store
    stepper.step = 5  # the second subscription replaces the first: its hash and ts
    store = _store_html(stepper.panes["state"].value, "task 0: subscription store")
    assert f"<td>{HASH_2}</td><td>PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE</td><td>3</td>" in store and HASH_1 not in store


def test_the_left_table_shows_the_hash_the_check_compares(race):
    stepper = Stepper(race, step=4)  # the stale response m3 arrives
    text = stepper.text()
    assert "dropped: stale response (the left row changed since)" in text.splitlines()[0]
    left = text[text.index("task 0: left table") : text.index("task 0: right table")]
    assert left.splitlines()[1].split("|")[-1].strip() == "hash"
    assert left.splitlines()[3].split("|")[-1].strip() == HASH_2  # the row's hash now; m3 carries HASH_1
    assert "m3 response     | delivered | right → left | 0       | A ← bar" in text and HASH_1 in text


def test_the_race_side_by_side_with_the_hash_check_on_and_off(race):
    off = kjoin.run(fk(RACE, delivery="explicit", hash_check=False))
    variants = Variants({"hash check on": race, "hash check off": off}, step=4)
    rows = [[cell.strip() for cell in line[3:].split("|")] for line in variants.text().splitlines()[2:]]
    assert [row[3:] for row in rows] == [
        ["", ""],
        ["", ""],
        ["", ""],
        ["", ""],
        ["", '{"fk":"Y","v":2}-bar'],
        ["", ""],
        ['{"fk":"Y","v":2}-bar', '{"fk":"Y","v":2}-bar'],
    ]
    assert variants.text().splitlines()[6].startswith(">> ")
    assert "dropped: stale response (the left row changed since)" in variants.columns["hash check on"].value
    assert "hash check off" in variants.columns["hash check off"].value


def test_two_partitions_a_subscription_travels_to_the_task_of_its_foreign_key():
    events = [R(1, "foo", 0), L("k", 1, 1), L("k", 3, 3)]  # with 2 partitions: k and 1 on task 0, 3 on task 1
    trace = kjoin.run(fk(events, partitions=2))
    step = next(s.index for s in trace.steps if s.message is not None and s.message.key == 3)
    stepper = Stepper(trace, step=step)
    assert stepper.panes["header"].value.count("task 1") == 2  # the step runs on task 1, the message went there
    store = _store_html(stepper.panes["state"].value, "task 1: subscription store")
    assert "<td>3</td><td>k</td>" in store
    assert "(empty)" in _store_html(stepper.panes["state"].value, "task 0: subscription store")


def test_a_long_queue_of_messages_is_cut_and_counted():
    events = [R("Y", "y", 0)] + [L(f"p{i}", "Y", i + 1) for i in range(MAX_ARROWS + 3)]
    trace = kjoin.run(fk(events, delivery="explicit"))
    svg = flight_svg(trace, len(trace) - 1)
    assert len(_messages(svg)) == MAX_ARROWS and "… 3 more in flight" in svg


# -- versioned tables ------------------------------------------------------------------------
def S(value, ts, key="k"):
    return {"side": "left", "key": key, "value": value, "ts": ts}


def T(value, ts, key="k"):
    return {"side": "right", "key": key, "value": value, "ts": ts}


@pytest.fixture(scope="module")
def grace():
    return kjoin.run(
        kjoin.Scenario.from_dict(
            {
                "join": "stream-table",
                "variant": "left",
                "grace_ms": 5,
                "right": {"versioned": True, "history_retention_ms": 20},
                "events": [
                    T("a", 8),
                    S("A", 10),
                    T("b", 9),
                    S("B", 12),
                    S("C", 16),
                    T("c", 15),
                    S("D", 22),
                    T("z", 60),
                    T("y", 30),
                ],
            }
        )
    )


def _block(text: str, title: str) -> list[str]:
    """The lines of one store in a stepper's text, from its title to the blank line."""
    lines = text.splitlines() + [""]
    start = lines.index(next(line for line in lines if line.startswith(title)))
    end = lines.index("", start)
    return lines[start:end]


def test_the_grace_buffer_shows_who_waits_and_when_they_leave(grace):
    text = Stepper(grace, step=1).text()
    block = _block(text, "task 0: grace buffer")
    assert "buffer time 10 (the largest ts accepted)" in block[1]
    assert [c.strip() for c in block[2].split("|")] == ["", "ts", "key", "value", "from step", "leaves at"]
    assert [c.strip() for c in block[4].split("|")] == ["*", "10", "k", "A", "1", "buffer time 15"]
    text = Stepper(grace, step=4).text()  # C@16 moves the buffer time to 16: A@10 leaves and joins b@9
    block = _block(text, "task 0: grace buffer")
    assert block[0] == "task 0: grace buffer  (deleted: k@10)"
    assert [[c.strip() for c in line.split("|")][:4] for line in block[4:]] == [
        ["", "12", "k", "B"],
        ["*", "16", "k", "C"],
    ]
    assert "outputs: A-b@10" in text


def test_the_versioned_table_shows_its_history_and_what_expired(grace):
    stepper = Stepper(grace, step=5)
    block = _block(stepper.text(), "task 0: right versioned table")
    assert block[1] == "  (history retention 20 ms; newest ts put 15: nothing has expired yet)"
    rows = [[c.strip() for c in line.split("|")] for line in block[4:]]
    assert rows == [["", "k", "8", "9", "a"], ["", "k", "9", "15", "b"], ["*", "k", "15", "latest", "c"]]
    stepper.step = 7  # z@60: versions that ended by 40 can never be read again
    block = _block(stepper.text(), "task 0: right versioned table")
    assert "newest ts put 60: a put older than 40 is refused" in block[1]
    assert [[c.strip() for c in line.split("|")][2:] for line in block[4:]] == [
        ["15", "60", "c"],
        ["60", "latest", "z"],
    ]
    assert "task 0: right table" not in stepper.text()  # the unused plain table is not shown
    html = _store_html(stepper.panes["state"].value, "task 0: right versioned table")
    assert "kjoin-note" in html and "<th>valid from</th><th>valid to</th>" in html
    stepper.press("next")  # y@30 < 60 - 20: refused
    assert "dropped: late (older than the table&#x27;s history retention)" in stepper.panes["header"].value


def test_a_tombstone_version_is_named():
    trace = kjoin.run(
        kjoin.Scenario.from_dict(
            {
                "join": "stream-table",
                "variant": "left",
                "right": {"versioned": True, "history_retention_ms": 50},
                "events": [T("b", 5), T(None, 8)],
            }
        )
    )
    block = _block(Stepper(trace, step=1).text(), "task 0: right versioned table")
    assert [c.strip() for c in block[-1].split("|")] == ["*", "k", "8", "latest", "null (tombstone)"]


def test_store_tables_without_a_scenario_still_lay_out_versions():
    (table,) = store_tables({StoreId(0, "left versioned table"): {("k", 4): "a4", ("k", 0): "a0"}})
    assert (table.header, table.rows, table.note) == (
        ("key", "valid from", "valid to", "value"),
        (("k", "0", "4", "a0"), ("k", "4", "latest", "a4")),
        "",
    )


SEED_003_COUNTEREXAMPLE = [S("a0", 0), T("b0", 0), S("a4", 4), T("b3", 3), T("b2", 2), S("a1", 1)]


def test_versioned_designs_side_by_side_with_timestamps():
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "events": SEED_003_COUNTEREXAMPLE,
            "left": {"versioned": True, "history_retention_ms": 1000},
            "right": {"versioned": True, "history_retention_ms": 1000},
        }
    )
    traces = versioned_mode_traces(scenario, unversioned=True)
    assert list(traces) == ["unversioned", "final", "attempt1", "attempt2"]
    variants = Variants(traces, step=5, with_ts=True)
    last = [c.strip() for c in variants.text().splitlines()[-1][3:].split("|")]
    assert variants.text().splitlines()[-1].startswith(">> ")
    assert last == ["1", "a1", "", "a1-b2@2", "", "a1-b0@1", "a1-b0@1, a1-b2@2, a1-b3@3"]
    assert "a0-b2@2" in variants.table.value  # attempt 1's answer to b2@2, in the HTML table too
    final = Stepper(traces["final"], step=5)
    assert "not lost: stored as an older version, no result" in final.text().splitlines()[0]
    left = _block(final.text(), "task 0: left versioned table")
    assert [[c.strip() for c in line.split("|")] for line in left[4:]] == [
        ["", "k", "0", "1", "a0"],
        ["*", "k", "1", "4", "a1"],
        ["", "k", "4", "latest", "a4"],
    ]
    assert "task 0: left table" not in final.text()


def test_the_workflow_table_of_seed_001():
    """Seed 001's workflow: each left event's subscriptions (inner join) and the results per join."""
    from kjoin_viz.flight import workflow_text

    events = [
        R(1, "foo", 0),
        L("k", 1, 1),
        L("k", 2, 2),
        R(2, "two", 3),
        {"side": "left", "key": "k", "value": None, "ts": 4},
    ]
    inner = kjoin.run(fk(events, partitions=2, semantics="2.4"))
    left = kjoin.run(fk(events, partitions=2, semantics="3.7", variant="left"))
    rows = [
        [c.strip() for c in line.split("|")] for line in workflow_text({"inner": inner, "left 3.7": left}).splitlines()
    ]
    assert rows[0] == ["ts", "side", "key", "value", "subscriptions sent (inner)", "inner", "left 3.7"]
    assert rows[2:] == [
        ["0", "right", "1", "foo", "", "", ""],
        [
            "1",
            "left",
            "k",
            "{fk: 1}",
            "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE → 1 (task 0)",
            "{fk: 1}-foo",
            "{fk: 1}-foo",
        ],
        [
            "2",
            "left",
            "k",
            "{fk: 2}",
            "DELETE_KEY_NO_PROPAGATE → 1 (task 0); PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE → 2 (task 0)",
            "null",
            "{fk: 2}-null, {fk: 2}-null",
        ],
        ["3", "right", "2", "two", "", "{fk: 2}-two", "{fk: 2}-two"],
        ["4", "left", "k", "null", "DELETE_KEY_AND_PROPAGATE → 2 (task 0)", "null", "null, null"],
    ]


def test_the_stepper_shows_the_stores_of_bigger_topologies():
    """Chained joins, self-joins and record caches show their own stores, laid out like
    the plain ones (a cache lists the update each key holds until the commit)."""
    from kjoin import Scenario, run
    from kjoin_viz import Stepper

    window = {"before_ms": 5, "after_ms": 5, "grace_ms": 0}
    chain = run(
        Scenario.from_dict(
            {
                "join": "stream-stream",
                "variant": "inner",
                "then": [{"variant": "left"}],
                "window": window,
                "events": [
                    {"side": "left", "key": "k", "value": "A", "ts": 1},
                    {"side": "right", "key": "k", "value": "a", "ts": 3},
                ],
            }
        )
    )
    text = Stepper(chain, step=1).text()
    assert "task 0: join 2: left window" in text and "A-a-a" in text
    cached = run(
        Scenario.from_dict(
            {
                "join": "table-table",
                "variant": "left",
                "materialized": True,
                "caching": True,
                "commit_every": 2,
                "events": [
                    {"side": "left", "key": "k", "value": "A", "ts": 1},
                    {"side": "right", "key": "k", "value": "a", "ts": 3},
                ],
            }
        )
    )
    text = Stepper(cached, step=0).text()
    assert "task 0: left table cache" in text
    assert "key | new value | ts | from step | replaced" in text
