"""The passes that compute a run's results, and the plan that picks one (:mod:`.plans`).

Per Kafka task: kjoin's own processors (:mod:`.task`), the array passes (:mod:`.vectorised`,
:mod:`.vectorised_stream`, :mod:`.vectorised_versioned`) fed in processing order by :mod:`.merge`, or Spark SQL
window functions (:mod:`.native`); a task's keys split across several Spark tasks (:mod:`.split`). A foreign-key
join runs each scenario whole (:mod:`.fk_task`); the windowed-table design's aggregates have their own entry point
(:mod:`.aggregates`). Every pass takes :class:`kjoin.spark.spec.JoinSpec` values, not scenarios.
"""
