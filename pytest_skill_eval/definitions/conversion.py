"""Turning pydantic's first validation error into one plain DefinitionError."""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from jsonpointer import JsonPointer
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .errors import DefinitionError
from .expectations import EXPECTATION_KINDS, EXPECTATION_MODELS
from .fields import RULE_ERROR, show

# Discriminator values pydantic inserts into `loc`; they are not part of the document.
_UNION_TAGS = frozenset(EXPECTATION_KINDS) | {"working-tree", "git"}

# Keys of the tagged objects (expectations, sources): one of them is never a misspelt `kind`.
_TAGGED_KEYS = frozenset(
    field.alias or name
    for model in EXPECTATION_MODELS
    for name, field in model.model_fields.items()
) | {"ref"}

_TYPE_MESSAGES = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "none_required": "must be null",
}


def pointer_of(tokens: Sequence[str | int]) -> str:
    """The JSON Pointer (RFC 6901, escaped by `jsonpointer`) of a token path; "" is the whole
    document."""
    return JsonPointer.from_parts(tokens).path


def _document_path(loc: Sequence[str | int], document: Any) -> tuple[list[str | int], str | None]:
    """Drop union tags from `loc` by walking the document; also return the last tag seen."""
    tokens: list[str | int] = []
    current: Any = document
    tag: str | None = None
    tag_consumed_here = False
    for token in loc:
        if (
            not tag_consumed_here
            and isinstance(token, str)
            and token in _UNION_TAGS
            and isinstance(current, dict)
            and current.get("kind") == token
        ):
            # At most one tag per object: a later equal token is a real field (kind "path").
            tag, tag_consumed_here = token, True
            continue
        tag_consumed_here = False
        tokens.append(token)
        if isinstance(current, dict) and isinstance(token, str):
            current = current.get(token)
        elif isinstance(current, list) and isinstance(token, int) and 0 <= token < len(current):
            current = current[token]
        else:
            current = None
    return tokens, tag


def _got(error: ErrorDetails) -> str:
    value = error.get("input")
    if isinstance(value, dict | list):
        return ""
    return f" (got {show(value)})"


def _members(annotation: Any) -> list[Any]:
    """The types an annotation may hold: Annotated stripped, unions split, None dropped."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _members(arg) if m is not type(None)]
    return [annotation]


def _tag_of(model: type[BaseModel]) -> tuple[Any, ...]:
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return ()
    return get_args(field.annotation)


def _step(annotation: Any, token: str | int) -> Any:
    """The annotation one `loc` token below `annotation`, else None."""
    members = _members(annotation)
    tagged = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(members) > 1 and any(token in _tag_of(model) for model in tagged):
        return next(model for model in tagged if token in _tag_of(model))
    for member in members:
        origin = get_origin(member)
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(token, str):
            for name, field in member.model_fields.items():
                if token in (name, field.alias):
                    return field.annotation
        elif origin in (tuple, list) and isinstance(token, int):
            return get_args(member)[0]
        elif origin is dict and isinstance(token, str):
            return get_args(member)[1]
    return None


def valid_keys(annotation: Any, loc: Sequence[str | int]) -> list[str]:
    """The keys the object at `loc` (pydantic's, union tags included) accepts, in model order."""
    current = annotation
    for token in loc:
        current = _step(current, token)
        if current is None:
            return []
    # A discriminated union is reached with its tag still to come; the tag picks the model.
    models = [m for m in _members(current) if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(models) != 1:
        return []
    return [field.alias or name for name, field in models[0].model_fields.items()]


def _unknown(name: str | int, owner: str, keys: Sequence[str]) -> str:
    """An unknown key, with the nearest valid one (or the valid ones) as the fix."""
    text = f"unknown field '{name}'{owner}"
    close = difflib.get_close_matches(str(name), keys, n=1, cutoff=0.6)
    if close:
        return f"{text}; did you mean '{close[0]}'?"
    if keys:
        return f"{text}; remove it or use one of: {', '.join(keys)}"
    return f"{text}; remove it or fix its spelling"


def _message(
    error: ErrorDetails, tokens: Sequence[str | int], tag: str | None, keys: Sequence[str] = ()
) -> str:
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    name = tokens[-1] if tokens else ""
    if kind == RULE_ERROR:
        return str(ctx["text"])
    if kind == "missing":
        return f"missing required field '{name}'"
    if kind == "extra_forbidden":
        owner = f" in a '{tag}' expectation" if tag in EXPECTATION_KINDS else ""
        return _unknown(name, owner, keys)
    if kind == "union_tag_invalid":
        if "expectations" in tokens:
            kinds = ", ".join(EXPECTATION_KINDS)
            return f"unknown expectation kind {show(ctx.get('tag'))}; use one of: {kinds}"
        return f"unknown source kind {show(ctx.get('tag'))}; use 'working-tree' or 'git'"
    if kind == "union_tag_not_found":
        if "expectations" in tokens:
            return "missing required field 'kind'; use one of: " + ", ".join(EXPECTATION_KINDS)
        return "missing required field 'kind'; use 'working-tree' or 'git'"
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind] + _got(error)
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}{_got(error)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be {'at least' if 'ge' in ctx else 'greater than'} {bound}{_got(error)}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return f"must be {'at most' if 'le' in ctx else 'less than'} {bound}{_got(error)}"
    if kind == "too_short":
        minimum = ctx.get("min_length", 1)
        return "must not be empty" if minimum == 1 else f"must have at least {minimum} entries"
    if kind == "json_invalid":
        # Only reachable for documents pydantic's parser refuses after json.loads accepted them.
        if "recursion" in str(ctx.get("error", "")):
            return "invalid JSON: nested too deeply"
        return f"invalid JSON: {ctx.get('error', error['msg'])}"
    text = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return text.replace("Input should be", "must be")


def _first(errors: Sequence[ErrorDetails]) -> ErrorDetails:
    """Pydantic's first error, unless the same object also has an unknown key: a misspelt key
    shows as that unknown key and a missing one, and the unknown key is the one to fix."""
    first = errors[0]
    if first["type"] == "missing":
        for error in errors:
            if error["type"] == "extra_forbidden" and error["loc"][:-1] == first["loc"][:-1]:
                return error
    return first


def describe(
    error: ValidationError, document: Any, at: Sequence[str | int] = (), model: Any = None
) -> tuple[str, str]:
    """The JSON Pointer and the message of pydantic's first error.

    `at` is where the validated value sits inside `document`, so the pointer is the document's;
    `model` is the validated type, to suggest the nearest valid key for an unknown one.
    """
    first = _first(error.errors(include_url=False))
    keys = valid_keys(model, first["loc"][:-1]) if first["type"] == "extra_forbidden" else []
    tokens, tag = _document_path([*at, *first["loc"]], document)
    ctx = first.get("ctx") or {}
    if first["type"] == RULE_ERROR:
        tokens.extend(ctx.get("at", ()))
    elif first["type"] == "union_tag_not_found" and (typo := _misspelt_kind(document, tokens)):
        tokens.append(typo)
        return pointer_of(tokens), f"unknown field '{typo}'; did you mean 'kind'?"
    elif first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        tokens.append("kind")
    return pointer_of(tokens), _message(first, tokens, tag, keys)


def _misspelt_kind(document: Any, tokens: Sequence[str | int]) -> str | None:
    """The key of the object at `tokens` that looks like a misspelt `kind`, if any."""
    current = document
    for token in tokens:
        if isinstance(current, dict) and isinstance(token, str):
            current = current.get(token)
        elif isinstance(current, list) and isinstance(token, int) and 0 <= token < len(current):
            current = current[token]
        else:
            return None
    if not isinstance(current, dict):
        return None
    keys = [str(key) for key in current if key not in _TAGGED_KEYS]
    close = difflib.get_close_matches("kind", keys, n=1, cutoff=0.6)
    return close[0] if close else None


def to_definition_error(
    error: ValidationError, path: Path, document: Any, model: Any = None
) -> DefinitionError:
    """The first pydantic error as a DefinitionError pointing at the offending value."""
    return DefinitionError(path, *describe(error, document, model=model))
