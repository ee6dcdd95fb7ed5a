"""Each description cut a host declares (`skill_limits.description_cut` in its registration) is
what the real host does: the listing it sends the model keeps the description up to the cut
and drops what follows, as the linter's warning says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.hosts.registry import registered
from tests.support.files import write
from tests.support.roots import Group, build, runtime, variant
from tests.support.runs import model_requests, result_dir, run

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex]

KEPT = "KEPT-MARKER-1"
CUT = "CUT-MARKER-2"
CUTTING = [r for r in registered() if r.skill_limits.description_cut is not None]


@pytest.mark.parametrize("host", CUTTING, ids=lambda r: r.name)
def test_a_hosts_declared_description_cut_is_where_it_cuts(
    pytester: pytest.Pytester, tmp_path: Path, host: HostRegistration
) -> None:
    name, cut = host.name, host.skill_limits.description_cut
    assert cut is not None
    # Exactly `cut` characters, the kept marker ending 5 before the cut, the other 1 after it.
    head = "d" * (cut - 5 - len(KEPT)) + KEPT + "e" * 5
    description = f"{head} {CUT} and the last instruction."
    root = tmp_path / "root"
    write(
        root / "skills" / "long" / "SKILL.md",
        f"---\nname: long\ndescription: {description}\n---\nx\n",
    )
    group = Group(
        id="long",
        type="description",
        turns=["Hello."],
        tools=["read"],
        runtime=runtime(host=name),
        candidate=variant(["skills/long"], 0),
        expectations=[],
        scripts={"candidate": [{"text": "Hi."}]},
    )
    build(root, [group])

    result = run(pytester, root, "--skill-eval-variant", "candidate")

    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert f"on {name}: its listing offers the model {cut} of the description's" in output
    [request] = model_requests(result_dir(root) / f"groups/long@{name}/candidate")
    listing = json.dumps(request["body"], ensure_ascii=False)
    assert KEPT in listing
    assert CUT not in listing


def _listing(pytester: pytest.Pytester, root: Path, count: int) -> str:
    """The first request Claude Code sends with `count` skills of 1,000-character
    descriptions, each ending in its own marker."""
    declared = []
    for i in range(count):
        description = "d" * (1000 - 12) + f" TAIL-{i:02d}-END"
        name = f"s{i:02d}"
        write(
            root / "skills" / name / "SKILL.md",
            f"---\nname: {name}\ndescription: {description}\n---\nx\n",
        )
        declared.append(f"skills/{name}")
    group = Group(
        id="many",
        type="description",
        turns=["Hello."],
        tools=["read"],
        runtime=runtime(host="claude-code"),
        candidate=variant(declared, 0),
        expectations=[],
        scripts={"candidate": [{"text": "Hi."}]},
    )
    build(root, [group])
    result = run(pytester, root, "--skill-eval-variant", "candidate")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    [request] = model_requests(result_dir(root) / "groups/many@claude-code/candidate")
    return json.dumps(request["body"], ensure_ascii=False) + result.stdout.str()


def test_claude_codes_declared_listing_budget_is_where_it_shortens_descriptions(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """29 entries of `- sNN: <1,000 characters>` fit the declared 30,000; 30 do not."""
    within = _listing(pytester, tmp_path / "within", 29)
    assert all(f"TAIL-{i:02d}-END" in within for i in range(29))
    assert "listing entries total" not in within
    over = _listing(pytester, tmp_path / "over", 30)
    assert not all(f"TAIL-{i:02d}-END" in over for i in range(30))
    assert "30 listing entries total 30240 characters, over the 30000 its listing holds" in over
