"""Group and variant selection (reference §2.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.definitions import (
    LoadedDefinition,
    SelectionError,
    load_definition,
    select,
)
from pytest_skill_eval.hosts.registry import registered

SEED = Path(__file__).parent / "data" / "seed"


@pytest.fixture(scope="module")
def suite() -> LoadedDefinition:
    return load_definition(SEED / "suite.json", SEED, registered())


@pytest.fixture(scope="module")
def direct() -> LoadedDefinition:
    return load_definition(SEED / "groups" / "common-shape.json", SEED, registered())


def _summary(
    definition: LoadedDefinition, group: str | tuple[str, ...] | None, variant: str | None
) -> list[object]:
    return [
        (s.loaded.position, s.loaded.group.id, s.variants["baseline"], s.variants["candidate"])
        for s in select(definition, group, variant)
    ]


def test_no_selectors_select_everything(suite: LoadedDefinition) -> None:
    assert _summary(suite, None, None) == [
        (1, "natural-activation", True, True),
        (2, "retained-artifact-behavior", True, True),
    ]


def test_group_by_id(suite: LoadedDefinition) -> None:
    assert _summary(suite, "retained-artifact-behavior", None) == [
        (2, "retained-artifact-behavior", True, True)
    ]


def test_group_by_one_based_position(suite: LoadedDefinition) -> None:
    assert _summary(suite, "1", None) == [(1, "natural-activation", True, True)]
    assert _summary(suite, "02", None) == [(2, "retained-artifact-behavior", True, True)]


@pytest.mark.parametrize("variant", ["baseline", "candidate"])
def test_variant_applies_across_groups(suite: LoadedDefinition, variant: str) -> None:
    for selected in select(suite, None, variant):
        assert selected.variants == {
            "baseline": variant == "baseline",
            "candidate": variant == "candidate",
        }


def test_group_and_variant_together(suite: LoadedDefinition) -> None:
    assert _summary(suite, "2", "candidate") == [(2, "retained-artifact-behavior", False, True)]


@pytest.mark.parametrize(
    ("group", "fragment"),
    [
        ("0", "use a position 1..2"),
        ("3", "use a position 1..2"),
        ("missing-group", "natural-activation, retained-artifact-behavior"),
        ("", "unknown group selector"),
        ("\u0661", "unknown group selector"),  # a non-ASCII digit is not a position
    ],
)
def test_unknown_group(suite: LoadedDefinition, group: str, fragment: str) -> None:
    with pytest.raises(SelectionError, match="unknown group selector") as caught:
        select(suite, group, None)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("variant", ["both", "Baseline", ""])
def test_invalid_variant(suite: LoadedDefinition, variant: str) -> None:
    with pytest.raises(SelectionError, match="must be baseline or candidate"):
        select(suite, None, variant)


def test_group_selector_is_invalid_for_a_direct_group(direct: LoadedDefinition) -> None:
    with pytest.raises(SelectionError, match="only applies to a suite"):
        select(direct, "1", None)
    with pytest.raises(SelectionError, match="only applies to a suite"):
        select(direct, "one-behavioral-question", None)


def test_direct_group_with_variant(direct: LoadedDefinition) -> None:
    assert _summary(direct, None, "baseline") == [(1, "one-behavioral-question", True, False)]


def test_selection_does_not_share_variant_dicts(suite: LoadedDefinition) -> None:
    first, second = select(suite, None, None)
    assert first.variants is not second.variants


def test_several_selectors_keep_the_suite_order_each_group_once(suite: LoadedDefinition) -> None:
    both = [(1, "natural-activation", True, True), (2, "retained-artifact-behavior", True, True)]
    assert _summary(suite, ("retained-artifact-behavior", "1"), None) == both
    assert _summary(suite, ("2", "retained-artifact-behavior"), None) == both[1:]


def test_one_unknown_selector_among_several_is_the_error(suite: LoadedDefinition) -> None:
    with pytest.raises(SelectionError, match="unknown group selector 'nope'"):
        select(suite, ("1", "nope"), None)
