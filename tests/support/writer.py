"""A terminal writer for the views' tests: it keeps what is written, a section as `== title`."""

from __future__ import annotations


class Lines:
    """What a view wrote through pytest's terminal reporter, one line each."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None:
        self.lines.append(f"== {title}")

    def write_line(self, line: str | bytes, **markup: bool) -> None:
        self.lines.append(str(line))
