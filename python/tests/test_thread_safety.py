"""Compiling new shapes while other threads call the compiled module and the
eager one (issue 20 item 5).

Before exports ran on a snapshot, one at a time: the export failed with
"Unexpected key _export_root.1", and other threads' eager PyTorch computed
with the fake tensors export had swapped into the live module
(DataDependentOutputException in a plain ``torch.allclose``).
"""

from __future__ import annotations

import threading

import torch

import lowerline


def test_new_shapes_from_four_threads_beside_eager_calls(cache_dir):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)
    ).eval()
    compiled = lowerline.compile(model, torch.randn(2, 16), cache_dir=cache_dir)
    errors: list[str] = []
    checked = [0]

    def worker(index: int) -> None:
        try:
            for step in range(6):
                x = torch.randn(3 + (index * 6 + step) % 5, 16)  # batches 3..7: new shapes
                with torch.no_grad():
                    y = compiled(x) if (index + step) % 2 else model(x)
                    expected = model(x)
                assert torch.allclose(y, expected, atol=1e-5), f"thread {index}: wrong result"
                checked[0] += 1
        except Exception as err:
            errors.append(f"{type(err).__name__}: {str(err)[:300]}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert checked[0] == 24
    compiled_batches = {3 + (i * 6 + s) % 5 for i in range(4) for s in range(6) if (i + s) % 2}
    assert len(compiled.specializations) == 1 + len(compiled_batches - {2})
