"""The skill author's loop: `--skill-eval-affected-since` deselection and `--skill-eval-reuse`."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .base import Feature


class AffectedSince(Feature):
    """Deselects the unchanged groups, says which are affected, and lists what was not run or
    reused (`run/loop.py` decides; the session's `Loop` holds the decisions)."""

    name = "skill-eval-loop"

    @classmethod
    def add_options(cls, parser: pytest.Parser) -> None:
        """--skill-eval-reuse and --skill-eval-affected-since (`run/loop.py` reads them)."""
        group = parser.getgroup("skill-eval")
        group.addoption(
            "--skill-eval-reuse",
            action="append",
            default=[],
            metavar="RESULT",
            help="copy each variant's run from this earlier sealed result (an id, a directory, "
            "latest or previous; an aggregate gives its trials) when every input that determines "
            "it hashes the same and its seal verifies; otherwise the variant runs. Repeatable",
        )
        group.addoption(
            "--skill-eval-affected-since",
            metavar="RESULT",
            default=None,
            help="run only the groups whose inputs differ from this earlier sealed result (an "
            "id, a directory, latest or previous: the one before latest); the rest are reported "
            "unchanged with their earlier grades, and a run where none is affected passes",
        )

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """A group whose every input is unchanged does not run (workers deselect alike)."""
        services = self.state.services
        if services.loop.affected_since is None:
            return
        inputs = services.environment().inputs
        assert inputs is not None
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            run = getattr(item, "group_run", None)
            unchanged = run is not None and services.loop.unchanged(run.loaded, run.host, inputs)
            (dropped if unchanged else kept).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_report_collectionfinish(self) -> list[str]:
        """Which groups are affected, by which input, and which not."""
        return [] if self.state.worker else self.state.services.loop.report_lines()

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """Nothing affected is a pass; the unchanged groups as JUnit properties."""
        from ..subresults import record_unchanged

        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and (
            self.state.services.loop.nothing_affected()
        ):
            session.exitstatus = pytest.ExitCode.OK
        record_unchanged(session.config, self.state.services.result_dirs)
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The groups that did not run with their earlier grades; results never reusable."""
        if self.summarised():
            loop = self.state.services.loop
            self.write_lines(terminalreporter, [*loop.unchanged_lines(), *loop.refused_lines()])
