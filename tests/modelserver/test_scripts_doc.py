"""docs/scripts.md's examples: every one parses, and those without skills run through real Pi."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
import yaml

from pytest_skill_eval.modelserver.script import Script, ScriptError
from pytest_skill_eval.modelserver.scriptparse import load_script, parse_script
from tests.modelserver.conftest import RunPi
from tests.support.paths import REPO

DOC = REPO / "docs" / "scripts.md"


def _examples() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def _script(example: str) -> Script:
    return parse_script(yaml.safe_load(example))


def test_every_example_in_the_scripts_page_parses() -> None:
    examples = _examples()
    assert len(examples) >= 6
    for example in examples:
        assert _script(example).version == 1


RUNNABLE = [e for e in _examples() if "{{skill" not in e and "match: body" not in e]


@pytest.mark.pi
@pytest.mark.parametrize("example", RUNNABLE, ids=[f"example-{i}" for i in range(len(RUNNABLE))])
def test_an_example_without_skills_answers_real_pi_as_the_page_says(
    run_pi: RunPi, example: str
) -> None:
    script = _script(example)
    run = run_pi(
        script,
        "Go",
        api="openai-completions",
        provider="skill-eval",
        model_id="scripted",
        files={"notes.txt": "hello\n"},
    )
    assert run.returncode == 0, run.stderr
    assert run.route.failures == []
    assert run.route.consumed == len(script.interactions)  # one request per interaction
    final = run.assistant_messages()[-1]
    last = script.interactions[-1].response
    if last.error is not None:
        assert final["stopReason"] == "error"
        assert str(last.error.status) in final["errorMessage"]
        assert last.error.message in final["errorMessage"]
    else:
        texts = [part["text"] for part in final["content"] if part["type"] == "text"]
        today = datetime.date.today().isoformat()
        assert texts == [str(last.text).replace("{{date}}", today)]


# One broken script for each row of the page's "Errors in a script" table.
ONE = b"version: 1\ninteractions:\n  - response: "  # one interaction, its response follows
BROKEN = (
    b"version: 2\ninteractions: [{response: {text: a}}]\n",
    b"interactions: [{response: {text: a}}]\n",
    b"version: 1\ninteractions: []\n",
    b"version: 1\ninteractions:\n  - respones:\n      text: a\n",
    b"version: 1\ninteractions:\n  - request: {api: openai-completions}\n",
    ONE + b"{text: a, stop: tool_use}\n",
    ONE + b"{tool_calls: [{name: read}], stop: stop}\n",
    ONE + b"{text: a, error: {status: 500, message: m}}\n",
    ONE + b"{error: {status: 200, message: m}}\n",
    ONE + b"{tool_calls: [{name: r, id: a}, {name: r, id: a}]}\n",
    ONE + b"{tool_calls: [{name: r, arguments: {when: 2026-01-02}}]}\n",
    b"version: 1\nmatch: body\ninteractions:\n  - response: {text: a}\n",
    ONE + b"{text: a\n",
    b"version: 1\n\xff\n",
)


def test_every_error_the_page_lists_is_one_a_script_gives(tmp_path: Path) -> None:
    section = DOC.read_text(encoding="utf-8").split("## Errors in a script", 1)[1]
    documented = [m.group(2).strip() for m in re.finditer(r"^\| (``?)(.+?)\1 \|", section, re.M)]
    assert len(documented) == len(BROKEN)
    given = []
    for number, content in enumerate(BROKEN):
        path = tmp_path / f"{number}.yaml"
        path.write_bytes(content)
        with pytest.raises(ScriptError) as raised:
            load_script(path)
        given.append(str(raised.value))
    for message in documented:
        parts = [part for part in message.split("…") if part.strip()]
        assert any(all(part in error for part in parts) for error in given), message
