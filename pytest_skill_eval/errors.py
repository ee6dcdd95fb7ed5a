"""One base for every error this package raises, and the user-facing errors shared across it.

`SkillEvalError` is what callers catch: the `skill-eval` console script catches it once and
prints its message as one line. Low-level failures (`OSError`, JSON decoding, missing keys) are
converted to the most specific error here where they arise, so the message names what the user
can fix. Errors that belong to one module stay there (`DefinitionError` in `definitions/`,
`ViewError` in `views/`, …) but derive from this base:

    SkillEvalError
      DefinitionError, SelectionError     definitions/errors.py
      DefinitionCollectionError           items.py
      SkillEvalFailure                    items.py
      EvidenceError                       here
        DiskFullError                     here
      ResultNotFoundError                 here
      OutputError                         here
      OptionValueError                    common/optionvalues.py
      HostError                           here
        HostNotFoundError                 hosts/binaries.py
        SetupError                        hosts/subject.py
        SystemLayerError                  hosts/layers.py
      ModelProviderError                  here
        EndpointError                     run/providers.py
        ModelSpecError                    hosts/pi/config.py
        RecordError                       modelserver/upstream.py
        ScriptError                       modelserver/script.py
      ResourceError                       workspace/_tree.py
      LedgerMismatchError                 budget/redis_ledger.py (also a LedgerError)
      GradeError                          grading/support.py
        ExpectationError                  grading/support.py
      PointerSyntaxError                  grading/values.py
      ReadError (ViewError)               evidence/read.py
        DamagedEvidenceError              evidence/read.py
      ReviewError                         commands/review.py
      CompareError                        commands/compare.py
      SourceError                         commands/importing/suite.py
"""

from __future__ import annotations


class SkillEvalError(Exception):
    """Something went wrong that the message explains; catch this to catch every own error."""

    exit_code = 1
    """What the `skill-eval` console script exits with when this error ends a command."""


class EvidenceError(SkillEvalError):
    """Evidence could not be written, would be overwritten, or reads back malformed or changed."""


class DiskFullError(EvidenceError):
    """The results volume is full or over quota (ENOSPC, EDQUOT): nothing more can be recorded.

    Raised where a write fails, naming the directory; the invocation stops at the first one,
    keeping what was written before (every evidence file is whole or absent).
    """


class ResultNotFoundError(SkillEvalError):
    """A result id or directory given on the command line does not exist."""

    exit_code = 2


class OutputError(SkillEvalError):
    """A file the user asked for (such as `report --html OUT`) could not be written."""


class HostError(SkillEvalError):
    """The subject's host program could not be found, checked or prepared."""


class ModelProviderError(SkillEvalError):
    """The model side of a subject (script, cassette, recording, endpoint) is unusable."""
