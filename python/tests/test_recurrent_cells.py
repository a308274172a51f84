"""Recurrent cells (GRU, LSTM, RNN) against eager at odd sizes.

torch-mlir decomposes ``aten.gru`` / ``aten.lstm`` / ``aten.rnn_tanh`` into
one input projection over all steps and, per step, a 1 x hidden (at batch 1)
matmul by the recurrent weights plus the gate math. At batch 1 those
matmuls are row vectors whose register tile spans many vectors
(``tile_plan._row_vector_nr``): a power of two of them, the last tile
masked where the gates' width has no such divisor. Each case compiles on
one thread and on two (the parallel column tiles); the numbers must match
eager at batch 1 and 3, sequences of 1 and 7 steps, and hidden sizes that
are not multiples of the vector width.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerline


class LastStep(nn.Module):
    """A recurrent layer over (batch, time, features); its last step's output
    and its final hidden state (both the recurrence and the per-step
    outputs are returned)."""

    def __init__(self, cell: type[nn.Module], features: int, hidden: int):
        super().__init__()
        self.rnn = cell(features, hidden, batch_first=True)

    def forward(self, x):
        out, state = self.rnn(x)
        final = state[0] if isinstance(state, tuple) else state
        return out[:, -1], final


# (cell, features, hidden, batch, steps): hidden 37 gives gates of 111 (GRU)
# and 148 (LSTM) columns, no whole vectors; hidden 128 gives the GRU's 384
# gate columns (3 tiles of 128 at batch 1) and the LSTM's 512.
CASES = [
    (nn.GRU, 19, 37, 1, 7),
    (nn.GRU, 64, 128, 1, 7),
    (nn.GRU, 19, 37, 3, 1),
    (nn.LSTM, 19, 37, 1, 7),
    (nn.LSTM, 64, 128, 3, 7),
    (nn.RNN, 19, 50, 1, 1),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("cell", "features", "hidden", "batch", "steps"), CASES)
def test_recurrent_cell_matches_eager(cache_dir, threads, cell, features, hidden, batch, steps):
    torch.manual_seed(hidden + steps)
    model = LastStep(cell, features, hidden).eval()
    x = torch.randn(batch, steps, features)
    compiled = lowerline.compile(model, x, num_threads=threads, cache_dir=cache_dir)
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)


# Row vectors whose widths take each branch of _row_vector_nr: a
# power-of-two divisor (384: 128), a masked last tile (200: 128 + 72),
# fewer columns than a vector (10).
@pytest.mark.parametrize("width", [384, 200, 10])
def test_row_vector_linear_matches_eager(cache_dir, width):
    torch.manual_seed(width)
    model = nn.Sequential(nn.Linear(77, width), nn.Tanh()).eval()
    x = torch.randn(1, 77)
    compiled = lowerline.compile(model, x, num_threads=1, cache_dir=cache_dir)
    assert compiled.fallbacks == []
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
