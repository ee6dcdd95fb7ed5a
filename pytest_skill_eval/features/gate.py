"""`--skill-eval-fail-on significant-regression`: the controller's gate over every trial."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from ..analysis import gate_option
from .base import DECIDED_KEY, GATE_KEY, Feature

if TYPE_CHECKING:
    from ..session import SkillEvalSession


class SignificanceGate(Feature):
    """Fails the run on a significant regression (`analysis/gate.py` decides, the controller
    alone: workers never import it)."""

    name = "skill-eval-gate"
    fail_on = (
        gate_option.MODE,
        "a comparison whose pass-to-fail pairs beat its fail-to-pass pairs beyond chance, Holm "
        "across all comparisons at --skill-eval-alpha",
    )

    def __init__(self, config: pytest.Config, state: SkillEvalSession) -> None:
        super().__init__(config, state)
        self.lines: list[str] = []  # the pool, what it set aside, and each rejection

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        return not state.worker and state.settings.fail_on == gate_option.MODE

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """After the session finished its results (a shard's are the merge's to gate); before
        junitxml writes its file, so each rejection is a failing test case there too."""
        state = self.state
        if state.services.shard_dir is None:
            from ..analysis.gate_decision import decide  # only under this mode
            from ..subresults import log_gate

            trials = [state.services.result_dirs[t] for t in sorted(state.services.result_dirs)]
            decision = decide(state.settings.results_dir, trials, alpha=state.settings.alpha)
            session.config.stash[GATE_KEY] = decision
            log_gate(session.config, decision.failures())
            self.lines = decision.lines()
            session.config.stash.setdefault(DECIDED_KEY, []).extend(self.lines)
            if decision.rejected and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.summarised():
            self.write_lines(terminalreporter, self.lines, red="significant regression:")
