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
