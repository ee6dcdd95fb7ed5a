"""Mutated definitions either load or raise DefinitionError; nothing else escapes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_skill_eval.definitions import (
    EXPECTATION_KINDS,
    DefinitionError,
    LoadedDefinition,
    load_definition,
)
from pytest_skill_eval.hosts.registry import registered

BASE = Path(__file__).parent / "data" / "base"
SEED = Path(__file__).parent / "data" / "seed"
DOCUMENTS: list[dict[str, Any]] = [
    json.loads(path.read_text(encoding="utf-8"))
    for path in sorted([*BASE.glob("*.json"), *(SEED / "groups").glob("*.json")])
]
SUITE: dict[str, Any] = {
    "schema_version": 1,
    "kind": "suite",
    "id": "fuzz",
    "groups": ["groups/body.json", "groups/description.json"],
}

# Values close to valid ones, so mutations also reach the deeper cross-field rules.
PLAUSIBLE = [
    "read", "write", "edit", "bash", "run_command", "probe_lookup", "body", "description",
    "baseline", "candidate", "group", "suite", "working-tree", "git", "skills/target",
    "skills/support", "context/contract.md", "groups/body.json", "groups/missing.json",
    "../x.json", "/abs", "", " ", "a//b", "result.json", "/status", "~", "/a~1b", "never",
    "by-turn", "on-turn", "field-equals", "field-present", "valid", *EXPECTATION_KINDS,
    "workspace", "skill", "context", "first", "last", "API_KEY", "PATH",
    "PROBE_MODE", "pi", "host", "isolated", "exists", "contains", "called", "result-exists",
    "unit-tests",
]  # fmt: skip
KEYS = [
    "schema_version", "kind", "id", "type", "input", "prompt", "turns", "fixture", "tools",
    "commands", "argv", "timeout_ms", "runtime", "host", "session", "extensions", "entry",
    "resources", "environment", "literal", "inherit", "variants", "baseline", "candidate",
    "source", "ref", "skills", "target", "context", "expectations", "variant", "comparison",
    "turn", "expect", "resource", "index", "path", "paths", "value", "pointer", "tool",
    "argumentContains", "argumentNotContains", "surface", "request", "review_questions",
    "model", "thinking", "groups",
]  # fmt: skip

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(PLAUSIBLE),
)
json_values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), children, max_size=3
        ),
    ),
    max_leaves=8,
)


def _locations(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _locations(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _locations(item, (*prefix, index))
    return found


def _at(document: Any, location: tuple[Any, ...]) -> Any:
    for token in location:
        document = document[token]
    return document


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """`base` after one to four random drops, inserts and replacements."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        location = draw(st.sampled_from(_locations(document)))
        action = draw(st.sampled_from(["drop", "insert", "replace"]))
        node = _at(document, location)
        if action == "insert" and isinstance(node, dict):
            node[draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)))] = draw(json_values)
        elif action == "insert" and isinstance(node, list):
            node.insert(draw(st.integers(0, len(node))), draw(json_values))
        elif not location:
            document = draw(json_values) if action == "replace" else document
        else:
            parent = _at(document, location[:-1])
            if action == "drop":
                del parent[location[-1]]
            else:
                parent[location[-1]] = draw(json_values)
    return document


def _outcome(path: Path, root: Path) -> LoadedDefinition | DefinitionError:
    try:
        return load_definition(path, root, registered())
    except DefinitionError as caught:
        error = caught
    assert "\n" not in str(error)
    assert str(error).startswith(f"{error.path}: ")
    assert error.pointer == "" or error.pointer.startswith("/")
    return error


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fuzz-root")
    (directory / "groups").mkdir()
    (directory / "fixtures" / "task").mkdir(parents=True)  # the fixture body.json declares
    for name in ("body", "description"):
        (directory / "groups" / f"{name}.json").write_bytes((BASE / f"{name}.json").read_bytes())
    return directory


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_mutated_groups_load_or_raise_definition_error(root: Path, data: st.DataObject) -> None:
    document = data.draw(mutated(data.draw(st.sampled_from(DOCUMENTS))))
    file = root / "mutated.json"
    file.write_text(json.dumps(document), encoding="utf-8")
    outcome = _outcome(file, root)
    if isinstance(outcome, LoadedDefinition):
        assert outcome.groups[0].raw == document


@settings(max_examples=150, deadline=None)
@given(document=mutated(SUITE))
def test_mutated_suites_load_or_raise_definition_error(root: Path, document: Any) -> None:
    file = root / "suite.json"
    file.write_text(json.dumps(document), encoding="utf-8")
    _outcome(file, root)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=40))
def test_arbitrary_text_loads_or_raises_definition_error(root: Path, text: str) -> None:
    file = root / "text.json"
    file.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert isinstance(_outcome(file, root), DefinitionError)


def test_the_mutation_strategy_reaches_valid_and_invalid_documents(root: Path) -> None:
    # Guards the fuzz tests against a strategy that only ever produces one outcome.
    outcomes: set[bool] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(document=mutated(DOCUMENTS[0]))
    def probe(document: Any) -> None:
        file = root / "probe.json"
        file.write_text(json.dumps(document), encoding="utf-8")
        outcomes.add(isinstance(_outcome(file, root), LoadedDefinition))

    probe()
    assert outcomes == {True, False}
