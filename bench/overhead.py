"""Evaluator overhead per variant vs the bare Pi process on the same scripted 1-turn run."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

from bench.common import PI, description_suite, emit, run_suite
from pytest_skill_eval.hosts.pi.config import pi_agent_files, settings_json
from pytest_skill_eval.modelserver.script import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer

PROMPT = "Say done."
REPLY = {"text": "done", "usage": {"input": 500, "output": 5}}


def _item_times(root: Path) -> list[float]:
    junit = root / "junit.xml"
    run_suite(root, f"--junitxml={junit}")
    times = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        if case.get("name", "").endswith(("[baseline]", "[candidate]")) and "::" not in (
            case.get("classname") or ""
        ):
            times.append(float(case.get("time", "0")))
    return times


def _bare_times(runs: int, tmp: Path) -> list[float]:
    times = []
    script = parse_script({"version": 1, "interactions": [{"response": REPLY}]})
    with ScriptedModelServer() as server:
        for index in range(runs):
            route = server.open_route(script)
            base = tmp / f"bare{index}"
            for name in ("home", "agent", "work"):
                (base / name).mkdir(parents=True)
            (base / "agent" / "models.json").write_text(json.dumps(pi_agent_files(route)))
            (base / "agent" / "settings.json").write_text(json.dumps(settings_json()))
            env = {
                "PATH": os.environ.get("PATH", os.defpath),
                "HOME": str(base / "home"),
                "PI_CODING_AGENT_DIR": str(base / "agent"),
                "PI_OFFLINE": "1",
                "PI_SKIP_VERSION_CHECK": "1",
                "PI_TELEMETRY": "0",
            }
            argv = [
                str(PI), "--mode", "json", "-p", "--no-session", "--no-extensions",
                "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files",
                "--tools", "read", "--model", "skill-eval/scripted", PROMPT,
            ]  # fmt: skip
            start = time.perf_counter()
            subprocess.run(
                argv, cwd=base / "work", env=env, stdin=subprocess.DEVNULL,
                capture_output=True, check=True,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            route.close()
    return times


def main(groups: int = 10) -> dict[str, object]:
    """Median item wall time minus median bare-Pi wall time, interleaving the two."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "suite"
        description_suite(root, groups, PROMPT, REPLY)
        items = _item_times(root)
        bare = _bare_times(groups * 2, Path(tmp))
    item_median, bare_median = statistics.median(items), statistics.median(bare)
    overhead = item_median - bare_median
    return emit(
        "evaluator-overhead",
        overhead_ms=round(overhead * 1000, 1),
        overhead_ratio=round(overhead / bare_median, 3),
        goal_ms=150,
        goal_ratio=0.15,
        item_median_s=round(item_median, 3),
        bare_pi_median_s=round(bare_median, 3),
        runs=len(items),
    )


if __name__ == "__main__":
    main()
