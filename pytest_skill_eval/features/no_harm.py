"""`--skill-eval-fail-on no-harm --skill-eval-margin D`: the controller's non-inferiority gate.

A plug-in object with its own hooks, registered by the glue with one line. Only the controller
of an unsharded run gates (a shard's results are the merge's to gate), after the session has
sealed its results; workers parse the options but never import the statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from _pytest.junitxml import xml_key

from ..analysis import gate_option

if TYPE_CHECKING:
    from ..session import SkillEvalSession


class NoHarmGate:
    """Fails the run unless every comparison shows no harm beyond the declared margin
    (`analysis/no_harm_gate.py` decides; `analysis/noninferiority.py` is the test)."""

    name = "skill-eval-no-harm"

    def __init__(self, config: pytest.Config, state: SkillEvalSession) -> None:
        self.config = config
        self.state = state
        self.lines: list[str] = []

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        """The controller's alone, and only under this mode."""
        return not state.worker and state.settings.fail_on == gate_option.NO_HARM

    @classmethod
    def register(cls, config: pytest.Config, state: SkillEvalSession) -> None:
        """Register the gate on `config` when this process runs it."""
        if cls.wanted(state):
            config.pluginmanager.register(cls(config, state), cls.name)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """After the session sealed its results: gate them, pooled with earlier ones."""
        state, settings = self.state, self.state.settings
        if state.shard_dir is not None or settings.margin is None:
            return
        from ..analysis import no_harm_gate  # the controller's alone

        trials = [state.result_dirs[t] for t in sorted(state.result_dirs)]
        self.lines, passes = no_harm_gate.lines(
            settings.results_dir, trials, margin=settings.margin, alpha=settings.alpha
        )
        xml: Any = session.config.stash.get(xml_key, None)
        for line in self.lines if xml is not None else []:
            xml.add_global_property("skill-eval-gate", line)
        if not passes and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The gate's lines, those not shown in red."""
        if self.config.option.collectonly:
            return
        for line in self.lines:
            red = line.startswith("no harm not shown:")
            terminalreporter.write_line(f"skill-eval: {line}", red=red, green=not red)
