"""`verify` of a merged result says which shards were merged without a root: the chain it
checks then ends at the roots those shards had when merged, which nothing outside the evidence
vouches for."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from tests.scale.test_shard_trust import _merge, _printed_roots, _result, _shards, built

pytestmark = [pytest.mark.pi, pytest.mark.codex]

__all__ = ["built"]  # the shared shard build, a fixture of this module too


@pytest.mark.parametrize(("bind", "said"), [((), "1, 2"), ((1,), "2"), ((1, 2), None)])
def test_verify_names_the_shards_merged_unbound(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bind: tuple[int, ...],
    said: str | None,
) -> None:
    roots = _printed_roots(built)
    out = tmp_path / "merged"
    given = [f"--shard-root={k}=sha256:{roots[k]}" for k in bind]
    assert _merge(built, _shards(built, tmp_path), out, *given) == 0
    capsys.readouterr()
    assert skill_eval(["verify", str(out / _result(built))]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("verified: ")
    if said is None:
        assert "unbound" not in printed
    else:
        assert f"unbound: shard(s) {said} were merged without a root from their logs" in printed
