"""Check compiled GPU modules on a real GPU: build a bundle here, run it there.

    python -m lowerline.tools.gpu_check build BUNDLE [--target cuda:sm_90] [--only NAME ...]
    python tools/gpu_check.py run BUNDLE [--out DIR] [--only NAME ...] [--no-time]

``build`` (on a machine with the compiler, no GPU needed) compiles each model
of ``MODELS`` with ``lowerline.compile(..., target=...)`` and writes a bundle
(``lowerline.runtime.gpu_bundle``): each library, its inputs, eager torch's
outputs on the CPU and the model's weights, plus the MLIR runtime libraries
the libraries need. A model that does not compile is listed with its error.

``run`` (on the GPU machine: torch and the CUDA driver, no MLIR) calls each
library through lowerline's own runtime (``GpuFunction``: host tensors in and
out, the calling protocol of ``lowerline.compile``'s GPU modules), compares
with the expected outputs, and runs the same model with torch on CUDA: its
outputs, and the time per call of both. It writes ``report.json`` and
``report.md`` into ``--out``. It imports only ``lowerline.runtime`` (run it
with ``PYTHONPATH`` at the ``python/`` folder of a copy of the repository).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from lowerline.runtime import gpu_bundle


@dataclass(frozen=True)
class Model:
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    what: str
    rtol: float = 1e-4
    atol: float = 1e-5
    options: dict[str, Any] = field(default_factory=dict)  # lowerline.compile's, target too


class Softmax(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class Elementwise(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x * torch.sigmoid(x) + 0.5 * torch.tanh(y)) - y


class Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _mlp(*sizes: int) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for given, taken in itertools.pairwise(sizes):
        layers += [torch.nn.Linear(given, taken), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def _small_mlp() -> torch.nn.Module:
    return _mlp(37, 64, 10)


class ResidualBlock(torch.nn.Module):
    """conv-BN-ReLU-conv-BN, plus the input, ReLU (a ResNet basic block)."""

    def __init__(self, channels: int):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels),
            torch.nn.ReLU(),
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + x)


def _cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3),
        torch.nn.ReLU(),
        torch.nn.AvgPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 2 * 2, 10),
    )


def _encoder() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)


def _randn(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape),)


# Odd sizes, batch 1 and 8; the last ones are large enough to time kernels
# rather than launches. Tolerances: f32 against eager, reductions in another order.
MODELS: dict[str, Model] = {
    "mlp_b1": Model(_small_mlp, _randn(1, 37), "Linear 37-64, ReLU, Linear 64-10"),
    "mlp_b8": Model(_small_mlp, _randn(8, 37), "Linear 37-64, ReLU, Linear 64-10"),
    # The kernels as PTX only (the driver compiles them when loading), and
    # built for sm_80 (an sm_80 cubin does not run on sm_90: the PTX does).
    "mlp_b8_ptx": Model(
        _small_mlp, _randn(8, 37), "the MLP, binary='ptx'", options={"binary": "ptx"}
    ),
    "mlp_b8_sm80": Model(
        _small_mlp, _randn(8, 37), "the MLP, target cuda:sm_80", options={"target": "cuda:sm_80"}
    ),
    "linear_13x29x31": Model(lambda: torch.nn.Linear(29, 31), _randn(13, 29), "odd matmul"),
    "cnn_b1": Model(_cnn, _randn(1, 3, 15, 15), "conv3x3, ReLU, maxpool, conv3x3, avgpool, linear"),
    "cnn_b8": Model(_cnn, _randn(8, 3, 15, 15), "conv3x3, ReLU, maxpool, conv3x3, avgpool, linear"),
    "softmax_8x33": Model(Softmax, _randn(8, 33), "softmax over 33"),
    "layernorm_8x5x33": Model(
        lambda: torch.nn.LayerNorm(33), _randn(8, 5, 33), "layernorm over 33"
    ),
    "elementwise_3x5x7": Model(
        Elementwise,
        lambda: (torch.randn(3, 5, 7), torch.randn(3, 5, 7)),
        "gelu(x*sigmoid(x) + tanh(y)/2) - y",
    ),
    "attention_2x4x9x16": Model(
        Attention,
        lambda: tuple(torch.randn(2, 4, 9, 16) for _ in range(3)),
        "scaled_dot_product_attention",
    ),
    "encoder_b1": Model(_encoder, _randn(1, 7, 32), "TransformerEncoderLayer d32 h4 ff64"),
    "encoder_b8": Model(_encoder, _randn(8, 7, 32), "TransformerEncoderLayer d32 h4 ff64"),
    "linear_256x1024x1024": Model(
        lambda: torch.nn.Linear(1024, 1024),
        _randn(256, 1024),
        "large matmul + bias",
        rtol=1e-3,
        atol=1e-4,
    ),
    "softmax_64x4096": Model(Softmax, _randn(64, 4096), "large softmax"),
    # The sizes of bench/speed.py's models (sums of 512 to 1024 terms: 1e-3).
    "mlp_784_b64": Model(
        lambda: _mlp(784, 512, 512, 10),
        _randn(64, 784),
        "Linear 784-512-512-10, ReLUs",
        rtol=1e-3,
        atol=1e-4,
    ),
    "resblock_b8": Model(
        lambda: ResidualBlock(32),
        _randn(8, 32, 27, 27),
        "ResNet basic block, 32 channels",
        rtol=1e-3,
        atol=1e-4,
    ),
    "encoder_256_b1": Model(
        lambda: torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
        _randn(1, 128, 256),
        "TransformerEncoderLayer d256 h4 ff1024, 128 tokens",
        rtol=1e-3,
        atol=1e-4,
    ),
}


# -- build (here: the compiler) ---------------------------------------------


def _tool(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=False).stdout


def _ldd(library: str, *flags: str) -> str:
    return _tool("ldd", *flags, library)


def _runtime_dependencies(library: str, under: str) -> tuple[list[str], list[str]]:
    """The libraries ``library`` needs (ldd) that live in the folder ``under``
    (the compiler's packages), dependencies before the libraries needing them;
    and those of them that are needed by name only (``ldd -u``: no symbol of
    theirs is used), which a stub of the same name can stand in for."""
    needed: list[str] = []
    unused: list[str] = []
    idle = {os.path.realpath(line.strip()) for line in _ldd(library, "-u", "-r").splitlines()[1:]}
    # ldd lists every library loaded with this one; only the direct ones (NEEDED) matter here.
    direct = re.findall(r"\(NEEDED\).*\[(.+)\]", _tool("readelf", "-d", library))
    for line in _ldd(library).splitlines():
        parts = line.split("=>")
        if len(parts) != 2 or parts[0].strip() not in direct:
            continue
        path = os.path.realpath(parts[1].split("(")[0].strip())
        if not path.startswith(under + os.sep):
            continue
        if path in idle:
            unused.append(path)
            continue
        deeper, deeper_unused = _runtime_dependencies(path, under)
        needed += [d for d in (*deeper, path) if d not in needed]
        unused += [d for d in deeper_unused if d not in unused]
    return needed, unused


def _stub(path: str, soname: str) -> None:
    """An empty shared library named ``soname``: it satisfies a NEEDED entry
    whose library provides nothing used (libmlir_cuda_runtime.so names the
    136 MB libLLVM.so and uses none of it)."""
    source = path + ".c"
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(f"/* stands in for {soname}: nothing of it is used */\n")
    try:
        subprocess.run(
            [os.environ.get("CC", "cc"), "-shared", "-o", path, f"-Wl,-soname,{soname}", source],
            check=True,
        )
    finally:
        os.remove(source)


def _flat_tensors(value: Any) -> list[torch.Tensor]:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _build_case(name: str, model: Model, folder: str, target: str) -> tuple[dict, str]:
    """Compile one model into ``folder/name``: its manifest record and library path."""
    import lowerline  # the compiler: build only

    torch.manual_seed(0)
    module = model.make().eval()
    inputs = model.inputs()
    with torch.no_grad():
        expected = _flat_tensors(module(*inputs))
    options = {"target": target, **model.options}
    compiled = lowerline.compile(module, *inputs, **options)
    primary = compiled.primary
    if not primary.takes_inputs or primary.writes or not primary.tensors_only:
        raise ValueError(f"{name}: the bundle takes modules of tensors in, tensors out")
    on_cpu = gpu_bundle.compare(
        _flat_tensors(compiled.run_on_cpu(*inputs)), expected, model.rtol, model.atol
    )
    os.makedirs(os.path.join(folder, name))
    shutil.copy(primary.function.library, os.path.join(folder, name, "lib.so"))
    torch.save(list(inputs), os.path.join(folder, name, "inputs.pt"))
    torch.save(expected, os.path.join(folder, name, "expected.pt"))
    torch.save(module.state_dict(), os.path.join(folder, name, "state.pt"))
    record = {
        "name": name,
        "entry": primary.function._entry,
        "library": f"{name}/lib.so",
        "outputs": [[list(s), str(d).removeprefix("torch.")] for s, d in primary.function._outputs],
        "buffers": primary.function.buffers,
        "inputs": f"{name}/inputs.pt",
        "expected": f"{name}/expected.pt",
        "rtol": model.rtol,
        "atol": model.atol,
        "info": {
            "what": model.what,
            "options": options,
            "inputs": [list(t.shape) for t in inputs],
            "kernels": len(compiled.kernels),
            "mapped_ir_on_cpu": on_cpu.to_json(),
        },
    }
    return record, primary.function.library


def build(folder: str, target: str, only: list[str]) -> int:
    from lowerline.runtime.libraries import runtime_library

    os.makedirs(os.path.join(folder, "lib"), exist_ok=False)
    # The compiler's packages (site-packages): the mlir and llvm wheels.
    mlir_lib = os.path.dirname(runtime_library("libmlir_c_runner_utils.so"))
    packages = os.path.realpath(os.path.join(mlir_lib, "..", ".."))
    manifest: dict[str, Any] = {"format": gpu_bundle.FORMAT, "target": target, "cases": [],
                                "failed": {}, "runtime": [], "stubs": []}  # fmt: skip
    for name, model in MODELS.items():
        if only and name not in only:
            continue
        print(f"compiling {name} ...", flush=True)
        try:
            record, library = _build_case(name, model, folder, target)
        except Exception as error:  # a failure is a result: recorded, not fatal
            manifest["failed"][name] = f"{type(error).__name__}: {error}"[:2000]
            print(f"  failed: {manifest['failed'][name][:300]}", flush=True)
            continue
        manifest["cases"].append(record)
        needed, unused = _runtime_dependencies(library, packages)
        for path in unused:
            bundled = f"lib/{os.path.basename(path)}"
            if bundled not in manifest["stubs"]:
                _stub(os.path.join(folder, bundled), os.path.basename(path))
                manifest["stubs"].append(bundled)
        for path in needed:
            bundled = f"lib/{os.path.basename(path)}"
            if bundled not in manifest["runtime"]:
                shutil.copy(path, os.path.join(folder, bundled))
                manifest["runtime"].append(bundled)
    with open(os.path.join(folder, gpu_bundle.MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1)
    print(f"{len(manifest['cases'])} compiled, {len(manifest['failed'])} failed -> {folder}")
    return 0


# -- run (there: the GPU) ---------------------------------------------------


def _per_call_seconds(call: Callable[[], Any], sync: Callable[[], None]) -> float:
    """The best of 5 rounds of the mean time per call; each round is about 50 ms."""
    for _ in range(3):
        call()
    sync()
    start = time.perf_counter()
    call()
    sync()
    once = max(time.perf_counter() - start, 1e-6)
    count = max(1, min(2000, int(0.05 / once)))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            call()
        sync()
        best = min(best, (time.perf_counter() - start) / count)
    return best


def _torch_cuda(name: str, folder: str, inputs: list[torch.Tensor], timing: bool) -> dict:
    """The model under eager torch on CUDA: outputs and time per call, with the
    inputs already on the device and, like lowerline's protocol, host to host."""
    torch.manual_seed(0)
    module = MODELS[name].make().eval()
    state = torch.load(os.path.join(folder, name, "state.pt"), weights_only=True)
    module.load_state_dict(state)
    module = module.cuda()
    on_device = [t.cuda() for t in inputs]
    with torch.no_grad():
        outputs = [t.cpu() for t in _flat_tensors(module(*on_device))]
        result: dict[str, Any] = {"outputs": outputs}
        if timing:
            sync = torch.cuda.synchronize
            result["device_s"] = _per_call_seconds(lambda: module(*on_device), sync)
            result["host_s"] = _per_call_seconds(
                lambda: [t.cpu() for t in _flat_tensors(module(*[t.cuda() for t in inputs]))],
                sync,
            )
    return result


def _run_case(folder: str, case: gpu_bundle.BundleCase, timing: bool) -> dict[str, Any]:
    report: dict[str, Any] = {"name": case.name, **case.info}
    inputs, expected = gpu_bundle.case_tensors(folder, case)
    try:
        function = gpu_bundle.load_case(folder, case)
        actual = function(inputs)
        report["lowerline"] = gpu_bundle.compare(actual, expected, case.rtol, case.atol).to_json()
        if timing:
            report["lowerline_s"] = _per_call_seconds(lambda: function(inputs), lambda: None)
    except Exception as error:  # reported per case; the others still run
        report["error"] = f"{type(error).__name__}: {error}"
        report["traceback"] = traceback.format_exc()[-3000:]
        actual = None
    if torch.cuda.is_available():
        eager = _torch_cuda(case.name, folder, inputs, timing)
        report["torch_cuda"] = gpu_bundle.compare(
            eager.pop("outputs"), expected, case.rtol, case.atol
        ).to_json()
        report.update({f"torch_cuda_{k}": v for k, v in eager.items()})
    return report


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f}"


def _verdict(agreement: dict, bad: str) -> str:
    return f"{'ok' if agreement['close'] else bad} {agreement['max_abs']:.2e}"


def _markdown(reports: list[dict], failed: dict[str, str], device: str) -> str:
    lines = [
        f"Measured on: {device}",
        "",
        "| case | inputs | lowerline vs eager CPU (max abs err) | torch CUDA vs eager CPU "
        "| lowerline us/call (host in/out) | torch CUDA us/call (device tensors) "
        "| torch CUDA us/call (host in/out) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in reports:
        verdict = (
            f"ERROR {r['error'][:120]}" if "error" in r
            else _verdict(r["lowerline"], "WRONG")
        )  # fmt: skip
        theirs = r.get("torch_cuda")
        eager = (
            "-"
            if theirs is None
            else f"{'ok' if theirs['close'] else 'off'} {theirs['max_abs']:.2e}"
        )
        lines.append(
            f"| {r['name']} | {r['inputs']} | {verdict} | {eager} | {_us(r.get('lowerline_s'))} "
            f"| {_us(r.get('torch_cuda_device_s'))} | {_us(r.get('torch_cuda_host_s'))} |"
        )
    for name, why in failed.items():
        lines.append(f"| {name} | - | did not compile: {why[:160]} | - | - | - | - |")
    return "\n".join(lines) + "\n"


def run(folder: str, out: str, only: list[str], timing: bool) -> int:
    manifest = gpu_bundle.read_manifest(folder)
    gpu_bundle.open_runtime_libraries(folder, manifest["stubs"] + manifest["runtime"])
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
    reports = []
    for case in gpu_bundle.cases(manifest):
        if only and case.name not in only:
            continue
        print(f"running {case.name} ...", flush=True)
        reports.append(_run_case(folder, case, timing))
        print(json.dumps({k: v for k, v in reports[-1].items() if k != "traceback"}), flush=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
        json.dump({"device": device, "cases": reports, "failed": manifest["failed"]}, handle,
                  indent=1)  # fmt: skip
    table = _markdown(reports, manifest["failed"], device)
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as handle:
        handle.write(table)
    print(table)
    bad = [r["name"] for r in reports if "error" in r or not r["lowerline"]["close"]]
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("build", help="compile the models into a bundle folder (here)")
    make.add_argument("bundle")
    make.add_argument("--target", default="cuda:sm_90")
    make.add_argument("--only", nargs="*", default=[], choices=sorted(MODELS))
    check = sub.add_parser("run", help="run a bundle on this machine's GPU and report")
    check.add_argument("bundle")
    check.add_argument("--out", default=".")
    check.add_argument("--only", nargs="*", default=[])
    check.add_argument("--no-time", dest="timing", action="store_false")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.bundle, args.target, args.only)
    return run(args.bundle, args.out, args.only, args.timing)


if __name__ == "__main__":
    sys.exit(main())
