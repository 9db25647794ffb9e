"""kjoin's local session: the settings and JVM options :mod:`kjoin.spark.io.session` promises are in force."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_the_shared_local_session_runs_with_kjoins_settings_and_jvm_options(spark):
    from kjoin.spark import QUIET_CONFIG
    from kjoin.spark.io.session import LOCAL_ONLY_CONFIG

    assert spark.sparkContext.master.startswith("local")
    for name, value in {**QUIET_CONFIG, **LOCAL_ONLY_CONFIG}.items():
        assert spark.conf.get(name) == value, name
    system = spark.sparkContext._jvm.java.lang.System
    assert system.getProperty("arrow.enable_unsafe_memory_access") == "true"
    assert system.getProperty("arrow.enable_null_check_for_get") == "false"
    assert system.getProperty("log4j2.configurationFile").startswith("file:")


def test_a_callers_own_java_options_are_kept_after_kjoins():
    from kjoin.spark.io.session import ARROW_JAVA_OPTIONS, _java_options

    options = _java_options({"spark.driver.extraJavaOptions": "-Dmine=1 -Darrow.enable_null_check_for_get=true"})
    assert options.startswith("-Dlog4j2.configurationFile=file:")
    assert ARROW_JAVA_OPTIONS in options
    assert options.endswith("-Dmine=1 -Darrow.enable_null_check_for_get=true")  # the JVM takes the last of a repeat
    assert _java_options({}).endswith(ARROW_JAVA_OPTIONS)


def test_the_workshop_settings_are_the_small_ones_and_the_callers_win():
    from kjoin.spark.io.session import ARROW_JAVA_OPTIONS, WORKSHOP_CONFIG, session_settings

    small = session_settings("local[1]", {"spark.sql.shuffle.partitions": "3"}, workshop=True)
    assert small["spark.driver.memory"] == "512m" and small["spark.sql.shuffle.partitions"] == "3"
    assert {k: small[k] for k in WORKSHOP_CONFIG if k != "spark.sql.shuffle.partitions"} == {
        k: v for k, v in WORKSHOP_CONFIG.items() if k != "spark.sql.shuffle.partitions"
    }
    assert "-XX:+UseSerialGC" in small["spark.driver.extraJavaOptions"]
    assert small["spark.driver.extraJavaOptions"].endswith("-Xss512k")  # after kjoin's: the JVM takes the last
    default = session_settings("local[2]", {})
    assert default["spark.driver.memory"] == "3g" and "-XX:+UseSerialGC" not in default["spark.driver.extraJavaOptions"]
    assert default["spark.driver.extraJavaOptions"].endswith(ARROW_JAVA_OPTIONS)


def test_a_workshop_kernels_local_session_is_small_in_its_own_jvm(tmp_path):
    """``make workshop`` sets KJOIN_WORKSHOP for every kernel: local_session() then starts a JVM with a 512 MB heap,
    one core and two shuffle partitions (a process of its own: this run's shared session is the default one)."""
    import json
    import os
    import subprocess
    import sys

    script = (
        "import json\n"
        "from kjoin.spark import local_session\n"
        "spark = local_session()\n"
        "runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()\n"
        "ids = spark.range(100)\n"
        "print(json.dumps({'heap': runtime.maxMemory(), 'master': spark.sparkContext.master,\n"
        "    'shuffle': spark.conf.get('spark.sql.shuffle.partitions'),\n"
        "    'rows': ids.groupBy((ids.id % 7).alias('k')).count().count()}))\n"
        "spark.stop()\n"
    )
    env = {**os.environ, "KJOIN_WORKSHOP": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["master"] == "local[1]" and seen["shuffle"] == "2" and seen["rows"] == 7
    assert seen["heap"] <= 512 * 2**20, f"the workshop JVM's heap is {seen['heap'] / 2**20:.0f} MB, not 512 MB"
