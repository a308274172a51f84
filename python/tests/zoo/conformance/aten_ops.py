"""The conformance zoo's op list and its inputs, generated from the registries.

The op list is torch-mlir's: every ``torch.aten.*`` op its ``torch`` dialect
defines (the ops its FX importer turns into dialect ops rather than
``torch.operator``), read from the installed package's generated op classes
(``torch_mlir/dialects/_torch_ops_gen.py``) as text, so the test process never
loads torch-mlir's LLVM beside the ``mlir`` bindings. Each name maps to the
ATen overload of the same name (``torch.aten.add.Tensor`` -> ``aten.add.Tensor``).

An op's arguments come from its ATen schema, not from a per-op list: tensors
take a shape and dtype from a few tried in turn (the first that eager torch
accepts wins), other arguments their schema default or a value chosen by the
argument's name and type (``dim``, ``kernel_size``, ``p``...). Ops whose
arguments must agree with each other (a matmul's inner sizes, a convolution's
weight, index tensors in range) have a small explicit spec in ``SPECS``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

aten = torch.ops.aten

# Tensor shapes tried in turn for an op without a spec: odd sizes (no tile or
# vector width divides them), then the ranks pooling, convolution and
# upsampling want (NCL, NCHW, NCDHW), then a square matrix and a vector.
SHAPES: tuple[tuple[int, ...], ...] = (
    (3, 5),
    (2, 3, 7, 9),
    (2, 3, 11),
    (1, 2, 5, 7, 9),
    (5, 5),
    (7,),
    (1, 3, 5),
)
DTYPES = (torch.float32, torch.int64, torch.bool)

# The families counted in the denominator whatever torch-mlir makes of them
# (ops with a data-dependent write pattern or order, lowered by torch-mlir to
# TMTensor or left as torch ops). Matched on the op name's leading word.
ALWAYS_COUNTED = (
    "sort",
    "argsort",
    "topk",
    "scatter",
    "index_put",
    "_index_put_impl",
    "_unsafe_index_put",
    "cumsum",
    "cumprod",
    "masked_scatter",
    "max_unpool",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "adaptive_max_pool",
)

# Names of non-tensor arguments without a schema default: value by name.
INTS = {
    "dim": 1,
    "dim0": 0,
    "dim1": 1,
    "dim2": 0,
    "start_dim": 0,
    "end_dim": -1,
    "k": 2,
    "chunks": 2,
    "sections": 2,
    "split_size": 2,
    "n": 3,
    "groups": 1,
    "num_classes": 7,
    "diagonal": 0,
    "offset": 0,
    "index": 1,
    "start": 1,
    "end": 3,
    "step": 1,
    "length": 2,
    "size": 2,
    "upscale_factor": 1,
    "downscale_factor": 1,
    "shifts": 1,
    "repeats": 2,
    "bins": 4,
    "N": 3,
    "M": 3,
    "window_length": 5,
    "high": 5,
    "low": 0,
    "count": 2,
    "reduction": 1,
}
SCALARS = {
    "other": 2,
    "alpha": 1,
    "value": 0.5,
    "min": -0.5,
    "max": 0.5,
    "exponent": 2,
    "threshold": 0.1,
    "lambd": 0.5,
    "beta": 1,
    "negative_slope": 0.1,
    "fill_value": 1.5,
    "end": 6,
    "start": 0,
    "step": 1,
    "self": 2,
    "p": 0.5,
}
STRINGS = {
    "reduce": "sum",
    "rounding_mode": "trunc",
    "approximate": "none",
    "mode": "bilinear",
    "padding_mode": "zeros",
    "indexing": "ij",
    "side": "left",
    "equation": "ij->ji",
}
# Index-like tensor arguments: int64 values inside the smallest dimension.
INDEX_NAMES = frozenset({"index", "indices", "target", "offsets", "idx"})


@dataclass(frozen=True)
class OpCase:
    """One ATen overload and how to call it."""

    name: str  # torch-mlir's name without ``torch.aten.``: ``add.Tensor``
    overload: Any  # the OpOverload, or None where ATen has no overload of this name
    skip: str = ""  # why no module is generated (not a tensor op, mutates...)
    # Only this dtype for the tensors (the complex variants), else ``DTYPES`` in turn.
    dtype: torch.dtype | None = None

    @property
    def family(self) -> str:
        """The leading word of the name, underscores kept: ``max_pool2d``."""
        return self.name.split(".", 1)[0]

    @property
    def variant(self) -> bool:
        """A complex variant of an elementwise op (outside the denominator)."""
        return self.dtype is not None

    @property
    def always_counted(self) -> bool:
        return self.family.lstrip("_").startswith(ALWAYS_COUNTED) or self.family.startswith(
            ALWAYS_COUNTED
        )

    @property
    def random(self) -> bool:
        tags = getattr(self.overload, "tags", ())
        return torch.Tag.nondeterministic_seeded in tags or self.family.startswith(
            ("empty", "new_empty")
        )

    @property
    def data_dependent(self) -> bool:
        tags = getattr(self.overload, "tags", ())
        return torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags


# Coarse op families of the report, by name: the first rule whose words
# start the op's name (leading underscores dropped) wins; then ATen's tags.
FAMILY_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "sort, scan, scatter",
        (
            *ALWAYS_COUNTED,
            "unsafe_index_put",
            "index_add",
            "index_copy",
            "cummax",
            "cummin",
            "logcumsumexp",
            "kthvalue",
            "median",
            "mode",
            "msort",
            "bincount",
            "nonzero",
            "unique",
        ),
    ),
    (
        "complex, fft",
        ("fft", "stft", "istft", "view_as", "real", "imag", "angle", "complex", "polar", "conj"),
    ),
    (
        "matmul, convolution",
        (
            "mm",
            "bmm",
            "matmul",
            "addmm",
            "addbmm",
            "baddbmm",
            "addmv",
            "mv",
            "dot",
            "linear",
            "bilinear",
            "conv",
            "einsum",
            "int_mm",
            "scaled_mm",
            "trilinear",
            "tensordot",
            "outer",
        ),
    ),
    (
        "pooling",
        (
            "avg_pool",
            "max_pool",
            "adaptive",
            "pool",
            "upsample",
            "interpolate",
            "grid_sampler",
            "im2col",
            "col2im",
            "pixel",
        ),
    ),
    (
        "normalization",
        (
            "batch_norm",
            "native_batch",
            "layer_norm",
            "native_layer",
            "group_norm",
            "native_group",
            "instance_norm",
            "rms_norm",
            "weight_norm",
            "renorm",
            "normalize",
        ),
    ),
    (
        "softmax, loss",
        (
            "softmax",
            "log_softmax",
            "safe_softmax",
            "cross_entropy",
            "nll",
            "mse_loss",
            "l1_loss",
            "smooth_l1",
            "huber",
            "kl_div",
            "binary_cross",
            "cosine_embedding",
            "margin",
            "poisson",
        ),
    ),
    (
        "indexing, gather",
        (
            "index",
            "gather",
            "take",
            "embedding",
            "masked",
            "where",
            "select_scatter",
            "slice_scatter",
            "diagonal_scatter",
            "nonzero",
            "one_hot",
            "bincount",
            "unique",
            "searchsorted",
            "bucketize",
        ),
    ),
    (
        "factory, random",
        (
            "zeros",
            "ones",
            "full",
            "empty",
            "arange",
            "linspace",
            "logspace",
            "eye",
            "rand",
            "normal",
            "uniform",
            "bernoulli",
            "multinomial",
            "exponential",
            "scalar_tensor",
            "tensor",
            "new_",
            "dropout",
            "native_dropout",
            "random",
            "tril_indices",
            "triu_indices",
            "hann",
            "hamming",
            "blackman",
            "kaiser",
            "bartlett",
        ),
    ),
    ("quantization", ("quantize", "dequantize", "fake_quant", "int_repr", "make_per", "q_")),
)


def coarse_family(name: str) -> str:
    """The report's family of op ``name`` (``FAMILY_RULES``, then ATen's tags)."""
    if name.endswith("]"):  # a complex variant
        return "complex variants of elementwise ops"
    word = name.split(".", 1)[0].lstrip("_")
    for family, starts in FAMILY_RULES:
        if word.startswith(starts):
            return family
    tags = getattr(_overload(name), "tags", ())
    if torch.Tag.pointwise in tags:
        return "elementwise"
    if torch.Tag.reduction in tags or word.startswith(
        (
            "sum",
            "mean",
            "prod",
            "amax",
            "amin",
            "argm",
            "max",
            "min",
            "var",
            "std",
            "norm",
            "all",
            "any",
            "logsumexp",
            "count_nonzero",
            "aminmax",
            "frobenius",
            "linalg_vector",
        )
    ):
        return "reduction"
    if (
        torch.Tag.view_copy in tags
        or word in ("t", "to")
        or word.startswith(
            (
                "view",
                "reshape",
                "permute",
                "transpose",
                "squeeze",
                "unsqueeze",
                "expand",
                "slice",
                "select",
                "cat",
                "stack",
                "split",
                "chunk",
                "flatten",
                "unflatten",
                "narrow",
                "flip",
                "roll",
                "repeat",
                "tile",
                "pad",
                "constant_pad",
                "reflection",
                "replication",
                "alias",
                "as_strided",
                "numpy_T",
                "movedim",
                "unbind",
                "diag",
                "tril",
                "triu",
                "hstack",
                "vstack",
                "column_stack",
                "broadcast",
                "clone",
                "contiguous",
                "copy",
                "to_",
                "type_as",
                "lift",
                "detach",
                "unfold",
                "meshgrid",
                "rot90",
                "_reshape",
                "_unsafe_view",
                "resize",
            )
        )
    ):
        return "shape, view, copy"
    return "other"


def registry_names() -> list[str]:
    """Every ``torch.aten.*`` op name of the installed torch-mlir's torch dialect."""
    spec = importlib.util.find_spec("torch_mlir")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("torch_mlir is not installed: the conformance zoo reads its op list")
    folder = next(iter(spec.submodule_search_locations))
    with open(os.path.join(folder, "dialects", "_torch_ops_gen.py"), encoding="utf-8") as f:
        text = f.read()
    return sorted(set(re.findall(r'OPERATION_NAME = "torch\.aten\.([^"]+)"', text)))


def _overload(name: str) -> Any:
    packet_name, _, overload_name = name.partition(".")
    packet = getattr(aten, packet_name, None)
    if packet is None:
        return None
    return getattr(packet, overload_name or "default", None)


def _why_skipped(name: str, overload: Any) -> str:
    """Why no module is made for ``name`` ("" when one is)."""
    if overload is None:
        return "no ATen overload of this name in torch 2.13"
    family = name.split(".", 1)[0]
    if family.endswith("_") and not family.endswith("__"):
        return "in-place variant (its functional form is tested)"
    schema = overload._schema
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return "writes one of its arguments (its functional form is tested)"
    if not any("Tensor" in str(r.type) for r in schema.returns):
        return "returns no tensor (a scalar or list op torch.export folds away)"
    if "backward" in family:
        return "a training (backward) op"
    return ""


# Ops beyond the elementwise ones whose complex64 variant is run too:
# reductions, scans, joins, products and fills (generated arguments).
COMPLEX_VARIANTS = frozenset(
    {
        "sum",
        "sum.dim_IntList",
        "mean",
        "mean.dim",
        "prod",
        "prod.dim_int",
        "var.correction",
        "std.correction",
        "cumsum",
        "cumprod",
        "cat",
        "stack",
        "mm",
        "bmm",
        "flip",
        "constant_pad_nd",
        "where.self",
        "masked_fill.Scalar",
        "fill.Scalar",
        "full_like",
        "conj_physical",
        "_to_copy",
    }
)


def op_cases() -> list[OpCase]:
    """One case per registry name, skipped ones with the reason; then, for
    each elementwise op (ATen's ``pointwise`` tag) that eager torch computes
    on complex64 tensors and each of ``COMPLEX_VARIANTS``, that variant,
    named ``add.Tensor[complex64]``."""
    cases = []
    for name in registry_names():
        overload = _overload(name)
        cases.append(OpCase(name, overload, _why_skipped(name, overload)))
    variants = [
        OpCase(f"{case.name}[complex64]", case.overload, dtype=torch.complex64)
        for case in cases
        if not case.skip
        and (torch.Tag.pointwise in case.overload.tags or case.name in COMPLEX_VARIANTS)
    ]
    # Only those eager torch computes on complex64 inputs.
    return cases + [v for v in variants if not isinstance(build(v), str)]


# -- arguments ---------------------------------------------------------------------


def _values(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype)
    return torch.randint(-4, 5, shape, dtype=dtype)


def _index(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, min(shape) if shape else 1, shape, dtype=torch.int64)


def _int_list(name: str, shape: tuple[int, ...]) -> list[int] | None:
    spatial = max(len(shape) - 2, 1)
    by_name = {
        "kernel_size": [3] * spatial,
        "stride": [2] * spatial,
        "padding": [1] * spatial,
        "dilation": [1] * spatial,
        "output_size": [2] * spatial,
        "output_padding": [0] * spatial,
        "dims": list(reversed(range(len(shape)))),
        "dim": [1 % max(len(shape), 1)],
        "size": list(reversed(shape)),
        "shape": list(reversed(shape)),
        "sizes": list(reversed(shape)),
        "pad": [1, 2],
        "repeats": [2] + [1] * (len(shape) - 1),
        "split_sizes": [1, shape[0] - 1] if shape and shape[0] > 1 else [1],
        "shifts": [1],
        "stride_": [1],
    }
    return by_name.get(name)


def _known(name: str) -> bool:
    return name in INTS or name in SCALARS or name in STRINGS or name in ("dtype", "size")


def _argument(arg: Any, shape: tuple[int, ...], dtype: torch.dtype) -> Any:
    """A value for one schema argument (types print as ``List[int]``, ``number``)."""
    kind = str(arg.type)
    name = arg.name
    if kind == "Tensor":
        return _index(shape) if name in INDEX_NAMES else _values(shape, dtype)
    if kind == "List[Tensor]":
        return [_values(shape, dtype), _values(shape, dtype)]
    if kind == "List[Optional[Tensor]]":
        return [_index((2,))]
    if arg.has_default_value():
        return arg.default_value
    if kind.startswith("Optional["):
        # Left out unless the name says what it is (clamp's min and max).
        if not _known(name) or kind == "Optional[Tensor]":
            return None
        kind = kind.removeprefix("Optional[")[:-1]
    return _non_tensor(name, kind, shape)


def _non_tensor(name: str, kind: str, shape: tuple[int, ...]) -> Any:
    if name == "dtype":  # a ScalarType prints as int
        return torch.float64
    if kind == "int":
        return INTS.get(name, 1)
    if kind == "List[int]":
        return _int_list(name, shape) or [1]
    if kind == "number":
        return SCALARS.get(name, 2)
    if kind == "float":
        return float(SCALARS.get(name, 0.5))
    if kind == "List[float]":
        return [2.0] * max(len(shape) - 2, 1)
    if kind == "bool":
        return False
    if kind == "str":
        return STRINGS.get(name, "none")
    if kind == "Device":
        return torch.device("cpu")
    raise TypeError(f"no generated value for argument {name}: {kind}")


def _calls(overload: Any, dtypes: tuple[torch.dtype, ...]) -> Iterator[tuple[tuple, dict]]:
    """Argument sets for ``overload``, in the order they are tried."""
    schema = overload._schema
    for dtype in dtypes:
        for shape in SHAPES:
            args: list[Any] = []
            kwargs: dict[str, Any] = {}
            try:
                for arg in schema.arguments:
                    value = _argument(arg, shape, dtype)
                    if arg.kwarg_only:
                        kwargs[arg.name] = value
                    else:
                        args.append(value)
            except TypeError as err:  # an argument type with no generated value
                yield (), {"__unsupported__": str(err)}
                return
            yield tuple(args), kwargs


class Call(torch.nn.Module):
    """``overload(*args, **kwargs)``: every tensor (in lists too) is an input,
    the rest is baked in."""

    def __init__(self, overload: Any, args: tuple, kwargs: dict):
        super().__init__()
        self.overload = overload
        flat, self.spec = pytree.tree_flatten((args, kwargs))
        # Positions of the tensors among the leaves, filled from forward's inputs.
        self.slots = [i for i, leaf in enumerate(flat) if isinstance(leaf, torch.Tensor)]
        self.constants = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in flat]

    def forward(self, *tensors: torch.Tensor) -> Any:
        flat = list(self.constants)
        for slot, tensor in zip(self.slots, tensors, strict=True):
            flat[slot] = tensor
        args, kwargs = pytree.tree_unflatten(flat, self.spec)
        return self.overload(*args, **kwargs)


@dataclass(frozen=True)
class Built:
    module: torch.nn.Module
    inputs: tuple


def build(case: OpCase) -> Built | str:
    """The module and inputs of ``case``, or why none was found."""
    spec = SPECS.get(case.name)
    dtypes = (case.dtype,) if case.dtype else DTYPES
    candidates = iter([_seeded(spec)]) if spec else _calls(case.overload, dtypes)
    first_error = ""
    for args, kwargs in candidates:
        if "__unsupported__" in kwargs:
            return kwargs["__unsupported__"]
        try:
            torch.manual_seed(0)
            with torch.no_grad():
                case.overload(*args, **kwargs)
        except Exception as err:  # eager rejects these arguments: try the next set
            first_error = first_error or f"{type(err).__name__}: {str(err).splitlines()[0]}"
            continue
        return Built(Call(case.overload, args, kwargs), tuple(_tensors(args, kwargs)))
    where = "its spec" if spec else "generated arguments"
    return f"eager torch rejects {where} (first: {first_error[:200]})"


def _seeded(spec: Spec) -> tuple[tuple, dict]:
    torch.manual_seed(0)
    return spec()


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors of a call, in ``Call``'s input order."""
    return [leaf for leaf in pytree.tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]


# -- explicit specs ------------------------------------------------------------------
# Ops whose arguments must agree with each other. Each returns (args, kwargs);
# tensors in args become the module's inputs.


def _r(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return _values(shape, dtype)


def _i(high: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, high, shape, dtype=torch.int64)


Spec = Callable[[], tuple[tuple, dict]]


def _max_unpool3d() -> tuple[tuple, dict]:
    x = _r(1, 2, 4, 6, 6)
    _, indices = aten.max_pool3d_with_indices(x, [2, 2, 2], [2, 2, 2])
    pooled = aten.max_pool3d_with_indices(x, [2, 2, 2], [2, 2, 2])[0]
    return (pooled, indices, [4, 6, 6], [2, 2, 2], [0, 0, 0]), {}


def _unpool2d() -> tuple[tuple, dict]:
    x = _r(2, 3, 8, 10)
    pooled, indices = aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    return (pooled, indices, [8, 10]), {}


SPECS: dict[str, Spec] = {
    "mm": lambda: ((_r(3, 4), _r(4, 5)), {}),
    "bmm": lambda: ((_r(2, 3, 4), _r(2, 4, 5)), {}),
    "matmul": lambda: ((_r(2, 3, 4), _r(4, 5)), {}),
    "mv": lambda: ((_r(3, 4), _r(4)), {}),
    "dot": lambda: ((_r(7), _r(7)), {}),
    "addmm": lambda: ((_r(5), _r(3, 4), _r(4, 5)), {}),
    "baddbmm": lambda: ((_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)), {}),
    "linear": lambda: ((_r(3, 4), _r(5, 4), _r(5)), {}),
    "convolution": lambda: (
        (_r(2, 3, 9, 11), _r(4, 3, 3, 3), _r(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        {},
    ),
    "conv2d": lambda: ((_r(2, 3, 9, 11), _r(4, 3, 3, 3), _r(4)), {}),
    "conv1d": lambda: ((_r(2, 3, 11), _r(4, 3, 3), _r(4)), {}),
    "embedding": lambda: ((_r(10, 4), _i(10, 2, 3)), {}),
    "index_select": lambda: ((_r(5, 7), 1, _i(7, 4)), {}),
    "gather": lambda: ((_r(5, 7), 1, _i(7, 5, 3)), {}),
    "index.Tensor": lambda: ((_r(5, 7), [_i(5, 4)]), {}),
    "index_put": lambda: ((_r(5, 7), [_i(5, 3)], _r(3, 7)), {}),
    "_unsafe_index_put.hacked_twin": lambda: ((_r(5, 7), [_i(5, 3)], _r(3, 7)), {}),
    "scatter.src": lambda: ((_r(5, 7), 1, _i(7, 5, 3), _r(5, 3)), {}),
    "scatter.value": lambda: ((_r(5, 7), 1, _i(7, 5, 3), 1.5), {}),
    "scatter_add": lambda: ((_r(5, 7), 1, _i(7, 5, 3), _r(5, 3)), {}),
    "scatter_reduce.two": lambda: ((_r(5, 7), 1, _i(7, 5, 3), _r(5, 3), "amax"), {}),
    "masked_scatter": lambda: ((_r(3, 5), _r(3, 5) > 0, _r(3, 5)), {}),
    "masked_fill.Scalar": lambda: ((_r(3, 5), _r(3, 5) > 0, 1.5), {}),
    "masked_fill.Tensor": lambda: ((_r(3, 5), _r(3, 5) > 0, _r()), {}),
    "where.self": lambda: ((_r(3, 5) > 0, _r(3, 5), _r(3, 5)), {}),
    "max_unpool2d": _unpool2d,
    "max_unpool3d": _max_unpool3d,
    "cross_entropy_loss": lambda: ((_r(4, 5), _i(5, 4)), {}),
    "nll_loss_forward": lambda: ((_r(4, 5).log_softmax(1), _i(5, 4), None, 1, -100), {}),
    "one_hot": lambda: ((_i(6, 3, 5), 6), {}),
    "bincount": lambda: ((_i(6, 11), None, 0), {}),
    "repeat_interleave.Tensor": lambda: ((torch.tensor([1, 2, 0, 3]),), {}),
    "sort": lambda: ((_r(3, 7), 1, False), {}),
    "topk": lambda: ((_r(3, 7), 2, 1), {}),
    "argsort": lambda: ((_r(3, 7), 1, False), {}),
    "cumsum": lambda: ((_r(3, 7), 1), {}),
    "cumprod": lambda: ((_r(3, 7), 1), {}),
    "layer_norm": lambda: ((_r(3, 5, 7), [7], _r(7), _r(7)), {}),
    "native_layer_norm": lambda: ((_r(3, 5, 7), [7], _r(7), _r(7), 1e-5), {}),
    "group_norm": lambda: ((_r(2, 6, 5, 3), 3, _r(6), _r(6)), {}),
    "native_group_norm": lambda: ((_r(2, 6, 5, 3), _r(6), _r(6), 2, 6, 15, 3, 1e-5), {}),
    "batch_norm": lambda: (
        (_r(2, 3, 5, 7), _r(3), _r(3), _r(3), _r(3).abs() + 0.5, False, 0.1, 1e-5, False),
        {},
    ),
    "native_batch_norm": lambda: (
        (_r(2, 3, 5, 7), _r(3), _r(3), _r(3), _r(3).abs() + 0.5, False, 0.1, 1e-5),
        {},
    ),
    "instance_norm": lambda: (
        (_r(2, 3, 5, 7), _r(3), _r(3), None, None, True, 0.1, 1e-5, False),
        {},
    ),
    "rms_norm": lambda: ((_r(3, 5, 7), [7], _r(7), 1e-6), {}),
    "scaled_dot_product_attention": lambda: ((_r(2, 3, 5, 8), _r(2, 3, 7, 8), _r(2, 3, 7, 8)), {}),
    "view_as_complex": lambda: ((_r(3, 5, 2),), {}),
    "view_as_real": lambda: ((_r(3, 5, dtype=torch.complex64),), {}),
    "real": lambda: ((_r(3, 5, dtype=torch.complex64),), {}),
    "imag": lambda: ((_r(3, 5, dtype=torch.complex64),), {}),
    "fft_fft": lambda: ((_r(3, 8),), {}),
    "fft_rfft": lambda: ((_r(3, 8),), {}),
    "fft_ifft": lambda: ((_r(3, 8, dtype=torch.complex64),), {}),
    "stft": lambda: ((_r(2, 64), 16, 4, 16, None, False, None, True), {}),
    "einsum": lambda: (("ij,jk->ik", [_r(3, 4), _r(4, 5)]), {}),
    "embedding_bag.padding_idx": lambda: (
        (_r(10, 4), _i(10, 6), torch.tensor([0, 2]), False, 0, False, None, False, None),
        {},
    ),
    "_embedding_bag": lambda: ((_r(10, 4), _i(10, 6), torch.tensor([0, 2])), {}),
    "grid_sampler": lambda: ((_r(1, 2, 5, 7), _r(1, 3, 4, 2).tanh(), 0, 0, False), {}),
    "col2im": lambda: ((_r(1, 12, 12), [4, 5], [2, 2], [1, 1], [0, 0], [1, 1]), {}),
    "im2col": lambda: ((_r(1, 3, 4, 5), [2, 2], [1, 1], [0, 0], [1, 1]), {}),
    "bucketize.Tensor": lambda: ((_r(3, 4), torch.sort(_r(7))[0]), {}),
    "addbmm": lambda: ((_r(3, 5), _r(2, 3, 4), _r(2, 4, 5)), {}),
    "bilinear": lambda: ((_r(3, 4), _r(3, 6), _r(5, 4, 6), _r(5)), {}),
    "clamp": lambda: ((_r(3, 5), -0.5, 0.5), {}),
    "clamp.Tensor": lambda: ((_r(3, 5), _r(3, 5) - 0.5, _r(3, 5) + 0.5), {}),
    "binary_cross_entropy": lambda: ((_r(3, 5).sigmoid(), _r(3, 5).sigmoid()), {}),
    "binary_cross_entropy_with_logits": lambda: ((_r(3, 5), _r(3, 5).sigmoid()), {}),
    "conv_transpose1d": lambda: ((_r(2, 3, 11), _r(3, 4, 3), _r(4), [2]), {}),
    "conv_transpose2d.input": lambda: ((_r(2, 3, 7, 9), _r(3, 4, 3, 3), _r(4), [2, 2]), {}),
    "conv_transpose3d.input": lambda: ((_r(1, 2, 3, 5, 7), _r(2, 3, 3, 3, 3), _r(3)), {}),
    "conv_tbc": lambda: ((_r(7, 2, 3), _r(3, 3, 4), _r(4), 1), {}),
    "diagonal_scatter": lambda: ((_r(5, 5), _r(5)), {}),
    "select_scatter": lambda: ((_r(3, 5), _r(5), 0, 1), {}),
    "fill.Tensor": lambda: ((_r(3, 5), _r()), {}),
    "glu": lambda: ((_r(3, 6), 1), {}),
    "kl_div": lambda: ((_r(3, 5).log_softmax(1), _r(3, 5).softmax(1)), {}),
    "linalg_cross": lambda: ((_r(5, 3), _r(5, 3)), {}),
    "prelu": lambda: ((_r(2, 3, 5), _r(3)), {}),
    "reflection_pad1d": lambda: ((_r(2, 3, 11), [2, 1]), {}),
    "reflection_pad2d": lambda: ((_r(2, 3, 7, 9), [2, 1, 1, 2]), {}),
    "reflection_pad3d": lambda: ((_r(1, 2, 5, 7, 9), [1, 2, 1, 1, 2, 1]), {}),
    "replication_pad1d": lambda: ((_r(2, 3, 11), [2, 1]), {}),
    "replication_pad2d": lambda: ((_r(2, 3, 7, 9), [2, 1, 1, 2]), {}),
    "replication_pad3d": lambda: ((_r(1, 2, 5, 7, 9), [1, 2, 1, 1, 2, 1]), {}),
    "scatter.reduce": lambda: ((_r(5, 7), 1, _i(7, 5, 3), _r(5, 3)), {"reduce": "add"}),
    "unflatten.int": lambda: ((_r(3, 6), 1, [2, 3]), {}),
    "upsample_bilinear2d.vec": lambda: ((_r(2, 3, 5, 7), [9, 11], False, None), {}),
    "upsample_nearest1d.vec": lambda: ((_r(2, 3, 7), [11], None), {}),
    "upsample_nearest2d.vec": lambda: ((_r(2, 3, 5, 7), [9, 11], None), {}),
    # Scales that disagree with the output size: ATen clamps the source row.
    "upsample_nearest2d": lambda: ((_r(2, 3, 5, 7), [9, 11], 1.5, 1.7), {}),
    # A transpose by strides; the generated [7] by [2] reads past the input.
    "_reshape_alias": lambda: ((_r(3, 5), [5, 3], [1, 5]), {}),
    "_reshape_alias_copy": lambda: ((_r(3, 5), [5, 3], [1, 5]), {}),
    # g holds one value per row; ATen reads any other g as flat rows.
    "_weight_norm_interface": lambda: ((_r(3, 5), _r(3, 1), 0), {}),
    # F.bilinear's call; one expanding all three inputs at unroll_dim is refused.
    "_trilinear": lambda: ((_r(7, 5), _r(3, 5, 6), _r(7, 6), [1, 3], [0], [1, 2], [2, 3], 1), {}),
    "nll_loss2d_forward": lambda: (
        (_r(2, 4, 3, 5).log_softmax(1), _i(4, 2, 3, 5), None, 1, -100),
        {},
    ),
    "cosine_embedding_loss": lambda: ((_r(3, 5), _r(3, 5), torch.tensor([1.0, -1.0, 1.0])), {}),
    "narrow.Tensor": lambda: ((_r(3, 7), 1, torch.tensor(2), 3), {}),
    "as_strided": lambda: ((_r(3, 5), [2, 2], [5, 1], 1), {}),
    "as_strided_copy": lambda: ((_r(3, 5), [2, 2], [5, 1], 1), {}),
    "as_strided_scatter": lambda: ((_r(3, 5), _r(2, 2), [2, 2], [5, 1], 1), {}),
    "_int_mm": lambda: ((_i(8, 17, 8).to(torch.int8), _i(8, 8, 9).to(torch.int8)), {}),
    "stft.center": lambda: ((_r(2, 64), 16, 4, 16, None, True, "reflect", False, None, True), {}),
    "multinomial": lambda: ((_r(3, 5).softmax(1), 2), {}),
    "dropout": lambda: ((_r(3, 5), 0.5, False), {}),
    "native_dropout": lambda: ((_r(3, 5), 0.5, False), {}),
    "bernoulli.p": lambda: ((_r(3, 5), 0.5), {}),
    "bernoulli": lambda: ((_r(3, 5).sigmoid(),), {}),
    "bernoulli.Tensor": lambda: ((_r(3, 5), _r(3, 5).sigmoid()), {}),
    "fake_quantize_per_channel_affine": lambda: (
        (_r(3, 5), _r(5).abs() + 0.1, _i(3, 5).int(), 1, -128, 127),
        {},
    ),
    "fake_quantize_per_channel_affine_cachemask": lambda: (
        (_r(3, 5), _r(5).abs() + 0.1, _i(3, 5).int(), 1, -128, 127),
        {},
    ),
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams": lambda: (
        (_r(3, 5), torch.tensor(0.1), torch.tensor(2, dtype=torch.int32), torch.tensor(1), 0, 255),
        {},
    ),
    "fake_quantize_per_tensor_affine.tensor_qparams": lambda: (
        (_r(3, 5), torch.tensor(0.1), torch.tensor(2, dtype=torch.int32), -128, 127),
        {},
    ),
}
