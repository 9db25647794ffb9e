"""Shared fixtures, and every test's tier.

``spark``: one quiet local Spark session for the whole test run. Spark tests fail, never skip, when Spark or Java is
missing: the session fixture lets the error through.

Tiers (pytest markers, given here so that a test file needs no marker of its own; ``make test-fast``, ``test-spark``,
``test-oracle`` and ``test-browser`` select them, ``make test`` runs them all):

* ``unit``: the reference engine, the scenarios, the exporter's text, the widgets' data, properties; no JVM.
* ``differential``: the Spark engine against the reference engine (a local Spark session).
* ``oracle``: the real Kafka Streams library through the Maven harness (``make kafka-oracle``).
* ``broker``: a running Kafka broker and Kafka Streams application (``make kafka-live``).
* ``browser``: JupyterLab or Voila driven in headless Chromium.
* ``notebook``: the course's notebooks under strict nbval.

A file's tier is :data:`FILE_TIERS`'s; a test of a ``unit`` file that asks for a Spark session, the harness or a
broker takes that tier instead (:data:`FIXTURE_TIERS`), and so does one marked with a tier (``@pytest.mark.oracle``
on a test that runs the harness itself), so a unit file may hold a few judged tests.
``tests/test_tiers.py`` fails when a test file has no tier.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TIERS = ("unit", "differential", "oracle", "broker", "browser", "notebook")

_DIFFERENTIAL = (
    "test_bench.py",
    "test_json_arrow.py",
    *(path.name for path in sorted(Path(__file__).parent.glob("test_spark_*.py"))),
)
_UNIT = (
    "test_aggregate_cli.py",
    "test_aggregates.py",
    "test_api.py",
    "test_app_debug.py",
    "test_app_debug_cli.py",
    "test_arrival.py",
    "test_broker_limits.py",
    "test_cli.py",
    "test_course_make.py",
    "test_course_text.py",
    "test_diff.py",
    "test_topology_diff.py",
    "test_app_papercuts.py",
    "test_docs.py",
    "test_emit_on_change.py",
    "test_era_boundaries.py",
    "test_export_junit.py",
    "test_foreign_key.py",
    "test_global_table.py",
    "test_house.py",
    "test_house_edges.py",
    "test_input_fuzz.py",
    "test_oracle_aggregate_draws.py",
    "test_ordering.py",
    "test_packaging.py",
    "test_processor_contract.py",
    "test_processors.py",
    "test_properties.py",
    "test_render_title.py",
    "test_rules_stream_stream.py",
    "test_rules_stream_table.py",
    "test_rules_table_table.py",
    "test_scenario_package.py",
    "test_seed000_edges.py",
    "test_seed_tables.py",
    "test_state_history.py",
    "test_store_kinds.py",
    "test_tiers.py",
    "test_topologies.py",
    "test_topology.py",
    "test_topology_aggregates.py",
    "test_topology_describe.py",
    "test_topology_kafka_cases.py",
    "test_topology_stages.py",
    "test_topology_views.py",
    "test_versioned.py",
    "test_viz_aggregates.py",
    "test_viz_charts.py",
    "test_viz_course.py",
    "test_viz_course_tables.py",
    "test_viz_fk_versioned.py",
    "test_viz_imports.py",
    "test_viz_predict.py",
    "test_viz_room.py",
    "test_viz_stepper.py",
    "test_viz_static.py",
    "test_viz_topology.py",
    "test_viz_upgrade.py",
    "test_viz_variants.py",
    "test_windowed_aggregates.py",
    "test_wtable.py",
)
FILE_TIERS: dict[str, str] = {
    **{name: "unit" for name in _UNIT},
    **{name: "differential" for name in _DIFFERENTIAL},
    "test_kafka_oracle.py": "oracle",
    "test_topology_oracle.py": "oracle",
    "test_table_aggregate_eras.py": "oracle",
    "test_topology_custom.py": "oracle",
    "test_topology_diff_oracle.py": "oracle",
    "test_topology_windowed_tables.py": "oracle",
    "test_topology_suppress.py": "oracle",
    "test_topology_suppress_bytes.py": "oracle",
    "test_spark_topology_suppress_bytes.py": "differential",
    "test_topology_suppressed_lookup.py": "unit",
    "test_topology_suppressed_windows.py": "unit",
    "test_topology_suppressed_fk.py": "unit",
    "test_topology_windowed_fk.py": "unit",
    "test_topology_fk_views.py": "unit",
    "test_topology_cogroup.py": "oracle",
    "test_topology_names.py": "unit",
    "test_topology_store_names.py": "unit",
    "test_topology_windowed_views.py": "unit",
    "test_topology_grace_buffer_records.py": "unit",
    "test_topology_unmaterialized_tables.py": "oracle",
    "test_topology_session_retention.py": "oracle",
    "test_topology_emit_final_retention.py": "unit",
    "test_export_topology.py": "oracle",
    "test_broker_oracle.py": "broker",
    "test_kafka_live.py": "broker",
    "test_app_debug_live.py": "broker",
    "test_app_lag_broker.py": "broker",
    "test_topology_arrival.py": "unit",
    "test_spark_topology_drops.py": "differential",
    "test_spark_topology_source_tables.py": "differential",
    "test_browser.py": "browser",
    "test_workshop.py": "browser",
    "test_broker_instance_time.py": "broker",
    "test_site.py": "browser",
    "test_topology_walk.py": "unit",
    "test_harness_build.py": "unit",
    "test_describe_application_id.py": "unit",
    "test_topology_sweep.py": "unit",
    "test_topology_fuzz.py": "unit",
    "test_topology_handlers.py": "unit",
    "test_topology_dead_letters.py": "unit",
    "test_topology_inputs.py": "unit",
    "test_topology_fuzz_independent.py": "unit",
    "test_topology_instance_time.py": "unit",
    "test_course_feedback.py": "unit",
}
"""Every test file's tier, by name (the notebooks are ``notebook``)."""

FIXTURE_TIERS: dict[str, str] = {
    "spark": "differential",
    "built": "oracle",
    "harness": "oracle",
    "latest": "oracle",
    "junit_runs": "oracle",
    "broker": "broker",
    "oracle": "broker",
}
"""A fixture that needs more than Python, and the tier a ``unit`` file's test that asks for it takes."""


def tier_of(item: pytest.Item) -> str | None:
    """The tier of a collected test (``None``: its file has none, which ``tests/test_tiers.py`` reports)."""
    path = Path(str(item.fspath))
    if path.suffix == ".ipynb":
        return "notebook"
    tier = FILE_TIERS.get(path.name)
    if tier == "unit":
        for marked in TIERS:
            if marked != "unit" and item.get_closest_marker(marked) is not None:
                return marked
        for name in getattr(item, "fixturenames", ()):
            if name in FIXTURE_TIERS:
                return FIXTURE_TIERS[name]
    return tier


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(scope="session")
def spark():
    from kjoin.spark import local_session

    session = local_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def built() -> None:
    """The Maven harness compiled for every judged Kafka version (``kafka_oracle.oracle_check.build``, which builds
    once per process); a test that runs the real library asks for it. Fails, never skips, when Maven or a Kafka
    artifact is missing."""
    from kafka_oracle.oracle_check import build

    build()


@pytest.fixture(scope="session")
def broker():
    """One KRaft broker (``kafka_oracle/kafka_broker.py``) for every module that asks for ``broker`` without a
    fixture of its own: a broker takes seconds of JVM to start, and these modules' topics have names of their own
    (a ``BrokerOracle``'s scenarios are prefixed per harness, an application's internal topics and consumer group
    carry its id). A module whose topic names another's already uses keeps a broker of its own (``test_kafka_live.py``,
    ``test_app_debug_live.py``). Fails, never skips, when the broker cannot start."""
    from kafka_oracle.broker_check import BROKER_START_S
    from kafka_oracle.kafka_broker import Broker

    started = Broker(start_timeout_s=BROKER_START_S)
    try:
        yield started
    finally:
        started.stop()
