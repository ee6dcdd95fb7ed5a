"""The definition docs cover every field and kind the schema models accept, and nothing else."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

from pydantic import TypeAdapter

from pytest_skill_eval.definitions.expectations import Expectation
from pytest_skill_eval.definitions.models import Group, Suite
from pytest_skill_eval.hosts.registry import names as host_names
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.modelserver.tools import NEUTRAL_TOOLS

DOC = Path(__file__).resolve().parents[1] / "docs" / "definitions.md"


def _section(text: str, heading: str) -> str:
    """The text of one `## heading` section, up to the next `## `."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/definitions.md has no '## {heading}' section"
    return match.group(1)


def _field_names(model: type[typing.Any]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _kinds() -> set[str]:
    union = typing.get_args(Expectation)[0]
    return {typing.get_args(m.model_fields["kind"].annotation)[0] for m in typing.get_args(union)}


def test_every_group_field_has_a_heading() -> None:
    headings = set(re.findall(r"^### `([^`]+)`$", _section(DOC.read_text(), "A group"), re.M))
    assert headings == _field_names(Group)


def test_every_suite_field_is_described() -> None:
    described = set(re.findall(r"^- `([^`]+)`:", _section(DOC.read_text(), "A suite"), re.M))
    assert described == _field_names(Suite)


def test_the_documented_hosts_are_the_models_hosts() -> None:
    runtime = re.search(r"^### `runtime`\n(.*?)(?=^### )", DOC.read_text(), re.M | re.S)
    assert runtime, "docs/definitions.md has no '### `runtime`' section"
    line = re.search(r"^- `host`:(.*?)(?=^- )", runtime.group(1), re.M | re.S)
    assert line, "the runtime section does not describe `host`"
    assert tuple(re.findall(r'`"([^"]+)"`', line.group(1))) == host_names()


def test_every_expectation_kind_has_a_heading_and_an_example_that_loads() -> None:
    section = _section(DOC.read_text(), "Expectation kinds")
    headings = set(re.findall(r"^### `([^`]+)`$", section, re.M))
    assert headings == _kinds()
    examples = [json.loads(line) for line in re.findall(r'^\{ "id".*\}$', section, re.M)]
    loaded = [TypeAdapter(Expectation).validate_python(example) for example in examples]
    assert sorted(e.kind for e in loaded) == sorted(_kinds())


def test_the_neutral_tools_table_is_the_schema() -> None:
    section = _section(DOC.read_text(), "Neutral tools")
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]
    hosts = registered()
    expected = [["tool", "arguments", *(r.display_name for r in hosts)]] + [
        [
            f"`{tool.name}`",
            ", ".join(f"`{a.name}{'' if a.required else '?'}` ({a.kind})" for a in tool.arguments),
            *(
                r.tools.shown.get(tool.name) or f"not shown: {r.tools.hidden[tool.name]}"
                for r in hosts
            ),
        ]
        for tool in NEUTRAL_TOOLS
    ]
    assert rows == expected
