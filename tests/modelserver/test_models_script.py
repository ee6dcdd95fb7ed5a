"""Script (cassette) loading, validation and per-trial resolution."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_skill_eval.modelserver.script import (
    ErrorReply,
    RequestNote,
    ScriptError,
    ToolCall,
    Usage,
)
from pytest_skill_eval.modelserver.scriptparse import load_script, parse_script
from pytest_skill_eval.modelserver.scriptpaths import find_script, script_path

FULL = """\
version: 1
match: order
interactions:
  - request:
      api: openai-completions
      model: claude-sonnet-4-5
      sha256: abc123
      excerpt: Fix the lint
    response:
      text: "I will read the skill first."
      thinking: null
      tool_calls:
        - name: read
          arguments: {path: "{{skill:0}}/SKILL.md"}
        - name: read
          arguments: {path: "{{workspace}}/a.txt", limit: 5}
          id: my-call
      usage: {input: 1200, output: 40, cache_read: 7, cache_write: 3}
      latency_ms: 25
  - response:
      thinking: "All done?"
      text: Done.
  - response:
      text: cut
      stop: length
  - response:
      error: {status: 529, message: overloaded}
"""


def write(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_example_loads_with_every_field(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    script = load_script(path)
    assert script.version == 1
    assert script.match == "order"
    assert script.source == path
    assert script.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    first, second, third, fourth = script.interactions
    assert first.request == RequestNote(
        api="openai-completions", model="claude-sonnet-4-5", sha256="abc123", excerpt="Fix the lint"
    )
    assert first.response.text == "I will read the skill first."
    assert first.response.thinking is None
    assert first.response.tool_calls == (
        ToolCall(name="read", arguments={"path": "{{skill:0}}/SKILL.md"}),
        ToolCall(name="read", arguments={"path": "{{workspace}}/a.txt", "limit": 5}, id="my-call"),
    )
    assert first.response.usage == Usage(input=1200, output=40, cache_read=7, cache_write=3)
    assert first.response.stop == "tool_use"
    assert first.response.latency_ms == 25
    assert second.request is None
    assert (second.response.thinking, second.response.text) == ("All done?", "Done.")
    assert second.response.stop == "stop"
    assert third.response.stop == "length"
    assert fourth.response.error == ErrorReply(status=529, message="overloaded")
    assert fourth.response.stop == "error"


def test_defaults_usage_and_inferred_stop() -> None:
    script = parse_script({"version": 1, "interactions": [{"response": {"text": "hi"}}]})
    response = script.interactions[0].response
    assert response.usage == Usage(input=100, output=10, cache_read=0, cache_write=0)
    assert response.stop == "stop"
    assert response.tool_calls == ()
    assert response.latency_ms == 0
    assert script.source is None


def test_partial_usage_keeps_other_defaults() -> None:
    script = parse_script(
        {"version": 1, "interactions": [{"response": {"text": "x", "usage": {"output": 3}}}]}
    )
    assert script.interactions[0].response.usage == Usage(input=100, output=3)


def test_empty_response_is_an_empty_reply() -> None:
    script = parse_script({"version": 1, "interactions": [{"response": {}}]})
    response = script.interactions[0].response
    assert (response.text, response.thinking, response.stop) == (None, None, "stop")


def test_body_match_with_hashes_loads() -> None:
    script = parse_script(
        {
            "version": 1,
            "match": "body",
            "interactions": [{"request": {"sha256": "f" * 64}, "response": {"text": "x"}}],
        }
    )
    assert script.match == "body"


def test_stop_error_without_error_block_is_a_broken_stream() -> None:
    script = parse_script(
        {"version": 1, "interactions": [{"response": {"text": "partial", "stop": "error"}}]}
    )
    response = script.interactions[0].response
    assert (response.stop, response.error, response.text) == ("error", None, "partial")


INVALID = [
    ("[1, 2]\n", "(top level)", "must be a mapping"),
    ("interactions: [{response: {text: a}}]\n", "version", "is missing"),
    ("version: 2\ninteractions: [{response: {text: a}}]\n", "version", "must be 1"),
    ("version: true\ninteractions: [{response: {text: a}}]\n", "version", "must be 1"),
    ("version: 1\nfoo: 1\ninteractions: [{response: {text: a}}]\n", "foo", "not a known key"),
    ("version: 1\nmatch: fuzzy\ninteractions: [{response: {text: a}}]\n", "match", "order, body"),
    ("version: 1\n", "interactions", "non-empty list"),
    ("version: 1\ninteractions: []\n", "interactions", "non-empty list"),
    ("version: 1\ninteractions: [text]\n", "interactions[0]", "must be a mapping"),
    ("version: 1\ninteractions: [{request: {}}]\n", "interactions[0].response", "is missing"),
    (
        "version: 1\ninteractions: [{response: {text: a}}, {response: {txt: b}}]\n",
        "interactions[1].response.txt",
        "not a known key",
    ),
    ("version: 1\ninteractions: [{response: {text: 5}}]\n", "response.text", "must be a string"),
    (
        "version: 1\ninteractions: [{response: {thinking: [a]}}]\n",
        "response.thinking",
        "must be a string",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: {name: read}}}]\n",
        "response.tool_calls",
        "must be a list",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{arguments: {}}]}}]\n",
        "interactions[0].response.tool_calls[0].name",
        "non-empty string",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{name: read, arguments: [1]}]}}]\n",
        "tool_calls[0].arguments",
        "must be a mapping",
    ),
    (
        "version: 1\ninteractions:\n"
        "  - response: {tool_calls: [{name: r, arguments: {d: 2024-01-01}}]}\n",
        "tool_calls[0].arguments.d",
        "JSON cannot carry",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{name: r, arguments: {1: a}}]}}]\n",
        "tool_calls[0].arguments",
        "non-string key",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{name: r, id: 7}]}}]\n",
        "tool_calls[0].id",
        "non-empty string",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{name: r, id: x}, {name: s, id: x}]}}]"
        "\n",
        "response.tool_calls",
        "duplicate ids",
    ),
    (
        "version: 1\ninteractions: [{response: {usage: {input: -1}}}]\n",
        "response.usage.input",
        "non-negative integer",
    ),
    (
        "version: 1\ninteractions: [{response: {usage: {output: 1.5}}}]\n",
        "response.usage.output",
        "non-negative integer",
    ),
    (
        "version: 1\ninteractions: [{response: {usage: {cached: 1}}}]\n",
        "response.usage.cached",
        "not a known key",
    ),
    ("version: 1\ninteractions: [{response: {stop: done}}]\n", "response.stop", "must be one of"),
    (
        "version: 1\ninteractions: [{response: {text: a, stop: tool_use}}]\n",
        "response.stop",
        "no tool_calls",
    ),
    (
        "version: 1\ninteractions: [{response: {tool_calls: [{name: r}], stop: stop}}]\n",
        "response.stop",
        "has tool_calls",
    ),
    (
        "version: 1\ninteractions: [{response: {error: {status: 200, message: x}}}]\n",
        "response.error.status",
        "400-599",
    ),
    (
        "version: 1\ninteractions: [{response: {error: {status: 500}}}]\n",
        "response.error.message",
        "non-empty string",
    ),
    (
        "version: 1\ninteractions: [{response: {text: a, error: {status: 500, message: x}}}]\n",
        "response.error",
        "cannot be combined",
    ),
    (
        "version: 1\ninteractions: [{response: {stop: length, error: {status: 500, message: x}}}]"
        "\n",
        "response.stop",
        "must be error",
    ),
    (
        "version: 1\ninteractions: [{response: {latency_ms: -5}}]\n",
        "response.latency_ms",
        "non-negative integer",
    ),
    (
        "version: 1\ninteractions: [{request: {api: grpc}, response: {}}]\n",
        "interactions[0].request.api",
        "must be one of",
    ),
    (
        "version: 1\ninteractions: [{request: {sha256: 5}, response: {}}]\n",
        "interactions[0].request.sha256",
        "must be a string",
    ),
    (
        "version: 1\nmatch: body\ninteractions: [{response: {text: a}}]\n",
        "interactions[0].request.sha256",
        "match: body",
    ),
]


@pytest.mark.parametrize(
    ("text", "location", "problem"),
    INVALID,
    ids=[f"{i}-{case[1]}" for i, case in enumerate(INVALID)],
)
def test_invalid_shape_names_file_and_location(
    tmp_path: Path, text: str, location: str, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScriptError) as info:
        load_script(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert location in info.value.location
    assert problem in message
    assert info.value.path == path


def test_invalid_yaml_reports_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\ninteractions:\n  - response: {text: [unclosed\n")
    with pytest.raises(ScriptError, match=r"line \d+, column \d+: is not valid YAML") as info:
        load_script(path)
    assert str(info.value).startswith(str(path))


def test_invalid_yaml_is_described_in_the_same_words_whichever_loader_reads_it(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "version: 1\n  interactions: []\n")
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert str(info.value) == (
        f"{path}: line 2, column 15: is not valid YAML "
        "(mapping values are not allowed here); fix the syntax"
    )


def test_missing_file_is_a_script_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ScriptError, match="cannot be read") as info:
        load_script(path)
    assert info.value.path == path


def test_non_utf8_file_is_a_script_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"version: 1\ninteractions: [{response: {text: \xe9}}]\n")
    with pytest.raises(ScriptError, match="is not UTF-8"):
        load_script(path)


def test_inline_script_errors_say_inline() -> None:
    with pytest.raises(ScriptError, match=r"^<inline script>: version: must be 1"):
        parse_script({"version": 3, "interactions": [{"response": {}}]})


def test_resolution_per_group_variant_and_trial(tmp_path: Path) -> None:
    group = tmp_path / "natural-activation"
    group.mkdir()
    write(group, "version: 1\ninteractions: [{response: {text: base}}]\n", "baseline.yaml")
    write(group, "version: 1\ninteractions: [{response: {text: cand}}]\n", "candidate.yaml")
    write(group, "version: 1\ninteractions: [{response: {text: cand2}}]\n", "candidate-trial2.yaml")

    assert script_path(tmp_path, "natural-activation", "baseline", 1) == group / "baseline.yaml"
    assert script_path(tmp_path, "natural-activation", "candidate", 2) == (
        group / "candidate-trial2.yaml"
    )
    # No per-trial file: fall back to the trial-1 script.
    assert script_path(tmp_path, "natural-activation", "candidate", 3) == group / "candidate.yaml"
    assert script_path(tmp_path, "natural-activation", "baseline", 2) == group / "baseline.yaml"
    assert script_path(tmp_path, "other-group", "baseline", 1) is None

    found = find_script(tmp_path, "natural-activation", "candidate", 2)
    assert found is not None
    assert found.interactions[0].response.text == "cand2"
    assert find_script(tmp_path, "natural-activation", "nonexistent", 1) is None


def test_per_trial_file_is_ignored_for_trial_one(tmp_path: Path) -> None:
    group = tmp_path / "g"
    group.mkdir()
    write(group, "version: 1\ninteractions: [{response: {}}]\n", "baseline-trial1.yaml")
    assert script_path(tmp_path, "g", "baseline", 1) is None
