"""Text that GitHub's Markdown renders as itself: inline text and fenced code blocks.

GitHub renders Markdown with cmark-gfm and then rewrites the rendered text: `@user` and
`@org/team` become mentions, `#1`, `org/repo#1` and `GH-1` references, a short commit hash a
link. Backslash escapes keep CommonMark markup literal (links, images, emphasis, code, HTML,
entities, a table cell break) but vanish from the rendered text, so they stop neither the
rewrites nor GFM's extended autolinks (`http://…`, `www.…`, `a@b.c`). A word joiner (U+2060,
invisible and never a line break) is put where each of those would match: after `@` and `#`,
after the `:` of a scheme, before a `.` that joins words, after the `-` of `GH-1`. A bare
commit hash is left as it is (result ids and hashes stay copyable): GitHub links it only to a
commit of the repository itself, while `user@hash` and `org/repo@hash` are broken at the `@`.
Control and bidirectional formatting characters are shown as visible symbols, so no text
reorders or hides the line it is on.
"""

from __future__ import annotations

import re

WORD_JOINER = "\u2060"

# CommonMark lets a backslash escape any ASCII punctuation. These are the ones that can start
# markup inside a line (emphasis, code, links, HTML, entities, a cell break, a mention, math);
# the text never begins a line, so list and heading markers need no escape.
_PUNCTUATION = frozenset("\\`*_[]<>|&!~#$@")

# Control characters become their Unicode control pictures (DEL too); C1 controls and the
# bidirectional formatting characters become U+FFFD.
_SHOWN = {code: chr(0x2400 + code) for code in range(0x20)}
_SHOWN[0x7F] = "\u2421"
_SHOWN.update(dict.fromkeys(range(0x80, 0xA0), "\ufffd"))
_SHOWN.update(dict.fromkeys((0x061C, 0x200E, 0x200F), "\ufffd"))
_SHOWN.update(dict.fromkeys(range(0x202A, 0x202F), "\ufffd"))
_SHOWN.update(dict.fromkeys(range(0x2066, 0x206A), "\ufffd"))
# In a code block a line keeps its tabs.
_SHOWN_IN_CODE = {code: shown for code, shown in _SHOWN.items() if code != 0x09}

# Where a word joiner goes: after `@` and `#` (mentions, references, e-mail, `user@sha`), after
# the `:` of a scheme (`http://`), before a `.` that is not inside a number (`www.`, `x.com`,
# an e-mail's domain), after the `-` of `GH-1` (and `KEY-1` custom references).
_JOIN_AFTER = re.compile(r"[@#]|:(?=/)|(?<=[A-Za-z]):(?=\w)|(?<=[A-Za-z])-(?=\d)")
_JOIN_BEFORE = re.compile(r"\.(?=\S)(?!(?<=\d\.)\d)|(?<=[Ww]{3})\.")  # `www.` even last


def md_text(text: object) -> str:
    """`text` as literal inline text on one line: no link, autolink, mention, reference,
    emphasis, HTML, entity or table cell break, in CommonMark and on GitHub."""
    flat = " ".join(str(text).split()).translate(_SHOWN)
    flat = _JOIN_AFTER.sub(lambda m: m.group(0) + WORD_JOINER, flat)
    flat = _JOIN_BEFORE.sub(WORD_JOINER + ".", flat)
    return "".join(f"\\{c}" if c in _PUNCTUATION else c for c in flat)


def md_code_block(text: str, indent: str = "") -> list[str]:
    """`text` as a fenced code block (lines prefixed by `indent`): its fence is longer than
    any backtick run inside, so nothing in it can close the block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = [line.translate(_SHOWN_IN_CODE) for line in re.split(r"\r\n|\r|\n", text)]
    return [indent + fence, *(indent + line for line in body), indent + fence]
