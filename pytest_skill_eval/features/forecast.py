"""The forecast before the first request: asked for, or one that exceeds the cost ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..options import usage_errors
from .base import FORECAST_KEY, Feature

if TYPE_CHECKING:
    from ..session import SkillEvalSession


class Forecast(Feature):
    """Writes `budget/estimate.py`'s lines at configure (the controller's alone)."""

    name = "skill-eval-forecast"

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        return not state.worker

    def pytest_configure(self, config: pytest.Config) -> None:
        """Before the first request (run at registration: the controller is prepared)."""
        from ..budget.estimate import run_lines  # the controller's alone
        from ..budget.forecast import Trials

        state, settings = self.state, self.state.settings
        given = config.getoption("--skill-eval-estimate") or config.getini("skill_eval_estimate")
        estimate = Path(config.invocation_params.dir, given) if given else None
        with usage_errors():  # a ceiling the forecast exceeds is one line
            lines = run_lines(
                state.services.loaded_selected(),  # narrowed by -k, as by --skill-eval-group
                selectors=settings.group_selectors,
                variant=settings.variant_selector,
                hosts_for=state.services.hosts_for,
                trials=Trials(settings.trials, auto=settings.adaptive),
                price_of=state.services.endpoints.price,
                estimate_dir=estimate.resolve() if estimate else None,
                collect_only=settings.collect_only,
                paid=state.services.endpoints.paid_mode is not None,
                max_cost=settings.max_cost,
                cassettes=settings.cassettes,
            )
        config.stash[FORECAST_KEY] = lines  # said again with the bottom line
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        for line in lines:
            if reporter is not None:
                reporter.write_line(f"skill-eval: {line}")
            else:
                print(f"skill-eval: {line}")
