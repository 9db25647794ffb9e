"""Readers: live Kafka topics, Kafka-source DataFrames, kcat JSON dumps and Parquet/CSV/JSON files, as topics.

One module per source: :mod:`.kafka` (``from_kafka``: a Kafka-source DataFrame or a live topic), :mod:`.kcat`
(``from_kcat``) and :mod:`.files` (``from_files``), with the checks they share in :mod:`.checks`. This module
gathers their public names.

Every reader checks its columns first and refuses a missing or mistyped column with an
error that names the source, the column, the expected type and the fix. What can only be
seen in the data is checked in two ways. A null or negative timestamp and a partition outside the
topic are checked eagerly: the reader runs one small aggregate job over those columns (a count and
a min/max) and raises :class:`SparkInputError` before any join runs (``check=False`` skips it;
a path that does not exist is refused before Spark is asked). A long that is not 8 bytes or text
that is not JSON is checked lazily, in the same Spark job that reads it: the job fails with a
``[USER_RAISED_EXCEPTION]`` whose message names the source, the column and the value.
Nothing else is collected: the result wraps a lazy DataFrame (a live topic also asks the cluster
for its offsets once, with one Spark job, and pins the read to them; its records are the
cluster's, so it is not scanned again).

Deserializers (``key=`` and ``value=``):

* ``"string"``: UTF-8 text (Kafka's ``StringDeserializer``).
* ``"long"``: 8 big-endian bytes (``LongDeserializer``); in kcat dumps and files, a number
  (or the text of one).
* ``"json"``: JSON text; the joiner receives the parsed value, outputs carry JSON text. In
  JSON files and kcat dumps a nested object (``"value": {"fk": "Y"}``) is read as its JSON
  text.

Files without a ``partition`` column are refused unless the caller says how they were
partitioned (``partitioner="default"`` with ``partitions=N``: murmur2 of the serialized key,
:mod:`kjoin.partitioner`; see :mod:`kjoin.spark.io.files`). Files without an ``offset``
column get offsets in input order: files in name order (``part-00000…`` as Spark wrote them),
rows in file order, counted per partition from 0.
"""

from __future__ import annotations

from .checks import DESERIALIZERS, Deserializer, local_path
from .files import FILE_COLUMNS, TIMESTAMP_TYPES, from_files
from .kafka import KAFKA_FORMAT, KAFKA_SOURCE_COLUMNS, from_kafka
from .kcat import KCAT_FIELDS, from_kcat

__all__ = [
    "from_kafka",
    "from_kcat",
    "from_files",
    "Deserializer",
    "DESERIALIZERS",
    "FILE_COLUMNS",
    "KAFKA_FORMAT",
    "KAFKA_SOURCE_COLUMNS",
    "KCAT_FIELDS",
    "TIMESTAMP_TYPES",
    "local_path",
]
