"""The noise floor: which trials decided what never gates, named at the end of the run."""

from __future__ import annotations

import pytest

from .base import DECIDED_KEY, Feature


class NoiseFloor(Feature):
    """Names the floor the invocation chose (`analysis/noise_floor.py`) in the terminal and,
    with the gates' lines, as JUnit properties."""

    name = "skill-eval-floor"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After every gate decided (their wrappers ran), before junitxml writes its file."""
        from ..subresults import record_decided  # the plugin's entry imports no layer below

        decided = session.config.stash.get(DECIDED_KEY, [])
        record_decided(session.config, self.state.services.result_dirs, decided)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summarised():
            from ..subresults import floor_lines

            self.write_lines(terminalreporter, floor_lines(self.state.services.result_dirs))
