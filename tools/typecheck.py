"""Type-check the whole lowerline package with mypy: ``python -m lowerline.tools.typecheck``.

The package is assembled from several source folders (``python/lowerline``,
``passes``, ``dialects``, ``tools``; pyproject.toml's ``package-dir``), which
mypy cannot map to module names on its own, and the editable install's import
hook is invisible to it. So this builds the installed layout as a tree of
symbolic links under ``build/typecheck`` and checks ``-p lowerline`` there;
reported paths are mapped back to the repository's files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Package folder -> source folder, as pyproject.toml's package-dir says.
SOURCES = {
    "lowerline": "python/lowerline",
    "lowerline/passes": "passes",
    "lowerline/dialects": "dialects",
    "lowerline/tools": "tools",
}


def _link_tree(view: str) -> None:
    """``view/lowerline`` holding links to every entry of the source folders."""
    shutil.rmtree(view, ignore_errors=True)
    for package, source in SOURCES.items():
        os.makedirs(os.path.join(view, package), exist_ok=True)
        for name in os.listdir(os.path.join(ROOT, source)):
            target = os.path.join(view, package, name)
            if name == "__pycache__" or os.path.lexists(target):
                continue
            os.symlink(os.path.join(ROOT, source, name), target)


def _source_path(line: str, view: str) -> str:
    """A mypy line with the link tree's path (relative to ``view``) replaced
    by the repository's."""
    if not line.startswith("lowerline/"):
        return line
    path, sep, rest = line.partition(":")
    return os.path.relpath(os.path.realpath(os.path.join(view, path)), ROOT) + sep + rest


def main() -> int:
    view = os.path.join(ROOT, "build", "typecheck")
    _link_tree(view)
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        os.path.join(ROOT, "pyproject.toml"),
        "--cache-dir",
        os.path.join(ROOT, "build", "mypy-cache"),
        "-p",
        "lowerline",
    ]
    env = {**os.environ, "MYPYPATH": view}
    done = subprocess.run(command, env=env, cwd=view, capture_output=True, text=True)
    for line in (done.stdout + done.stderr).splitlines():
        print(_source_path(line, view))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
