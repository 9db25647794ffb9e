"""The names of stores an application gives (``Materialized.as``, ``StreamJoined.withStoreName``), and the store
names Kafka derives from them, as ``Topology.describe()`` lists them.

Naming a store changes what ``describe()`` lists and what the changelog topics are called
(``<application.id>-<store>-changelog``), never what a topology emits: the random topologies of
``tests/test_topology_store_names.py`` runs a topology with every store named through the real library and
compares its outputs too. A stream-stream join's one name stands for its stores, as the real library's
``describe()`` lists them (pinned by the same test):

=========  ==============================  ===============================  ================================
variant    left window store               right window store               outer-join buffer (3.1+)
=========  ==============================  ===============================  ================================
inner      ``<name>-this-join-store``      ``<name>-other-join-store``      none
left       ``<name>-this-join-store``      ``<name>-outer-other-join-store``  ``<name>-left-shared-join-store``
outer      ``<name>-outer-this-join-store``  ``<name>-outer-other-join-store``  ``<name>-outer-shared-join-store``
=========  ==============================  ===============================  ================================
"""

from __future__ import annotations

from typing import Any

from .graph import TopologyError, _illegal, legal_name, legal_topic

__all__ = [
    "store_name",
    "kafka_stores",
    "DEFAULT_APPLICATION_ID",
    "application_id_checked",
    "described_application_id",
    "refuse_unused_application_id",
]

DEFAULT_APPLICATION_ID = "kjoin-topology-oracle"
"""The ``application.id`` a topology has unless it names one: the topology harness's
(``kafka_oracle``'s ``TopologyOracle``), so that internal topics' full names match the judge's."""


def application_id_checked(application_id: Any, where: str) -> str:
    """``application_id`` if Kafka takes it (it prefixes internal topics' names, so a topic name's characters:
    letters, digits, ``.``, ``_``, ``-``), else kjoin's error naming ``where``."""
    if not isinstance(application_id, str) or not application_id:
        raise TopologyError(f"{where}: an application.id is non-empty text, got {application_id!r:.80}")
    legal_topic(application_id, where)
    return application_id


def store_name(store: Any, op: str) -> str | None:
    """``store`` if Kafka takes it as a store's name (a changelog topic is named after it: Kafka's legal-name rule),
    else kjoin's error naming ``op``; ``None`` stays ``None`` (Kafka names the store itself)."""
    if store is None:
        return None
    if not isinstance(store, str):
        raise TopologyError(f"{op}: store: a store's name is non-empty text, got {store!r:.60}")
    return legal_name(store, f"{op}: store (Materialized.as)")


def kafka_stores(node: Any, semantics: Any) -> tuple[str, ...]:
    """The stores ``describe()`` lists for ``node`` when the application named its store (``()`` when it did not:
    Kafka's generated names count every node the DSL adds, which kjoin's graph does not mirror)."""
    store = node.params.get("store")
    if store is None:
        return ()
    if node.op != "stream-stream":
        return (store,)
    variant = node.params["variant"]
    this = f"{store}-outer-this-join-store" if variant == "outer" else f"{store}-this-join-store"
    other = f"{store}-other-join-store" if variant == "inner" else f"{store}-outer-other-join-store"
    window = node.params["window"]
    if variant == "inner" or not (semantics.spurious_result_fix and not window.deprecated_api):
        return (this, other)
    return (this, other, f"{store}-{variant}-shared-join-store")


_GIVE = "give the application.id your application runs with (for example 'orders-app')"


def described_application_id(application_id: Any) -> str:
    """``Topology.from_describe``'s ``application_id`` if Kafka takes it as an ``application.id``, else kjoin's error
    naming the argument and the fix. Kafka prefixes every internal topic's name with it, so it is held to a topic
    name's rule (:func:`~kjoin.topology.graph.legal_topic`: ASCII letters, digits, ``.``, ``_``, ``-``, at most 249
    characters)."""
    where = "from_describe(application_id=...)"
    if not isinstance(application_id, str):
        raise TopologyError(
            f"{where}: the application.id is text, got {type(application_id).__name__} {application_id!r:.60}; "
            f"{_GIVE}, or leave application_id out"
        )
    if not application_id:
        raise TopologyError(
            f"{where}: the application.id is empty, and Kafka Streams requires one; {_GIVE}, or leave "
            f"application_id out to run under the topology harness's ({DEFAULT_APPLICATION_ID})"
        )
    problem = _illegal(application_id, "an application.id (the prefix of every internal topic's name)")
    if problem is not None:
        raise TopologyError(f"{where}: the application.id {application_id!r:.60} is illegal: {problem}; {_GIVE}")
    return application_id


def refuse_unused_application_id(topology: Any, application_id: str) -> None:
    """kjoin's error when ``topology`` (built by ``from_describe``) reads no ``application.id``: only a ``max_bytes``
    suppression counts internal topics' full names (:mod:`kjoin.topology.suppress`); under any other topology the
    outputs are the same whatever it is."""
    if any(
        node.op == "suppress" and node.params["suppressed"].max_bytes is not None
        for node in topology.graph.nodes.values()
    ):
        return
    raise TopologyError(
        f"from_describe(application_id={application_id!r:.60}): nothing in this topology reads the application.id "
        "(only a suppression bounded by max_bytes counts the full names of internal topics, "
        "<application.id>-<topic>), so its outputs are the same under any; leave application_id out"
    )
