"""``lowerline.compile``: an nn.Module in, a callable that runs compiled code out.

    compiled = lowerline.compile(model, x)
    y = compiled(x)                 # same structure as model(x)
    print(compiled.ir("loops"))     # the IR after any stage
    print(compiled.memory())        # what the last call allocated
    print(compiled.fallbacks)       # ops left as plain loops, and why

Flow (DESIGN.md): ``torch.export`` in this process -> cache lookup -> on a
miss, the import worker (torch-mlir) writes linalg IR and raw weights, the
compile worker (MLIR, crash-isolated) lowers them to a shared library -> the
library is loaded here with ctypes and called on the tensors' memory.

Dynamic dims (``dynamic=`` / ``dynamic_shapes=``): one specialization
serves every size in the declared ranges; its key holds -1 for those dims.

Specializations: a call with new input shapes, new values of Python-number
inputs (torch.export bakes numbers in) or tensor inputs that share memory
differently compiles another specialization from the module, up to
``max_specializations``; each is cached like the first. Numbers read from
tensors (``t.item()``) are run-time values; number outputs come back as
Python numbers.

Mutations: what ``forward`` writes into its inputs is copied back into the
caller's tensors after the call; mutated buffers are the module's own
tensors, passed to the library at each call and updated in place (state
shared with the module, not a weight).

Weights are baked in: a compiled module holds the weights it was compiled
with, never calls the module's ``forward`` and keeps working when the module
is deleted or changed. A new specialization of a module whose weights have
changed since is refused (it would mix old and new weights): compile again.

A call does no IR work: it checks the inputs against the first
specialization (dtype, device, grad), finds the specialization by input
shapes and numbers in a dict, and hands the tensors' memory to the library
(only non-contiguous inputs are copied). A module called with tensors only,
no containers, remembers what the checked path decided for each signature
(types, shapes, strides, dtypes, device, grad) of the calls it has seen; a
later call with a known signature whose inputs do not overlap goes straight
to the library (the fast path, ``_FastPlan``; bench/call_overhead.py
measures it); a library compiled for dynamic dims runs there as a static
function at the signature's shapes (``DynamicNativeFunction.at_shapes``).
Every other call, bad ones included, takes the checked path.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.cpu.stages import threads as cpu_threads
from lowerline.driver.cache import Cache, default_root
from lowerline.driver.memory import compile_memory as memory_bound
from lowerline.driver.workers import (
    CompileError,
    ImportWorker,
    UnsupportedOpsError,
    prestart_workers,
    run_compile_worker,
)
from lowerline.errors import ForeignTargetError
from lowerline.explore.numerics import write_expected, write_probe_inputs
from lowerline.frontend.export import (
    InputSpec,
    Program,
    cache_key,
    describe_unsupported,
    export_program,
)
from lowerline.gpu import ptx
from lowerline.gpu.stages import GpuOptions
from lowerline.pipeline.options import OptionError, check_values
from lowerline.pipeline.remarks import Remark
from lowerline.precision import Narrowed, PrecisionReport, narrow_dtype, precision_report
from lowerline.quant.calibrate import QuantizedModel, quantize_model
from lowerline.quant.config import Int8
from lowerline.quant.report import QuantReport, quant_report
from lowerline.runtime import calls
from lowerline.runtime.calls import SEED_INPUT
from lowerline.runtime.native import (
    DynamicNativeFunction,
    GpuFunction,
    MemoryStats,
    NativeFunction,
)
from lowerline.runtime.sizes import is_dynamic, valid_dim
from lowerline.targets import (
    CPU_TARGETS,
    GPU_TARGETS,
    cpu_target,
    host_arch,
    host_flags,
    is_gpu_target,
    runs_here,
)


def _foreign_code(target: str) -> str | None:
    """Why code compiled for ``target`` cannot be called on this machine, or
    None where it can (GPU targets: the CUDA runtime checks the device)."""
    if is_gpu_target(target):
        return None
    cpu = cpu_target(_target_name(target))
    if runs_here(cpu):
        return None
    if cpu.arch != host_arch():
        reason = f"{cpu.arch} code; this machine is {host_arch()}"
    else:
        missing = ", ".join(sorted(cpu.required_flags - host_flags()))
        reason = f"code that uses CPU features this CPU lacks: {missing}"
    return (
        f"this module was compiled for target '{target}' ({reason}); its objects, "
        "disassembly and exports are usable, but to call it here compile for target='cpu'"
    )


def _target_name(target: str) -> str:
    """``"cpu"`` -> ``"host"``; ``"cpu:NAME"`` -> NAME of targets.CPU_TARGETS;
    ``"cuda:sm_XX"`` -> ``sm_XX`` of targets.GPU_TARGETS."""
    known = ["cpu", *(f"cpu:{name}" for name in CPU_TARGETS)]
    known += [f"cuda:{name}" for name in GPU_TARGETS]
    if target == "cpu":
        return "host"
    if target.startswith("cpu:") and target[4:] in CPU_TARGETS:
        return target[4:]
    if target.startswith("cuda:") and target[5:] in GPU_TARGETS:
        return target[5:]
    raise ValueError(f"unknown target '{target}'; targets: {', '.join(known)}")


# torch.mlir (torch-mlir's torch backend), then what the compile worker dumps.
STAGES = ("torch", "linalg", *(stage for stage, _ in CPU_STAGES))
DEFAULT_MAX_SPECIALIZATIONS = 8


@dataclass
class Specialization:
    """One compiled artifact: fixed input shapes, dtypes, baked numbers and aliasing."""

    inputs: list[InputSpec]
    out_spec: pytree.TreeSpec
    outputs: list[tuple]  # ("tensor", shape, dtype), ("number", type) or ("constant", value)
    # The library's arguments: a flat user-input index, a mutated buffer's name,
    # or SEED_INPUT: a seed drawn from torch's default generator at each call.
    arguments: list[int | str]
    # Its first results are new values to write back: into a flat user input
    # (an index) or a mutated buffer (its name); the user's outputs follow.
    writes: list[int | str]
    artifacts_dir: str
    stage_seconds: dict[str, float]
    cache_hit: bool
    function: NativeFunction | GpuFunction
    cpu_function: NativeFunction | None = None  # GPU targets: the mapped IR on the CPU
    fallbacks: list[Remark] = field(default_factory=list)
    aliases: tuple = ()  # which tensor inputs share memory (_aliases)
    # Every output is a tensor: the library's results are the outputs as they are.
    tensors_only: bool = field(init=False)
    # The output is one tensor: the library's only result.
    single_tensor: bool = field(init=False)
    # The library's arguments are the flat user inputs in order: no buffer, no seed.
    takes_inputs: bool = field(init=False)

    def __post_init__(self) -> None:
        self.tensors_only = all(kind[0] == "tensor" for kind in self.outputs)
        self.single_tensor = self.tensors_only and self.out_spec.is_leaf()
        self.takes_inputs = self.arguments == list(range(len(self.inputs)))

    @property
    def key(self) -> tuple:
        shapes = (
            spec.key_shape if spec.is_tensor else calls.number_key(spec.value)
            for spec in self.inputs
        )
        return (*shapes, self.aliases)

    def call(
        self, function: NativeFunction | GpuFunction, flat: Any, state: dict[str, torch.Tensor]
    ) -> Any:
        """Run ``function`` on the call's inputs and state, write back what
        ``forward`` mutated, and return the outputs."""
        tensors = [calls.argument(a, flat, state) for a in self.arguments]
        return self.finish(function(tensors), flat, state)

    def finish(self, results: list[torch.Tensor], flat: Any, state: dict[str, torch.Tensor]) -> Any:
        """Write back what ``forward`` mutated; return the outputs."""
        if not self.writes:
            return self.assemble(results)
        for target, value in zip(self.writes, results, strict=False):
            # Into the caller's own tensor (a view too), as eager's in-place op would.
            (flat[target] if isinstance(target, int) else state[target]).copy_(value)
        return self.assemble(results[len(self.writes) :])

    def assemble(self, results: list[torch.Tensor]) -> Any:
        """The library's tensors, numbers (``t.item()``: 0-d tensors) and
        baked-in constants in the module's output structure."""
        if self.single_tensor:
            return results[0]
        if self.tensors_only:
            return pytree.tree_unflatten(results, self.out_spec)
        tensors = iter(results)
        flat = [calls.output(kind, tensors) for kind in self.outputs]
        return pytree.tree_unflatten(flat, self.out_spec)


# Calls the explorer times its build's kernels over (after one warm-up call).
KERNEL_TIMING_CALLS = 10

# The most signatures a compiled module remembers for its fast path; calls
# beyond them (many stride patterns of strided views) take the checked path.
MAX_FAST_PLANS = 64


def _signature(args: tuple) -> tuple | None:
    """What a flat call of tensors is, for the fast path: each input's type,
    shape, strides, dtype, device, grad and layout, everything the checked
    path looks at but the data pointers. None when an input is not a dense
    tensor (``stride()`` raises for other layouts): the checked path names it."""
    try:
        return tuple(
            [
                (type(a), a.shape, a.stride(), a.dtype, a.is_cpu, a.requires_grad, a.layout)
                for a in args
            ]
        )
    except (AttributeError, RuntimeError, TypeError):
        return None


@dataclass(frozen=True)
class _FastPlan:
    """How a flat call of tensors of one signature runs: decided by the
    checked path at the first such call, then taken with no check but the
    signature's dict lookup and, for several inputs, that none overlap."""

    specialization: Specialization
    # The inputs are the library's arguments as they are: contiguous, no buffer, no seed.
    direct: bool
    extents: tuple[int, ...]  # bytes each input spans; () for one input (nothing to overlap)
    # What runs the call: the specialization's function, or (dynamic dims)
    # that function at this signature's shapes (``_plan``).
    function: NativeFunction | GpuFunction
    # direct, nothing to write back and one tensor out: the call is function(args)[0].
    simple: bool = field(init=False)

    def __post_init__(self) -> None:
        specialization = self.specialization
        simple = self.direct and not specialization.writes and specialization.single_tensor
        object.__setattr__(self, "simple", simple)

    def run(self, args: tuple, state: dict[str, torch.Tensor]) -> Any:
        specialization = self.specialization
        if self.direct:
            return specialization.finish(self.function(args), args, state)
        return specialization.call(self.function, args, state)

    def apart(self, args: tuple) -> bool:
        """Whether no two inputs share a byte (the plan was made for such a call)."""
        end = 0
        for start, extent in sorted(zip([a.data_ptr() for a in args], self.extents, strict=True)):
            if extent and start < end:
                return False
            end = max(end, start + extent)
        return True


def _plan(args: tuple, specialization: Specialization) -> _FastPlan:
    contiguous = all(a.is_contiguous() for a in args)
    extents = tuple(calls.span_bytes(a) for a in args) if len(args) > 1 else ()
    direct = specialization.takes_inputs and contiguous
    function = specialization.function
    if direct and isinstance(function, DynamicNativeFunction):
        # A signature fixes the shapes: the library runs as a static function
        # there (its calls look up no shapes; the checked path checked the ranges).
        function = function.at_shapes([a.shape for a in args])
    return _FastPlan(specialization, direct, extents, function)


def _options_text(options: CpuOptions | GpuOptions) -> str:
    return json.dumps({"kind": _kind(options), **asdict(options)}, sort_keys=True)


def _kind(options: CpuOptions | GpuOptions) -> str:
    return "gpu" if isinstance(options, GpuOptions) else "cpu"


def _parse_options(options: dict[str, Any], cls: type = CpuOptions) -> CpuOptions | GpuOptions:
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(
            f"unknown compile option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    for name, value in options.items():
        default = known[name].default
        if default is MISSING or type(value) is type(default):
            continue
        if isinstance(default, float) and type(value) is int:
            continue
        raise TypeError(
            f"compile option {name} takes a {type(default).__name__}, "
            f"got {type(value).__name__} {value!r}"
        )
    parsed = cls(**options)
    try:
        check_values(parsed, "lowerline.compile", only=tuple(options))
    except OptionError as err:
        raise ValueError(str(err)) from None
    return parsed


class CompiledModule:
    """A compiled nn.Module. Call it like the module; inspect it by stage."""

    def __init__(
        self,
        module: torch.nn.Module,
        target: str,
        options: CpuOptions | GpuOptions,
        cache: Cache,
        dump_dir: str | None,
        max_specializations: int,
        compile_memory: int | None = None,
        dynamic: dict[str, Any] | None = None,
        dynamic_shapes: Any = None,
    ):
        self._module = module  # kept to compile new specializations only
        # Dynamic dims, as lowerline.compile took them: every specialization's export uses them.
        self._dynamic = dynamic
        self._dynamic_shapes = dynamic_shapes
        self._compile_memory = compile_memory  # bytes; None: the default bound
        self.target = target
        self._foreign = _foreign_code(target)  # why this machine cannot run it, or None
        self.options = options
        self._options_text = _options_text(options)
        self._cache = cache
        self._dump_dir = dump_dir
        self.max_specializations = max_specializations
        self.specializations: list[Specialization] = []
        self._by_key: dict[tuple, Specialization] = {}
        self._lock = threading.Lock()
        # Set from the first specialization:
        self._in_spec: pytree.TreeSpec | None = None
        self._flat_call = False  # inputs are positional tensors and numbers, no containers
        self._specs: list[InputSpec] = []
        self._weights: str | None = None
        self._tensor_positions: list[int] = []  # flat indices of the tensor inputs
        self._last_called: Specialization | None = None
        # Signature of a flat call of tensors -> how it runs (_FastPlan);
        # None when the module takes containers or numbers. The signature
        # None (an input that is no dense tensor) is looked up, never stored.
        self._plans: dict[tuple | None, _FastPlan] | None = None
        # Buffers forward writes into: the module's own tensors, updated in
        # place by every call (as eager updates them), by name.
        self._state: dict[str, torch.Tensor] = {}
        # quantize=Int8(...): the calibrated QDQ graph, how to compile one of
        # its layers alone, and the report once made.
        self._quantization: QuantizedModel | None = None
        self._compile_layer: Any = None
        self._quant_report: QuantReport | None = None
        # precision="bf16"/"f16": the compiled module against the f32 one.
        self._precision_report: PrecisionReport | None = None
        # A dynamic dim's symbol in more than one input: calls must agree on its size.
        self._shared_symbols = False

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

    @property
    def fallbacks(self) -> list[Remark]:
        """The ops of the first specialization left as plain (scalar) loops,
        not tiled or not vectorized, each with the reason its pass gave:
        ``op``, ``location`` / ``source_line`` (``file:line:col``; for a
        torch model, the source line of the exported ``forward``) and
        ``message``. Empty when everything became tiled vector code. On a GPU
        target: the ops mapped one point per thread."""
        return list(self.primary.fallbacks)

    def ir(self, stage: str) -> str:
        """The IR after ``stage`` (one of STAGES) of the first specialization."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage '{stage}'; stages: {', '.join(STAGES)}")
        try:
            with open(_stage_file(self.artifacts_dir, stage), encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            raise FileNotFoundError(
                f"the IR of stage '{stage}' is gone: its cache entry {self.artifacts_dir} was "
                "evicted or cleared (the compiled code still runs); compile with dump_dir= to "
                "keep every stage's IR"
            ) from None

    def save(self, path: str, key: bytes | None = None) -> None:
        """Write this module (every specialization, the current values of the
        buffers it updates) to the one file ``path``, which ``lowerline.load``
        runs without the compiler packages. Signed with ``key`` (default: this
        user's cache key; see ``lowerline.saved`` for moving files between
        machines); written to a temporary file and renamed. CPU targets only."""
        from lowerline import saved

        if any(spec.dynamic for spec in self._specs):
            # lowerline.saved records static shapes (its loader allocates outputs from them).
            raise NotImplementedError(
                "save() does not keep dynamic dims yet: compile without dynamic= to save"
            )
        saved.save_module(self, path, key)

    def quant_report(self) -> QuantReport:
        """How the int8 model compiled with ``quantize=`` meets its references:
        each quantized layer compiled alone against its QDQ float reference on
        the calibration batches (max error in steps of its output scale, at
        most 1 when right), and the whole model against the float model
        (``lowerline.quant.report``). Made at the first call (it compiles each
        layer), then kept."""
        if self._quantization is None:
            raise RuntimeError(
                "quant_report() is for modules compiled with quantize=lowerline.quant.Int8(...)"
            )
        if self._quant_report is None:
            self._quant_report = quant_report(self._quantization, self, self._compile_layer)
        return self._quant_report

    def precision_report(self) -> PrecisionReport:
        """For ``precision="bf16"`` (or "f16"): the largest error of the
        compiled module against the f32 module on the example inputs, and
        the largest f32 output it is relative to (measured when compiling,
        where the target's code runs on this machine)."""
        if self._precision_report is None:
            raise RuntimeError(
                'precision_report() is for modules compiled with precision="bf16" for a '
                "CPU whose code runs on this machine"
            )
        return self._precision_report

    # -- GPU artifacts -------------------------------------------------------

    @property
    def ptx(self) -> str:
        """The PTX of every kernel module, one after the other (GPU targets)."""
        return self._gpu_file("kernels.ptx.txt").decode()

    @property
    def ptx_modules(self) -> dict[str, str]:
        """Kernel module name -> its PTX (each a complete PTX module for ptxas)."""
        return {name: data.decode() for name, data in self._gpu_files(".ptx").items()}

    @property
    def kernels(self) -> list[dict]:
        """Every kernel launch the host code makes, in order: ``name``,
        ``grid``, ``block``, ``shared_bytes``, ``param_bytes`` and
        ``resources`` (per arch: registers, spills, shared memory from ptxas -v)."""
        return json.loads(self._gpu_file("kernels.json"))

    @property
    def cubin(self) -> dict[str, bytes]:
        """Kernel module name -> its cubin for the target (GPU targets)."""
        return self._gpu_files(".cubin")

    @property
    def fatbin(self) -> dict[str, bytes]:
        """Kernel module name -> its fatbin (cubin + PTX) (GPU targets, binary='fatbin')."""
        return self._gpu_files(".fatbin")

    def _gpu_file(self, name: str) -> bytes:
        if not isinstance(self.options, GpuOptions):
            raise AttributeError(f"{name} exists for GPU targets (cuda:...), not '{self.target}'")
        with open(os.path.join(self.artifacts_dir, name), "rb") as handle:
            return handle.read()

    def _gpu_files(self, suffix: str) -> dict[str, bytes]:
        self._gpu_file("kernels.json")  # the target check
        found = {}
        for name in sorted(os.listdir(self.artifacts_dir)):
            if name.endswith(suffix):
                with open(os.path.join(self.artifacts_dir, name), "rb") as handle:
                    found[name[: -len(suffix)]] = handle.read()
        return found

    def run_on_cpu(self, *args: Any) -> Any:
        """Run the GPU-mapped IR (blocks and threads as loops, shared memory as
        buffers) on this CPU: the numeric check of GPU code without a GPU."""
        if not isinstance(self.options, GpuOptions):
            raise RuntimeError(f"run_on_cpu is for GPU targets; '{self.target}' runs natively")
        flat = args if self._flat_call else pytree.tree_flatten(args)[0]
        specialization = self._by_key.get(self._key(flat)) or self._specialize(args)
        if specialization.cpu_function is None:
            raise RuntimeError("compiled with cpu_emulation=False: no CPU build of the mapped IR")
        return specialization.call(specialization.cpu_function, flat, self._state)

    def memory(self) -> MemoryStats:
        """The intermediate memory of the last call, counted at run time.

        ``peak_bytes``: the most bytes of intermediate buffers the compiled
        code held at once; ``allocations``: how many it allocated. Outputs
        are allocated by the caller and not counted. The counters are reset
        at the start of every call and belong to the compiled library: calls
        made at the same time into the same library count together.
        ``arena_bytes``: the arena that holds the statically planned buffers
        (lowerline-plan-arena; kept across calls, not counted above);
        ``lower_bound_bytes``: the most of those bytes live at once.
        """
        if self._last_called is None:
            raise RuntimeError("memory() reports on the last call: call the compiled module first")
        return self._last_called.function.memory()

    def explore(
        self,
        path: str,
        *example_inputs: Any,
        title: str | None = None,
        bisect: str | None = None,
    ) -> str:
        """Write the pass explorer's page to ``path`` (one HTML file; see
        ``lowerline.explore``): the IR after every pass of a fresh compile of
        the first specialization (not cached: it prints the module after each
        pass), with timings, diffs, remarks and the arena plan, and the outputs
        against eager on ``example_inputs`` (default: random inputs of the first
        specialization's shapes); ``title`` heads the page; ``bisect``: also
        find the first divergent pass (``bisect()``), its IR in that folder,
        and mark it on the page. Returns ``path``."""
        from lowerline.explore.numerics import compare, stage_rows
        from lowerline.explore.report import ExploreData, write_report

        args = example_inputs or _random_inputs(self._specs, self._in_spec)
        with torch.inference_mode():
            expected = self._module(*args)
        against = _tensor_leaves(expected) if bisect is not None else None
        program = export_program(self._module, args)
        trace = self._traced_compile(program, args, against, bisect or "")
        title = title or f"{type(self._module).__name__} for {self.target}"
        data = ExploreData(title, trace.pop("remarks"), bisection=trace.pop("bisect", None))
        data.roofline = self._roofline(data.remarks, trace.pop("timing", None))
        if self._quantization is not None:  # each int8 layer against its QDQ reference
            report = self.quant_report()
            data.quantization = {**dataclasses.asdict(report), "ok": report.ok}
        data.numerics, data.notes = stage_rows(expected, trace.pop("probe"))
        if isinstance(self.options, GpuOptions):  # no GPU needed: the mapped IR on this CPU
            data.numerics += compare(expected, self.run_on_cpu(*args), "GPU IR on the CPU")
        else:
            data.numerics += compare(expected, self(*args))
        return write_report(path, trace, data)

    def bisect(self, folder: str, *example_inputs: Any) -> dict | None:
        """Find the first pass whose output differs from eager beyond the
        tolerance, on ``example_inputs`` (default: random inputs of the first
        specialization's shapes), in a fresh compile of the first
        specialization (``lowerline.driver.bisect``). Returns the divergence
        (``stage``, ``label``, ``op``, ``mismatch``, the IR ``before`` and
        ``after`` it, written to ``folder``, and the ``command`` that replays
        it), or None when every pass is right. CPU targets."""
        if isinstance(self.options, GpuOptions):
            raise ValueError(f"bisect runs the CPU stages; '{self.target}' is a GPU target")
        args = example_inputs or _random_inputs(self._specs, self._in_spec)
        with torch.inference_mode():
            expected = self._module(*args)
        program = export_program(self._module, args)
        found = self._traced_compile(program, args, _tensor_leaves(expected), folder)["bisect"]
        if "error" in found:
            raise CompileError("bisect", found["error"])
        return found["divergence"]

    def _traced_compile(
        self, program: Program, args: tuple, expected: list | None = None, keep: str = ""
    ) -> dict:
        """``trace.json`` of an uncached compile of ``program`` (the compile
        worker's ``trace`` job flag), with each stage's outputs on ``args``
        (``probe``) and, given ``expected`` outputs, ``bisect.json`` (its IR
        files moved to ``keep``); its failures keep their reproducers in the
        cache's ``failures`` folder, as a normal compile's do."""
        from lowerline.explore.numerics import load_probe

        workspace = tempfile.mkdtemp(prefix="lowerline-explore-")
        # The explorer's own build times its kernels (lowerline-time-kernels);
        # a bisection judges the passes of a normal build.
        options, timed = self.options, False
        if isinstance(options, CpuOptions) and expected is None:
            options, timed = dataclasses.replace(options, time_kernels=True), True
        try:
            failures = os.path.join(self._cache.root, "failures")
            flat = pytree.tree_leaves(args)
            meta = _compile_artifact(
                program,
                options,
                workspace,
                failures,
                self._compile_memory,
                trace=flat,
                expected=expected,
            )
            with open(os.path.join(workspace, "trace.json"), encoding="utf-8") as handle:
                trace = json.load(handle)
            trace["probe"] = load_probe(trace.get("probe"))
            if expected is not None:
                trace["bisect"] = _kept_bisection(workspace, keep)
            if timed:
                trace["timing"] = self._time_build(meta, workspace, flat, trace["remarks"])
            return trace
        finally:
            shutil.rmtree(workspace, ignore_errors=True)

    def _time_build(self, meta: dict, workspace: str, flat: list, found: list) -> dict:
        """The explorer build's per-kernel times on the example inputs
        (``explore.roofline.time_kernels``); nothing is written back."""
        from lowerline.explore import roofline

        library = os.path.join(workspace, "lib.so")
        function = _native_function(library, meta, _result_types(meta))
        for name in meta["arguments"]:
            if isinstance(name, str) and name not in self._state:
                self._state[name] = self._module.get_buffer(name)
        tensors = [calls.argument(a, flat, self._state) for a in meta["arguments"]]
        count = len(roofline.kernels(found))
        return roofline.time_kernels(
            lambda: function(tensors), function.kernel_times, count, KERNEL_TIMING_CALLS
        )

    def _roofline(self, found: list, timing: dict | None) -> dict | None:
        """The page's roofline: the kernels' rows against this machine's
        peaks (measured once per machine, kept in the user cache folder)."""
        from lowerline.explore import roofline

        if timing is None:
            return None
        assert isinstance(self.options, CpuOptions)  # only CPU builds are timed
        peak = roofline.peaks(default_root(), cpu_threads(self.options))
        rows = roofline.rows(roofline.kernels(found), timing, peak)
        return {
            "peak": peak,
            "kernels": rows,
            "wall_ns": timing["wall_ns"],
            "calls": timing["calls"],
        }

    # -- calling -----------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        # The fast path: a flat call of tensors whose signature was seen
        # before (input checks, specialization and copies already decided).
        plans = self._plans
        if plans is not None:
            plan = plans.get(_signature(args))
            if plan is not None and (not plan.extents or plan.apart(args)):
                self._last_called = plan.specialization
                if plan.simple:
                    return plan.function(args)[0]
                return plan.run(args, self._state)
        return self._checked_call(args)

    def _checked_call(self, args: tuple) -> Any:
        """A call with every input checked: the first of its signature, or
        one with containers or numbers."""
        if self._foreign is not None:  # before any of its code runs (no fast plan is made)
            raise ForeignTargetError(self._foreign)
        flat: tuple | list
        if self._flat_call:
            flat = args
            if len(args) != len(self._specs):
                raise self._count_error(len(args))
        else:
            flat, in_spec = pytree.tree_flatten(args)
            if in_spec != self._in_spec:
                raise self._structure_error(args, flat)
        key = self._key(flat)
        specialization = self._by_key.get(key)
        if specialization is None:
            specialization = self._specialize(args)
        self._last_called = specialization
        self._remember(args, key, specialization)
        return specialization.call(specialization.function, flat, self._state)

    def _remember(self, args: tuple, key: tuple, specialization: Specialization) -> None:
        """A fast plan for calls like this one, if the fast path takes such
        calls (flat tensors) and no inputs share memory (the key's last item)."""
        plans = self._plans
        if plans is None or key[-1] or len(plans) >= MAX_FAST_PLANS:
            return
        signature = _signature(args)
        if signature is not None:
            plans[signature] = _plan(args, specialization)

    def _key(self, flat: tuple | list) -> tuple:
        """Check every input against the first specialization; return the call's
        key: shapes, numbers, and which tensor inputs share memory."""
        return calls.call_key(self._specs, flat, self._tensor_positions, self._shared_symbols)

    def _count_error(self, count: int) -> TypeError:
        names = [spec.name for spec in self._specs]
        if count < len(names):
            detail = f"missing {', '.join(names[count:])}"
        else:
            detail = f"{count - len(names)} too many"
        return TypeError(
            f"expected {len(names)} inputs ({', '.join(names)}), got {count}: {detail}"
        )

    def _structure_error(self, args: tuple, flat: tuple | list) -> TypeError:
        assert self._in_spec is not None  # set by the first specialization
        if len(args) != self._in_spec.num_children:
            names = ", ".join(spec.name for spec in self._specs)
            return TypeError(
                f"expected {self._in_spec.num_children} positional inputs ({names}), "
                f"got {len(args)}"
            )
        return TypeError(
            f"expected inputs structured as {self._in_spec}, got {pytree.tree_structure(args)} "
            f"({len(flat)} leaves, expected {len(self._specs)})"
        )

    def _specialize(self, args: tuple) -> Specialization:
        with self._lock:
            flat = pytree.tree_leaves(args)
            existing = self._by_key.get(self._key(flat))
            if existing is not None:  # another thread compiled it meanwhile
                return existing
            if len(self.specializations) >= self.max_specializations:
                compiled = [
                    ", ".join(
                        f"{spec.name}={list(spec.shape or ()) if spec.is_tensor else spec.value!r}"
                        for spec in sp.inputs
                    )
                    for sp in self.specializations
                ]
                raise RuntimeError(
                    "this call needs a new specialization (new input shapes or numbers), but "
                    f"{len(self.specializations)} exist already (max_specializations="
                    f"{self.max_specializations}); compiled: " + "; ".join(compiled)
                )
            return self._add(self._build(args))

    def _add(self, specialization: Specialization) -> Specialization:
        self.specializations.append(specialization)
        self._by_key[specialization.key] = specialization
        return specialization

    def _build(self, args: tuple) -> Specialization:
        start = time.perf_counter()
        # A cache miss needs the workers: their seconds of start-up run
        # during the export (a hit leaves them idle, ready for the next miss).
        prestart_workers()
        program = export_program(self._module, args, self._dynamic, self._dynamic_shapes)
        export_seconds = time.perf_counter() - start
        if self._weights is None:
            self._weights = program.weights_digest
            self._in_spec = program.in_spec
            self._specs = program.inputs
            self._flat_call = program.in_spec == pytree.tree_structure(tuple(range(len(args))))
            self._tensor_positions = [i for i, spec in enumerate(self._specs) if spec.is_tensor]
            symbols = [d.symbol for spec in self._specs for d in spec.dynamic]
            self._shared_symbols = len(symbols) != len(set(symbols))
            if self._flat_call and len(self._tensor_positions) == len(self._specs):
                self._plans = {}
        flat = pytree.tree_leaves(args)
        aliases = (
            calls.aliases(flat, self._tensor_positions) if len(self._tensor_positions) > 1 else ()
        )
        _check_aliased_writes(program, aliases)
        if program.weights_digest != self._weights:
            raise RuntimeError(
                "the module's weights changed since lowerline.compile: this compiled module "
                "holds the weights it was compiled with and will not mix them with new ones "
                "in a new specialization; call lowerline.compile again"
            )
        options = self._options_text
        if isinstance(self.options, GpuOptions):  # the cubins are ptxas' work
            options += f"|ptxas={ptx.toolkit_version()}"
        key = cache_key(program, options, self.target)
        meta, hit, function = self._load(key, program)
        folder = self._cache.path(key)
        if hit:
            stage_seconds = {
                "export": export_seconds,
                "cache": time.perf_counter() - start - export_seconds,
            }
        else:
            stage_seconds = {"export": export_seconds, **meta["stage_seconds"]}
        if self._dump_dir:
            _dump_artifacts(folder, self._dump_dir, len(self.specializations))
        cpu_function = None
        emulation = os.path.join(folder, "cpu.so")
        if isinstance(self.options, GpuOptions) and os.path.exists(emulation):
            cpu_function = NativeFunction(emulation, meta["entry"], _result_types(meta))
        for name in meta["arguments"]:
            if isinstance(name, str) and name not in self._state:
                self._state[name] = self._module.get_buffer(name)
        return Specialization(
            cpu_function=cpu_function,
            inputs=program.inputs,
            out_spec=program.out_spec,
            outputs=program.outputs,
            arguments=meta["arguments"],
            writes=[
                r.get("user_index", r.get("name")) for r in meta["results"] if r["kind"] != "output"
            ],
            aliases=aliases,
            artifacts_dir=folder,
            stage_seconds=stage_seconds,
            cache_hit=hit,
            function=function,
            fallbacks=[Remark.from_json(found) for found in meta.get("fallbacks", [])],
        )

    def _load(self, key: str, program: Program) -> tuple[dict, bool, NativeFunction | GpuFunction]:
        """The entry for ``key``, compiled on a miss, and its loaded library."""
        for attempt in range(2):
            meta = self._cache.lookup(key)
            hit = meta is not None
            if meta is None:
                meta = self._compile(key, program)
            outputs = _result_types(meta)
            try:
                library = os.path.join(self._cache.path(key), "lib.so")
                if isinstance(self.options, GpuOptions):
                    function = GpuFunction(library, meta["entry"], outputs, meta["gpu_buffers"])
                    return meta, hit, function
                return meta, hit, _native_function(library, meta, outputs)
            except OSError as err:
                # Evicted by another process between lookup and load: build it again.
                if attempt:
                    raise CompileError(
                        "load", f"the compiled library does not load: {err}"
                    ) from err
        raise AssertionError("unreachable")

    def _compile(self, key: str, program: Program) -> dict:
        cache = self._cache
        workspace = cache.new_workspace()
        try:
            failures = os.path.join(cache.root, "failures")
            meta = _compile_artifact(
                program, self.options, workspace, failures, self._compile_memory
            )
            cache.publish(key, workspace, meta, _artifact_files(workspace))
        except OSError as err:
            if err.errno in _DISK_ERRNOS:  # a full or read-only disk: name it and the way out
                raise cache.unwritable(err, workspace) from err
            raise
        finally:
            shutil.rmtree(workspace, ignore_errors=True)
        # Another process may have published the same key first: use theirs.
        return cache.lookup(key) or meta


# Errors of a disk that cannot take the artifacts (full, read-only, no permission, quota).
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT})


def _native_function(library: str, meta: dict, outputs: list) -> NativeFunction:
    """The library's entry; one that computes its outputs' sizes at each
    call when they follow dynamic input dims."""
    if any(is_dynamic(shape) for shape, _ in outputs) or meta.get("dims"):
        return DynamicNativeFunction(
            library, meta["entry"], outputs, meta.get("dims", {}), meta.get("arena")
        )
    return NativeFunction(library, meta["entry"], outputs, meta.get("arena"))


def _result_types(meta: dict) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """The shape and dtype of every result of the library (its out-parameters)."""
    return [(tuple(r["shape"]), getattr(torch, r["dtype"])) for r in meta["results"]]


def _check_aliased_writes(program: Program, aliases: tuple) -> None:
    """Refuse a call whose inputs overlap in part where ``forward`` writes into one.

    Eager would see the write through the other view; the compiled code reads
    its own copy. (The same tensor passed twice is fine: torch.export traces it
    as one input.)"""
    names = [spec.name for spec in program.inputs]
    for first, second, same in aliases:
        written = {first, second} & program.mutated_inputs
        if written and not same:
            raise ValueError(
                f"forward writes into {names[min(written)]}, and {names[first]} and "
                f"{names[second]} are overlapping views of one tensor: eager would see the "
                "write through the other view, compiled code does not; pass separate tensors "
                "(a .clone()) or the same tensor twice"
            )


def _tensor_leaves(tree: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def _kept_bisection(workspace: str, keep: str) -> dict:
    """``bisect.json`` of ``workspace``, its IR files moved to ``keep`` and
    the paths it names changed to match."""
    path = os.path.join(workspace, "bisect.json")
    if not os.path.exists(path):  # write_probe_inputs refused
        return {"error": "the model writes its buffers: its outputs depend on their state"}
    with open(path, encoding="utf-8") as handle:
        found = json.load(handle)
    if not found.get("divergence"):
        return found
    os.makedirs(keep, exist_ok=True)
    moved = os.path.join(workspace, "bisect")
    for name in os.listdir(moved):
        shutil.move(os.path.join(moved, name), os.path.join(keep, name))
    divergence = {k: v.replace(moved, keep) for k, v in found["divergence"].items()}
    return {"divergence": divergence}


def _random_inputs(specs: list[InputSpec], in_spec: pytree.TreeSpec | None) -> tuple:
    """Inputs of the shapes and dtypes of ``specs``: floats random, integers
    and bools zero (an index or a mask that is always valid); numbers as
    they were baked in."""
    flat: list[Any] = []
    for spec in specs:
        if not spec.is_tensor:
            flat.append(spec.value)
        elif spec.dtype is not None and spec.dtype.is_floating_point:
            flat.append(torch.randn(spec.shape or ()).to(spec.dtype))
        else:
            flat.append(torch.zeros(spec.shape or (), dtype=spec.dtype))
    return tuple(pytree.tree_unflatten(flat, in_spec)) if in_spec is not None else tuple(flat)


def _stage_file(folder: str, stage: str) -> str:
    if stage == "torch":
        return os.path.join(folder, "torch.mlir")
    index = STAGES.index(stage) - 1
    return os.path.join(folder, "ir", f"{index}-{stage}.mlir")


def _compile_artifact(
    program: Program,
    options: CpuOptions | GpuOptions,
    workspace: str,
    failures: str,
    memory: int | None = None,
    export: bool = False,
    trace: list | None = None,
    expected: list | None = None,
) -> dict:
    """Import and compile ``program`` into ``workspace``, each worker within
    ``memory`` bytes (None: the default bound); returns the entry's metadata.
    With ``export`` (``lowerline.export``): objects instead of ``lib.so``
    (the compile worker's ``export`` job), and ``standalone_problems``.
    ``trace``: the flat inputs of the explorer's numerics; the compile worker
    also writes ``trace.json``; ``expected``: with ``trace``, eager's outputs
    to bisect against (``bisect.json``)."""
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    _save_program(program.exported, os.path.join(workspace, "program.pt2"))
    seconds["save"] = time.perf_counter() - start
    start = time.perf_counter()
    reply = ImportWorker.run(workspace, memory)
    seconds["import"] = time.perf_counter() - start
    if not reply["ok"]:
        if reply["kind"] == "unsupported" and reply.get("ops"):
            raise UnsupportedOpsError(describe_unsupported(program, reply["ops"]))
        raise CompileError("import", reply["message"])
    dims = _result_dims(reply)
    with open(os.path.join(workspace, "job.json"), "w", encoding="utf-8") as handle:
        request = {
            "args": reply["args"],
            "kind": _kind(options),
            "options": asdict(options),
            "export": export,
        }
        if trace is not None:
            probe = os.path.join(workspace, "probe")
            request |= {"trace": True, "probe": write_probe_inputs(probe, reply["args"], trace)}
            if expected is not None and request["probe"]:
                write_expected(probe, expected)
                request["bisect"] = True
        json.dump(request, handle)
    result = run_compile_worker(workspace, failures, memory)
    seconds.update(result["stage_seconds"])
    # The library's arguments: user inputs by flat index, mutated buffers by name.
    arguments = [a.get("user_index", a["name"]) for a in reply["args"] if a["kind"] != "weight"]
    if result.get("seed"):  # a trailing seed drawn at each call (driver.seed)
        arguments.append(SEED_INPUT)
    # The weights are inside the library now; the raw copies are not needed,
    # nor the job files that name this workspace.
    shutil.rmtree(os.path.join(workspace, "weights"), ignore_errors=True)
    for name in ("program.pt2", "main.o", "job.json", "current-stage.json"):
        if os.path.exists(os.path.join(workspace, name)):
            os.remove(os.path.join(workspace, name))
    return {
        "entry": result["entry"],
        "arguments": arguments,
        "dims": dims,
        "results": reply["results"],
        "stage_seconds": seconds,
        "fallbacks": result["fallbacks"],  # cached with the library: a hit reports them too
        "arena": result.get("arena"),  # GPU entries take none
        "gpu_buffers": result.get("gpu_buffers"),  # GPU entries: their device buffers
        # lowerline.export only (never cached): what keeps the code from running without malloc.
        **({"standalone_problems": result["standalone_problems"]} if export else {}),
    }


def _result_dims(reply: dict) -> dict[str, list[int]]:
    """Where each dynamic size is read (``_symbol_reads``), once every
    result's sizes are known to follow from them."""
    dims = _symbol_reads(reply["args"])
    for found in reply["results"]:
        if not all(valid_dim(size, set(dims)) for size in found["shape"]):
            raise CompileError(
                "import",
                f"a result has the shape {found['shape']}, whose sizes are not all read "
                f"from an input's dynamic dims ({', '.join(dims) or 'none'}): give each "
                "dynamic dim its own torch.export.Dim",
            )
    return dims


def _symbol_reads(args: list[dict]) -> dict[str, list[int]]:
    """Where the library reads each dynamic dim's size: ``{symbol: [argument
    position, dim]}`` over the library's arguments (the weights are baked in),
    from the first input dim that is that symbol alone."""
    reads: dict[str, list[int]] = {}
    arguments = [arg for arg in args if arg["kind"] != "weight"]
    for position, arg in enumerate(arguments):
        for dim, size in enumerate(arg.get("shape", ())):
            if isinstance(size, str) and size.isidentifier():
                reads.setdefault(size, [position, dim])
    return reads


def _plain(spec: pytree.TreeSpec) -> pytree.TreeSpec:
    """``spec`` with every container that is not a tuple, list or dict made a tuple."""
    if spec.is_leaf():
        return spec
    children = [_plain(child) for child in spec.children()]
    if spec.type in (tuple, list, dict):
        return pytree.TreeSpec(spec.type, spec.context, children)
    return pytree.TreeSpec(tuple, None, children)


def _save_program(exported: torch.export.ExportedProgram, path: str) -> None:
    """``torch.export.save`` for the import worker, which needs only the graph.

    Containers of inputs and outputs other than tuples, lists and dicts are
    saved as tuples of the same children, and the example inputs not at all:
    torch.export.save cannot write some containers (``torch.return_types.max``),
    and the worker could not unpickle others (a NamedTuple defined in the
    user's script). This process keeps the real structure.
    """
    signature = exported.module_call_graph[0].signature
    in_spec, out_spec = signature.in_spec, signature.out_spec
    example_inputs = exported.example_inputs
    signature.in_spec, signature.out_spec = _plain(in_spec), _plain(out_spec)
    exported.example_inputs = None
    try:
        torch.export.save(exported, path)
    finally:
        signature.in_spec, signature.out_spec = in_spec, out_spec
        exported._example_inputs = example_inputs  # as it was, unchecked


_GPU_FILES = (".cubin", ".fatbin", ".ptx")


def _artifact_files(workspace: str) -> list[str]:
    files = ["lib.so", "torch.mlir", "linalg.mlir"]
    for name in sorted(os.listdir(workspace)):
        if name in ("cpu.so", "kernels.json", "kernels.ptx.txt") or name.endswith(_GPU_FILES):
            files.append(name)
    files += [
        os.path.join("ir", name) for name in sorted(os.listdir(os.path.join(workspace, "ir")))
    ]
    return files


def _dump_artifacts(folder: str, dump_dir: str, index: int) -> None:
    target = dump_dir if index == 0 else os.path.join(dump_dir, f"specialization-{index}")
    os.makedirs(target, exist_ok=True)
    for position, stage in enumerate(STAGES):
        shutil.copyfile(
            _stage_file(folder, stage), os.path.join(target, f"{position}-{stage}.mlir")
        )
    shutil.copyfile(os.path.join(folder, "lib.so"), os.path.join(target, "lib.so"))
    for name in os.listdir(folder):  # GPU targets: kernels, PTX, cubins, fatbins, cpu.so
        if name in ("cpu.so", "kernels.json", "kernels.ptx.txt") or name.endswith(_GPU_FILES):
            shutil.copyfile(os.path.join(folder, name), os.path.join(target, name))


def _remove_private_cache(root: str) -> None:
    """With cache=False: drop the compiled entries; keep reproducers of failed compiles."""
    for name in ("v1", "tmp"):
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    if not os.path.exists(os.path.join(root, "failures")):
        shutil.rmtree(root, ignore_errors=True)


def compile(
    module: torch.nn.Module,
    *example_inputs: Any,
    target: str = "cpu",
    dump_dir: str | None = None,
    cache: bool = True,
    cache_dir: str | None = None,
    max_specializations: int = DEFAULT_MAX_SPECIALIZATIONS,
    compile_memory: int | str | None = None,
    quantize: Int8 | None = None,
    dynamic: dict[str, Any] | None = None,
    dynamic_shapes: Any = None,
    precision: str = "f32",
    **options: Any,
) -> CompiledModule:
    """Compile ``module`` for ``target``, specialized to ``example_inputs``.

    ``target``: ``"cpu"`` (this machine) or ``"cpu:NAME"`` for a CPU of
    ``lowerline.targets.CPU_TARGETS`` (code for another CPU is compiled, and
    runs only where that CPU's features exist), or ``"cuda:sm_80"`` /
    ``"cuda:sm_90"`` for an NVIDIA GPU: the module then has ``ptx``,
    ``cubin``, ``fatbin`` and ``kernels``; calling it needs a CUDA driver and
    device (else ``lowerline.runtime.cuda.NoCudaDevice``, a RuntimeError), and
    ``run_on_cpu`` runs the GPU-mapped IR here. GPU options: ``binary``
    ("fatbin" or "ptx"), ``opt_level``, ``cpu_emulation``.
    Options: ``num_threads`` (default 0: the target's cores), ``tile``
    (default True; False skips the tiled stage: naive loops), ``buffer_reuse``
    (default True; False frees every intermediate buffer at the end of the
    call: a higher peak, see ``CompiledModule.memory()``), ``widen_i1``
    (default True; False reproduces an LLVM abort on boolean buffers).
    ``cache_dir`` defaults to ``$LOWERLINE_CACHE_DIR`` or
    ``~/.cache/lowerline`` (size limit: ``$LOWERLINE_CACHE_MAX_BYTES``);
    ``cache=False`` compiles into a temporary folder removed with the compiled
    module. ``dump_dir`` receives every stage's IR and the library.
    ``compile_memory`` bounds the memory of each compile's worker processes
    (bytes, or a size such as ``"4G"``; default ``$LOWERLINE_COMPILE_MEMORY``,
    else half the machine's memory): a worker going past it is stopped and
    reported as a ``CompileError`` naming the stage and pass that was running.
    ``quantize=lowerline.quant.Int8(calibration=batches, ...)`` calibrates
    the float module on ``batches`` and compiles it as an int8 model
    (docs/quantization.md); ``quant_report()`` then checks it.
    ``dynamic`` (``{"x": {0: (1, 64)}}``: per top-level tensor argument of
    ``forward``, each dynamic dim and its inclusive range) or
    ``dynamic_shapes`` (torch.export's ``Dim``s, passed through) compile one
    artifact for every size in the ranges (``lowerline.frontend.dynamic``);
    a call outside them is a ``ValueError`` naming the input, dim and range.
    CPU targets only.
    ``precision="bf16"`` compiles a copy of the module with its weights in
    bf16 (activations between kernels too; matmuls and reductions
    accumulate in f32; inputs and outputs stay f32), with ``vdpbf16ps`` on
    a target with AVX512-BF16 (``lowerline.precision``);
    ``precision_report()`` gives its error against f32. ``"f16"`` is for
    GPU targets.
    Raises ``CompileError`` (with stage, pass, diagnostics and a reproducer),
    ``UnsupportedOpsError`` (every unsupported op at once) or ``ExportError``.
    """
    if not isinstance(target, str):
        raise TypeError(f"target takes a str, got {target!r}")
    target_name = _target_name(target)
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(module).__name__}")
    if isinstance(max_specializations, bool) or not isinstance(max_specializations, int):
        raise TypeError(f"max_specializations takes an int, got {max_specializations!r}")
    if max_specializations < 1:
        raise ValueError(f"max_specializations must be at least 1, got {max_specializations}")
    if is_gpu_target(target):
        if dynamic is not None or dynamic_shapes is not None:
            raise ValueError(f"dynamic dims are for CPU targets; '{target}' compiles static shapes")
        parsed = _parse_options({**options, "target": target_name}, GpuOptions)
    else:
        parsed = _parse_options({**options, "target": target_name})
    if isinstance(parsed, CpuOptions) and parsed.num_threads < 0:
        raise ValueError(f"num_threads must be 0 (all cores) or more, got {parsed.num_threads}")
    narrow = narrow_dtype(precision, target, is_gpu_target(target))
    if narrow is not None and quantize is not None:
        raise ValueError(f"precision={precision!r} and quantize= exclude each other: pick one")
    memory = None if compile_memory is None else memory_bound(compile_memory)
    # lowerline.compile with this call's options: the quantizer's observer
    # model and quant_report's layers compile with it.
    compile_alike = functools.partial(
        compile,
        target=target,
        cache=cache,
        cache_dir=cache_dir,
        compile_memory=compile_memory,
        **options,
    )
    quantization = None
    if quantize is not None and (dynamic is not None or dynamic_shapes is not None):
        # The calibrated QDQ graph is exported from the examples' shapes.
        raise ValueError("quantize= compiles static shapes: drop dynamic= / dynamic_shapes=")
    if quantize is not None:  # the calibrated QDQ graph compiles in the float model's place
        quantization = quantize_model(module, example_inputs, quantize, compile_alike)
        module = quantization.graph
    reference = module
    if narrow is not None:  # weights converted now; the export sees a 16-bit program
        module = Narrowed(module, narrow)
    private = None if cache else tempfile.mkdtemp(prefix="lowerline-nocache-")
    # A private cache lives as long as this module: a key of its own, never on disk.
    store = Cache.at(private or cache_dir, key=os.urandom(32) if private else None)
    store.prepare()  # CacheError for a folder others can write to, or one that cannot be written
    compiled = CompiledModule(
        module,
        target,
        parsed,
        store,
        dump_dir,
        max_specializations,
        memory,
        dynamic,
        dynamic_shapes,
    )
    if private:
        weakref.finalize(compiled, _remove_private_cache, private)
    first = compiled._add(compiled._build(example_inputs))
    if quantization is not None:
        first.stage_seconds = {"calibrate": quantization.seconds, **first.stage_seconds}
        compiled._quantization = quantization
        compiled._compile_layer = compile_alike
    # Only where the code runs: a GPU here, another CPU's extensions (sapphirerapids's).
    if narrow is not None and not is_gpu_target(target) and runs_here(cpu_target(target_name)):
        compiled._precision_report = precision_report(
            precision, reference, compiled, example_inputs
        )
    return compiled
