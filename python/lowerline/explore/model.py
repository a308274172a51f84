"""``lowerline explore FILE.py`` and ``lowerline bisect FILE.py``: a model
file compiled, then explored or bisected."""

from __future__ import annotations

import os

from lowerline.driver.compile_cli import load_model_file
from lowerline.errors import UsageError


def explore_file(
    path: str, report: str, target: str = "cpu", cache: bool = True, bisect: str | None = None
) -> str:
    """Compile the ``model`` of ``path`` for its ``example_inputs`` (from the
    cache when it can), then write the explorer's page for it to ``report``
    (``CompiledModule.explore``: a traced compile, outputs against eager on
    the file's inputs; with ``bisect``, a folder, the first divergent pass
    too). Returns ``report``."""
    import lowerline

    _check_model_file(path, "explore")
    model, inputs = load_model_file(path)
    compiled = lowerline.compile(model, *inputs, target=target, cache=cache)
    title = f"{os.path.basename(path)} for {target}"
    return compiled.explore(report, *inputs, title=title, bisect=bisect)


def bisect_file(path: str, folder: str, target: str = "cpu") -> dict | None:
    """The first pass whose output differs from eager for the ``model`` and
    ``example_inputs`` of ``path`` (``CompiledModule.bisect``); its IR goes
    to ``folder``. None when every pass is right."""
    import lowerline

    _check_model_file(path, "bisect")
    model, inputs = load_model_file(path)
    compiled = lowerline.compile(model, *inputs, target=target)
    return compiled.bisect(folder, *inputs)


def _check_model_file(path: str, command: str) -> None:
    if path.endswith(".mlir"):
        raise UsageError(
            f"{path}: lowerline {command} takes a model's .py file; for a .mlir file: "
            "lowerline-opt FILE.mlir --pass-pipeline=... --explore REPORT.html"
        )
