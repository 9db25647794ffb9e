"""Benchmarks of kjoin, outside the library users import: ``python -m benchmarks.bench`` (kjoin on Spark against a
plain Spark join and Kafka Streams) and ``python -m benchmarks.bench_reference`` (the reference engine's records per
second, ``make bench-reference``). Run them from the project's root."""
