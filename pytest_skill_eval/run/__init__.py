"""One group of one trial: start it, run each variant step by step (`variant.py`), persist,
grade, finalise (the services a process shares, its preparation and its finish are the
session's: `session/`)."""

from __future__ import annotations

from .environment import Environment
from .group import VARIANTS, GroupRun
from .records import synthetic_record, synthetic_run

__all__ = ["VARIANTS", "Environment", "GroupRun", "synthetic_record", "synthetic_run"]
