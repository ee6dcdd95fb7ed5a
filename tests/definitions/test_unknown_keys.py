"""A misspelt key is reported as the unknown key with the nearest valid one, at every level.

A typo in a required key leaves the document with an unknown key and a missing one; the
unknown key is what the user wrote, so it is the one reported, with the key they meant.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import DefinitionError, load_definition
from pytest_skill_eval.hosts.registry import registered

DATA = Path(__file__).parent / "data" / "base"
BODY: dict[str, Any] = json.loads((DATA / "body.json").read_text(encoding="utf-8"))


def _rename(document: dict[str, Any], path: tuple[str | int, ...], old: str, new: str) -> None:
    node: Any = document
    for token in path:
        node = node[token]
    node[new] = node.pop(old)


CASES = [
    pytest.param((), "fixture", "fixtrue", id="top-level-required"),
    pytest.param(("input",), "turns", "turn", id="input"),
    pytest.param(("variants", "candidate"), "skills", "skils", id="variant"),
    pytest.param(("variants", "baseline", "source"), "ref", "reff", id="source-union"),
    pytest.param(("expectations", 0), "expect", "expcet", id="expectation-union"),
    pytest.param(("variants", "candidate", "source"), "kind", "kidn", id="source-tag"),
    pytest.param(("expectations", 0), "kind", "knid", id="expectation-tag"),
]


@pytest.mark.parametrize(("path", "valid", "typo"), CASES)
def test_a_misspelt_key_names_the_key_it_should_be(
    tmp_path: Path, path: tuple[str | int, ...], valid: str, typo: str
) -> None:
    document = copy.deepcopy(BODY)
    _rename(document, path, valid, typo)
    file = tmp_path / "group.json"
    file.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_definition(file, tmp_path, registered())
    pointer = "".join(f"/{token}" for token in (*path, typo))
    assert caught.value.pointer == pointer
    assert f"unknown field '{typo}'" in caught.value.message
    assert caught.value.message.endswith(f"did you mean '{valid}'?")


def test_an_unknown_optional_key_lists_the_nearest(tmp_path: Path) -> None:
    document = copy.deepcopy(BODY)
    document["model"] = {"model": "scripted/model", "thinkng": "low"}
    file = tmp_path / "group.json"
    file.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_definition(file, tmp_path, registered())
    assert str(caught.value).endswith(
        "/model/thinkng: unknown field 'thinkng'; did you mean 'thinking'?"
    )


def test_an_unknown_key_with_no_near_one_lists_the_valid_ones(tmp_path: Path) -> None:
    document = copy.deepcopy(BODY)
    document["runtime"] = {"zzz": 1}
    file = tmp_path / "group.json"
    file.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_definition(file, tmp_path, registered())
    assert caught.value.pointer == "/runtime/zzz"
    assert "use one of: host, prompt, session, extensions, environment" in caught.value.message
