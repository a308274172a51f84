"""Index-dependent reads of non-contiguous slices: ``flip``, reflection
padding, ``roll`` and indexing of ``x[..., ::2]``, ``x[..., 2:9]`` or a
complex tensor's real part. lowerline-vectorize makes them vector gathers
whose source bufferizes to a non-contiguous view. convert-vector-to-llvm
does not lower those with a non-unit innermost stride (the llvm stage
failed), and lowers the others with their row-major positions taken as
memory offsets (``x[..., 2:9]`` flipped read the wrong rows, silently).
Fixed by lowerline-unit-stride-gathers
(test/passes/lowerline-unit-stride-gathers.mlir)."""

import warnings

import pytest
import torch

import lowerline


class StridedReads(torch.nn.Module):
    def forward(self, x, index):
        every_other = x[..., ::2]
        every_third = x[..., 1::3]
        inner = x[..., 2:9]
        return (
            torch.flip(every_other, [-1]) * 2,
            every_third[..., index] + 1,
            torch.nn.functional.pad(every_other, (2, 1), mode="reflect"),
            torch.roll(every_third, 1, -1),
            torch.flip(inner, [-1]) * 2,
            inner[..., index] * 3,
        )


@pytest.mark.parametrize("batch", [1, 6])
@pytest.mark.parametrize("width", [13, 40])
def test_gathers_from_strided_slices_match_eager(batch, width, cache_dir):
    x = torch.randn(batch, 3, width)
    index = torch.tensor([2, 0, 3, 1, 1])
    model = StridedReads()
    compiled = lowerline.compile(model, x, index, cache_dir=cache_dir, num_threads=1)
    for got, want in zip(compiled(x, index), model(x, index), strict=True):
        torch.testing.assert_close(got, want)


class ComplexParts(torch.nn.Module):
    def forward(self, z):
        return torch.flip(z.real, [1]), torch.nn.functional.pad(z.imag, (1, 2), mode="reflect")


def test_gathers_from_complex_parts_match_eager(cache_dir):
    z = torch.randn(5, 7, dtype=torch.complex64)
    model = ComplexParts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = lowerline.compile(model, z, cache_dir=cache_dir, num_threads=1)
    for got, want in zip(compiled(z), model(z), strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize(("batch", "width"), [(1, 13), (6, 40)])
def test_gpu_reads_of_strided_slices_are_not_gathers(batch, width, cache_dir, tmp_path):
    """The GPU pipeline has no lowerline-unit-stride-gathers, and needs none:
    lowerline-gpu-distribute vectorizes only accesses it proved aligned, so
    index-dependent reads of strided slices stay one load per thread, at
    addresses computed from the view's strides. Should its vectorizer start
    making vector gathers of them, this fails, and the pass belongs in the
    GPU kernel lowering too."""
    x = torch.randn(batch, 3, width)
    index = torch.tensor([2, 0, 3, 1, 1])
    model = StridedReads()
    compiled = lowerline.compile(
        model, x, index, target="cuda:sm_90", cache_dir=cache_dir, dump_dir=str(tmp_path)
    )
    stages = sorted(tmp_path.glob("*.mlir"))
    assert stages
    for stage in stages:
        assert "vector.gather" not in stage.read_text(), stage.name
    assert "ld.global" in compiled.ptx
    for got, want in zip(compiled.run_on_cpu(x, index), model(x, index), strict=True):
        torch.testing.assert_close(got, want)
