"""The benchmark command runs end to end at a tiny size and prints its table.

A functional test only: it checks the table's rows and columns, never timings.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from benchmarks import bench

pytestmark = pytest.mark.spark


def test_the_bench_prints_one_row_per_join_size_and_method_with_every_column(spark, capsys):
    """Two rounds of timing (--repeat 2) still give one row per method, the fastest round's."""
    assert (
        bench.main(
            [
                "--sizes",
                "2000",
                "--joins",
                "table-table",
                "--methods",
                "auto,processors",
                "--reference-sample",
                "500",
                "--keys",
                "50",
                "--partitions",
                "2",
                "--repeat",
                "2",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(printed) if line.startswith("join "))
    assert [cell.strip() for cell in printed[header].split(" | ")] == bench.COLUMNS
    rows = [[cell.strip() for cell in line.split(" | ")] for line in printed[header + 2 :] if line.strip()]
    assert [(row[0], row[1], row[2], row[3]) for row in rows] == [
        ("table-table", "outer", "2,000", "auto: vectorised"),
        ("table-table", "outer", "2,000", "processors"),
    ]
    column = {name: i for i, name in enumerate(bench.COLUMNS)}
    for row in rows:
        assert len(row) == len(bench.COLUMNS)
        assert row[column["reference rec/s (sample)"]].endswith("(n=500)")
        numbers = ["kjoin s", "kjoin rec/s", "equi s", "equi rec/s", "kjoin/equi", "kafka rec/s", "kjoin/kafka"]
        for name in [*numbers, "kjoin/ref", "peak MB"]:
            assert float(row[column[name]].replace(",", "")) >= 0  # a number; timings themselves are not tested
        before, after = row[column["load before/after"]].split("/")
        assert float(before) >= 0 and float(after) >= 0
    # the why index and the first why after it: measured once per join, size and variant, with the first method
    assert float(rows[0][column["index s"]]) > 0 and float(rows[0][column["why s"]]) > 0
    assert rows[1][column["index s"]] == rows[1][column["why s"]] == ""
    assert "load average" in printed[header - 1]


def test_the_diff_bench_prints_its_ratio_and_checks_sampled_keys_against_the_reference_engine(spark, capsys):
    arguments = ["--diff", "--sizes", "3000", "--keys", "40", "--partitions", "2", "--diff-keys", "4", "--repeat", "2"]
    assert bench.main([*arguments, "--diff-changes", "3.0 -> 3.1"]) == 0
    printed = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(printed) if line.startswith("join "))
    assert [cell.strip() for cell in printed[header].split(" | ")] == bench.DIFF_COLUMNS
    (row,) = [[cell.strip() for cell in line.split(" | ")] for line in printed[header + 2 :] if line.strip()]
    cell = dict(zip(bench.DIFF_COLUMNS, row))
    assert (cell["join"], cell["records"], cell["change"]) == ("stream-stream left", "3,000", "3.0 -> 3.1")
    assert int(cell["differences"].replace(",", "")) > 0 and float(cell["diff/run"]) > 0
    run_cpu, diff_cpu = (float(part) for part in cell["CPU s run/diff"].split("/"))
    assert run_cpu > 0 and diff_cpu > 0
    # the ratio is of the unrounded seconds, the cells show them to 0.1 s: it lies between what the cells allow
    ratio, half, shown = float(cell["CPU diff/run"]), 0.05, 0.005
    lowest, highest = (diff_cpu - half) / (run_cpu + half), (diff_cpu + half) / max(run_cpu - half, 1e-9)
    assert lowest - shown <= ratio <= highest + shown
    assert int(cell["python records"].replace(",", "")) >= 0  # the paired pass compared them (else "-")
    assert cell["keys checked"] == "4" and int(cell["reference differences"].replace(",", "")) > 0
    assert cell["mismatches"] == "0"


def test_variants_get_a_row_each_where_the_join_has_them_and_kafka_replays_its_sample(spark, capsys):
    """``--variants inner,outer`` on a stream-table join times its inner variant only (it has no outer one); with
    ``--kafka-sample`` Kafka Streams replays a prefix and the table says how many records."""
    args = ["--sizes", "1500", "--joins", "stream-table,stream-stream", "--variants", "inner,outer"]
    args += ["--reference-sample", "300", "--keys", "30", "--partitions", "2", "--kafka-sample", "700"]
    assert bench.main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(printed) if line.startswith("join "))
    rows = [[cell.strip() for cell in line.split(" | ")] for line in printed[header + 2 :] if line.strip()]
    assert [(row[0], row[1]) for row in rows] == [
        ("stream-table", "inner"),
        ("stream-stream", "inner"),
        ("stream-stream", "outer"),
    ]
    kafka = bench.COLUMNS.index("kafka rec/s")
    assert all(row[kafka].endswith("(n=700)") for row in rows)


def test_the_equi_join_follows_the_variant(spark, tmp_path):
    """The baseline joins as the variant does: inner drops the stream records without a table row, outer keeps the
    right's."""
    path = str(tmp_path / "tt.parquet")
    bench.generate(spark, "table-table", 3000, path, keys=500, partitions=2)
    left, right = bench.topics(spark, path, 2)
    counts = {v: bench.equi_join("table-table", left.frame, right.frame, v).count() for v in ("inner", "left", "outer")}
    assert counts["inner"] < counts["left"] < counts["outer"]


def test_the_kafka_streams_replay_counts_every_record_and_outputs_what_kjoin_outputs(spark, tmp_path):
    """The Kafka Streams baseline replays the same rows through the same join: as many outputs as kjoin writes."""
    from pyspark.sql import functions as F

    from kjoin.spark import run_join

    path = str(tmp_path / "st.parquet")
    bench.generate(spark, "stream-table", 3000, path, keys=40, partitions=2)
    rate, outputs = bench.kafka_rate(spark, "stream-table", path, 2, str(tmp_path))
    assert rate > 0
    left, right = bench.topics(spark, path, 2)
    result = run_join(left, right, "stream-table", "left")
    assert outputs == result.outputs.count() > 0
    assert outputs < spark.read.parquet(path).filter(F.col("side") == "left").count()  # null keys were dropped


def test_the_generated_workload_has_what_the_bench_promises(spark, tmp_path):
    """Seeded, with table updates and tombstones; the same seed gives the same rows."""
    path = str(tmp_path / "st.parquet")
    bench.generate(spark, "stream-table", 5000, path, keys=100, partitions=3)
    frame = spark.read.parquet(path)
    rows = frame.orderBy("id").collect()
    right = [r for r in rows if r["side"] == "right"]
    assert len(rows) == 5000 and 300 < len(right) < 700  # about 10% table updates
    assert any(r["value"] is None for r in right) and any(r["value"] is not None for r in right)
    assert {r["partition"] for r in rows} == {0, 1, 2}
    again = str(tmp_path / "again.parquet")
    bench.generate(spark, "stream-table", 5000, again, keys=100, partitions=3)
    assert spark.read.parquet(again).orderBy("id").collect() == rows


def test_bad_options_are_refused_with_the_option_named():
    with pytest.raises(SystemExit):
        bench.main(["--joins", "stream-river"])
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "ten"])
    with pytest.raises(SystemExit):
        bench.main(["--repeat", "0"])
    with pytest.raises(SystemExit):
        bench.main(["--variants", "full"])
    with pytest.raises(SystemExit):
        bench.main(["--kafka-sample", "0"])


@pytest.mark.parametrize("join", ["versioned-stream-table", "versioned-table-table"])
def test_a_versioned_join_replays_through_kafka_streams_with_as_many_outputs_as_kjoin_writes(spark, tmp_path, join):
    """The versioned rows run the join over versioned tables (history retention, no grace) in kjoin and in Kafka
    Streams alike: both count the same outputs, and a step row accounts for every record that gave none."""
    from kjoin.spark import run_join

    path = str(tmp_path / "v.parquet")
    bench.generate(spark, join, 3000, path, keys=40, partitions=2)
    rate, outputs = bench.kafka_rate(spark, join, path, 2, str(tmp_path))
    assert rate > 0
    left, right = bench.topics(spark, path, 2)
    result = run_join(left, right, **bench.run_options(join))
    assert result.scenarios[0].right.versioned and result.scenarios[0].right.history_retention_ms == 10_000
    assert result.scenarios[0].left.versioned == (join == "versioned-table-table")
    assert outputs == result.outputs.count() > 0
    assert result.results.count() >= 3000  # every record: an output or a step (a table update may give several)


def test_the_scale_tables_run_end_to_end_and_the_split_rows_are_identical(spark, capsys):
    """``--scale``: the split's four runs on one partition (two buckets on the split ones, the same checksum on
    all) and its bound (the same records on two partitions), the curve's row per size with its equi-join, and the
    skewed topic's rows; timings are not tested."""
    argv = ["--scale", "--sizes", "3000", "--keys", "50", "--partitions", "2"]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    rows = [[cell.strip() for cell in line.split(" | ")] for line in printed if line.count(" | ") >= 8]
    runs = [(row[0], row[1], row[2]) for row in rows if row[0] != "run"]
    assert runs == [
        ("1 partition, key_split=off", "3,000", "1"),
        ("1 partition, key_split=on", "3,000", "2"),
        ("1 partition, key_split=off", "3,000", "1"),
        ("1 partition, key_split=on", "3,000", "2"),
        ("2 partitions (the bound), key_split=off", "3,000", "1"),
        ("2 partitions", "3,000", "1"),
        ("2 partitions even, key_split=off", "3,000", "1"),
        ("2 partitions even, key_split=2", "3,000", "2"),
        ("2 partitions skewed, key_split=off", "3,000", "1"),
        ("2 partitions skewed, key_split=2", "3,000", "2"),
    ]
    identical = [line for line in printed if "identical rows" in line]
    assert len(identical) == 3 and all(line.endswith(": yes") for line in identical)


def test_the_skewed_workload_puts_the_hot_key_and_half_the_records_in_partition_zero(spark, tmp_path):
    path = str(tmp_path / "skew.parquet")
    bench.generate(spark, "stream-table", 20_000, path, keys=1000, partitions=4, hot_key_share=10)
    rows = spark.read.parquet(path).groupBy("partition", (F.col("key") == "k0").alias("hot")).count().collect()
    per_partition = {p: sum(r["count"] for r in rows if r["partition"] == p) for p in range(4)}
    hot = sum(r["count"] for r in rows if r["hot"])
    assert 1500 < hot < 2500 and all(r["partition"] == 0 for r in rows if r["hot"])
    assert 0.5 < per_partition[0] / 20_000 < 0.6 and min(per_partition.values()) > 0


def test_the_values_bench_times_json_values_against_string_values_on_the_same_text(spark, capsys):
    """``--values json``: one row per way of reading the values, the JSON one on the processors (what ``auto``
    takes for decoded values), its time over the string one's; the string row is its own baseline."""
    assert bench.main(["--values", "json", "--sizes", "1200", "--keys", "30", "--partitions", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(printed) if line.startswith("join "))
    assert [cell.strip() for cell in printed[header].split(" | ")] == bench.VALUES_COLUMNS
    assert "the same JSON text read as string and as JSON" in printed[header - 1]
    rows = [dict(zip(bench.VALUES_COLUMNS, (c.strip() for c in line.split(" | ")))) for line in printed[header + 2 :]]
    assert [(r["join"], r["variant"], r["records"], r["values"]) for r in rows] == [
        ("stream-table", "left", "1,200", "string"),
        ("stream-table", "left", "1,200", "json"),
    ]
    assert rows[0]["method"] == "vectorised" and rows[1]["method"] == "processors", rows
    assert rows[0]["json/string"] == "1.00" and float(rows[1]["json/string"]) > 0  # a ratio; never a timing


def test_json_values_are_json_text_of_the_same_records(spark, tmp_path):
    plain, json_path = str(tmp_path / "plain.parquet"), str(tmp_path / "json.parquet")
    bench.generate(spark, "stream-table", 300, plain, keys=10, partitions=2)
    bench.json_values(spark, plain, json_path)
    before = {r["id"]: r for r in spark.read.parquet(plain).collect()}
    after = spark.read.parquet(json_path).collect()
    assert len(after) == len(before) == 300
    for row in after:
        original = before[row["id"]]
        if original["value"] is None:
            assert row["value"] is None
        else:
            assert json.loads(row["value"]) == {"id": original["value"], "ts": original["ts"]}
        assert (row["key"], row["ts"], row["partition"], row["offset"]) == (
            original["key"], original["ts"], original["partition"], original["offset"],
        )  # fmt: skip


def test_the_debug_bench_times_every_operation_and_reopens_the_run_in_a_new_process(spark, capsys):
    """``benchmarks/bench_debug.py`` at 10^4 records: one row per operation, the planted order's verdict checked in
    this process and in the new one that reopens the written run (the command fails otherwise)."""
    from benchmarks import bench_debug

    assert bench_debug.main(["--records", "10000"], spark=spark) == 0
    printed = capsys.readouterr().out.splitlines()
    header = printed.index("| operation | seconds | records |")
    assert "the planted application" in printed[header - 2]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in printed[header + 2 :] if line]
    assert [row[0] for row in rows] == [
        "run_join + write_parquet(why_index=True)",
        "why of one order (partner-other-partition)",
        "summary()",
        "partitioning_audit()",
        "explained_outputs",
        "open_run (new process)",
        "why of the same order in the reopened run (partner-other-partition)",
    ]
    (records,) = {row[2] for row in rows}
    assert 9_000 <= int(records.replace(",", "")) <= 11_000, records
    assert all(float(row[1]) >= 0 for row in rows)  # a number; timings themselves are not tested
    assert spark.range(1).count() == 1, "the test's session is left running"


# -- the history, the comparison and the page (benchmarks/history.py, compare.py, report.py) ---------------------------
def _measurement(commit: str, join: str = "table-table", size: int = 1000, **costs: float) -> dict:
    from benchmarks import history

    row = {name: None for name in history.MEASUREMENT_FIELDS}
    row.update(kind="measurement", run="r1", label="bench", command="python -m benchmarks.bench", commit=commit)
    row.update(dirty=False, date="2026-11-29T03:00:00+00:00", cores=2, memory_gib=23.4, load_before=1.0)
    row.update(load_after=1.5, join=join, variant="outer", size=size, method="auto: vectorised", peak_mb=900)
    row.update(kjoin_s=2.0, kjoin_cpu_s=4.0, equi_s=1.0, equi_cpu_s=2.0)
    row.update(costs)
    return row


def test_the_history_appends_rows_and_reads_them_back_in_order(tmp_path):
    from benchmarks import history

    path = tmp_path / "history.jsonl"
    assert history.read(path) == []
    history.append([_measurement("a" * 40)], path)
    history.append([_measurement("b" * 40), {"kind": "comparison", "run": "c1", "commit": "b" * 40}], path)
    rows = history.read(path)
    assert [r["commit"] for r in rows] == ["a" * 40, "b" * 40, "b" * 40]
    assert len(history.measurements(rows)) == 2
    assert history.last_commit(rows) == "b" * 40
    assert history.last_commit(rows, other_than="b" * 40) == "a" * 40
    assert list(rows[0]) == list(history.MEASUREMENT_FIELDS)


def test_a_broken_history_line_is_named_with_its_file_and_line(tmp_path):
    from benchmarks import history

    path = tmp_path / "history.jsonl"
    path.write_text('{"kind": "measurement"}\nnot json\n')
    with pytest.raises(ValueError, match=r"history.jsonl:2: not a JSON line"):
        history.read(path)


def test_a_bench_row_records_its_seconds_cpu_and_what_was_not_measured(tmp_path):
    """The recorder writes a row's costs with the run's commit and machine; the baselines a run skipped are null."""
    from benchmarks import history

    row = bench.BenchRow(
        "table-table", "outer", 1000, "auto: vectorised", 2.0, 1.0, float("nan"), 0, 512.4, float("nan"), 0.5, 0.7,
        1000, 3.25, 1.5, None, None,
    )  # fmt: skip
    path = tmp_path / "history.jsonl"
    bench._recorder(str(path), "bench", ["--sizes", "1000"])([row])
    (got,) = history.read(path)
    assert got["command"] == "python -m benchmarks.bench --sizes 1000"
    assert len(got["commit"]) == 40 and got["cores"] >= 1 and got["memory_gib"] > 0
    assert (got["kjoin_s"], got["kjoin_cpu_s"], got["equi_s"], got["equi_cpu_s"]) == (2.0, 3.25, 1.0, 1.5)
    assert (got["kafka_s"], got["kafka_cpu_s"], got["reference_rate"], got["peak_mb"]) == (None, None, None, 512)


def test_the_benchmarks_own_files_do_not_make_the_measured_tree_dirty(tmp_path):
    """A run appends to the history while another measures: only a change to another tracked file is dirty."""
    import subprocess

    from benchmarks import history

    def git(*words: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *words], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "docs").mkdir()
    for name in [*history.MEASURED_ELSEWHERE, "kjoin.py"]:
        (tmp_path / name).write_text("a\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "t")
    for name in history.MEASURED_ELSEWHERE:
        (tmp_path / name).write_text("b\n")
    assert history.commit_of(tmp_path)[1] is False
    (tmp_path / "kjoin.py").write_text("b\n")
    assert history.commit_of(tmp_path)[1] is True


def test_a_history_row_names_the_repository_s_files_relative_to_it(tmp_path):
    """A path inside the repository (a word or an option's value) is recorded relative to it, any other as given:
    the same history on every machine."""
    from benchmarks import history

    inside = str(history.HISTORY)
    words = ["--history", inside, f"--history={inside}", str(tmp_path / "x.jsonl"), "--sizes", "1000"]
    got = history.command("python -m benchmarks.bench", words)
    assert got == (
        "python -m benchmarks.bench --history benchmarks/history.jsonl --history=benchmarks/history.jsonl "
        f"{tmp_path / 'x.jsonl'} --sizes 1000"
    )
    row = bench.BenchRow("table-table", "outer", 10, "auto", 1.0, 1.0, float("nan"), 0, 1.0, float("nan"), 0, 0)
    path = tmp_path / "history.jsonl"
    bench._recorder(str(path), "bench", ["--history", inside])([row])
    assert history.read(path)[0]["command"] == "python -m benchmarks.bench --history benchmarks/history.jsonl"
    assert all(str(history.REPOSITORY) not in row.get("command", "") for row in history.read())


def test_the_comparison_keeps_each_commits_best_round_and_names_the_joins_whose_cpu_rose():
    from benchmarks import compare

    current = [
        _measurement("new", "table-table", kjoin_s=2.0, kjoin_cpu_s=4.0),
        _measurement("new", "table-table", kjoin_s=1.8, kjoin_cpu_s=4.4),  # fewer seconds, more CPU: each its best
        _measurement("new", "stream-table", kjoin_s=1.0, kjoin_cpu_s=2.29),
        _measurement("new", "stream-stream", kjoin_s=1.0, kjoin_cpu_s=2.31),
    ]
    baseline = [
        _measurement("old", "table-table", kjoin_s=2.5, kjoin_cpu_s=5.0),
        _measurement("old", "stream-table", kjoin_s=1.0, kjoin_cpu_s=2.0),
        _measurement("old", "stream-stream", kjoin_s=1.0, kjoin_cpu_s=2.0),
        _measurement("old", "versioned-table-table"),  # the current commit did not run it: no row
    ]
    rows = {r["join"]: r for r in compare.compare(current, baseline)}
    assert set(rows) == {"table-table", "stream-table", "stream-stream"}
    assert (rows["table-table"]["kjoin_s"], rows["table-table"]["kjoin_cpu_s"]) == (1.8, 4.0)
    assert rows["table-table"]["kjoin_cpu_ratio"] == 0.8 and rows["table-table"]["rounds"] == 1
    assert [j for j, r in rows.items() if r["rose"]] == ["stream-stream"]  # 1.155 > 1.15; 1.145 is not
    assert compare.verdict(list(rows.values())).startswith("CPU seconds rose more than 15%: stream-stream outer")
    assert compare.verdict([rows["table-table"]]) == "no join's CPU seconds rose more than 15%"
    table = compare.format_comparison(list(rows.values())).splitlines()
    assert [c.strip() for c in table[0].split(" | ")] == compare.COMPARISON_COLUMNS and len(table) == 5


def test_the_benchmark_page_is_made_from_the_last_run_and_comparison(tmp_path):
    from benchmarks import compare, history, report

    path = tmp_path / "history.jsonl"
    history.append([_measurement("a" * 40, run="r0", kjoin_s=9.0)], path)
    history.append(
        [
            _measurement("b" * 40, run="r1", why_index_s=12.34, why_s=0.456),
            _measurement("b" * 40, "stream-table", run="r1"),
        ],
        path,
    )
    result = compare.compare([_measurement("b" * 40)], [_measurement("a" * 40, kjoin_cpu_s=2.0)])
    history.append(
        [{"kind": "comparison", "run": "c1", "date": "2026-11-29T04:00:00+00:00", "commit": "b" * 40, "dirty": False,
          "baseline": "a" * 40, "threshold": 0.15, "cores": 2, "memory_gib": 23.4, **row} for row in result],
        path,
    )  # fmt: skip
    text = report.page(history.read(path))
    assert "Generated by `python -m benchmarks.report`" in text
    last = text.split("## The last run")[1].split("##")[0]
    assert (
        "2026-11-29" in last and "commit bbbbbbb, 2 cores, 23.4 GiB" in last and "`python -m benchmarks.bench`" in last
    )
    assert "| table-table | outer | 1,000 | auto: vectorised | 2.00 | 4.0 | 1.00 | 2.0 | 0.50 | 0.50 |" in last
    assert "| 900 | 12.3 | 0.46 | 1.0/1.5 |" in last  # the why index's and the first why's seconds
    assert "| 900 |  |  | 1.0/1.5 |" in last  # a row without them
    assert "9.00" not in last  # the earlier run is not the last one
    assert "bbbbbbb against aaaaaaa" in text and "stream-table" in last
    assert "CPU seconds rose more than 15%: table-table outer 1,000 (x2.00)" in text
    assert text.count("| 2026-11-29 | aaaaaaa |") == 1  # every run's ratios
    assert report.page([]).endswith("No run recorded yet.\n")


def test_a_bounded_run_is_the_last_run_with_its_label(tmp_path):
    """A ``make bench`` run that left steps out names them in its label (``bench: ...``): the page takes it as a run
    and says what it left out; a comparison's rounds stay out of the runs."""
    from benchmarks import history, report

    path = tmp_path / "history.jsonl"
    history.append([_measurement("a" * 40, run="r0")], path)
    history.append([_measurement("b" * 40, run="r1", label="bench: no Kafka replay (time)", kjoin_s=4.0)], path)
    history.append([_measurement("c" * 40, run="r2", label="compare:x1", kjoin_s=8.0)], path)
    text = report.page(history.read(path))
    last = text.split("## The last run")[1].split("##")[0]
    assert "commit bbbbbbb" in last and "The run's label: bench: no Kafka replay (time)." in last
    assert "| 4.00 |" in last
    assert text.count("| 2026-11-29 | bbbbbbb |") == 1 and "ccccccc" not in text


def test_the_readme_table_is_the_last_runs_ratios_and_is_made_from_the_history(tmp_path):
    """The README's benchmark table is written between its markers from the history's last ``make bench`` run (one
    column per size), and the repository's README holds what its own history makes: nobody edits it by hand."""
    from benchmarks import history, report

    path = tmp_path / "history.jsonl"
    history.append([_measurement("a" * 40, run="r0", kjoin_s=9.0)], path)
    history.append(
        [
            _measurement("b" * 40, run="r1", kjoin_s=2.0, equi_s=1.0),
            _measurement("b" * 40, run="r1", size=10_000, kjoin_s=1.0, equi_s=1.5),
            _measurement("b" * 40, "stream-table", run="r1", kjoin_s=4.0, equi_s=1.0),
        ],
        path,
    )
    table = report.readme_table(history.read(path))
    assert "commit bbbbbbb, 2 cores, 23.4 GiB" in table and "aaaaaaa" not in table
    assert "| join | variant | 1,000 records | 10,000 records |" in table
    assert "| table-table | outer | 0.50 | 1.50 |" in table and "| stream-table | outer | 0.25 |  |" in table
    readme = f"# x\n\n{report.README_START}\nold\n{report.README_END}\n\n## next\n"
    made = report.with_readme_table(readme, history.read(path))
    assert "old" not in made and made.startswith("# x\n\n") and made.endswith("\n\n## next\n")
    assert report.with_readme_table(made, history.read(path)) == made
    with pytest.raises(ValueError, match="no benchmark table markers"):
        report.with_readme_table("# x\n", [])
    repository_readme = report.README.read_text(encoding="utf-8")
    assert report.with_readme_table(repository_readme, history.read()) == repository_readme, (
        "README.md's benchmark table is not what benchmarks/history.jsonl makes: run `python -m benchmarks.report`"
    )
