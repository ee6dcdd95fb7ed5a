"""The schema's own examples load, and the models expose what later stages need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import (
    BODY_ONLY_KINDS,
    DEFAULT_RUNTIME,
    DESCRIPTION_ONLY_KINDS,
    EXPECTATION_KINDS,
    VARIANTS,
    WORKSPACE_KINDS,
    ContextTextExpectation,
    DefinitionError,
    Group,
    JsonExpectation,
    LoadedDefinition,
    SkillReadExpectation,
    ToolCallExpectation,
    load_definition,
    parse_group,
    same_json,
)
from pytest_skill_eval.hosts.registry import registered

SEED = Path(__file__).parent / "data" / "seed"
BASE = Path(__file__).parent / "data" / "base"


def _load(relative: str) -> LoadedDefinition:
    return load_definition(SEED / relative, SEED, registered())


def _group(relative: str) -> Group:
    return _load(relative).groups[0].group


@pytest.mark.parametrize(
    ("relative", "group_id"),
    [
        ("groups/common-shape.json", "one-behavioral-question"),
        ("groups/natural-activation.json", "natural-activation"),
        ("groups/body-behavior.json", "retained-artifact-behavior"),
        ("groups/runtime-profile.json", "runtime-probe"),
        ("groups/declared-commands.json", "declared-commands"),
        ("groups/json-states.json", "json-states"),
    ],
)
def test_seed_example_groups_load(relative: str, group_id: str) -> None:
    loaded = _load(relative)
    assert (loaded.kind, loaded.id, len(loaded.groups)) == ("group", group_id, 1)
    only = loaded.groups[0]
    assert only.position == 1
    assert only.path == (SEED / relative).resolve()
    assert only.raw == json.loads((SEED / relative).read_text(encoding="utf-8"))


def test_seed_paths_exist_under_the_seed_root() -> None:
    # The examples' declared paths were made real, so later stages can materialise them.
    for relative in ("groups/body-behavior.json", "groups/runtime-profile.json"):
        group = _group(relative)
        declared = [group.fixture, *(p for v in group.variants.values() for p in v.skills)]
        declared += [p for v in group.variants.values() for p in v.context]
        declared += [r for b in group.effective_runtime.extensions for r in (b.entry, *b.resources)]
        for path in declared:
            assert path is not None
            assert (SEED / path).exists(), path


def test_seed_suite_loads_groups_in_order() -> None:
    loaded = _load("suite.json")
    assert (loaded.kind, loaded.id) == ("suite", "workflow-core")
    assert [(g.position, g.group.id) for g in loaded.groups] == [
        (1, "natural-activation"),
        (2, "retained-artifact-behavior"),
    ]
    assert loaded.groups[1].path == (SEED / "groups/body-behavior.json").resolve()


def test_turns_and_one_shot() -> None:
    one_shot = _group("groups/common-shape.json")
    assert one_shot.turns == ("Natural task prompt.",)
    assert one_shot.is_one_shot
    multi = _group("groups/natural-activation.json")
    assert multi.turns == (
        "Help me inspect this ordinary change.",
        "Now prepare a deployment rollback.",
    )
    assert not multi.is_one_shot
    body_prompt = _group("groups/declared-commands.json")
    assert len(body_prompt.turns) == 1
    assert not body_prompt.is_one_shot  # body groups always run over RPC


def test_effective_runtime_defaults_and_declared() -> None:
    default = _group("groups/body-behavior.json").effective_runtime
    assert default == DEFAULT_RUNTIME
    assert (default.host, default.prompt, default.session) == ("pi", "isolated", False)
    assert (default.extensions, default.environment.literal, default.environment.inherit) == (
        (),
        {},
        (),
    )
    declared = _group("groups/runtime-profile.json").effective_runtime
    assert declared.prompt == "isolated"  # omitted `prompt` defaults to isolated
    assert declared.environment.literal == {"PROBE_MODE": "injection-test"}
    assert [(b.entry, b.resources) for b in declared.extensions] == [
        ("extensions/probe.mjs", ("extensions",))
    ]


def test_variants_read_as_a_mapping() -> None:
    group = _group("groups/body-behavior.json")
    assert group.variants["baseline"] is group.variants.baseline
    assert list(group.variants.keys()) == ["baseline", "candidate"]
    assert [name for name, _ in group.variants.items()] == ["baseline", "candidate"]
    assert group.variants["candidate"].target_skill == "skills/target"
    assert getattr(group.variants["baseline"].source, "ref", None) == "before-body-change"
    assert group.variants["candidate"].source.kind == "working-tree"
    with pytest.raises(KeyError):
        group.variants["other"]


def test_expectations_for_keeps_order_and_variant() -> None:
    group = _group("groups/body-behavior.json")
    assert [e.id for e in group.expectations_for("baseline")] == ["baseline-result"]
    assert [e.id for e in group.expectations_for("candidate")] == [
        "candidate-result",
        "candidate-status",
        "candidate-changes",
    ]


def test_expected_predicate_excludes_identity_and_fills_defaults() -> None:
    group = _group("groups/natural-activation.json")
    baseline, candidate = group.expectations
    assert baseline.expected_predicate() == {"expect": "by-turn", "turn": 2}
    assert baseline.expected_predicate() == candidate.expected_predicate()
    context = _group("groups/runtime-profile.json").expectations[0]
    assert isinstance(context, ContextTextExpectation)
    assert context.expected_predicate() == {
        "turn": None,
        "value": "status",
        "expect": "contains",
        "surface": "provider-context",
        "request": "first",
    }
    tool = _group("groups/declared-commands.json").expectations[0]
    assert isinstance(tool, ToolCallExpectation)
    assert tool.argument_contains == ("unit-tests",)
    assert tool.expected_predicate()["argumentContains"] == ["unit-tests"]
    assert tool.expected_predicate()["argumentNotContains"] == []


def test_context_text_defaults() -> None:
    raw: dict[str, Any] = json.loads((BASE / "body.json").read_text(encoding="utf-8"))
    raw["expectations"] = [
        {
            "id": "c",
            "kind": "context-text",
            "variant": "candidate",
            "value": "x",
            "expect": "equals",
        }
    ]
    expectation = parse_group(raw, Path("body.json"), registered()).expectations[0]
    assert isinstance(expectation, ContextTextExpectation)
    assert (expectation.surface, expectation.request) == ("system-prompt", "last")


def test_field_equals_null_value_is_present() -> None:
    group = _group("groups/json-states.json")
    by_id = {e.id: e for e in group.expectations}
    null_value = by_id["field-null"]
    assert isinstance(null_value, JsonExpectation)
    assert null_value.value is None
    assert "value" in null_value.model_fields_set
    absent = by_id["field-absent"]
    assert isinstance(absent, JsonExpectation)
    assert "value" not in absent.model_fields_set
    assert absent.pointer == "/optional"


def test_skill_read_never_has_no_turn() -> None:
    raw: dict[str, Any] = json.loads((BASE / "description.json").read_text(encoding="utf-8"))
    never = parse_group(raw, Path("description.json"), registered()).expectations[2]
    assert isinstance(never, SkillReadExpectation)
    assert (never.expect, never.turn, "turn" in never.model_fields_set) == ("never", None, False)


def test_commands_keep_declared_shape() -> None:
    group = _group("groups/declared-commands.json")
    assert group.commands is not None
    dumped = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in group.commands]
    assert dumped == [
        {"id": "unit-tests", "argv": ["node", "--test"], "timeout_ms": 120000},
        {"id": "lint", "argv": ["npm", "run", "lint"]},
    ]
    assert group.commands[1].effective_timeout_ms == 120000


def test_models_are_frozen() -> None:
    group = _group("groups/common-shape.json")
    with pytest.raises(ValueError, match="frozen"):
        group.id = "other"  # type: ignore[misc]


def test_model_choice() -> None:
    model = _group("groups/common-shape.json").model
    assert model is not None
    assert (model.model, model.thinking) == ("openai-codex/gpt-5.6-sol", "low")


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True),
        ({"a": 1}, {"a": True}, False),
        ([1, 2], [2, 1], False),
        ("1", 1, False),
    ],
)
def test_same_json_has_no_python_coercions(left: Any, right: Any, equal: bool) -> None:
    assert same_json(left, right) is equal


def test_comparison_values_compare_without_coercion(tmp_path: Path) -> None:
    raw: dict[str, Any] = json.loads((BASE / "body.json").read_text(encoding="utf-8"))
    pair = [
        {
            "id": f"{variant}-flag",
            "kind": "json",
            "variant": variant,
            "path": "r.json",
            "expect": "field-equals",
            "pointer": "/flag",
            "value": value,
            "comparison": "flag",
        }
        for variant, value in (("baseline", True), ("candidate", 1))
    ]
    raw["expectations"] = pair
    file = tmp_path / "g.json"
    file.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_definition(file, tmp_path, registered())
    assert caught.value.pointer == "/expectations/1/value"


def test_the_kinds_table_is_read_off_the_expectation_models() -> None:
    # Nine kinds, each in exactly one model; only resource-read fits both group types.
    assert len(EXPECTATION_KINDS) == len(set(EXPECTATION_KINDS)) == 9
    assert {"skill-read"} == DESCRIPTION_ONLY_KINDS
    assert set(EXPECTATION_KINDS) - BODY_ONLY_KINDS - DESCRIPTION_ONLY_KINDS == {"resource-read"}
    assert {"path", "changed-paths", "file-text", "json"} == WORKSPACE_KINDS
    assert VARIANTS == ("baseline", "candidate")


@pytest.mark.parametrize("pointer", ["/a~", "/~2", "a", "#/a"])
def test_a_json_pointer_that_rfc_6901_rejects_is_a_definition_error(pointer: str) -> None:
    expectation = {
        "id": "status",
        "kind": "json",
        "variant": "candidate",
        "path": "result.json",
        "expect": "field-present",
        "pointer": pointer,
    }
    document = json.loads((BASE / "body.json").read_text())
    document["expectations"] = [expectation]

    with pytest.raises(DefinitionError) as error:
        parse_group(document, Path("g.json"), registered())

    assert error.value.pointer == "/expectations/0/pointer"
    assert "must be a JSON Pointer (RFC 6901)" in error.value.message
