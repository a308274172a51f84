"""``lowerline run``: lower a ``.mlir`` file through the CPU pipeline and run it.

The function's tensor arguments are filled with seeded random values, the
function is lowered stage by stage (optionally dumping each stage), JIT
compiled and called; inputs and results are returned for printing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.driver.jit import JitFunction, Signature, TensorSpec, signature_of
from lowerline.errors import UsageError
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import DumpPolicy, StageRunner, stages_of


@dataclass
class RunResult:
    signature: Signature
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    stage_seconds: dict[str, float] = field(default_factory=dict)


def random_input(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    if spec.dtype == np.bool_:
        return rng.random(spec.shape) < 0.5
    if np.issubdtype(spec.dtype, np.integer):
        return rng.integers(-8, 8, spec.shape).astype(spec.dtype)
    return rng.standard_normal(spec.shape).astype(spec.dtype)


def read_source(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as err:
        raise UsageError(f"cannot open input file '{path}': {err.strerror}") from None


def run_file(
    path: str,
    entry: str | None = None,
    seed: int = 0,
    dump_dir: str | None = None,
    options: CpuOptions | None = None,
) -> RunResult:
    """Lower the function ``entry`` of the file ``path`` through the CPU
    stages (dumping each to ``dump_dir``), JIT it and call it on seeded random
    inputs. A failing stage raises ``StageError`` with that stage's input as
    the reproducer (a temporary file without ``dump_dir``)."""
    lowerer = Lowerer()
    module = lowerer.parse(read_source(path), source_name=path)
    signature = signature_of(module, entry)
    dumps = DumpPolicy(dump_dir) if dump_dir is not None else None
    stage_input = dumps.write(module, 0, "linalg") if dumps is not None else path
    runner = StageRunner(lowerer, dumps)
    lowered = runner.run(module, stages_of(CPU_STAGES), options or CpuOptions(), stage_input)
    timings = dict(lowered.seconds)
    start = time.perf_counter()
    function = JitFunction(module, signature)
    timings["jit"] = time.perf_counter() - start
    rng = np.random.default_rng(seed)
    inputs = [random_input(spec, rng) for spec in signature.inputs]
    outputs = function(*inputs)
    return RunResult(signature, inputs, outputs, timings)
