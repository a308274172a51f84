import pytest

from lowerline.targets import CPU_TARGETS, cpu_target, describe_host, host_cpu, host_flags


def test_host_is_described_from_flags_and_caches():
    flags = {"fma", "avx2", "avx512f", "avx512_vnni", "amx_tile", "avx512_bf16"}
    caches = {"L1": 48 << 10, "L2": 2 << 20, "L3": 105 << 20}
    target = describe_host(flags, caches, cores=2, machine="x86_64")
    assert (target.vector_bits, target.f32_lanes) == (512, 16)
    assert target.fma and target.vnni and target.amx and target.bf16
    assert (target.l1d_bytes, target.l2_bytes, target.cores) == (48 << 10, 2 << 20, 2)


def test_avx2_only_host_has_256_bit_vectors_and_no_amx():
    target = describe_host({"fma", "avx2"}, {}, cores=8, machine="x86_64")
    assert target.vector_bits == 256 and not target.amx and not target.vnni
    assert target.l1d_bytes == 32 << 10  # a default when sysfs says nothing


def test_aarch64_host_uses_neon_width():
    target = describe_host({"asimd", "asimddp"}, {"L1": 64 << 10}, cores=4, machine="aarch64")
    assert target.triple.startswith("aarch64") and target.vector_bits == 128 and target.vnni


def test_this_machine_is_detected():
    host = host_cpu()
    assert host.cores >= 1 and host.vector_bits in (128, 256, 512) and host.l1d_bytes > 0


def test_named_targets_and_errors():
    assert cpu_target("cpu:haswell") is CPU_TARGETS["haswell"]
    assert cpu_target("cpu") is host_cpu()
    with pytest.raises(ValueError, match="unknown CPU target 'pentium'"):
        cpu_target("cpu:pentium")


def test_required_flags_come_from_the_cpu_and_its_features():
    zen4 = describe_host({"avx2", "avx512f", "fma", "avx512_vnni"}, {}, cores=2, machine="x86_64")
    assert zen4.cpu == "x86-64-v4" and zen4.llvm_features == "+avx512vnni"
    assert {"avx512f", "avx512bw", "fma", "avx512_vnni"} <= zen4.required_flags
    assert "amx_tile" not in zen4.required_flags
    # With AVX512-BF16 (Zen 4): vdpbf16ps for precision="bf16" matmuls.
    bf16 = describe_host(
        {"avx2", "avx512f", "fma", "avx512_vnni", "avx512_bf16"}, {}, cores=2, machine="x86_64"
    )
    assert bf16.llvm_features == "+avx512vnni,+avx512bf16"
    assert "avx512_bf16" in bf16.required_flags
    assert "amx_tile" in CPU_TARGETS["sapphirerapids"].required_flags
    assert "avx512f" not in CPU_TARGETS["haswell"].required_flags
    arm = describe_host({"asimd", "asimddp"}, {}, cores=4, machine="aarch64")
    assert arm.llvm_features == "+dotprod" and "asimddp" in arm.required_flags


def test_every_named_target_has_a_feature_list():
    for target in CPU_TARGETS.values():
        assert target.required_flags
    # Code compiled for this machine may use only what it has.
    assert host_cpu().required_flags <= host_flags()


def _lacking_targets() -> list[tuple[str, list[str]]]:
    """Named targets of this architecture whose features this host lacks
    (cpu:sapphirerapids on a host without AMX, for one), from the data."""
    from lowerline.targets import host_arch

    return [
        (name, sorted(t.required_flags - host_flags()))
        for name, t in CPU_TARGETS.items()
        if t.arch == host_arch() and not t.required_flags <= host_flags()
    ]


def test_a_call_of_code_for_a_cpu_this_one_is_not_is_refused(tmp_path):
    import torch

    import lowerline

    lacking = _lacking_targets()
    if not lacking:
        pytest.skip("this CPU has the features of every named target of its architecture")
    name, missing = lacking[0]
    model = torch.nn.Sequential(torch.nn.Linear(13, 7), torch.nn.ReLU()).eval()
    x = torch.randn(3, 13)
    compiled = lowerline.compile(model, x, target=f"cpu:{name}", cache_dir=str(tmp_path))
    for _ in range(2):  # refused every time, not only before a fast path exists
        with pytest.raises(lowerline.ForeignTargetError) as info:
            compiled(x)
        assert f"target 'cpu:{name}'" in str(info.value)
        assert f"this CPU lacks: {', '.join(missing)})" in str(info.value)
    assert "llvm" in compiled.ir("llvm")  # what a foreign target is compiled for stays usable


def test_code_this_machine_runs_is_not_refused():
    from lowerline.api import _foreign_code
    from lowerline.targets import host_arch, runs_here

    assert _foreign_code("cpu") is None
    assert _foreign_code("cuda:sm_90") is None  # the CUDA runtime checks the device
    for name, target in CPU_TARGETS.items():
        refusal = _foreign_code(f"cpu:{name}")
        assert (refusal is None) == runs_here(target)
        if target.arch != host_arch():
            assert refusal is not None
            assert f"({target.arch} code; this machine is {host_arch()})" in refusal
