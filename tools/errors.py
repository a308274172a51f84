"""Turn any failure of a command into a one-line message and an exit code."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from lowerline.errors import LowerlineError


def run_guarded(prog: str, body: Callable[[list[str]], int], argv: list[str]) -> int:
    """Run ``body(argv)``; a user's mistake never prints a Python traceback.

    User errors (``LowerlineError``) print as ``prog: error: message``. Anything else is a bug in
    lowerline: it prints one line too, and the traceback only when
    ``LOWERLINE_DEBUG=1``.
    """
    try:
        return body(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); say nothing, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as err:
        if isinstance(err, LowerlineError):
            message = str(err)
            # A message that is already located ("file:1:2: error: ...") keeps its form.
            prefix = "" if ": error:" in message.split("\n", 1)[0] else "error: "
            sys.stderr.write(f"{prog}: {prefix}{message}\n")
            return 1
        if os.environ.get("LOWERLINE_DEBUG") == "1":
            traceback.print_exc()
        sys.stderr.write(
            f"{prog}: internal error: {type(err).__name__}: {err} "
            "(set LOWERLINE_DEBUG=1 for a traceback)\n"
        )
        return 2
