"""A planned run's shard: it keeps only its own units, and names its seal at the end."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..nodeids import parse_item_id
from .base import Feature

if TYPE_CHECKING:
    from ..session import SkillEvalSession


class ShardDeselection(Feature):
    """`--skill-eval-plan` with `--skill-eval-shard`: deselection by `scale/shard.py`'s units."""

    name = "skill-eval-shard"

    @classmethod
    def wanted(cls, state: SkillEvalSession) -> bool:
        return state.services.plan is not None

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """A shard keeps only its own units; the rest are deselected (JUnit stays per shard)."""
        from ..scale.shard import shard_units, unit_keys

        plan = self.state.services.plan
        assert plan is not None
        index, count = self.state.settings.shard or (1, 1)
        keep = unit_keys(shard_units(plan, index, count))
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            parsed = parse_item_id(item.nodeid)
            mine = parsed is None or (parsed[0], parsed[2]) in keep
            (kept if mine else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> object:
        """The shard's seal as a JUnit property (the session has written it)."""
        from ..subresults import record_shard_seal

        record_shard_seal(session.config, self.state.shard_root)
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Where the shard's evidence is, by its seal."""
        state = self.state
        if (
            self.summarised()
            and state.services.shard_dir is not None
            and state.shard_root is not None
        ):
            index, count = state.settings.shard or (1, 1)
            terminalreporter.write_line(
                f"shard {index}/{count}: {state.services.shard_dir} seal sha256:{state.shard_root}"
            )
