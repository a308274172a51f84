"""The import worker: ExportedProgram -> linalg on tensors, in its own process.

Run as ``python -m lowerline.frontend.import_worker``. It stays alive between
compiles (importing torch and torch_mlir costs seconds) and answers one JSON
line per request line ``{"job": DIR}``. For each job it reads
``DIR/program.pt2`` and writes:

* ``DIR/weights/<n>.bin``: every parameter, buffer and constant tensor, raw
  bytes in function-argument order (weights travel as bytes, never as text);
* ``DIR/torch.mlir`` and ``DIR/linalg.mlir``: the torch-backend and
  linalg-on-tensors IR of ``@main``, whose arguments are the weights followed
  by the tensor user inputs;
* the reply: argument and output layout, or the list of unsupported ops.

This is the only module that imports ``torch_mlir``; its LLVM (24) never
shares a process with the ``mlir`` bindings (22) that generate code.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from collections import Counter, defaultdict
from typing import Any

from lowerline.processes import die_with_parent

TORCH_BACKEND = (
    "builtin.module(func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline{extra-library=})"
)
LINALG_BACKEND = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"
# Dialects whose ops the upstream MLIR 22 parser and lowerline's pipeline accept.
UPSTREAM_DIALECTS = frozenset(
    {"builtin", "func", "arith", "math", "linalg", "tensor", "scf", "cf", "complex", "ml_program"}
)
_FRAME = re.compile(r'"([^"]+)":(\d+):\d+')


class ImportFailure(Exception):
    def __init__(self, kind: str, message: str, **extra: Any):
        super().__init__(message)
        self.reply = {"ok": False, "kind": kind, "message": message, **extra}


def _user_frame(location: str, torch_dirs: tuple[str, ...]) -> str | None:
    """The first file:line of a location that is not inside torch itself."""
    frames = _FRAME.findall(location)
    for path, line in frames:
        if not path.startswith(torch_dirs):
            return f"{path}:{line}"
    return f"{frames[0][0]}:{frames[0][1]}" if frames else None


def _weight_bytes(tensor) -> bytes:
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _prepare_graph(ep, job: str) -> dict[str, Any]:
    """Drop unused non-tensor inputs and constant outputs; write the weights."""
    import torch

    signature = ep.graph_signature
    if signature.buffers_to_mutate or signature.user_inputs_to_mutate:
        raise ImportFailure(
            "unsupported",
            "the model mutates its buffers or inputs in forward (e.g. BatchNorm in "
            "training mode); call .eval() on it, compiled modules are for inference",
        )
    kinds = {spec.arg.name: spec for spec in signature.input_specs}
    tensors = {**ep.state_dict, **ep.constants}
    graph = ep.graph_module.graph
    args: list[dict[str, Any]] = []
    user_index = -1
    os.makedirs(os.path.join(job, "weights"), exist_ok=True)
    for node in list(graph.nodes):
        if node.op != "placeholder":
            continue
        spec = kinds[node.name]
        value = node.meta.get("val")
        if spec.kind.name == "USER_INPUT":
            user_index += 1
            if not isinstance(value, torch.Tensor):
                if node.users:
                    raise ImportFailure(
                        "unsupported",
                        f"input '{node.name}' is a {type(value).__name__} used as a value "
                        "in the graph; only tensors can be runtime inputs",
                    )
                graph.erase_node(node)
                continue
            args.append({"kind": "input", "name": node.name, "user_index": user_index})
            continue
        tensor = tensors[spec.target]
        path = os.path.join(job, "weights", f"{len(args)}.bin")
        with open(path, "wb") as handle:
            handle.write(_weight_bytes(tensor))
        args.append(
            {
                "kind": "weight",
                "name": spec.target,
                "file": path,
                "shape": list(tensor.shape),
                "dtype": str(tensor.dtype).removeprefix("torch."),
            }
        )
    output = next(n for n in graph.nodes if n.op == "output")
    results = list(output.args[0])
    kept = [i for i, r in enumerate(results) if isinstance(r, torch.fx.Node)]
    output.args = (tuple(results[i] for i in kept),)
    graph.lint()
    return {"args": args, "tensor_outputs": kept}


def _unsupported_ops(module, torch_dirs: tuple[str, ...]) -> list[dict[str, Any]]:
    counts: Counter[str] = Counter()
    places: dict[str, list[str]] = defaultdict(list)

    def visit(op):
        name = op.name
        if name.split(".", 1)[0] in UPSTREAM_DIALECTS:
            return
        counts[name] += 1
        frame = _user_frame(str(op.location), torch_dirs)
        if frame and frame not in places[name]:
            places[name].append(frame)

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    visit(child.operation)
                    walk(child.operation)

    walk(module.operation)
    return [{"op": k, "count": counts[k], "where": places[k]} for k in sorted(counts)]


def import_job(job: str) -> dict[str, Any]:
    import torch
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter
    from torch_mlir.passmanager import PassManager

    from lowerline.frontend.decompositions import decomposition_table

    torch_dirs = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(ir.__file__)))
    ep = torch.export.load(os.path.join(job, "program.pt2"))
    exported_shapes = _output_shapes(ep.graph)
    ep = ep.run_decompositions(decomposition_table())
    layout = _prepare_graph(ep, job)
    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    importer.import_stateless_graph(ep.graph_module.graph, func_name="main")
    module = importer.module
    with context:
        PassManager.parse(TORCH_BACKEND).run(module.operation)
        _write(job, "torch.mlir", module)
        try:
            PassManager.parse(LINALG_BACKEND).run(module.operation)
        except Exception as err:
            ops = _unsupported_ops(module, torch_dirs)
            if not ops:
                raise ImportFailure("import", f"torch-mlir failed: {err}") from None
            raise ImportFailure("unsupported", "unsupported ops", ops=ops) from None
    ops = _unsupported_ops(module, torch_dirs)
    if ops:
        raise ImportFailure("unsupported", "unsupported ops", ops=ops)
    _check_output_shapes(module, exported_shapes, ir)
    _write(job, "linalg.mlir", module)
    return {"ok": True, **layout}


def _output_shapes(graph) -> list[tuple[int, ...]]:
    """The shapes of the graph's tensor outputs (constants left out, as
    ``_prepare_graph`` leaves them out of ``@main``)."""
    import torch

    output = next(n for n in graph.nodes if n.op == "output")
    return [
        tuple(r.meta["val"].shape)
        for r in output.args[0]
        if isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.Tensor)
    ]


def _check_output_shapes(module, exported: list[tuple[int, ...]], ir) -> None:
    """``@main``'s results have torch.export's shapes, or the compile stops.

    The caller allocates each output from the exported shape and the library
    writes the shape it was compiled for: a decomposition or lowering that
    disagrees with eager (a lowerline bug) would write past the end of the
    caller's tensor. Seen: a convolution with no input channels, whose ATen
    result also has no output channels.
    """
    main = next(
        op
        for op in module.body.operations
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == "main"
    )
    results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
    compiled = [tuple(ir.ShapedType(t).shape) for t in results]
    if compiled != exported:
        raise ImportFailure(
            "import",
            f"the compiled outputs have shapes {compiled}, torch.export's are {exported}: "
            "a lowering disagrees with eager PyTorch (a lowerline bug; please report it)",
        )


def _write(job: str, name: str, module) -> None:
    with open(os.path.join(job, name), "w", encoding="utf-8") as handle:
        handle.write(module.operation.get_asm(enable_debug_info=True))


def serve(requests, replies) -> None:
    for line in requests:
        request = json.loads(line)
        try:
            reply = import_job(request["job"])
        except ImportFailure as failure:
            reply = failure.reply
        except Exception as err:  # report, keep serving the next compile
            reply = {
                "ok": False,
                "kind": "import",
                "message": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(),
            }
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    die_with_parent()
    # Replies use the original stdout; anything libraries print goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()
