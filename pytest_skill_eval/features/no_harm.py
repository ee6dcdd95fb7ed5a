"""`--skill-eval-fail-on no-harm --skill-eval-margin D`: the controller's non-inferiority gate.

A plug-in object with its own hooks: one module and one line of `features.REGISTERED`. Only
the controller of an unsharded run gates (a shard's results are the merge's to gate), after the
session has sealed its results; workers parse the options but never import the statistics.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from ..analysis import gate_option
from ..options import option
from .base import DECIDED_KEY, Feature

if TYPE_CHECKING:
    from ..options.settings import Settings
    from ..session import SkillEvalSession

NO_HARM = gate_option.NO_HARM


class NoHarmGate(Feature):
    """Fails the run unless every comparison shows no harm beyond the declared margin
    (`analysis/no_harm_gate.py` decides; `analysis/noninferiority.py` is the test)."""

    name = "skill-eval-no-harm"
    fail_on = (
        NO_HARM,
        "unless every comparison shows its candidate's pass rate is not lower than its "
        "baseline's by --skill-eval-margin or more, at --skill-eval-alpha; too few trials fail it",
    )
    options = (
        (
            "margin",
            "D",
            f"with --skill-eval-fail-on {NO_HARM}: the most the candidate's pass rate may fall "
            "below the baseline's and still be no harm, a number between 0 and 1 such as 0.1",
        ),
    )

    def __init__(self, config: pytest.Config, state: SkillEvalSession) -> None:
        super().__init__(config, state)
        self.margin = _margin(config, state.settings.fail_on)
        self.lines: list[str] = []

    @classmethod
    def check_options(cls, config: pytest.Config, settings: Settings) -> None:
        """--skill-eval-margin: required with this mode, refused without it."""
        _margin(config, settings.fail_on)

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        """The controller's alone, and only under this mode."""
        return not state.worker and state.settings.fail_on == NO_HARM

    @pytest.hookimpl(wrapper=True, trylast=True)  # after the session sealed, before junitxml
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """After the session sealed its results: gate them, pooled with earlier ones."""
        state, settings = self.state, self.state.settings
        if state.services.shard_dir is None and self.margin is not None:
            from ..analysis import no_harm_gate  # the controller's alone

            trials = [state.services.result_dirs[t] for t in sorted(state.services.result_dirs)]
            self.lines, passes = no_harm_gate.lines(
                settings.results_dir, trials, margin=self.margin, alpha=settings.alpha
            )
            # The noise floor writes them as JUnit properties with the other gates' lines.
            session.config.stash.setdefault(DECIDED_KEY, []).extend(self.lines)
            if not passes and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The gate's lines, those not shown in red."""
        if not self.summarised():
            return
        for line in self.lines:
            red = line.startswith("no harm not shown:")
            terminalreporter.write_line(f"skill-eval: {line}", red=red, green=not red)


def _margin(config: pytest.Config, fail_on: str) -> float | None:
    """--skill-eval-margin under `fail_on` (an OptionValueError when it has no place)."""
    return gate_option.margin_value(option(config, "margin"), fail_on, "--skill-eval-margin")
