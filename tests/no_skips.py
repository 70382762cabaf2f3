"""A pytest plugin: on Linux, a skipped test fails the run, naming the test and its reason.

A skipped test checks nothing, and a skip is easy to miss in "2316 passed, 1 skipped":
timm's Swin test skipped in every run for a day, as no session installed timm. The nox
sessions install every package a test needs, so on Linux, where they run, a skip is a
failure. Elsewhere, a test that needs Linux (/proc in test_soak.py) may skip. pytest has
no option for this (``-W error`` covers warnings, ``--strict-markers`` markers).
tests/conftest.py loads it; tests/test_no_skips.py checks it.
"""

from __future__ import annotations

import sys

import pytest

SKIPS_FAIL = sys.platform.startswith("linux")
_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note each skipped test (with pytest-xdist, the reports reach the main process)."""
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        _skipped.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test was skipped on Linux (``SKIPS_FAIL``)."""
    if not (SKIPS_FAIL and _skipped) or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep(
            "=",
            f"{len(_skipped)} test(s) skipped: install what they need (the nox session "
            "does) or fix the condition; a skipped test checks nothing",
            red=True,
        )
        for line in _skipped:
            reporter.write_line(f"  {line}", red=True)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
