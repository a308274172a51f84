"""The name -> pass and name -> named-pipeline tables, loaded lazily.

Nothing is imported until a name is looked up (as xDSL's ``get_all_passes``
does): ``lowerline.passes.PASS_MODULES`` maps each flag to the module that
defines it, and ``PIPELINE_MODULES`` lists the stage modules whose
``PIPELINES`` tuples declare the named pipelines. Pass and stage modules never
import this module, so the registry sits above them and closes no cycle.
"""

from __future__ import annotations

import importlib
from functools import cache

from lowerline.passes import PASS_MODULES
from lowerline.pipeline.options import parse_options
from lowerline.pipeline.pass_api import NamedPipeline, Pass

# Modules that declare named pipelines as data (a ``PIPELINES`` tuple).
PIPELINE_MODULES = ("lowerline.cpu.stages", "lowerline.gpu.stages")

# Passes defined outside lowerline.passes (a user's own, tests), by flag.
_EXTRA_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Make a pass defined outside ``lowerline.passes`` usable by its flag
    (a decorator); lowerline's own passes are listed in ``PASS_MODULES``."""
    _EXTRA_PASSES[cls.flag] = cls
    return cls


def _load_pass(flag: str) -> type[Pass]:
    module = importlib.import_module(f"lowerline.passes.{PASS_MODULES[flag]}")
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Pass)
            and value.__dict__.get("flag") == flag
        ):
            return value
    raise LookupError(f"lowerline.passes.{PASS_MODULES[flag]} defines no pass '{flag}'")


@cache
def _pipelines() -> dict[str, NamedPipeline]:
    table: dict[str, NamedPipeline] = {}
    for name in PIPELINE_MODULES:
        for pipeline in importlib.import_module(name).PIPELINES:
            table[pipeline.flag] = pipeline
    return table


def get_pass(flag: str) -> type[Pass] | None:
    if flag in _EXTRA_PASSES:
        return _EXTRA_PASSES[flag]
    return _load_pass(flag) if flag in PASS_MODULES else None


def get_pipeline(flag: str) -> NamedPipeline | None:
    return _pipelines().get(flag)


def all_passes() -> list[type[Pass]]:
    flags = sorted({*PASS_MODULES, *_EXTRA_PASSES})
    return [cls for cls in map(get_pass, flags) if cls is not None]


def all_pipelines() -> list[NamedPipeline]:
    table = _pipelines()
    return [table[k] for k in sorted(table)]


def make_pass(cls: type[Pass], options: str) -> Pass:
    return parse_options(cls, options, cls.flag)
