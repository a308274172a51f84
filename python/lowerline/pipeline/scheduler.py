"""Plan and run a textual pass pipeline that mixes upstream and lowerline passes.

MLIR can only parse pipelines made of registered C++ passes, and a Python pass
can only run in a PassManager anchored on the op it runs on (DESIGN.md). So the
pipeline is parsed here (``pipeline_parser``), lowerline's named pipelines are
expanded, and the tree is cut into steps:

* ``UpstreamStep``: a maximal run of upstream passes, handed to MLIR as one
  ``anchor(...)`` pipeline (nested upstream pipelines stay inside it);
* ``PythonStep``: one lowerline pass, run on the anchor op through the adapter
  in ``pass_api``;
* ``NestStep``: ``anchor(...)`` holding a lowerline pass; its steps run on each
  ``anchor`` op found one level below the current op, like MLIR's nesting.

Every upstream piece is parsed by MLIR while planning, so an unknown pass or a
bad option is reported (with its offset in the pipeline string) before any IR
changes. With ``fine=True`` every pass becomes its own step, so that per-pass
instrumentation (timing, IR printing) sees each one.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mlir import ir
from mlir import passmanager as mlir_pm

from lowerline.pipeline import pass_api, registry
from lowerline.pipeline.options import OptionError, parse_options
from lowerline.pipeline.parser import (
    NestedPipeline,
    PassElement,
    PipelineSyntaxError,
    parse_elements,
    parse_pipeline,
)


class PipelineError(ValueError):
    """A pipeline that cannot be planned; ``pos`` is an offset in the pipeline text."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message = message
        self.pos = pos


class PipelineFailed(RuntimeError):
    """A pass failed while running; its diagnostics went to the context's handler."""

    def __init__(self, label: str, anchor_op: str):
        super().__init__(f"pass pipeline failed in '{label}' on '{anchor_op}'")
        self.label = label
        self.anchor_op = anchor_op


@dataclass
class UpstreamStep:
    anchor: str
    text: str  # the elements, without the anchor
    manager: mlir_pm.PassManager

    @property
    def label(self) -> str:
        return self.text


@dataclass
class PythonStep:
    anchor: str
    pass_: pass_api.Pass
    manager: mlir_pm.PassManager

    @property
    def label(self) -> str:
        return self.pass_.flag


@dataclass
class NestStep:
    anchor: str
    steps: list[Step] = field(default_factory=list)


Step = UpstreamStep | PythonStep | NestStep


@contextlib.contextmanager
def _captured_native_stderr() -> Iterator[list[str]]:
    """Collect what C++ writes to fd 2 (llvm::cl option errors go there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    out: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            out.append(sink.read().decode(errors="replace"))


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _parse_upstream(anchor: str, text: str, context: ir.Context) -> mlir_pm.PassManager:
    with _captured_native_stderr() as native:
        try:
            return mlir_pm.PassManager.parse(f"{anchor}({text})", context=context)
        except ValueError as err:
            message = str(err)
    raise ValueError(f"{message}\n{native[0]}")


def _upstream_error(element: PassElement, anchor: str, context: ir.Context) -> PipelineError:
    """Say whether ``element`` names no pass, or has bad options."""
    try:
        _parse_upstream(anchor, element.name, context)
    except ValueError as err:
        if "does not refer to a registered pass" in str(err):
            return PipelineError(f"unknown pass or pipeline '{element.name}'", element.pos)
        reason = _first_line(str(err).split("\n", 1)[0].split("error:")[-1])
        return PipelineError(f"'{element.name}' cannot run on '{anchor}': {reason}", element.pos)
    try:
        _parse_upstream(anchor, element.text(), context)
    except ValueError as err:
        details = [
            line.strip()
            for line in str(err).splitlines()
            if line.strip() and not line.startswith("failed to add")
        ]
        # llvm::cl prefixes its messages with the program name, empty here.
        reason = "; ".join(
            d.removeprefix("<Pass-Options-Parser>: ").removeprefix(": ") for d in details
        )
        return PipelineError(
            f"invalid options '{element.options}' for pass '{element.name}': {reason}",
            element.pos,
        )
    return PipelineError(f"'{element.text()}' cannot be added here", element.pos)


class Planner:
    def __init__(self, context: ir.Context, fine: bool = False):
        self.context = context
        self.fine = fine

    def plan(self, pipeline: NestedPipeline) -> list[Step]:
        return self._plan_elements(pipeline.anchor, pipeline.elements)

    def _plan_elements(self, anchor: str, elements: list) -> list[Step]:
        # First expand everything into upstream texts and lowerline steps ...
        items: list[str | Step] = []
        for element in elements:
            items.extend(self._expand(anchor, element))
        # ... then merge runs of upstream texts into one MLIR pipeline each.
        steps: list[Step] = []
        run: list[str] = []
        for item in [*items, None]:
            if isinstance(item, str):
                run.append(item)
                if not self.fine:
                    continue
            if run:
                text = ",".join(run)
                steps.append(
                    UpstreamStep(anchor, text, _parse_upstream(anchor, text, self.context))
                )
                run = []
            if item is not None and not isinstance(item, str):
                steps.append(item)
        return steps

    def _expand(self, anchor: str, element: PassElement | NestedPipeline) -> list[str | Step]:
        if isinstance(element, NestedPipeline):
            nested = self._plan_elements(element.anchor, element.elements)
            upstream = [s for s in nested if isinstance(s, UpstreamStep)]
            if not self.fine and len(upstream) == len(nested):
                return [f"{element.anchor}({','.join(s.text for s in upstream)})"] if nested else []
            return [NestStep(element.anchor, nested)]
        pass_cls = registry.get_pass(element.name)
        if pass_cls is not None:
            return [self._python_step(anchor, pass_cls, element)]
        named = registry.get_pipeline(element.name)
        if named is not None:
            return self._expand_named(anchor, named, element)
        try:
            _parse_upstream(anchor, element.text(), self.context)
        except ValueError:
            raise _upstream_error(element, anchor, self.context) from None
        return [element.text()]

    def _python_step(self, anchor: str, cls: type[pass_api.Pass], element: PassElement) -> Step:
        if cls.anchor is not None and cls.anchor != anchor:
            raise PipelineError(
                f"'{cls.flag}' runs on '{cls.anchor}' ops, not '{anchor}'; "
                f"nest it as {cls.anchor}({cls.flag})",
                element.pos,
            )
        try:
            instance = registry.make_pass(cls, element.options)
        except OptionError as err:
            raise PipelineError(str(err), element.pos) from None
        manager = pass_api.python_pass_manager(instance, anchor, self.context)
        return PythonStep(anchor, instance, manager)

    def _expand_named(
        self, anchor: str, named: pass_api.NamedPipeline, element: PassElement
    ) -> list[str | Step]:
        if named.anchor != anchor:
            raise PipelineError(
                f"pipeline '{named.flag}' runs on '{named.anchor}' ops, not '{anchor}'",
                element.pos,
            )
        try:
            options = parse_options(named.options, element.options, named.flag, named.uses)
        except OptionError as err:
            raise PipelineError(str(err), element.pos) from None
        body = parse_elements(named.build(options))
        items: list[str | Step] = []
        for inner in body:
            try:
                items.extend(self._expand(anchor, inner))
            except PipelineError as err:
                message = f"in pipeline '{named.flag}': {err.message}"
                raise PipelineError(message, element.pos) from None
        return items


def plan_pipeline(text: str, context: ir.Context, fine: bool = False) -> list[Step]:
    """Parse and plan ``text``; raises PipelineError with an offset on any fault."""
    try:
        pipeline = parse_pipeline(text)
    except PipelineSyntaxError as err:
        raise PipelineError(err.message, err.pos) from None
    return Planner(context, fine).plan(pipeline)


def pipeline_anchor(text: str) -> str:
    return parse_pipeline(text).anchor


def pass_names(steps: list[Step]) -> set[str]:
    """Names of the passes in planned steps (what --mlir-print-ir-after can name)."""
    names: set[str] = set()
    for step in steps:
        if isinstance(step, NestStep):
            names |= pass_names(step.steps)
        elif isinstance(step, PythonStep):
            names.add(step.pass_.flag)
        else:
            names |= {e.name for e in _leaf_elements(parse_elements(step.text))}
    return names


def _leaf_elements(elements: list) -> list[PassElement]:
    leaves = []
    for element in elements:
        if isinstance(element, NestedPipeline):
            leaves.extend(_leaf_elements(element.elements))
        else:
            leaves.append(element)
    return leaves


def _nested_ops(op: ir.Operation, anchor: str) -> list[ir.Operation]:
    """Ops one level below ``op`` that a nested ``anchor(...)`` pipeline runs on.

    For 'any', MLIR picks isolated-from-above ops; the bindings cannot query
    traits, so ops that own a region stand in for them.
    """
    found = []
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                if child.name == anchor or (anchor == "any" and len(child.regions) > 0):
                    found.append(child)
    return found


@dataclass
class Instrumentation:
    """Per-step hooks: wall time per pass, IR printing after passes, a
    callback before each pass (the compile worker logs it, so that an abort
    inside LLVM can be blamed on the pass that was running) and one after
    each pass with its label (nesting included), the op it ran on and its
    wall seconds (``trace.PassTrace`` keeps the IR after every pass)."""

    time_passes: bool = False
    print_after_all: bool = False
    print_after: frozenset[str] = frozenset()
    debug_info: bool = False
    before: Callable[[str], None] | None = None
    on_pass: Callable[[str, ir.Operation, float], None] | None = None
    times: dict[str, float] = field(default_factory=dict)

    @property
    def fine(self) -> bool:
        return (
            self.time_passes
            or self.print_after_all
            or bool(self.print_after)
            or self.before is not None
            or self.on_pass is not None
        )

    def record(self, label: str, seconds: float) -> None:
        self.times[label] = self.times.get(label, 0.0) + seconds

    def after(self, label: str, op: ir.Operation) -> None:
        # --mlir-print-ir-after names the pass; the label may carry its options.
        name = label.split("{", 1)[0]
        if not (self.print_after_all or name in self.print_after):
            return
        where = f"'{op.name}' operation"
        if "sym_name" in op.attributes:
            where += f": @{ir.StringAttr(op.attributes['sym_name']).value}"
        sys.stderr.write(f"// -----// IR Dump After {label} ({where}) //----- //\n")
        sys.stderr.write(op.get_asm(enable_debug_info=self.debug_info) + "\n\n")
        sys.stderr.flush()

    def report(self) -> str:
        total = sum(self.times.values()) or 1e-12
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            " " * 25 + "... Execution time report ...",
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for label, seconds in self.times.items():
            lines.append(f"  {seconds:8.4f} ({100 * seconds / total:5.1f}%)  {label}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


def run_steps(
    steps: list[Step],
    op: ir.Operation,
    inst: Instrumentation | None = None,
    nest: tuple[str, ...] = (),
) -> None:
    """Run planned steps on ``op``; raises PipelineFailed when a pass fails.

    ``nest`` is the anchors of the enclosing nested pipelines: the timing report
    keeps ``func.func(cse)`` apart from a ``cse`` on the module.
    """
    for step in steps:
        if isinstance(step, NestStep):
            for child in _nested_ops(op, step.anchor):
                run_steps(step.steps, child, inst, (*nest, step.anchor))
            continue
        if inst is not None and inst.before is not None:
            inst.before(step.label)
        start = time.perf_counter()
        try:
            step.manager.run(op)
        except ir.MLIRError:
            raise PipelineFailed(step.label, op.name) from None
        if inst is not None:
            seconds = time.perf_counter() - start
            nested_label = "".join(f"{a}(" for a in nest) + step.label + ")" * len(nest)
            inst.record(nested_label, seconds)
            inst.after(step.label, op)
            if inst.on_pass is not None:
                inst.on_pass(nested_label, op, seconds)
