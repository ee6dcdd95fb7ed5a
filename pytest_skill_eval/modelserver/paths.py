"""Which wire format the loopback server takes at which path below a route."""

from __future__ import annotations

from pytest_skill_eval.modelserver.counting import COUNT_PATH
from pytest_skill_eval.modelserver.gemini import GEMINI, GEMINI_SERVED_PATH, model_of
from pytest_skill_eval.modelserver.wire import ANTHROPIC, OPENAI, OPENAI_RESPONSES

_API_PATHS = {
    "/v1/chat/completions": OPENAI,
    "/v1/messages": ANTHROPIC,
    "/v1/responses": OPENAI_RESPONSES,
}
# Token-count requests, answered beside the model requests of the api (never a model call).
COUNT_PATHS = {COUNT_PATH: ANTHROPIC}
SERVED_PATHS = ", ".join([*_API_PATHS, GEMINI_SERVED_PATH, *COUNT_PATHS])


def api_path(api: str) -> str:
    """The path (below a route) where the server takes requests of `api`."""
    if api == GEMINI:
        return GEMINI_SERVED_PATH
    return next(path for path, served in _API_PATHS.items() if served == api)


def api_of(path: str) -> str | None:
    """The api whose requests the server takes at `path` (below a route), None: none.

    Gemini names the model in the path (`/v1beta/models/<model>:streamGenerateContent`)."""
    return GEMINI if model_of(path) is not None else _API_PATHS.get(path)


def served(path: str) -> bool:
    """Whether the server answers requests at `path` (below a route)."""
    return api_of(path) is not None or path in COUNT_PATHS
