# kjoin's two commands (README.md; the site: `make docs`): `make lab` runs the course, `make test` the tests.
# Both create the virtual environment on first use, so a fresh clone needs nothing else
# than Python 3.11+, Java 17 (for Spark) and, for the browser tests, root for apt-get.

VENV    ?= .venv
PYTHON  ?= python3
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: lab demo test test-fast test-spark test-oracle test-browser browser-check docs system-deps clean notebooks workshop workshop-memory kafka-oracle kafka-check kafka-check-seed-000 topology-check topology-sweep topology-spark-check describe-check kafka-live broker-check why-audit-check cluster fuzz-inputs bench-reference diff-check bench-diff bench-debug app-debug-check bench bench-compare bench-report

# The course opens on its first notebook (00_start_here.ipynb once it lands).
FIRST_NOTEBOOK := $(notdir $(firstword $(sort $(wildcard notebooks/*.ipynb))))
# JupyterLab settings of the course (jupyter/settings/overrides.json): no news pop-up, no
# update check, and widget state is never saved into a notebook (a learner's answers stay out).
LAB_SETTINGS := --LabApp.app_settings_dir=$(CURDIR)/jupyter/settings
WORKSHOP_PORT ?= 8866
WORKSHOP_IP   ?= 0.0.0.0

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,docs]'
	rm -f $(VENV)/.installed-*
	touch $@

# Debian's Chromium for the real-browser tests; installed only when missing.
system-deps:
	@command -v java >/dev/null || { echo "kjoin needs Java 17 for Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The demo ends with records E, F, G, f and h: inner emits nothing for them, left and outer emit
# E-null, F-null and G-null once stream time passes their windows (plus grace), and only outer
# emits null-f for the right record that found no partner.
demo: $(STAMP)
	$(VENV)/bin/kjoin table --join stream-stream --left "1:null, 3:A, 5:B, 7:null, 9:C, 12:null, 15:D, 40:E, 60:F, 100:G" \
	    --right "2:null, 4:a, 6:b, 8:null, 10:c, 11:null, 13:null, 14:d, 80:f, 130:h" --window 15 --grace 5

# Jupyter refuses to run as root unless told; CI machines and containers often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP) demo
	$(VENV)/bin/jupyter lab --no-browser $(ROOT_FLAG) $(LAB_SETTINGS) --ServerApp.root_dir=$(CURDIR)/notebooks \
	    --LabApp.default_url=/lab/tree/$(FIRST_NOTEBOOK)

# Re-run every notebook in place (outputs refreshed, no widget state and no timings stored).
notebooks: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.store_widget_state=False \
	    --ExecutePreprocessor.record_timing=False --ExecutePreprocessor.timeout=600 notebooks/*.ipynb

# Serve the course to a room (docs/how-to/workshop.md): every learner opens http://<this machine>:8866/
# and gets a kernel and a copy of the notebook of their own (Voila runs one kernel per page). The room's
# tally (kjoin_viz/room.py) listens on 127.0.0.1:$(ROOM_PORT) only: every exercise's answers, and the
# solutions, for the trainer at the address it prints (with its token), and every answer as CSV; it stops with the
# workshop. The pages use the Voila template jupyter/voila/templates/kjoin: a learner id per browser (a cookie that
# Voila hands to each kernel), so that reloads and other notebooks of one browser are one learner in the tally.
# KJOIN_WORKSHOP gives every kernel's Spark session the small workshop settings (kjoin.spark.io.session
# WORKSHOP_CONFIG: 512 MB heap, one core, two shuffle partitions), so that 20 learners fit on one server.
ROOM_PORT ?= 8870
workshop: $(STAMP)
	$(PY) -m kjoin_viz.room --port=$(ROOM_PORT) & room=$$!; trap 'kill $$room' EXIT INT TERM; \
	KJOIN_WORKSHOP=1 KJOIN_ROOM_URL=http://127.0.0.1:$(ROOM_PORT) JUPYTER_PATH=$(CURDIR)/jupyter \
	    $(VENV)/bin/voila --no-browser --port=$(WORKSHOP_PORT) \
	    --Voila.ip=$(WORKSHOP_IP) --VoilaConfiguration.strip_sources=False --VoilaConfiguration.show_tracebacks=True \
	    --template=kjoin --VoilaConfiguration.http_header_envs=Cookie \
	    notebooks/

# The peak memory of one learner's kernel running notebook 09, with the default and the workshop session
# (benchmarks/workshop_memory.py; docs/benchmarks-earlier.md has the numbers).
workshop-memory: $(STAMP)
	$(PY) -m benchmarks.workshop_memory

# A Spark standalone cluster on 127.0.0.1 (docs/how-to/spark-cluster.md): a master and two workers from PySpark's own
# spark-class, each a JVM of its own; prints the spark:// URL for kjoin.spark.cluster_session(url); Ctrl-C stops it.
cluster: $(STAMP)
	$(PY) -m kjoin.spark.io.cluster

# The documentation site (docs/conf.py) into docs/_build/html: the reference pages are written from the code and the
# notebooks rendered with their stored outputs; a warning fails the build, as in tests/test_site.py.
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "the site: $(CURDIR)/docs/_build/html/index.html"

# Lint and format checks first (seconds), then the suite.
test: $(STAMP) system-deps kafka-oracle kafka-live
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/ruff format --check --no-cache .
	$(PY) -m pytest

# One tier of the suite at a time (tests/conftest.py gives every test its tier). test-fast: the reference engine's
# unit and property tests, no JVM (under 3 minutes on a 2-core machine); test-spark: the Spark engine against the
# reference engine; test-oracle: the real Kafka Streams library and a running broker; test-browser: JupyterLab and
# Voila in Chromium. `make test` above runs every tier and the notebooks.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m unit tests

test-spark: $(STAMP)
	$(PY) -m pytest -q -m differential tests

test-oracle: $(STAMP) kafka-oracle kafka-live
	$(PY) -m pytest -q -m "oracle or broker" tests

test-browser: $(STAMP) system-deps
	$(PY) -m pytest -q -m browser tests

# Every course notebook run in JupyterLab in Chromium (the suite runs a sample of them: tests/test_browser.py SAMPLE).
browser-check: $(STAMP) system-deps
	KJOIN_BROWSER_ALL=1 $(PY) -m pytest -q tests/test_browser.py

# The Kafka Streams oracle (kafka_oracle/): compiled once, one classpath per Kafka version. The first
# build fetches the jars from Maven Central into ~/.m2; later builds run offline.
kafka-oracle: $(STAMP)
	@command -v mvn >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; }
	@command -v javac >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }
	$(PY) -c "from kafka_oracle.oracle_check import build; build()"

# Live topics (docs/how-to/live-topics.md): Spark's Kafka source for from_kafka(spark, bootstrap_servers=..., topic=...)
# (kafka_oracle/connector/, put on spark.jars by local_session()) and the Apache Kafka server the live-topic tests
# start (kafka_oracle/broker/). Fetched from Maven Central into ~/.m2 once; nothing is downloaded when Spark starts.
kafka-live: $(STAMP)
	@command -v mvn >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; }
	$(PY) -c "from kafka_oracle.kafka_broker import build; build()"

# N perturbed scenarios through kjoin's input boundary: counts of crashes, hangs and coercions.
fuzz-inputs: $(STAMP)
	$(PY) -m tests.input_fuzz $(N)
	$(PY) -m tests.topology_fuzz $(N)
	$(PY) -m tests.topology_fuzz_independent $(N)

# The reference engine alone, every join kind at 10^5 and 10^6 events, kjoin.run and `kjoin run` (docs/benchmarks-earlier.md).
bench-reference: $(STAMP)
	$(PY) -m benchmarks.bench_reference

# SparkRun.diff against kjoin diff for every setting run_join takes (CI runs a sample of them).
diff-check: $(STAMP)
	KJOIN_DIFF_CHECK=all KJOIN_COMPARISON_EXAMPLES=2000 $(PY) -m pytest tests/test_spark_diff_settings.py \
		tests/test_spark_diff.py tests/test_spark_comparison.py

# Every join at 10^6 and 10^7 records against a plain Spark equi-join, Kafka Streams and the reference engine, each
# measurement appended to benchmarks/history.jsonl (benchmarks/history.py), then docs/benchmarks.md made from it.
# The machine is shared: nice. `BENCH_SIZES=1000000 make bench`.
BENCH_SIZES ?= 1000000,10000000
bench: $(STAMP)
	nice -n 10 $(PY) -m benchmarks.bench --sizes $(BENCH_SIZES) --kafka-sample 1000000 --history
	$(PY) -m benchmarks.report

# This commit against the last one the history recorded (or `AGAINST=5440eb9`), both run in turns `REPEAT` times
# (default 2) at BENCH_COMPARE_SIZES (default 10^6): the CPU-second ratios, and every join whose cost rose more than
# 15% named (benchmarks/compare.py); the rows go to the history and docs/benchmarks.md is made again.
BENCH_COMPARE_SIZES ?= 1000000
REPEAT ?= 2
bench-compare: $(STAMP)
	nice -n 10 $(PY) -m benchmarks.compare --sizes $(BENCH_COMPARE_SIZES) --repeat $(REPEAT) \
		$(if $(AGAINST),--against $(AGAINST)) $(if $(JOINS),--joins $(JOINS)); status=$$?; \
		$(PY) -m benchmarks.report; exit $$status

# docs/benchmarks.md and the README's benchmark table from benchmarks/history.jsonl (benchmarks/report.py).
bench-report: $(STAMP)
	$(PY) -m benchmarks.report

# A diff's cost against one run's at 10^7 records, and its differences on sampled keys against the reference engine
# (docs/benchmarks-earlier.md). The machine is shared: nice.
bench-diff: $(STAMP)
	nice -n 10 $(PY) -m benchmarks.bench --diff --sizes 10000000 --repeat 2

# Debugging a written run of the planted application: why, summary(), partitioning_audit(),
# explained_outputs, open_run in a new process (benchmarks/bench_debug.py): `SIZE=100000 make bench-debug`.
SIZE ?= 10000000
bench-debug: $(STAMP)
	nice -n 10 $(PY) -m benchmarks.bench_debug --records $(SIZE) $(if $(JOIN),--join $(JOIN))

# A whole app's debugging at scale (benchmarks/bench_app_debug.py): the planted app of tests/app_planted.py over kcat
# dumps of APP_DEBUG_SIZE orders (default 10^5): every planted cause named at its node, summary = explained outputs,
# the audit exact; and the times of the run's verdicts, summary, audit, the written why index and kjoin why.
APP_DEBUG_SIZE ?= 100000
app-debug-check: $(STAMP)
	nice -n 10 $(PY) -m benchmarks.bench_app_debug --records $(APP_DEBUG_SIZE)

# The planted app run by Kafka Streams on the tests' broker with customers partition 1 lagging (tests/app_broker.py),
# its enriched-orders read back and reconciled with kjoin's run: every difference explained by that partition's lag.
APP_LAG_ORDERS ?= 10000
.PHONY: app-lag-check
app-lag-check: kafka-oracle kafka-live
	nice -n 10 $(PY) -m tests.app_broker $(APP_LAG_ORDERS)

# N random scenarios per Kafka version through kjoin and the real library: `N=10000 make kafka-check`. The versions
# are derived from kjoin/semantics.py's era boundaries (kafka_oracle/oracle_check.py's judged_versions), all of them here;
# KJOIN_ORACLE_VERSIONS=3.3.2,4.4.0 chooses some.
N ?= 1000
kafka-check: kafka-oracle
	$(PY) -m kafka_oracle.oracle_check $(N) kafka-check-mismatches
	$(PY) -m kafka_oracle.topology_oracle $(N)

# Seed 000's aggregates and WTable joins alone (near ones and ones that jump past grace, retention, segments and a day):
# `KJOIN_ORACLE_VERSIONS=4.4.0,3.0.2,2.8.2 N=300 make kafka-check-seed-000`.
kafka-check-seed-000: kafka-oracle
	nice -n 19 $(PY) -m kafka_oracle.oracle_check $(N) kafka-check-mismatches --seed-000

# N new random topologies per Kafka version through kjoin.Topology and TopologyTestDriver, from two generators
# written apart: kafka_oracle/topology_oracle.py (two or three joins, a re-key or a foreign-key join, 1-4 partitions) and
# kafka_oracle/topology_walk.py (a random walk over the whole DSL; each mismatch sorted into classes, three of each class a
# change of keys, values or joiners names and every other one shrunk into topology-walk-mismatches/). Each run takes
# the next seeds and appends its row to kafka_oracle/judging-history.jsonl, and docs/judging.md is made from it
# (kafka_oracle/topology_sweep.py). VERSIONS=4.4.0,3.3.2 chooses versions; `python -m kafka_oracle.topology_oracle N` with
# KJOIN_TOPOLOGY_SEED, or `python -m kafka_oracle.topology_walk N --seed S`, repeats one run without recording it.
topology-check: kafka-oracle
	$(PY) -m kafka_oracle.topology_sweep --more $(N) $(if $(VERSIONS),--versions $(VERSIONS))

# Both generators, round by round, until each chosen version (VERSIONS; default every judge) has N topologies of
# each in the history, a chunk (CHUNK, default 500) per run; UNTIL=11:00 (UTC) starts no run that would end later.
# The machine is shared: nice 15. `make topology-sweep N=10000 VERSIONS=4.4.0,3.9.1,3.6.2,3.3.2 UNTIL=18:00`.
topology-sweep: kafka-oracle
	nice -n 15 $(PY) -m kafka_oracle.topology_sweep --toward $(N) --chunk $(or $(CHUNK),500) \
		$(if $(VERSIONS),--versions $(VERSIONS)) $(if $(UNTIL),--until $(UNTIL))

# N random topologies (default 200; the shapes of topology-check) through kjoin.spark.run_topology and the reference
# engine's stages schedule, in one Spark session: every written record and every step must agree; then
# N/10 random topologies of chains with run_topology's vectorised pass forced, then its processors forced: both must
# agree with the reference engine and give the same rows.
TOPOLOGY_SPARK_N ?= 200
topology-spark-check: $(STAMP)
	nice -n 10 $(PY) -m tests.topology_spark_check $(TOPOLOGY_SPARK_N)

# Topology.from_describe on every judged Kafka version's own describe() texts: the course's topologies,
# the developer guide's joins, every random shape and the variants of aggregates one draw may miss, rebuilt from the
# text and run against that version's outputs (a count the harness maps with KTable.mapValues: refused there, checked).
describe-check: kafka-oracle
	$(PY) -m tests.describe_cases --check

# N random scenarios (default 200) through a running KafkaStreams application on a KRaft broker and through kjoin:
# each task's processing order and its outputs, on 4.4.0, 3.6.2 and 3.3.2 (KJOIN_BROKER_VERSIONS=...).
# `N=500 make broker-check`; `MULTI=1`: scenarios with several partitions only (tasks sharing one instance); a second
# argument narrows the joins: `$(PY) -m kafka_oracle.broker_check 100 fk`. `make broker-check N=100 LAGGING=1`: a lagging
# side (max.task.idle.ms = 0), each disagreement classified by the documented limit that explains it.
BROKER_CHECK_N := $(if $(filter file,$(origin N)),200,$(N))
why-audit-check:  # the planted application at 10^5 records per join (CI runs a sample)
	KJOIN_WHY_AUDIT_RECORDS=$${KJOIN_WHY_AUDIT_RECORDS:-100000} $(PY) -m pytest -q -s tests/test_spark_why_audit.py -k "not reopens"

broker-check: kafka-oracle kafka-live
	$(PY) -m kafka_oracle.broker_check $(if $(LAGGING),lagging) $(if $(MULTI),multi) $(BROKER_CHECK_N)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis docs/_build docs/generated kafka_oracle/target kafka_oracle/connector/target kafka_oracle/broker/target \
	    kafka-check-mismatches topology-walk-mismatches
