"""Where in a script file a validation error is: the line of the key or item it names."""

from __future__ import annotations

import re

import yaml

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def line_of(text: str, location: str) -> int | None:
    """The 1-based line of `location` (`interactions[0].response.stop`) in the YAML `text`."""
    if not location or location.startswith(("(", "byte", "line")):
        return None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    mark = None
    for key, index in _STEP.findall(location):
        if node is None:
            return None
        if index:
            items = node.value if isinstance(node, yaml.SequenceNode) else []
            node = items[int(index)] if int(index) < len(items) else None
            mark = node.start_mark if node is not None else mark
            continue
        pairs = node.value if isinstance(node, yaml.MappingNode) else []
        found = [(k, v) for k, v in pairs if isinstance(k, yaml.ScalarNode) and k.value == key]
        if not found:
            return None
        mark, node = found[0][0].start_mark, found[0][1]
    return None if mark is None else mark.line + 1
