"""The pytest plugin as a user's suite meets it: installed by entry point, run in a fresh pytest process."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).parents[2] / "fixtures"

USER_TESTS = """
from splitaudit.pytest_plugin import assert_no_double_assignment, assert_sink_exactly_once

BEAM = "{fixtures}/beam_flink_source"
SINKS = "{fixtures}/beam_sink"


def test_patched_sink_is_exactly_once(splitaudit_spark):
    findings = assert_sink_exactly_once(SINKS + "/restore_patched_small/sink", sink_format="json")
    assert findings.summary.duplicate_records == 0


def test_stock_sink_is_not(splitaudit_spark):
    assert_sink_exactly_once(SINKS + "/restore_stock_small/sink", sink_format="json")


def test_restored_savepoint_holds_each_partition_once(splitaudit_spark):
    assert_no_double_assignment(BEAM + "/restore_patched_after", partitions=4)


def test_a_grown_topic_has_partitions_nobody_holds(splitaudit_spark):
    assert_no_double_assignment(BEAM + "/restore_patched_after", partitions=6)
"""


def test_the_plugin_passes_clean_inputs_and_names_what_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS.format(fixtures=FIXTURES))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--splitaudit-master", "local[1]")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*splitaudit: 4 finding(s) in sink */restore_stock_small/sink:",
            "*double_assignment (error) restore-stock-*/0: 50 [[]50..99[]]*",
            "*splitaudit: 2 finding(s) in savepoint */restore_patched_after:",
            "*partition_unassigned (error) restore-patched-*/4: 0*",
            "*partition_unassigned (error) restore-patched-*/5: 0*",
        ]
    )
