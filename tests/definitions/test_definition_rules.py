"""One invalid definition per schema rule: each names the exact JSON pointer and the rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import DefinitionError, load_definition
from pytest_skill_eval.hosts.registry import registered

DATA = Path(__file__).parent / "data"
BODY: dict[str, Any] = json.loads((DATA / "base" / "body.json").read_text(encoding="utf-8"))
DESCRIPTION: dict[str, Any] = json.loads(
    (DATA / "base" / "description.json").read_text(encoding="utf-8")
)

# Indices of the expectations in the base groups, so the table reads as intent.
B_PATH, C_PATH, CHANGED, FILE_TEXT, JSON_, RESPONSE, TOOL, CONTEXT = range(8)
SKILL_RES, CONTEXT_RES, WORKSPACE_RES = 8, 9, 10
D_BASELINE_READ, D_CANDIDATE_READ, D_NEVER, D_RESOURCE = range(4)

Op = tuple[str, str, Any]


def S(pointer: str, value: Any) -> Op:
    """Set the value at `pointer`."""
    return ("set", pointer, value)


def D(pointer: str) -> Op:
    """Delete the member at `pointer`."""
    return ("del", pointer, None)


def A(pointer: str, value: Any) -> Op:
    """Append `value` to the array at `pointer`."""
    return ("append", pointer, value)


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def patched(base: dict[str, Any], *ops: Op) -> dict[str, Any]:
    """A deep copy of `base` with the operations applied in order."""
    document = copy.deepcopy(base)
    for action, pointer, value in ops:
        *parents, last = _tokens(pointer)
        node: Any = document
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        key: Any = int(last) if isinstance(node, list) else last
        if action == "set":
            node[key] = value
        elif action == "del":
            del node[key]
        else:
            node[key].append(value)
    return document


def E(index: int, member: str = "") -> str:
    """Pointer to an expectation or one of its members."""
    return f"/expectations/{index}" + (f"/{member}" if member else "")


LONG_ID = "a" * 65

CASES: list[Any] = [
    # --- document level
    ("schema-version-2", BODY, [S("/schema_version", 2)], "/schema_version", "schema_version 1"),
    ("schema-version-string", BODY, [S("/schema_version", "1")], "/schema_version", "integer"),
    ("schema-version-true", BODY, [S("/schema_version", True)], "/schema_version", "integer"),
    ("unknown-top-field", BODY, [S("/extra", 1)], "/extra", "unknown field 'extra'"),
    ("missing-tools", BODY, [D("/tools")], "/tools", "missing required field 'tools'"),
    ("missing-fixture", BODY, [D("/fixture")], "/fixture", "missing required field"),
    ("id-uppercase", BODY, [S("/id", "Bad_Id")], "/id", "must be an ID"),
    ("id-double-hyphen", BODY, [S("/id", "a--b")], "/id", "must be an ID"),
    ("id-trailing-hyphen", BODY, [S("/id", "ab-")], "/id", "must be an ID"),
    ("id-too-long", BODY, [S("/id", LONG_ID)], "/id", "at most 64"),
    ("type-end-to-end", BODY, [S("/type", "end-to-end")], "/type", "'description' or 'body'"),
    # --- input
    (
        "input-both",
        BODY,
        [S("/input/prompt", "Do it.")],
        "/input/turns",
        "either 'prompt' or 'turns'",
    ),
    ("input-neither", BODY, [S("/input", {})], "/input", "needs 'prompt'"),
    ("input-extra", BODY, [S("/input/text", "x")], "/input/text", "unknown field"),
    ("prompt-blank", BODY, [S("/input", {"prompt": "  \t"})], "/input/prompt", "not be empty"),
    ("prompt-null", BODY, [S("/input", {"prompt": None})], "/input/prompt", "not be null"),
    ("turns-empty", BODY, [S("/input/turns", [])], "/input/turns", "must not be empty"),
    ("turn-blank", BODY, [S("/input/turns/1", " ")], "/input/turns/1", "not be empty"),
    ("turns-string", BODY, [S("/input/turns", "one")], "/input/turns", "must be an array"),
    # --- fixture and declared paths
    ("fixture-absolute", BODY, [S("/fixture", "/etc")], "/fixture", "not an absolute"),
    ("fixture-drive", BODY, [S("/fixture", "C:/task")], "/fixture", "not an absolute"),
    ("fixture-parent", BODY, [S("/fixture", "../task")], "/fixture", "'..' segments"),
    ("fixture-inner-parent", BODY, [S("/fixture", "a/../b")], "/fixture", "'..' segments"),
    ("fixture-dot", BODY, [S("/fixture", "./task")], "/fixture", "'.'"),
    ("fixture-empty-segment", BODY, [S("/fixture", "a//b")], "/fixture", "doubled '/'"),
    ("fixture-trailing-slash", BODY, [S("/fixture", "task/")], "/fixture", "trailing"),
    ("fixture-backslash", BODY, [S("/fixture", "a\\b")], "/fixture", "not '\\'"),
    ("fixture-nul", BODY, [S("/fixture", "a\u0000b")], "/fixture", "NUL"),
    ("fixture-empty", BODY, [S("/fixture", "")], "/fixture", "non-empty relative path"),
    ("fixture-number", BODY, [S("/fixture", 3)], "/fixture", "must be a string"),
    # --- tools and commands
    ("tools-duplicate", BODY, [A("/tools", "read")], "/tools/5", 'duplicate tool "read"'),
    ("tool-blank", BODY, [S("/tools/0", "")], "/tools/0", "not be empty"),
    ("body-bash", BODY, [S("/tools/1", "bash")], "/tools/1", "native tool 'bash'"),
    ("body-grep", BODY, [S("/tools/1", "grep")], "/tools/1", "native tool 'grep'"),
    (
        "description-write",
        DESCRIPTION,
        [A("/tools", "write")],
        "/tools/1",
        "allow only the 'read' tool",
    ),
    (
        "description-custom-tool",
        DESCRIPTION,
        [A("/tools", "probe_lookup")],
        "/tools/1",
        "allow only the 'read' tool",
    ),
    (
        "custom-tool-without-extension",
        BODY,
        [S("/runtime/extensions", [])],
        "/tools/4",
        "needs a runtime extension bundle",
    ),
    (
        "custom-tool-without-runtime",
        BODY,
        [D("/runtime")],
        "/tools/4",
        "needs a runtime extension bundle",
    ),
    (
        "run-command-without-commands",
        BODY,
        [D("/commands")],
        "/tools/3",
        "needs declared 'commands'",
    ),
    (
        "commands-without-run-command",
        BODY,
        [S("/tools", ["read", "write"])],
        "/commands",
        "need the 'run_command' tool",
    ),
    (
        "commands-in-description",
        DESCRIPTION,
        [S("/commands", [{"id": "t", "argv": ["true"]}])],
        "/commands",
        "only valid in body groups",
    ),
    ("commands-empty", BODY, [S("/commands", [])], "/commands", "must not be empty"),
    (
        "command-skill-out-of-range",
        BODY,
        [S("/commands/1/argv", ["sh", "{{skill:0}}/a.sh", "{{skill:2}}/scripts/check.sh"])],
        "/commands/1/argv/2",
        "{{skill:2}} names no skill: the variants declare at most 2 skills (use {{skill:0}} to "
        "{{skill:1}})",
    ),
    ("commands-null", BODY, [S("/commands", None)], "/commands", "not be null"),
    ("command-duplicate-id", BODY, [S("/commands/1/id", "unit-tests")], "/commands/1/id", "dup"),
    ("command-bad-id", BODY, [S("/commands/0/id", "Unit")], "/commands/0/id", "must be an ID"),
    ("command-argv-empty", BODY, [S("/commands/0/argv", [])], "/commands/0/argv", "not be empty"),
    ("command-argv-blank", BODY, [S("/commands/0/argv/1", "")], "/commands/0/argv/1", "empty"),
    (
        "command-timeout-zero",
        BODY,
        [S("/commands/0/timeout_ms", 0)],
        "/commands/0/timeout_ms",
        "at least 1",
    ),
    (
        "command-timeout-too-long",
        BODY,
        [S("/commands/0/timeout_ms", 600_001)],
        "/commands/0/timeout_ms",
        "at most 600000",
    ),
    (
        "command-timeout-float",
        BODY,
        [S("/commands/0/timeout_ms", 1.5)],
        "/commands/0/timeout_ms",
        "integer",
    ),
    ("command-shell-key", BODY, [S("/commands/0/shell", True)], "/commands/0/shell", "unknown"),
    # --- runtime
    ("runtime-piflow", BODY, [S("/runtime/host", "piflow")], "/runtime/host", "must be 'pi'"),
    ("runtime-prompt", BODY, [S("/runtime/prompt", "none")], "/runtime/prompt", "'isolated'"),
    ("runtime-session", BODY, [S("/runtime/session", "no")], "/runtime/session", "true or false"),
    ("runtime-no-session", BODY, [D("/runtime/session")], "/runtime/session", "missing"),
    ("runtime-null", BODY, [S("/runtime", None)], "/runtime", "not be null"),
    (
        "bundle-entry-outside",
        BODY,
        [S("/runtime/extensions/0/entry", "other/probe.mjs")],
        "/runtime/extensions/0/entry",
        "inside one of the bundle's resources",
    ),
    (
        "bundle-no-resources",
        BODY,
        [S("/runtime/extensions/0/resources", [])],
        "/runtime/extensions/0/resources",
        "must not be empty",
    ),
    (
        "bundle-duplicate",
        BODY,
        [A("/runtime/extensions", {"entry": "extensions/probe.mjs", "resources": ["extensions"]})],
        "/runtime/extensions/1",
        "duplicate extension bundle",
    ),
    (
        "literal-reserved",
        BODY,
        [S("/runtime/environment/literal/PATH", "/bin")],
        "/runtime/environment/literal/PATH",
        "reserved",
    ),
    (
        "literal-reserved-lowercase",
        BODY,
        [S("/runtime/environment/literal/node_options", "x")],
        "/runtime/environment/literal/node_options",
        "reserved",
    ),
    (
        "literal-pi-prefix",
        BODY,
        [S("/runtime/environment/literal/PI_CODING_AGENT_DIR", "x")],
        "/runtime/environment/literal/PI_CODING_AGENT_DIR",
        "reserved prefix",
    ),
    (
        "literal-skill-eval-prefix",
        BODY,
        [S("/runtime/environment/literal/SKILL_EVAL_HOST", "x")],
        "/runtime/environment/literal/SKILL_EVAL_HOST",
        "reserved prefix",
    ),
    (
        "literal-ld-prefix",
        BODY,
        [S("/runtime/environment/literal/LD_PRELOAD", "x")],
        "/runtime/environment/literal/LD_PRELOAD",
        "reserved prefix",
    ),
    (
        "literal-api-key",
        BODY,
        [S("/runtime/environment/literal/API_KEY", "sk-1")],
        "/runtime/environment/literal/API_KEY",
        "looks like a secret",
    ),
    (
        "literal-token-lowercase",
        BODY,
        [S("/runtime/environment/literal/github_token", "x")],
        "/runtime/environment/literal/github_token",
        "looks like a secret",
    ),
    (
        "literal-bad-name",
        BODY,
        [S("/runtime/environment/literal/1MODE", "x")],
        "/runtime/environment/literal/1MODE",
        "not a valid variable name",
    ),
    (
        "literal-value-number",
        BODY,
        [S("/runtime/environment/literal/PROBE_MODE", 1)],
        "/runtime/environment/literal/PROBE_MODE",
        "must be a string",
    ),
    (
        "inherit-reserved",
        BODY,
        [A("/runtime/environment/inherit", "HOME")],
        "/runtime/environment/inherit/1",
        "reserved",
    ),
    (
        "inherit-prefix",
        BODY,
        [A("/runtime/environment/inherit", "DYLD_LIBRARY_PATH")],
        "/runtime/environment/inherit/1",
        "reserved prefix",
    ),
    (
        "inherit-overlaps-literal",
        BODY,
        [A("/runtime/environment/inherit", "probe_mode")],
        "/runtime/environment/inherit/1",
        "also set in 'literal'",
    ),
    (
        "inherit-duplicate",
        BODY,
        [A("/runtime/environment/inherit", "PROVIDER_AUTH")],
        "/runtime/environment/inherit/1",
        "duplicate variable",
    ),
    (
        "environment-extra",
        BODY,
        [S("/runtime/environment/secret", {})],
        "/runtime/environment/secret",
        "unknown field",
    ),
    # --- variants
    ("variants-third", BODY, [S("/variants/other", {})], "/variants/other", "unknown field"),
    ("variants-no-candidate", BODY, [D("/variants/candidate")], "/variants/candidate", "missing"),
    (
        "source-unknown-kind",
        BODY,
        [S("/variants/baseline/source", {"kind": "svn"})],
        "/variants/baseline/source/kind",
        "unknown source kind \"svn\"; use 'working-tree' or 'git'",
    ),
    (
        "source-without-kind",
        BODY,
        [S("/variants/baseline/source", {})],
        "/variants/baseline/source/kind",
        "missing required field 'kind'; use 'working-tree' or 'git'",
    ),
    (
        "git-without-ref",
        BODY,
        [D("/variants/baseline/source/ref")],
        "/variants/baseline/source/ref",
        "missing required field 'ref'",
    ),
    (
        "git-blank-ref",
        BODY,
        [S("/variants/baseline/source/ref", " ")],
        "/variants/baseline/source/ref",
        "not be empty",
    ),
    (
        "working-tree-with-ref",
        BODY,
        [S("/variants/candidate/source/ref", "main")],
        "/variants/candidate/source/ref",
        "unknown field 'ref'",
    ),
    (
        "target-out-of-range",
        BODY,
        [S("/variants/candidate/target", 2)],
        "/variants/candidate/target",
        "out of range",
    ),
    (
        "target-without-skills",
        BODY,
        [S("/variants/baseline/skills", []), S("/expectations", [])],
        "/variants/baseline/target",
        "null when 'skills' is empty",
    ),
    (
        "target-negative",
        BODY,
        [S("/variants/candidate/target", -1)],
        "/variants/candidate/target",
        "at least 0",
    ),
    (
        "target-bool",
        BODY,
        [S("/variants/candidate/target", True)],
        "/variants/candidate/target",
        "integer",
    ),
    (
        "candidate-target-null",
        BODY,
        [S("/variants/candidate/target", None)],
        "/variants/candidate/target",
        "must name its target",
    ),
    (
        "duplicate-skills",
        BODY,
        [S("/variants/baseline/skills", ["skills/target", "skills/target"])],
        "/variants/baseline/skills/1",
        "duplicate skill",
    ),
    (
        "duplicate-context",
        BODY,
        [A("/variants/candidate/context", "context/contract.md")],
        "/variants/candidate/context/1",
        "duplicate context entry",
    ),
    (
        "skill-escapes",
        BODY,
        [S("/variants/baseline/skills/0", "../skills/support")],
        "/variants/baseline/skills/0",
        "'..' segments",
    ),
    # --- expectations: common structure
    ("expectations-object", BODY, [S("/expectations", {})], "/expectations", "must be an array"),
    (
        "expectation-duplicate-id",
        BODY,
        [S(E(C_PATH, "id"), "baseline-result")],
        E(C_PATH, "id"),
        "duplicate expectation id",
    ),
    (
        "expectation-unknown-kind",
        BODY,
        [S(E(B_PATH, "kind"), "command")],
        E(B_PATH, "kind"),
        "skill-read, resource-read, path, changed-paths, file-text, json, response-text",
    ),
    ("expectation-no-kind", BODY, [D(E(B_PATH, "kind"))], E(B_PATH, "kind"), "missing"),
    ("expectation-not-object", BODY, [S(E(B_PATH), "x")], E(B_PATH), "must be an object"),
    (
        "expectation-bad-variant",
        BODY,
        [S(E(FILE_TEXT, "variant"), "both")],
        E(FILE_TEXT, "variant"),
        "'baseline'",
    ),
    (
        "expectation-foreign-field",
        BODY,
        [S(E(B_PATH, "pointer"), "/x")],
        E(B_PATH, "pointer"),
        "unknown field 'pointer' in a 'path' expectation",
    ),
    (
        "expectation-path-field-turn-named",
        BODY,
        [S(E(B_PATH, "turn"), 0)],
        E(B_PATH, "turn"),
        "at least 1",
    ),
    ("turn-out-of-range", BODY, [S(E(RESPONSE, "turn"), 3)], E(RESPONSE, "turn"), "out of range"),
    (
        "turn-beyond-single-prompt",
        BODY,
        [S("/input", {"prompt": "Do it."}), S(E(RESPONSE, "turn"), 2)],
        E(B_PATH, "turn"),
        "declares 1 turn ",
    ),
    ("turn-string", BODY, [S(E(RESPONSE, "turn"), "1")], E(RESPONSE, "turn"), "integer"),
    # --- group-type pairing
    (
        "skill-read-in-body",
        BODY,
        [
            A(
                "/expectations",
                {"id": "r", "kind": "skill-read", "variant": "candidate", "expect": "never"},
            )
        ],
        E(11, "kind"),
        "only valid in description groups",
    ),
    (
        "path-in-description",
        DESCRIPTION,
        [
            A(
                "/expectations",
                {
                    "id": "p",
                    "kind": "path",
                    "variant": "candidate",
                    "path": "a",
                    "expect": "exists",
                },
            )
        ],
        E(4, "kind"),
        "only valid in body groups",
    ),
    (
        "context-text-in-description",
        DESCRIPTION,
        [
            A(
                "/expectations",
                {
                    "id": "c",
                    "kind": "context-text",
                    "variant": "candidate",
                    "value": "x",
                    "expect": "contains",
                },
            )
        ],
        E(4, "kind"),
        "'context-text' expectations are only valid in body groups",
    ),
    # --- skill-read
    ("never-with-turn", DESCRIPTION, [S(E(D_NEVER, "turn"), 1)], E(D_NEVER, "turn"), "no turn"),
    (
        "never-with-null-turn",
        DESCRIPTION,
        [S(E(D_NEVER, "turn"), None)],
        E(D_NEVER, "turn"),
        "no turn",
    ),
    (
        "by-turn-without-turn",
        DESCRIPTION,
        [D(E(D_BASELINE_READ, "turn")), D(E(D_BASELINE_READ, "comparison"))],
        E(D_BASELINE_READ, "turn"),
        "needs an integer 'turn'",
    ),
    (
        "skill-read-bad-expect",
        DESCRIPTION,
        [S(E(D_NEVER, "expect"), "read")],
        E(D_NEVER, "expect"),
        "'never', 'on-turn', 'by-turn' or 'not-before-turn'",
    ),
    # --- resource-read
    (
        "workspace-with-index",
        BODY,
        [S(E(WORKSPACE_RES, "index"), 0)],
        E(WORKSPACE_RES, "index"),
        "takes no 'index'",
    ),
    (
        "skill-without-index",
        BODY,
        [D(E(SKILL_RES, "index"))],
        E(SKILL_RES, "index"),
        "needs 'index'",
    ),
    (
        "skill-index-range",
        BODY,
        [S(E(SKILL_RES, "index"), 2)],
        E(SKILL_RES, "index"),
        "'skills' has 2",
    ),
    (
        "context-index-range",
        BODY,
        [S(E(CONTEXT_RES, "index"), 1)],
        E(CONTEXT_RES, "index"),
        "'context' has 1",
    ),
    ("index-negative", BODY, [S(E(SKILL_RES, "index"), -1)], E(SKILL_RES, "index"), "at least 0"),
    (
        "resource-unknown",
        BODY,
        [S(E(SKILL_RES, "resource"), "home")],
        E(SKILL_RES, "resource"),
        "'workspace'",
    ),
    (
        "resource-path-escape",
        BODY,
        [S(E(WORKSPACE_RES, "path"), "../x")],
        E(WORKSPACE_RES, "path"),
        "'..'",
    ),
    # --- path, changed-paths, file-text
    (
        "path-bad-expect",
        BODY,
        [S(E(B_PATH, "expect"), "present")],
        E(B_PATH, "expect"),
        "must be 'exists' or 'absent'",
    ),
    (
        "file-text-bad-expect",
        BODY,
        [S(E(FILE_TEXT, "expect"), "present")],
        E(FILE_TEXT, "expect"),
        "'contains', 'not-contains' or 'equals'",
    ),
    ("path-absolute", BODY, [S(E(B_PATH, "path"), "/etc/passwd")], E(B_PATH, "path"), "absolute"),
    (
        "changed-paths-duplicate",
        BODY,
        [A(E(CHANGED, "paths"), "result.json")],
        E(CHANGED, "paths/1"),
        "duplicate path",
    ),
    (
        "changed-paths-unsafe",
        BODY,
        [S(E(CHANGED, "paths/0"), "a/./b")],
        E(CHANGED, "paths/0"),
        "'.'",
    ),
    (
        "changed-paths-expect",
        BODY,
        [S(E(CHANGED, "expect"), "includes")],
        E(CHANGED, "expect"),
        "'equals' or 'excludes'",
    ),
    (
        "file-text-no-value",
        BODY,
        [D(E(FILE_TEXT, "value"))],
        E(FILE_TEXT, "value"),
        "missing required field 'value'",
    ),
    (
        "file-text-number",
        BODY,
        [S(E(FILE_TEXT, "value"), 5)],
        E(FILE_TEXT, "value"),
        "must be a string",
    ),
    # --- json
    (
        "json-pointer-relative",
        BODY,
        [S(E(JSON_, "pointer"), "status")],
        E(JSON_, "pointer"),
        "JSON Pointer",
    ),
    (
        "json-pointer-tilde",
        BODY,
        [S(E(JSON_, "pointer"), "/a~2b")],
        E(JSON_, "pointer"),
        "'~0' or '~1'",
    ),
    (
        "json-pointer-trailing-tilde",
        BODY,
        [S(E(JSON_, "pointer"), "/a~")],
        E(JSON_, "pointer"),
        "RFC 6901",
    ),
    (
        "json-field-without-pointer",
        BODY,
        [S(E(JSON_, "expect"), "field-present"), D(E(JSON_, "pointer")), D(E(JSON_, "value"))],
        E(JSON_, "pointer"),
        "needs 'pointer'",
    ),
    (
        "json-equals-without-value",
        BODY,
        [D(E(JSON_, "value"))],
        E(JSON_, "value"),
        "null is allowed",
    ),
    (
        "json-value-without-equals",
        BODY,
        [S(E(JSON_, "expect"), "valid")],
        E(JSON_, "value"),
        "only used by expect 'field-equals'",
    ),
    ("json-bad-expect", BODY, [S(E(JSON_, "expect"), "exists")], E(JSON_, "expect"), "'available'"),
    # --- response-text, tool-call, context-text
    (
        "response-bad-expect",
        BODY,
        [S(E(RESPONSE, "expect"), "matches")],
        E(RESPONSE, "expect"),
        "'not-contains'",
    ),
    ("tool-call-blank-tool", BODY, [S(E(TOOL, "tool"), " ")], E(TOOL, "tool"), "not be empty"),
    (
        "tool-bad-expect",
        BODY,
        [S(E(TOOL, "expect"), "attempted")],
        E(TOOL, "expect"),
        "'not-called'",
    ),
    (
        "tool-arguments-string",
        BODY,
        [S(E(TOOL, "argumentContains"), "unit-tests")],
        E(TOOL, "argumentContains"),
        "must be an array",
    ),
    (
        "tool-arguments-number",
        BODY,
        [S(E(TOOL, "argumentNotContains"), [1])],
        E(TOOL, "argumentNotContains/0"),
        "must be a string",
    ),
    (
        "tool-arguments-snake-case",
        BODY,
        [S(E(TOOL, "argument_contains"), ["x"])],
        E(TOOL, "argument_contains"),
        "unknown field",
    ),
    (
        "context-surface",
        BODY,
        [S(E(CONTEXT, "surface"), "user")],
        E(CONTEXT, "surface"),
        "'system-prompt'",
    ),
    (
        "context-request-zero",
        BODY,
        [S(E(CONTEXT, "request"), 0)],
        E(CONTEXT, "request"),
        "positive integer",
    ),
    (
        "context-request-word",
        BODY,
        [S(E(CONTEXT, "request"), "middle")],
        E(CONTEXT, "request"),
        '"first"',
    ),
    (
        "context-request-bool",
        BODY,
        [S(E(CONTEXT, "request"), True)],
        E(CONTEXT, "request"),
        "positive integer",
    ),
    # --- comparisons
    (
        "comparison-single",
        BODY,
        [D(E(C_PATH, "comparison"))],
        E(B_PATH, "comparison"),
        "has only this expectation",
    ),
    (
        "comparison-three",
        BODY,
        [S(E(FILE_TEXT, "comparison"), "result-exists")],
        E(FILE_TEXT, "comparison"),
        "more than two",
    ),
    (
        "comparison-same-variant",
        BODY,
        [S(E(C_PATH, "variant"), "baseline")],
        E(C_PATH, "variant"),
        "two baseline expectations",
    ),
    (
        "comparison-different-kinds",
        BODY,
        [
            S(E(FILE_TEXT, "comparison"), "text"),
            S(E(RESPONSE, "comparison"), "text"),
            S(E(RESPONSE, "variant"), "baseline"),
        ],
        E(RESPONSE, "kind"),
        "same kind",
    ),
    (
        "comparison-different-turn",
        BODY,
        [S(E(C_PATH, "turn"), 1)],
        E(C_PATH, "turn"),
        "differ in 'turn'",
    ),
    (
        "comparison-different-expect",
        DESCRIPTION,
        [S(E(D_CANDIDATE_READ, "expect"), "on-turn")],
        E(D_CANDIDATE_READ, "expect"),
        "differ in 'expect'",
    ),
    (
        "comparison-bad-id",
        BODY,
        [S(E(B_PATH, "comparison"), "Result")],
        E(B_PATH, "comparison"),
        "must be an ID",
    ),
    (
        "comparison-null",
        BODY,
        [S(E(B_PATH, "comparison"), None)],
        E(B_PATH, "comparison"),
        "not be null",
    ),
    # --- review questions and model
    ("review-question-blank", BODY, [S("/review_questions/0", "")], "/review_questions/0", "empty"),
    (
        "review-questions-string",
        BODY,
        [S("/review_questions", "Why?")],
        "/review_questions",
        "array",
    ),
    ("model-blank", BODY, [S("/model/model", " ")], "/model/model", "not be empty"),
    ("model-thinking-null", BODY, [S("/model/thinking", None)], "/model/thinking", "not be null"),
    ("model-extra", BODY, [S("/model/temperature", 0)], "/model/temperature", "unknown field"),
    ("model-missing", BODY, [D("/model/model")], "/model/model", "missing required field 'model'"),
]


def test_the_table_covers_at_least_sixty_rules() -> None:
    assert len(CASES) >= 60
    assert len({case[0] for case in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("base", "ops", "pointer", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_invalid_definition_names_pointer_and_rule(
    tmp_path: Path, base: dict[str, Any], ops: list[Op], pointer: str, fragment: str
) -> None:
    file = tmp_path / "group.json"
    file.write_text(json.dumps(patched(base, *ops)), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_definition(file, tmp_path, registered())
    error = caught.value
    assert (error.pointer, fragment in error.message) == (pointer, True), error.message
    assert error.path == file
    assert str(error) == f"{file}: {pointer}: {error.message}"
    assert "\n" not in str(error)
    for noise in ("pydantic", "https://", "Value error", "Input should"):
        assert noise not in error.message


@pytest.mark.parametrize("base", [BODY, DESCRIPTION], ids=["body", "description"])
def test_base_groups_are_valid(tmp_path: Path, base: dict[str, Any]) -> None:
    (tmp_path / "fixtures" / "task").mkdir(parents=True)  # fixtures are checked at load time
    file = tmp_path / "group.json"
    file.write_text(json.dumps(base), encoding="utf-8")
    loaded = load_definition(file, tmp_path, registered())
    assert loaded.id == base["id"]


def test_a_key_with_a_newline_still_gives_a_one_line_error(tmp_path: Path) -> None:
    error = DefinitionError(tmp_path / "g.json", "/expectations/0/\n\t", "unknown field")
    assert str(error) == f"{tmp_path / 'g.json'}: /expectations/0/\\n\\t: unknown field"
    assert error.pointer == "/expectations/0/\n\t"
