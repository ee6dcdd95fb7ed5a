"""The nine deterministic expectation kinds, one model each, validated at load time."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import Field, model_validator

from .fields import (
    DefinitionModel,
    Id,
    Index,
    JsonPointer,
    NonEmptyStr,
    NotNull,
    PositiveInt,
    RelativePath,
    RequestSelector,
    Text,
    Variant,
    rule_error,
    unique,
)

TextExpect = Literal["contains", "not-contains", "equals"]
GroupType = Literal["description", "body"]
BOTH_GROUP_TYPES: frozenset[GroupType] = frozenset({"description", "body"})
BODY: frozenset[GroupType] = frozenset({"body"})

# Fields every kind shares; everything else is the kind's expected predicate.
COMMON_FIELDS = frozenset({"id", "kind", "variant", "comparison"})


class ExpectationBase(DefinitionModel):
    """Fields shared by every expectation kind."""

    # The group types whose runs record the evidence this kind observes.
    group_types: ClassVar[frozenset[GroupType]] = BOTH_GROUP_TYPES
    # Whether the kind observes workspace files, which a turn-scoped check needs snapshots of.
    observes_workspace: ClassVar[bool] = False

    id: Id
    variant: Variant
    comparison: Annotated[Id | None, NotNull] = None
    # null is accepted as "no turn" (the reference does); skill-read `never` forbids the key.
    turn: PositiveInt | None = None

    def expected_predicate(self) -> dict[str, Any]:
        """The kind-specific fields (all but id, kind, variant, comparison), defaults filled in."""
        return self.model_dump(mode="json", by_alias=True, exclude=set(COMMON_FIELDS))


class SkillReadExpectation(ExpectationBase):
    """Whether and when the variant's target SKILL.md was read (description groups)."""

    # A body run is told its target explicitly, so reading it says nothing about activation.
    group_types = frozenset({"description"})

    kind: Literal["skill-read"]
    expect: Literal["never", "on-turn", "by-turn", "not-before-turn"]
    # An extension of schema v1: true also asks that the host offered the variant's target
    # intact (its description whole in the catalog the model saw), false that it did not.
    offered: Annotated[bool | None, NotNull] = None

    def expected_predicate(self) -> dict[str, Any]:
        """As every kind's, without `offered` where the definition does not ask it."""
        predicate = super().expected_predicate()
        if self.offered is None:
            del predicate["offered"]
        return predicate

    @model_validator(mode="after")
    def _turn_matches_expect(self) -> Self:
        if self.expect == "never":
            if "turn" in self.model_fields_set:
                raise rule_error(
                    "a skill-read with expect 'never' takes no turn; remove the 'turn' key",
                    at=("turn",),
                )
        elif self.turn is None:
            raise rule_error(
                f"a skill-read with expect '{self.expect}' needs an integer 'turn' "
                "(one-based declared turn)",
                at=("turn",),
            )
        return self


class ResourceReadExpectation(ExpectationBase):
    """Whether a declared skill, context or workspace file was read."""

    kind: Literal["resource-read"]
    resource: Literal["workspace", "skill", "context"]
    index: Annotated[Index | None, NotNull] = None
    path: RelativePath
    expect: Literal["read", "not-read"]

    @model_validator(mode="after")
    def _index_matches_resource(self) -> Self:
        if self.resource == "workspace":
            if "index" in self.model_fields_set:
                raise rule_error(
                    "a workspace resource-read takes no 'index'; remove it", at=("index",)
                )
        elif self.index is None:
            raise rule_error(
                f"a {self.resource} resource-read needs 'index', the zero-based position in "
                f"the variant's '{'skills' if self.resource == 'skill' else 'context'}' list",
                at=("index",),
            )
        return self


class PathExpectation(ExpectationBase):
    """Whether a workspace path exists."""

    group_types = BODY
    observes_workspace = True

    kind: Literal["path"]
    path: RelativePath
    expect: Literal["exists", "absent"]


class ChangedPathsExpectation(ExpectationBase):
    """The set of changed workspace files."""

    group_types = BODY
    observes_workspace = True

    kind: Literal["changed-paths"]
    paths: Annotated[tuple[RelativePath, ...], unique("path")]
    expect: Literal["equals", "excludes"]


class FileTextExpectation(ExpectationBase):
    """Text of a workspace file."""

    group_types = BODY
    observes_workspace = True

    kind: Literal["file-text"]
    path: RelativePath
    value: Text
    expect: TextExpect


JsonExpect = Literal[
    "available", "missing", "valid", "malformed", "field-present", "field-absent", "field-equals"
]


class JsonExpectation(ExpectationBase):
    """State of a workspace JSON file and optionally one field of it."""

    group_types = BODY
    observes_workspace = True

    kind: Literal["json"]
    path: RelativePath
    expect: JsonExpect
    pointer: Annotated[JsonPointer | None, NotNull] = None
    value: Any = None

    @model_validator(mode="after")
    def _pointer_and_value(self) -> Self:
        if self.expect.startswith("field-") and self.pointer is None:
            raise rule_error(
                f"expect '{self.expect}' needs 'pointer', a JSON Pointer such as \"/status\"",
                at=("pointer",),
            )
        # model_fields_set tells an absent key from an explicit null.
        has_value = "value" in self.model_fields_set
        if self.expect == "field-equals" and not has_value:
            raise rule_error(
                "expect 'field-equals' needs a 'value' key (null is allowed)", at=("value",)
            )
        if self.expect != "field-equals" and has_value:
            raise rule_error(
                f"'value' is only used by expect 'field-equals', not '{self.expect}'; remove it",
                at=("value",),
            )
        return self


class ResponseTextExpectation(ExpectationBase):
    """Text of the subject's final (or a turn's) response."""

    group_types = BODY

    kind: Literal["response-text"]
    value: Text
    expect: TextExpect


class ToolCallExpectation(ExpectationBase):
    """Calls of one tool, optionally filtered by substrings of their JSON arguments."""

    group_types = BODY

    kind: Literal["tool-call"]
    tool: NonEmptyStr
    expect: Literal["called", "succeeded", "failed", "not-called"]
    argument_contains: tuple[Text, ...] = Field(default=(), alias="argumentContains")
    argument_not_contains: tuple[Text, ...] = Field(default=(), alias="argumentNotContains")


class ContextTextExpectation(ExpectationBase):
    """Text of the observed system prompt or provider context."""

    group_types = BODY

    kind: Literal["context-text"]
    value: Text
    expect: TextExpect
    surface: Literal["system-prompt", "provider-context"] = "system-prompt"
    request: RequestSelector = "last"


Expectation = Annotated[
    SkillReadExpectation
    | ResourceReadExpectation
    | PathExpectation
    | ChangedPathsExpectation
    | FileTextExpectation
    | JsonExpectation
    | ResponseTextExpectation
    | ToolCallExpectation
    | ContextTextExpectation,
    Field(discriminator="kind"),
]

# The kinds table, read off the union above so that a new kind is declared in one place.
EXPECTATION_MODELS: tuple[type[ExpectationBase], ...] = get_args(get_args(Expectation)[0])


def kind_of(model: type[ExpectationBase]) -> str:
    """The `kind` literal of one expectation model."""
    kind: str = get_args(model.model_fields["kind"].annotation)[0]
    return kind


EXPECTATION_KINDS: tuple[str, ...] = tuple(kind_of(model) for model in EXPECTATION_MODELS)
DESCRIPTION_ONLY_KINDS = frozenset(
    kind_of(model) for model in EXPECTATION_MODELS if "body" not in model.group_types
)
BODY_ONLY_KINDS = frozenset(
    kind_of(model) for model in EXPECTATION_MODELS if "description" not in model.group_types
)
WORKSPACE_KINDS = frozenset(
    kind_of(model) for model in EXPECTATION_MODELS if model.observes_workspace
)
