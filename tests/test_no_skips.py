"""tests/no_skips.py: on Linux, a skipped test fails the run and is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from no_skips import SKIPS_FAIL

pytest_plugins = ["pytester"]


def test_the_suite_loads_the_rule(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.has_plugin("no_skips")  # tests/conftest.py


@pytest.mark.skipif(not SKIPS_FAIL, reason="the rule applies on Linux only")
def test_a_skipped_test_fails_the_run_and_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pytest-xdist, as the nox sessions run: the main process sees the skip."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # no_skips, not conftest
    pytester.makeconftest('pytest_plugins = ["no_skips"]')
    pytester.makepyfile(
        test_rule="""
        import pytest

        def test_runs():
            pass

        def test_needs_a_package():
            pytest.importorskip("no_such_package")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*1 test(s) skipped: install what they need*", "*test_needs_a_package*no_such_package*"]
    )
