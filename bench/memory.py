"""Evaluator peak memory against transcript length (events stream to disk, not memory)."""

from __future__ import annotations

import sys
import tempfile
import textwrap
import tracemalloc
from pathlib import Path

from bench.common import emit
from pytest_skill_eval.hosts.pi.driver import Conversation, run_one_shot
from pytest_skill_eval.hosts.process import CancelToken
from pytest_skill_eval.hosts.process import HostProcess as PiProcess

# A stand-in process that prints a Pi-shaped event stream of a given length (the benchmark
# measures the evaluator's reading, not Pi).
EMITTER = textwrap.dedent(
    """
    import json, sys
    n = int(sys.argv[1])
    partial = {"role": "assistant", "content": [{"type": "text", "text": "x" * 200}]}
    out = sys.stdout
    out.write(json.dumps({"type": "agent_start"}) + "\\n")
    for i in range(n):
        delta = {"type": "text_delta", "delta": "x"}
        event = {"type": "message_update", "message": partial, "assistantMessageEvent": delta}
        out.write(json.dumps(event) + "\\n")
    final = {"role": "assistant", "content": [{"type": "text", "text": "done"}],
             "usage": {"input": 1, "output": 1}, "stopReason": "stop"}
    out.write(json.dumps({"type": "message_end", "message": final}) + "\\n")
    out.write(json.dumps({"type": "agent_end", "messages": []}) + "\\n")
    """
)


def peak_for(events: int, tmp: Path) -> int:
    """Peak bytes allocated by the evaluator while reading `events` events."""
    emitter = tmp / "emit.py"
    emitter.write_text(EMITTER)
    run_dir = tmp / f"run{events}"
    run_dir.mkdir()
    process = PiProcess(
        argv=[sys.executable, str(emitter), str(events)],
        env={"PATH": "/usr/bin:/bin"},
        cwd=run_dir,
        events_path=run_dir / "events.jsonl",
        stderr_path=run_dir / "stderr.log",
        interactive=False,
    )
    tracemalloc.start()
    process.start()
    observation, _ = run_one_shot(Conversation(process, CancelToken()), "p")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert observation.turns[0].settled
    return peak


def main() -> dict[str, object]:
    """Print the peak for 1k, 10k and 100k events and the 100k/1k ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        peaks = {n: peak_for(n, Path(tmp)) for n in (1_000, 10_000, 100_000)}
    return emit(
        "memory-vs-transcript",
        ratio_100k_to_1k=round(peaks[100_000] / peaks[1_000], 2),
        goal="flat",
        peak_kib={str(n): round(p / 1024) for n, p in peaks.items()},
    )


if __name__ == "__main__":
    main()
