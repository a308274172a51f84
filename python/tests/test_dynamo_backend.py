"""``torch.compile(model, backend="lowerline")``: lowerline.dynamo.

Every Dynamo graph is compiled by lowerline and matches eager torch; graph
breaks give several graphs; repeated calls of one shape compile nothing
again; autograd and training-mode graphs are refused with lowerline's
message; the backend is found through its entry point without importing
lowerline first.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest
import torch
import torch._dynamo
from torch import nn

from lowerline.dynamo import LoweredGraph, backend

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "zoo"))
from test_zoo_models import MODELS
from zoo_support import Case, assert_matches


class Backend:
    """lowerline's backend, counting the graphs Dynamo hands it (as
    torch._dynamo.testing.CompileCounter does) and keeping each LoweredGraph."""

    def __init__(self, **options: Any):
        self.options = options
        self.graphs: list[LoweredGraph] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> LoweredGraph:
        lowered = backend(gm, example_inputs, options=self.options)
        self.graphs.append(lowered)
        return lowered

    def compiles(self) -> int:
        """lowerline compiles so far: one per graph and weight change, plus one
        per new shape (specialization) of a graph with symbolic sizes."""
        return sum(len(g.compiled.specializations) for g in self.graphs if g.compiled is not None)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _case(name: str) -> Case:
    return next(case for case in MODELS if case.name == name)


@pytest.mark.parametrize(
    "name", ["mlp", "small_cnn", "transformer_encoder_layer_padding_mask", "text_classifier"]
)
def test_zoo_model_matches_eager_in_one_graph(name, cache_dir):
    case = _case(name)
    torch.manual_seed(0)
    module = case.module().eval()
    inputs = case.inputs()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    with torch.no_grad():
        expected = module(*inputs)
        for _ in range(3):
            assert_matches(compiled(*inputs), expected, case)
    assert len(counter.graphs) == 1
    assert counter.compiles() == 1  # repeated calls of one shape: no recompile


def test_encoder_layer_fast_path_is_compiled_and_matches(cache_dir):
    # Under no_grad in eval mode Dynamo traces torch._transformer_encoder_layer_fwd,
    # which torch.export never sees: the backend writes it out (frontend.fastpath).
    case = _case("transformer_encoder_layer")
    torch.manual_seed(0)
    module = case.module().eval()
    (x,) = case.inputs()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    with torch.no_grad():
        assert_matches(compiled(x), module(x), case)
    (graph,) = counter.graphs
    assert graph.compiled is not None
    assert "_transformer_encoder_layer_fwd" not in graph.compiled.ir("torch")


def test_attention_fast_path_with_padding_mask_matches(cache_dir):
    # nn.MultiheadAttention's fast path (torch._native_multi_head_attention)
    # with a key padding mask, returning the head-averaged attention weights.
    torch.manual_seed(0)
    module = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(3, 5, 16)
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[0, 3:] = True
    padding[2, 1:] = True
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    case = Case("attention", "dynamo", nn.Identity, tuple)
    with torch.no_grad():
        expected = module(x, x, x, key_padding_mask=padding)
        assert_matches(compiled(x, x, x, key_padding_mask=padding), expected, case)
    assert len(counter.graphs) == 1


class PrintBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(11, 9)
        self.second = nn.Linear(9, 5)

    def forward(self, x):
        y = torch.tanh(self.first(x))
        print("between the graphs")  # a graph break
        return self.second(y).softmax(-1)


class BranchBreak(nn.Module):
    """A Python branch on a tensor's value: Dynamo breaks the graph there."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            return y.relu() * 2
        return y.sigmoid() - 1


def test_print_graph_break_gives_two_graphs_matching_eager(cache_dir, capsys):
    torch.manual_seed(0)
    module = PrintBreak().eval()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    case = Case("print_break", "dynamo", PrintBreak, tuple)
    with torch.no_grad():
        for batch in (1, 1, 4):
            x = torch.randn(batch, 11)
            assert_matches(compiled(x), module(x), case)
    assert "between the graphs" in capsys.readouterr().out
    # Two graphs per shape (static shapes for batch 1, then symbolic for batch 4).
    assert len(counter.graphs) == 4
    assert all(g.compiled is not None for g in counter.graphs)


def test_data_dependent_branch_compiles_each_side(cache_dir):
    torch.manual_seed(0)
    module = BranchBreak().eval()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter, dynamic=False)
    case = Case("branch_break", "dynamo", BranchBreak, tuple)
    positive = torch.full((3, 6), 4.0) + torch.rand(3, 6)
    taken = {bool(module.fc(x).sum() > 0) for x in (positive, -positive)}
    assert taken == {True, False}  # the inputs take both sides
    with torch.no_grad():
        for x in (positive, -positive, positive, -positive):
            assert_matches(compiled(x), module(x), case)
    # The graph up to the branch, then one graph per side; no more on repeats.
    assert len(counter.graphs) == 3
    assert counter.compiles() == 3


def test_symbolic_sizes_compile_once(cache_dir):
    # dynamic=True: one Dynamo graph with a symbolic batch (an int input) and
    # Dropout.p as a 0-d tensor; lowerline compiles it once with a dynamic
    # batch dim (the int input read from the tensor's size).
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(7, 5), nn.Dropout(0.25), nn.GELU()).eval()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter, dynamic=True)
    case = Case("symbolic", "dynamo", nn.Identity, tuple)
    with torch.no_grad():
        for batch in (3, 8, 3, 8, 33):
            x = torch.randn(batch, 7)
            assert_matches(compiled(x), module(x), case)
        assert len(counter.graphs) == 1
        assert counter.compiles() == 1
        assert "tensor<?x7xf32>" in counter.graphs[0].compiled.ir("linalg")
        # Dynamo specializes a size of 1 (a static graph of its own).
        for batch in (1, 1):
            x = torch.randn(batch, 7)
            assert_matches(compiled(x), module(x), case)
    assert len(counter.graphs) == 2
    assert counter.compiles() == 2


class SizeInCompute(nn.Module):
    """Reads its symbolic sizes as numbers: a reshape and a scale by the batch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1).sum(1) * x.shape[0]


def test_symbolic_sizes_used_as_numbers_compile_once(cache_dir):
    counter = Backend(cache_dir=cache_dir)
    module = SizeInCompute().eval()
    compiled = torch.compile(module, backend=counter, dynamic=True)
    with torch.no_grad():
        for batch, rows in ((3, 5), (9, 2), (4, 7), (3, 5)):
            x = torch.randn(batch, rows, 6)
            torch.testing.assert_close(compiled(x), module(x))
    assert len(counter.graphs) == 1
    assert counter.compiles() == 1


def test_weights_changed_in_place_compile_again(cache_dir):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(5, 3), nn.ReLU()).eval()
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    x = torch.randn(2, 5)
    case = Case("weights", "dynamo", nn.Identity, tuple)
    with torch.no_grad():
        assert_matches(compiled(x), module(x), case)
        module[0].weight.mul_(-2)  # an optimizer step, load_state_dict: in place
        assert_matches(compiled(x), module(x), case)
        assert_matches(compiled(x), module(x), case)
    assert len(counter.graphs) == 1  # Dynamo did not recompile; lowerline did, once
    assert counter.graphs[0].compiles == 2


class Counting(nn.Module):
    """A buffer forward writes into (state, not a weight) and an input it scales in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))
        self.fc = nn.Linear(3, 4)

    def forward(self, x):
        self.calls += 1
        x.mul_(2)
        return self.fc(x) + self.calls


def test_written_buffers_and_inputs_follow_eager(cache_dir):
    torch.manual_seed(0)
    module = Counting().eval()
    reference = Counting().eval()
    reference.load_state_dict(module.state_dict())
    counter = Backend(cache_dir=cache_dir)
    compiled = torch.compile(module, backend=counter)
    case = Case("counting", "dynamo", Counting, tuple)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, 3)
            x_eager = x.clone()
            assert_matches(compiled(x), reference(x_eager), case)
            assert_matches(x, x_eager, case)
    assert module.calls.item() == reference.calls.item() == 3
    assert counter.graphs[0].compiles == 1  # the buffer's own writes are not weight changes
    with torch.no_grad():
        for each in (module, reference):
            each.fc.bias.add_(1)  # a weight change: compiled again, the state kept
        x = torch.randn(2, 3)
        x_eager = x.clone()
        assert_matches(compiled(x), reference(x_eager), case)
    assert counter.graphs[0].compiles == 2
    assert module.calls.item() == reference.calls.item() == 4


def test_options_reach_lowerline_compile(cache_dir, tmp_path):
    module = nn.Linear(4, 2).eval()
    counter = Backend(cache_dir=cache_dir, num_threads=1, dump_dir=str(tmp_path / "dump"))
    compiled = torch.compile(module, backend=counter)
    with torch.no_grad():
        x = torch.randn(3, 4)
        assert torch.allclose(compiled(x), module(x), atol=1e-6)
    assert counter.graphs[0].compiled.options.num_threads == 1
    (graph,) = os.listdir(tmp_path / "dump")  # one folder per graph
    assert graph.startswith("graph-")
    assert "5-loops.mlir" in os.listdir(tmp_path / "dump" / graph)


def test_unknown_option_is_named(cache_dir):
    compiled = torch.compile(
        nn.Linear(4, 2).eval(), backend="lowerline", options={"cache_dir": cache_dir, "tiles": 3}
    )
    with torch.no_grad(), pytest.raises(TypeError, match=r"unknown compile option.*tiles"):
        compiled(torch.randn(1, 4))


def test_modes_are_refused():
    compiled = torch.compile(nn.Linear(4, 2).eval(), backend="lowerline", mode="max-autotune")
    with torch.no_grad(), pytest.raises(Exception, match="no mode 'max-autotune'"):
        compiled(torch.randn(1, 4))


def test_training_mode_module_is_refused():
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    compiled = torch.compile(module, backend="lowerline")
    with torch.no_grad(), pytest.raises(Exception, match="training mode") as error:
        compiled(torch.randn(2, 4))
    assert "TrainingGraphError" in str(error.value)
    assert "model.eval()" in str(error.value)


def test_autograd_graph_is_refused():
    module = nn.Linear(4, 4).eval()  # parameters require grad, and grad mode is on
    compiled = torch.compile(module, backend="lowerline")
    with pytest.raises(Exception, match="requires grad and grad mode is on") as error:
        compiled(torch.randn(2, 4))
    assert "_parameters['weight']" in str(error.value)
    assert "torch.no_grad()" in str(error.value)


def test_input_requiring_grad_is_refused():
    module = nn.Linear(4, 4).eval().requires_grad_(False)
    compiled = torch.compile(module, backend="lowerline")
    with pytest.raises(Exception, match=r"L\['args'\]\[0\] requires grad"):
        compiled(torch.randn(2, 4, requires_grad=True))


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage() + str(record.exc_info or ""))


def test_suppressed_refusal_falls_back_to_eager_and_says_why(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "suppress_errors", True)
    records = Records()
    dynamo_log = logging.getLogger("torch._dynamo")
    dynamo_log.addHandler(records)
    try:
        module = nn.Linear(4, 4).eval()
        compiled = torch.compile(module, backend="lowerline")
        x = torch.randn(2, 4)
        result = compiled(x)
    finally:
        dynamo_log.removeHandler(records)
    assert result.requires_grad  # eager ran: autograd is intact
    assert torch.equal(result, module(x))
    assert any("requires grad and grad mode is on" in m for m in records.messages)


ENTRY_POINT_SCRIPT = """
import sys, torch
assert "lowerline" not in sys.modules
model = torch.nn.Sequential(torch.nn.Linear(7, 3), torch.nn.ReLU()).eval()
compiled = torch.compile(model, backend="lowerline", options={"cache_dir": sys.argv[1]})
with torch.no_grad():
    for batch in (2, 2, 5):
        x = torch.randn(batch, 7)
        assert torch.allclose(compiled(x), model(x), atol=1e-6)
assert "lowerline.dynamo" in sys.modules
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mlir", "torch_mlir"))
print("loaded:", loaded)
"""


def test_entry_point_finds_the_backend_without_importing_lowerline(tmp_path, cache_dir):
    # cwd elsewhere: a stale lowerline.egg-info in the checkout would shadow
    # the installed entry points.
    done = subprocess.run(
        [sys.executable, "-c", ENTRY_POINT_SCRIPT, cache_dir],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "loaded: []"


class AttributeReads(nn.Module):
    """Read by get_attr (a parameter, a plain tensor) and call_module (a Linear)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 5))
        self.offset = torch.linspace(-1, 1, 5)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        return self.head((x @ self.weight + self.offset).relu())


def test_graphs_reading_attributes_compile(cache_dir):
    # Graphs whose weights are get_attr / call_module nodes, not inputs, as
    # FX's own tracer makes them (backend called directly, outside Dynamo).
    torch.manual_seed(0)
    module = AttributeReads().eval()
    gm = torch.fx.symbolic_trace(module)
    assert {node.op for node in gm.graph.nodes} >= {"get_attr", "call_module"}
    x = torch.randn(4, 5)
    lowered = backend(gm, [x], options={"cache_dir": cache_dir})
    with torch.no_grad():
        assert torch.allclose(lowered(x), module(x), atol=1e-5)
    assert lowered.compiled is not None


def test_inputs_that_are_not_tensors_or_numbers_are_refused():
    gm = torch.fx.symbolic_trace(lambda x, scale: x * scale)
    with pytest.raises(TypeError, match="graph input scale is a str"):
        backend(gm, [torch.randn(2), "2"])
