"""kjoin_viz: widgets and charts over finished kjoin traces.

The widgets only read a trace; the reference engine (:func:`kjoin.run`) does the joining.

- :func:`show_step`: a static view of one step (for a walkthrough cell: stored with the
  notebook, so it shows after Run All and without running).
- :class:`Stepper`: step through a trace record by record — timeline, state, outputs.
- :class:`Predict`: an exercise: predict a record's fate and outputs (or when a held record
  leaves), checked against the engine; :func:`trainer_mode` reveals solutions.
- :func:`fate_label`: the words every view uses for what a record did.
- :class:`Variants`: the seeds' table of one input under several variants and eras (or,
  with :func:`versioned_mode_traces`, a versioned table-table join under each design of
  seed 003).
- a foreign-key join's messages travel in the stepper: :mod:`kjoin_viz.flight`.
- :class:`TopologyStepper`: a whole topology as a graph, the record's path lit and each node's state beside it
  (:mod:`kjoin_viz.topology_view`).
- :class:`WhatIf`: sliders on window and retention options that re-run the engine.
- :class:`UpgradeDiff`: before you upgrade: :func:`kjoin.diff` along a path of versions
  (:func:`upgrade_path`) or for a configuration change (:func:`setting_change`), counted per rule
  and stepped through example by example (:mod:`kjoin_viz.upgrade`).
- values as a learner reads them (:func:`show_value`, :func:`show_output`, :func:`show_text`: an explanation or a
  ``why`` with the JSON in it shown as values), :mod:`kjoin_viz.values`.
- charts (:func:`timeline_chart`, :func:`outputs_chart`, :func:`drops_chart`,
  :func:`era_diff_chart`): pure functions from traces to ``alt.Chart``.
"""

from .charts import drops_chart, era_diff_chart, outputs_chart, timeline_chart, use_offline_renderer
from .flight import flight_svg, flight_text, workflow_text
from .labels import FateLabel, fate_label
from .predict import Predict, trainer_mode
from .show import show_step, table, variants_table
from .step_view import StepView
from .stepper import Stepper, seek
from .topology_view import TopologyStepper, topology_svg
from .upgrade import UpgradeDiff, setting_change, upgrade_path
from .values import show_output, show_text, show_value
from .variants import Variants, seed_table_html, variant_traces, versioned_mode_traces
from .whatif import WhatIf, compare_text, what_if, what_if_table

__all__ = [
    "FateLabel",
    "Predict",
    "StepView",
    "Stepper",
    "UpgradeDiff",
    "Variants",
    "WhatIf",
    "compare_text",
    "drops_chart",
    "era_diff_chart",
    "fate_label",
    "flight_svg",
    "flight_text",
    "outputs_chart",
    "seed_table_html",
    "setting_change",
    "seek",
    "show_output",
    "show_step",
    "show_text",
    "show_value",
    "table",
    "timeline_chart",
    "topology_svg",
    "TopologyStepper",
    "trainer_mode",
    "upgrade_path",
    "use_offline_renderer",
    "variant_traces",
    "variants_table",
    "versioned_mode_traces",
    "what_if",
    "what_if_table",
    "workflow_text",
]
