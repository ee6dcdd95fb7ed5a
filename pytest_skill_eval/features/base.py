"""What every loop feature is: a plugin object with its own hooks, registered by name."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import pytest

from ..options import declared

if TYPE_CHECKING:
    from ..analysis.gate_decision import GateDecision
    from ..options.settings import Settings
    from ..session import SkillEvalSession

DECIDED_KEY = pytest.StashKey[list[str]]()
"""The lines of the gates that decided the invocation's outcome (each gate appends its own): the
terminal summary, the CI step summary and the JUnit properties show them."""
GATE_KEY: pytest.StashKey[GateDecision] = pytest.StashKey()
"""What --skill-eval-fail-on significant-regression decided (controller only): it leads the
bottom line of the terminal, the CI step summary and the HTML report."""
FORECAST_KEY = pytest.StashKey[list[str]]()
"""The cost forecast printed before the run, printed again with the bottom line."""


class Feature:
    """One loop feature: its hooks are its own methods, its state its own attributes.

    `features.register` builds it (when `wanted`) once the session is prepared and registers it
    under `name`; `features.unregister` removes it at unconfigure. pytest_configure is a
    historic hook: one a feature implements runs at its registration.
    """

    name: ClassVar[str]
    """The plugin name it is registered under (`skill-eval-<feature>`)."""
    fail_on: ClassVar[tuple[str, str] | None] = None
    """A gate's `--skill-eval-fail-on` mode and what it fails, as the option's help says."""
    options: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    """Its own `--skill-eval-<name> METAVAR` options (each with its ini key) and their help."""

    def __init__(self, config: pytest.Config, state: SkillEvalSession) -> None:
        self.config = config
        self.state = state

    @classmethod
    def add_options(cls, parser: pytest.Parser) -> None:
        """Register the feature's own options (at pytest_addoption, before any session)."""
        for name, metavar, help_text in cls.options:
            declared.add_option(parser, name, metavar, help_text)

    @classmethod
    def check_options(cls, config: pytest.Config, settings: Settings) -> None:
        """Refuse a bad value of its own options (an OptionValueError), in every process and
        before the session opens, so that nothing runs or is written."""

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        """Whether this process runs the feature (on the controller, a worker, or both)."""
        return True

    def summarised(self) -> bool:
        """Whether this process writes the terminal summary (the controller, items run)."""
        return not self.state.worker and not self.config.option.collectonly

    def write_lines(self, writer: pytest.TerminalReporter, lines: list[str], red: str = "") -> None:
        """Write `lines` as `skill-eval:` lines; those starting with `red` (when given) in red."""
        for line in lines:
            writer.write_line(f"skill-eval: {line}", red=bool(red) and line.startswith(red))
