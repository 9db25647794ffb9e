"""The course's realistic topic pairs: a shop's orders with their payments, and its orders with their
customers, generated from a seed (the same records every run) at the size of a day's sample.

- :func:`orders_and_payments`: ``orders.leftJoin(payments, joiner, JoinWindows.ofTimeDifferenceAndGrace(
  1 min, 30 s))``: most orders are paid within the minute (some payments even arrive before their order, some
  after a few seconds of network lag), some are paid far too late, some never; a producer bug sends a few orders
  without a key.
- :func:`orders_and_customers`: ``orders.leftJoin(customers, order -> order.customer, joiner)``, a foreign-key
  join: orders are placed, moved to another customer, lose their customer or are deleted; customers change
  their names; some orders name a customer the table does not have (yet).

Both are ordinary :class:`kjoin.Scenario` s (``to_dict()`` gives the YAML document ``kjoin diff`` reads).
"""

from __future__ import annotations

import random

import kjoin

__all__ = ["orders_and_payments", "orders_and_customers"]

MINUTE = 60_000


def orders_and_payments(orders: int = 120, seed: int = 7, semantics: str = "2.8") -> kjoin.Scenario:
    """A stream-stream left join of ``orders`` orders and their payments, in the order a consumer reads them
    (each record when it arrives: its timestamp plus the lag of its producer)."""
    rnd = random.Random(seed)
    arriving: list[tuple[int, int, dict]] = []
    ts = 0
    for i in range(orders):
        ts += rnd.randint(2_000, 20_000)
        order = f"order-{i}"
        key = None if rnd.random() < 0.04 else order  # a producer bug: an order without its key
        arriving.append((ts, len(arriving), {"side": "left", "key": key, "value": order, "ts": ts}))
        paid = rnd.random()
        if paid < 0.7:  # within the minute, sometimes stamped before the order (the payment service's clock)
            at = ts + rnd.randint(-5_000, 50_000)
            lag = rnd.randint(0, 3_000)
            payment = {"side": "right", "key": order, "value": f"pay-{i}", "ts": at}
            arriving.append((max(at, ts) + lag, len(arriving), payment))
        elif paid < 0.8:  # paid too late for the window
            at = ts + 200_000
            arriving.append((at, len(arriving), {"side": "right", "key": order, "value": f"pay-{i}", "ts": at}))
        # else: never paid
    events = [record for _, _, record in sorted(arriving, key=lambda item: (item[0], item[1]))]
    return kjoin.Scenario.from_dict(
        {
            "name": "orders and payments",
            "join": "stream-stream",
            "variant": "left",
            "semantics": semantics,
            "window": {"before_ms": MINUTE, "after_ms": MINUTE, "grace_ms": 30_000},
            "events": events,
        }
    )


CUSTOMERS = ("Alice", "Bob", "Chen", "Dara", "Eve", "Femi")


def orders_and_customers(changes: int = 60, seed: int = 11, semantics: str = "2.8") -> kjoin.Scenario:
    """A foreign-key left join of orders (``{"customer": id}``) with customers, ``changes`` changes after
    the customers C0 to C5 are loaded (C6 and C7 are named by orders but appear only when renamed)."""
    rnd = random.Random(seed)
    events: list[dict] = []
    ts = 0
    for c, name in enumerate(CUSTOMERS):
        ts += 1_000
        events.append({"side": "right", "key": f"C{c}", "value": name, "ts": ts})
    live: dict[str, str | None] = {}
    for i in range(changes):
        ts += rnd.randint(500, 5_000)
        what = rnd.random()
        if what < 0.5 or not live:  # a new order, now and then without a customer (a guest checkout)
            key = f"o{i}"
            customer = None if rnd.random() < 0.1 else f"C{rnd.randrange(8)}"
        elif what < 0.7:  # an order moves to another customer, or loses its customer
            key = rnd.choice(sorted(live))
            customer = None if rnd.random() < 0.2 else f"C{rnd.randrange(8)}"
        elif what < 0.8:  # an order is deleted
            key = rnd.choice(sorted(live))
            live.pop(key)
            events.append({"side": "left", "key": key, "value": None, "ts": ts})
            continue
        else:  # a customer changes name
            c = rnd.randrange(8)
            events.append({"side": "right", "key": f"C{c}", "value": f"{CUSTOMERS[c % 6]}-{i}", "ts": ts})
            continue
        live[key] = customer
        events.append({"side": "left", "key": key, "value": {"customer": customer}, "ts": ts})
    return kjoin.Scenario.from_dict(
        {
            "name": "orders and customers",
            "join": "fk",
            "variant": "left",
            "foreign_key": "customer",
            "semantics": semantics,
            "events": events,
        }
    )
