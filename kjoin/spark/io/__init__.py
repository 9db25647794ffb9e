"""Getting records in and a session up: topics (:mod:`.topic`), their readers from files, kcat dumps and live Kafka
(:mod:`.readers`, one module per source: :mod:`.kafka`, :mod:`.kcat`, :mod:`.files`, their shared
checks in :mod:`.checks`), Spark sessions set up as kjoin wants them (:mod:`.session`) and a local standalone cluster
(:mod:`.cluster`)."""
