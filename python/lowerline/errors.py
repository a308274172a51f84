"""Exceptions that reach users. Their message is the whole story: one line
(plus MLIR diagnostics where there are some), never a traceback."""


class LowerlineError(Exception):
    """Base of every error caused by the user's input rather than by a bug."""


class UsageError(LowerlineError):
    """A bad command line, file or pipeline string."""
