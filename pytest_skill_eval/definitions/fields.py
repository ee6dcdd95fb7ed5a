"""Reusable field types of schema v1: IDs, non-empty strings, contained paths, JSON pointers."""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Sequence
from typing import Annotated, Any, Literal, TypeVar, get_args

import jsonpointer
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
)
from pydantic_core import PydanticCustomError

T = TypeVar("T", bound=Hashable)

RULE_ERROR = "definition_rule"
ID_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
MAX_ID_LENGTH = 64
_DRIVE_PATTERN = re.compile(r"[A-Za-z]:")

Variant = Literal["baseline", "candidate"]
# The two variants of every group, baseline first; the one list every module imports.
VARIANTS: tuple[Variant, ...] = get_args(Variant)


class DefinitionModel(BaseModel):
    """Base of every schema model: exact keys, immutable, JSON types taken literally."""

    # Scalars use the Strict* types (a JSON "1" is not an integer, `true` is not 1); containers
    # stay lax so that JSON arrays become tuples, also below the before-validators.
    model_config = ConfigDict(extra="forbid", frozen=True)


def rule_error(message: str, at: tuple[str | int, ...] = ()) -> PydanticCustomError:
    """A schema rule violation; `at` is the sub-path below the validated value that is wrong."""
    # The message is passed through a context variable so that braces in user values are not
    # mistaken for template fields.
    return PydanticCustomError(RULE_ERROR, "{text}", {"text": message, "at": at})


def show(value: Any, limit: int = 60) -> str:
    """Render a user value for an error message: JSON, one line, shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _id(value: str) -> str:
    if len(value) > MAX_ID_LENGTH:
        raise rule_error(f"must be at most {MAX_ID_LENGTH} characters long (got {len(value)})")
    if not ID_PATTERN.fullmatch(value):
        raise rule_error(
            "must be an ID: a lowercase letter, then lowercase letters, digits and single "
            f"hyphens between them, e.g. 'natural-activation' (got {show(value)})"
        )
    return value


def _non_empty(value: str) -> str:
    if not value.strip():
        raise rule_error("must not be empty or only whitespace")
    return value


def relative_path_problem(value: str) -> str | None:
    """Why `value` is not a contained slash-separated relative path, or None when it is."""
    if not value.strip():
        return "must be a non-empty relative path"
    if "\x00" in value:
        return "must not contain a NUL character"
    if "\\" in value:
        return "must use '/' as separator, not '\\'"
    if value.startswith("/") or _DRIVE_PATTERN.match(value):
        return f"must be a relative path, not an absolute one (got {show(value)})"
    if any(segment in ("", ".", "..") for segment in value.split("/")):
        return (
            "must be a contained relative path without empty, '.' or '..' segments "
            f"(and no leading, trailing or doubled '/'), e.g. 'dir/file' (got {show(value)})"
        )
    return None


def _relative_path(value: str) -> str:
    problem = relative_path_problem(value)
    if problem is not None:
        raise rule_error(problem)
    return value


def _suite_reference(value: str) -> str:
    # '..' is allowed here: a suite may sit beside its groups; containment is checked on load.
    if not value.strip():
        raise rule_error("must be a non-empty relative path to a group file")
    if "\x00" in value or "\\" in value:
        raise rule_error("must use '/' as separator and contain no NUL or '\\' characters")
    if value.startswith("/") or _DRIVE_PATTERN.match(value):
        raise rule_error(
            f"must be relative to the suite's directory, not absolute (got {show(value)})"
        )
    return value


def _json_pointer(value: str) -> str:
    try:
        jsonpointer.JsonPointer(value)
    except jsonpointer.JsonPointerException:
        raise rule_error(
            "must be a JSON Pointer (RFC 6901): \"\" for the whole document or '/'-prefixed "
            f"segments, with '~' only as '~0' or '~1' (got {show(value)})"
        ) from None
    return value


def _not_null(value: Any) -> Any:
    if value is None:
        raise rule_error("must not be null; omit the field instead")
    return value


def _schema_version(value: int) -> int:
    if value != 1:
        raise rule_error(f"unsupported schema_version {value}; only schema_version 1 is supported")
    return value


def unique(what: str) -> AfterValidator:
    """An after-validator rejecting repeated entries of a tuple, pointing at the repeat."""

    def check(values: Sequence[T]) -> Sequence[T]:
        first: dict[T, int] = {}
        for index, value in enumerate(values):
            if value in first:
                raise rule_error(
                    f"duplicate {what} {show(value)} (already at index {first[value]}); "
                    "list each only once",
                    at=(index,),
                )
            first[value] = index
        return values

    return AfterValidator(check)


def _request(value: Any) -> str | int:
    if value in ("first", "last") and isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise rule_error(f'must be "first", "last" or a positive integer (got {show(value)})')


NotNull = BeforeValidator(_not_null)
Text = StrictStr
Integer = StrictInt
Boolean = StrictBool
Id = Annotated[StrictStr, AfterValidator(_id)]
NonEmptyStr = Annotated[StrictStr, AfterValidator(_non_empty)]
RelativePath = Annotated[StrictStr, AfterValidator(_relative_path)]
SuiteReference = Annotated[StrictStr, AfterValidator(_suite_reference)]
JsonPointer = Annotated[StrictStr, AfterValidator(_json_pointer)]
SchemaVersion = Annotated[StrictInt, AfterValidator(_schema_version)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
Index = Annotated[StrictInt, Field(ge=0)]
RequestSelector = Annotated[str | int, PlainValidator(_request)]
