"""The systems the benchmarks compare, each a builder
``system(model, inputs, threads, workdir, spin) -> (run, note)``: ``run()``
returns the outputs, ``note`` the flags used (printed in the results).

Shared by ``speed.py`` and ``suite.py``. Thread counts are set with each
system's own setting; waiting is left to the caller's environment (set
before torch loads), except ONNX Runtime's spinning, a session option:
``spin=None`` keeps its default, True / False force it on / off.

Each peer uses its documented inference setup: inductor with
``freezing=True`` and static shapes, ONNX Runtime's CPU execution provider
with all graph optimizations, IREE's llvm-cpu backend for the host CPU.
A peer that is not installed raises ImportError; the callers report it.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import torch


def outputs(value) -> list[torch.Tensor]:
    """Every output tensor of a call, flattened (tuples, lists, numpy arrays)."""
    if isinstance(value, torch.Tensor):
        return [value.detach()]
    if isinstance(value, tuple | list):
        return [t for v in value for t in outputs(v)]
    if hasattr(value, "to_host"):  # an IREE device array
        return [torch.as_tensor(value.to_host())]
    return [torch.as_tensor(value)]


def eager(model, inputs, threads, workdir, spin=None):
    def run():
        with torch.inference_mode():
            return model(*inputs)

    return run, "torch.inference_mode, default fast paths"


def inductor(model, inputs, threads, workdir, spin=None):
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as config

    config.freezing = True
    # Many models share a forward (nn.Sequential's): without a larger cache
    # dynamo would stop compiling after 8 of them and run eager silently.
    dynamo_config.cache_size_limit = 1024
    dynamo_config.accumulated_cache_size_limit = 4096
    compiled = torch.compile(model, dynamic=False)

    def run():
        with torch.inference_mode():
            return compiled(*inputs)

    run()  # compile now, not inside the timed rounds
    return run, "torch.compile(inductor), freezing=True, dynamic=False"


def export_onnx(model, inputs, path: str) -> list[str]:
    """Saves the model's ONNX graph; returns its input names."""
    program = torch.onnx.export(model, inputs, dynamo=True, verbose=False)
    program.save(path)
    return [i.name for i in program.model_proto.graph.input]


def onnx_feeds(model, inputs, names: list[str]) -> dict:
    """Inputs by the graph's input names: the exporter names them after
    ``forward``'s parameters and drops the ones the graph does not use."""
    params = list(inspect.signature(model.forward).parameters)
    by_name = dict(zip(params, inputs, strict=False))
    if not all(n in by_name for n in names):
        by_name = dict(zip(names, inputs, strict=False))
    return {n: by_name[n].numpy() for n in names}


def onnxruntime(model, inputs, threads, workdir, spin=None):
    import onnxruntime as ort

    path = os.path.join(workdir, "model.onnx")
    export_onnx(model, inputs, path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if spin is not None:
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = onnx_feeds(model, inputs, [i.name for i in session.get_inputs()])
    spinning = "default (on)" if spin is None else ("on" if spin else "off")
    return (lambda: session.run(None, feeds)), (
        f"ONNX Runtime {ort.__version__} CPU EP, ORT_ENABLE_ALL, intra_op_num_threads={threads}, "
        f"spinning {spinning}"
    )


IREE_FLAGS = [
    "--iree-llvmcpu-target-cpu=host",
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=all",
]


def iree(model, inputs, threads, workdir, spin=None):
    import iree.compiler
    import iree.runtime as rt

    onnx_path = os.path.join(workdir, "model.onnx")
    mlir_path = os.path.join(workdir, "model.mlir")
    names = export_onnx(model, inputs, onnx_path)
    importer = os.path.join(os.path.dirname(sys.executable), "iree-import-onnx")
    done = subprocess.run([importer, onnx_path, "-o", mlir_path], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"iree-import-onnx: {done.stderr.strip() or done.stdout.strip()}")
    vmfb = iree.compiler.compile_file(
        mlir_path, target_backends=["llvm-cpu"], extra_args=IREE_FLAGS
    )
    rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
    context = rt.SystemContext(config=rt.Config("local-task"))
    context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
    function = context.modules.module["main_graph"]
    arrays = list(onnx_feeds(model, inputs, names).values())
    return (lambda: outputs(function(*arrays))), (
        f"IREE llvm-cpu {' '.join(IREE_FLAGS)}, task groups={threads}"
    )


def lowerline(model, inputs, threads, workdir, spin=None):
    import lowerline as ll

    # $LOWERLINE_CACHE_DIR, when set, keeps the compiled models between runs.
    cache_dir = None if os.environ.get("LOWERLINE_CACHE_DIR") else os.path.join(workdir, "cache")
    compiled = ll.compile(model, *inputs, cache_dir=cache_dir, num_threads=threads)
    return (lambda: compiled(*inputs)), f"lowerline.compile, cpu, num_threads={threads}"


SYSTEMS = {
    "eager": eager,
    "inductor": inductor,
    "onnxruntime": onnxruntime,
    "iree": iree,
    "lowerline": lowerline,
}
PEERS = ("inductor", "onnxruntime", "iree")


def add_run_arguments(parser, models: list[str], rounds: int, budget: float) -> None:
    """The options ``speed.py`` and ``suite.py`` share."""
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--budget", type=float, default=budget, help="seconds per system and round")
    parser.add_argument("--models", default=",".join(models))
    parser.add_argument("--systems", default=",".join(SYSTEMS))
