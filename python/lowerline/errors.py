"""Exceptions that reach users. Their message is the whole story: one line
(plus MLIR diagnostics where there are some), never a traceback."""


class LowerlineError(Exception):
    """Base of every error caused by the user's input rather than by a bug."""


class UsageError(LowerlineError):
    """A bad command line, file or pipeline string."""


class ForeignTargetError(LowerlineError, RuntimeError):
    """A call of code compiled for a target this machine cannot run (another
    architecture, or CPU features this CPU lacks): refused before any of it
    runs, which could otherwise stop the process on an illegal instruction."""


class RuntimeCheckError(LowerlineError, ValueError):
    """A check in compiled code failed during a call (torch-mlir's cf.assert:
    an index out of range, a shape the lowering does not support). The
    message is the check's, with its source location where known. The call's
    outputs are not computed; the module stays usable."""


class IndexCheckError(RuntimeCheckError, IndexError):
    """A failed index-bounds check (like eager PyTorch's IndexError)."""


class ZeroDivisionCheckError(RuntimeCheckError, ZeroDivisionError):
    """An integer division or remainder by zero (lowerline-check-integer-division)."""


def runtime_check_error(message: str) -> RuntimeCheckError:
    """The error for a failed check's message: an IndexCheckError for the
    index-bounds checks torch-mlir's gather, embedding and index lowerings
    emit ("index must be smaller than dim size", "... larger or equal to 0"),
    a ZeroDivisionCheckError for an integer division by zero."""
    kind: type[RuntimeCheckError] = RuntimeCheckError
    if message.startswith("index "):
        kind = IndexCheckError
    elif message.startswith("integer division by zero"):
        kind = ZeroDivisionCheckError
    return kind(f"a run-time check failed in compiled code: {message}")
