"""kjoin_viz: widgets and charts over finished kjoin traces.

The widgets only read a trace; the reference engine (:func:`kjoin.run`) does the joining.

- :class:`Stepper`: step through a trace record by record — timeline, state, outputs.
- :class:`Variants`: the seeds' table of one input under several variants and eras (or,
  with :func:`versioned_mode_traces`, a versioned table-table join under each design of
  seed 003).
- a foreign-key join's messages travel in the stepper: :mod:`kjoin_viz.flight`.
- :class:`WhatIf`: sliders on window and retention options that re-run the engine.
- charts (:func:`timeline_chart`, :func:`outputs_chart`, :func:`drops_chart`,
  :func:`era_diff_chart`): pure functions from traces to ``alt.Chart``.
"""

from .charts import drops_chart, era_diff_chart, outputs_chart, timeline_chart, use_offline_renderer
from .flight import flight_svg, flight_text, workflow_text
from .step_view import StepView
from .stepper import Stepper, seek
from .variants import Variants, seed_table_html, variant_traces, versioned_mode_traces
from .whatif import WhatIf, compare_text, what_if

__all__ = [
    "StepView",
    "Stepper",
    "Variants",
    "WhatIf",
    "compare_text",
    "drops_chart",
    "era_diff_chart",
    "flight_svg",
    "flight_text",
    "outputs_chart",
    "seed_table_html",
    "seek",
    "timeline_chart",
    "use_offline_renderer",
    "variant_traces",
    "versioned_mode_traces",
    "what_if",
    "workflow_text",
]
