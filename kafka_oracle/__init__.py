"""The real Kafka Streams library as kjoin's judge: the Java harnesses (``src/``, built per Kafka version by
:func:`kafka_oracle.oracle_check.build`) and the Python that drives them: :mod:`~kafka_oracle.oracle_check` (single
joins and aggregates), :mod:`~kafka_oracle.topology_oracle` (whole topologies, the first random generator),
:mod:`~kafka_oracle.topology_walk` (the second, independently written generator), :mod:`~kafka_oracle.broker_check`
(a real broker and application) and :mod:`~kafka_oracle.kafka_broker` (the broker itself)."""
