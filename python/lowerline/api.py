"""``lowerline.compile``: an nn.Module in, a callable that runs compiled code out.

    compiled = lowerline.compile(model, x)
    y = compiled(x)                 # same structure as model(x)
    print(compiled.ir("loops"))     # the IR after any stage

Flow (DESIGN.md): ``torch.export`` in this process -> cache lookup -> on a
miss, the import worker (torch-mlir) writes linalg IR and raw weights, the
compile worker (MLIR, crash-isolated) lowers them to a shared library -> the
library is loaded here with ctypes and called on the tensors' memory.

Specializations: a call with new input shapes or new values of Python-number
inputs (torch.export bakes numbers in) compiles another specialization from
the module, up to ``max_specializations``. Weights are baked in when a
specialization compiles: the compiled module never calls the module's
``forward`` and keeps working when the module is deleted or changed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lowerline.cache import Cache
from lowerline.frontend.export import InputSpec, Program, cache_key, export_program
from lowerline.runtime import NativeFunction
from lowerline.stages import CpuOptions
from lowerline.workers import CompileError, ImportWorker, UnsupportedOpsError, run_compile_worker

TARGETS = ("cpu",)
STAGES = ("torch", "linalg", "graph", "bufferized", "loops", "llvm")
DEFAULT_MAX_SPECIALIZATIONS = 8


@dataclass
class Specialization:
    """One compiled artifact: fixed input shapes, dtypes and baked numbers."""

    inputs: list[InputSpec]
    in_spec: pytree.TreeSpec
    out_spec: pytree.TreeSpec
    outputs: list[tuple]
    tensor_inputs: list[int]  # flat user-input indices that are function arguments
    artifacts_dir: str
    stage_seconds: dict[str, float]
    cache_hit: bool
    function: NativeFunction

    def matches(self, flat: list[Any]) -> bool:
        for spec, value in zip(self.inputs, flat, strict=True):
            if spec.is_tensor:
                if tuple(value.shape) != spec.shape:
                    return False
            elif value != spec.value or type(value) is not type(spec.value):
                return False
        return True


def _options_text(options: CpuOptions) -> str:
    return json.dumps(asdict(options), sort_keys=True)


def _parse_options(options: dict[str, Any]) -> CpuOptions:
    known = {f.name for f in fields(CpuOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(
            f"unknown compile option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    return CpuOptions(**options)


class CompiledModule:
    """A compiled nn.Module. Call it like the module; inspect it by stage."""

    def __init__(
        self,
        module: torch.nn.Module,
        target: str,
        options: CpuOptions,
        cache: Cache | None,
        dump_dir: str | None,
        max_specializations: int,
    ):
        self._module = module  # kept to compile new specializations only
        self.target = target
        self.options = options
        self._cache = cache
        self._dump_dir = dump_dir
        self.max_specializations = max_specializations
        self.specializations: list[Specialization] = []

    # -- inspection -------------------------------------------------------

    @property
    def primary(self) -> Specialization:
        return self.specializations[0]

    @property
    def artifacts_dir(self) -> str:
        return self.primary.artifacts_dir

    @property
    def stage_seconds(self) -> dict[str, float]:
        return dict(self.primary.stage_seconds)

    @property
    def cache_hit(self) -> bool:
        return self.primary.cache_hit

    def ir(self, stage: str) -> str:
        """The IR after ``stage`` (one of STAGES) of the first specialization."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage '{stage}'; stages: {', '.join(STAGES)}")
        with open(_stage_file(self.artifacts_dir, stage), encoding="utf-8") as handle:
            return handle.read()

    # -- calling -----------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        flat, in_spec = pytree.tree_flatten(args)
        spec = self.primary
        if in_spec != spec.in_spec:
            raise TypeError(
                f"expected inputs structured as {spec.in_spec}, got {in_spec}"
                if len(flat) == len(spec.inputs)
                else f"expected {len(spec.inputs)} inputs, got {len(flat)}"
            )
        _check_inputs(spec.inputs, flat)
        specialization = next((s for s in self.specializations if s.matches(flat)), None)
        if specialization is None:
            specialization = self._specialize(args)
        tensors = [flat[i] for i in specialization.tensor_inputs]
        tensors = [t if t.is_contiguous() else t.contiguous() for t in tensors]
        results = iter(specialization.function(tensors))
        flat_out = [
            next(results) if kind[0] == "tensor" else kind[1] for kind in specialization.outputs
        ]
        return pytree.tree_unflatten(flat_out, specialization.out_spec)

    def _specialize(self, args: tuple) -> Specialization:
        if len(self.specializations) >= self.max_specializations:
            raise RuntimeError(
                f"this call needs a new specialization (new input shapes or numbers), but "
                f"{self.max_specializations} exist already (max_specializations); "
                f"shapes compiled: {[[s.shape for s in sp.inputs] for sp in self.specializations]}"
            )
        specialization = _build(self._module, args, self)
        self.specializations.append(specialization)
        return specialization


def _check_inputs(specs: list[InputSpec], flat: list[Any]) -> None:
    for spec, value in zip(specs, flat, strict=True):
        if spec.is_tensor:
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{spec.name}: expected a tensor, got {type(value).__name__}")
            if value.dtype != spec.dtype:
                raise TypeError(f"{spec.name}: expected dtype {spec.dtype}, got {value.dtype}")
            if value.device.type != "cpu":
                raise ValueError(f"{spec.name}: expected a cpu tensor, got one on {value.device}")
            if value.requires_grad:
                raise ValueError(
                    f"{spec.name} requires grad; compiled modules are for inference "
                    "(pass x.detach() or use torch.no_grad())"
                )
            if value.dim() != len(spec.shape):
                raise ValueError(
                    f"{spec.name}: expected {len(spec.shape)} dimensions, got {value.dim()}"
                )
        elif not isinstance(value, bool | int | float) or isinstance(value, bool) != isinstance(
            spec.value, bool
        ):
            raise TypeError(
                f"{spec.name}: expected a {type(spec.value).__name__}, got {type(value).__name__}"
            )


def _stage_file(folder: str, stage: str) -> str:
    if stage == "torch":
        return os.path.join(folder, "torch.mlir")
    index = STAGES.index(stage) - 1
    return os.path.join(folder, "ir", f"{index}-{stage}.mlir")


def _compile_artifact(program: Program, options: CpuOptions, workspace: str, failures: str) -> dict:
    """Import and compile ``program`` into ``workspace``; returns the entry's metadata."""
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    torch.export.save(program.exported, os.path.join(workspace, "program.pt2"))
    seconds["save"] = time.perf_counter() - start
    start = time.perf_counter()
    reply = ImportWorker.run(workspace)
    seconds["import"] = time.perf_counter() - start
    if not reply["ok"]:
        if reply["kind"] == "unsupported" and reply.get("ops"):
            raise UnsupportedOpsError(reply["ops"])
        raise CompileError("import", reply["message"])
    with open(os.path.join(workspace, "job.json"), "w", encoding="utf-8") as handle:
        json.dump({"args": reply["args"], "options": asdict(options)}, handle)
    result = run_compile_worker(workspace, failures)
    seconds.update(result["stage_seconds"])
    tensor_inputs = [a["user_index"] for a in reply["args"] if a["kind"] == "input"]
    # The weights are inside the library now; the raw copies are not needed.
    shutil.rmtree(os.path.join(workspace, "weights"), ignore_errors=True)
    for name in ("program.pt2", "main.o"):
        os.remove(os.path.join(workspace, name))
    return {"entry": result["entry"], "tensor_inputs": tensor_inputs, "stage_seconds": seconds}


def _artifact_files(workspace: str) -> list[str]:
    files = ["lib.so", "torch.mlir", "linalg.mlir"]
    files += [
        os.path.join("ir", name) for name in sorted(os.listdir(os.path.join(workspace, "ir")))
    ]
    return files


def _build(module: torch.nn.Module, args: tuple, owner: CompiledModule) -> Specialization:
    start = time.perf_counter()
    program = export_program(module, args)
    export_seconds = time.perf_counter() - start
    cache = owner._cache or Cache.at(_private_root())
    key = cache_key(program, _options_text(owner.options), owner.target)
    meta = cache.lookup(key)
    hit = meta is not None
    if meta is None:
        workspace = cache.new_workspace()
        try:
            meta = _compile_artifact(
                program, owner.options, workspace, os.path.join(cache.root, "failures")
            )
            folder = cache.publish(key, workspace, meta, _artifact_files(workspace))
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
        meta = cache.lookup(key) or meta
    folder = cache.path(key)
    stage_seconds = {"export": export_seconds, **meta["stage_seconds"]}
    if hit:
        stage_seconds = {
            "export": export_seconds,
            "cache": time.perf_counter() - start - export_seconds,
        }
    outputs = [
        (shape, dtype)
        for kind, *rest in program.outputs
        if kind == "tensor"
        for shape, dtype in [rest]
    ]
    function = NativeFunction(os.path.join(folder, "lib.so"), meta["entry"], outputs)
    if owner._dump_dir:
        _dump_artifacts(folder, owner._dump_dir, len(owner.specializations))
    return Specialization(
        inputs=program.inputs,
        in_spec=program.in_spec,
        out_spec=program.out_spec,
        outputs=program.outputs,
        tensor_inputs=meta["tensor_inputs"],
        artifacts_dir=folder,
        stage_seconds=stage_seconds,
        cache_hit=hit,
        function=function,
    )


def _private_root() -> str:
    """With cache=False, a throw-away cache in a temporary folder."""
    import tempfile

    return tempfile.mkdtemp(prefix="lowerline-nocache-")


def _dump_artifacts(folder: str, dump_dir: str, index: int) -> None:
    target = dump_dir if index == 0 else os.path.join(dump_dir, f"specialization-{index}")
    os.makedirs(target, exist_ok=True)
    for stage in STAGES:
        shutil.copyfile(
            _stage_file(folder, stage), os.path.join(target, f"{STAGES.index(stage)}-{stage}.mlir")
        )
    shutil.copyfile(os.path.join(folder, "lib.so"), os.path.join(target, "lib.so"))


def compile(
    module: torch.nn.Module,
    *example_inputs: Any,
    target: str = "cpu",
    dump_dir: str | None = None,
    cache: bool = True,
    cache_dir: str | None = None,
    max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS,
    **options: Any,
) -> CompiledModule:
    """Compile ``module`` for ``target``, specialized to ``example_inputs``.

    Options: ``widen_i1`` (default True; False reproduces an LLVM abort on
    boolean buffers). ``cache_dir`` defaults to ``$LOWERLINE_CACHE_DIR`` or
    ``~/.cache/lowerline``; ``cache=False`` compiles into a temporary folder.
    Raises ``CompileError`` (with stage, pass, diagnostics and a reproducer),
    ``UnsupportedOpsError`` (every unsupported op at once) or ``ExportError``.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; targets: {', '.join(TARGETS)}")
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(module).__name__}")
    store = Cache.at(cache_dir) if cache else None
    compiled = CompiledModule(
        module, target, _parse_options(options), store, dump_dir, max_specializations
    )
    compiled.specializations.append(_build(module, example_inputs, compiled))
    return compiled
