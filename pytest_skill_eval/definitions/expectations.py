"""The nine deterministic expectation kinds, one model each, validated at load time."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

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

# Fields every kind shares; everything else is the kind's expected predicate.
COMMON_FIELDS = frozenset({"id", "kind", "variant", "comparison"})


class ExpectationBase(DefinitionModel):
    """Fields shared by every expectation kind."""

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

    kind: Literal["skill-read"]
    expect: Literal["never", "on-turn", "by-turn", "not-before-turn"]

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

    kind: Literal["path"]
    path: RelativePath
    expect: Literal["exists", "absent"]


class ChangedPathsExpectation(ExpectationBase):
    """The set of changed workspace files."""

    kind: Literal["changed-paths"]
    paths: Annotated[tuple[RelativePath, ...], unique("path")]
    expect: Literal["equals", "excludes"]


class FileTextExpectation(ExpectationBase):
    """Text of a workspace file."""

    kind: Literal["file-text"]
    path: RelativePath
    value: Text
    expect: TextExpect


JsonExpect = Literal[
    "available", "missing", "valid", "malformed", "field-present", "field-absent", "field-equals"
]


class JsonExpectation(ExpectationBase):
    """State of a workspace JSON file and optionally one field of it."""

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

    kind: Literal["response-text"]
    value: Text
    expect: TextExpect


class ToolCallExpectation(ExpectationBase):
    """Calls of one tool, optionally filtered by substrings of their JSON arguments."""

    kind: Literal["tool-call"]
    tool: NonEmptyStr
    expect: Literal["called", "succeeded", "failed", "not-called"]
    argument_contains: tuple[Text, ...] = Field(default=(), alias="argumentContains")
    argument_not_contains: tuple[Text, ...] = Field(default=(), alias="argumentNotContains")


class ContextTextExpectation(ExpectationBase):
    """Text of the observed system prompt or provider context."""

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

EXPECTATION_KINDS: tuple[str, ...] = (
    "skill-read",
    "resource-read",
    "path",
    "changed-paths",
    "file-text",
    "json",
    "response-text",
    "tool-call",
    "context-text",
)
DESCRIPTION_ONLY_KINDS = frozenset({"skill-read"})
BODY_ONLY_KINDS = frozenset(
    {"path", "changed-paths", "file-text", "json", "response-text", "tool-call", "context-text"}
)
