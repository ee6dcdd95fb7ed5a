"""User-facing errors of definition loading and selection."""

from __future__ import annotations

from pathlib import Path

from ..errors import SkillEvalError


class DefinitionError(SkillEvalError):
    """A definition file is missing, unreadable, not JSON, or breaks a schema rule."""

    def __init__(self, path: Path, pointer: str, message: str) -> None:
        self.path = path
        self.pointer = pointer
        # One line, whatever the message quotes.
        self.message = " ".join(message.splitlines())
        super().__init__(str(self))

    def __str__(self) -> str:
        # A key may hold a newline or a control character: shown escaped, the line stays one.
        pointer = "".join(c if c.isprintable() else repr(c)[1:-1] for c in self.pointer)
        return f"{self.path}: {pointer or '/'}: {self.message}"

    def __reduce__(self) -> tuple[type[DefinitionError], tuple[Path, str, str]]:
        # Keeps the error picklable (worker processes ship exceptions to the controller).
        return (type(self), (self.path, self.pointer, self.message))


class SelectionError(SkillEvalError):
    """A group or variant selector does not match the loaded definition."""
