"""Debugging a Spark run: why a record came out as it did (:mod:`.why`, :mod:`.fk` for foreign-key joins), the
drill-downs a run offers (:mod:`.drill`) over its index (:mod:`.index`), every result's reason at once
(:mod:`.explain`), the summary (:mod:`.summary`), the co-partitioning audit (:mod:`.audit`), ``kjoin diff`` on Spark
(:mod:`.diff`), a record's drill-down out to a reproduction (:mod:`.repro`), what a lagging side would change
(:mod:`.whatif`), the application's real outputs reconciled with kjoin's (:mod:`.reconcile`), and the planted-cause
check of the verdicts (:mod:`.whycheck`, ``make why-check``; ``make why-audit-check`` at 10^5 records).
"""
