"""Files as the shareable views name them: relative to the project, or to the result.

The HTML report, the Markdown summary and JUnit are made to be shared (CI artifacts, pull
request pages): none names a file by its absolute path on the machine that ran. A path under
the project root the invocation recorded is shown relative to it, one under the result
relative to the result; any other absolute path by its file name alone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath

from ..evidence import read


def project_root(result_dir: Path) -> Path | None:
    """The project root the result's invocation recorded, if any."""
    try:
        invocation = read.load_invocation(result_dir)
    except read.ReadError:
        return None
    root = invocation.get("root") if invocation is not None else None
    return Path(root) if isinstance(root, str) and os.path.isabs(root) else None


def shown_path(path: object, *bases: Path | None) -> str:
    """`path` relative to the first of `bases` it lies under (`./` for the base itself), a
    relative path as it is, any other absolute path by its name."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    pure = PurePath(os.path.normpath(text))
    for base in bases:
        if base is None:
            continue
        try:
            relative = pure.relative_to(PurePath(os.path.normpath(base)))
        except ValueError:
            continue
        return relative.as_posix() if relative.parts else "."
    return pure.name


def placed_text(text: str, *bases: Path | None) -> str:
    """`text` with each base directory's absolute path (and resolved path) replaced by its
    place: the first base becomes `.`, files under it relative paths. Agent output and tool
    arguments name the files a host saw by absolute path; a shared report names none."""
    for base in bases:
        if base is None or len(base.parts) < 2:
            continue
        for spelled in dict.fromkeys((str(base), str(base.resolve()))):
            text = text.replace(spelled + os.sep, "")
            text = re.sub(re.escape(spelled) + r"(?![\w.-])", ".", text)
    return text
