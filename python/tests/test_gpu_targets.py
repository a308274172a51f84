import dataclasses

import pytest

from lowerline.targets import GPU_TARGETS, GpuTarget, cpu_target, gpu_target, is_gpu_target


def test_both_spellings_name_the_same_target():
    assert gpu_target("cuda:sm_80") is GPU_TARGETS["sm_80"]
    assert gpu_target("sm_90") is GPU_TARGETS["sm_90"]
    assert gpu_target("cuda:sm_90a") is GPU_TARGETS["sm_90a"]


@pytest.mark.parametrize("name", ["cuda:sm_75", "sm_100", "cuda:", "cuda:SM_80", "cpu:haswell"])
def test_unknown_names_list_the_known_ones(name):
    with pytest.raises(ValueError) as info:
        gpu_target(name)
    message = str(info.value)
    assert f"unknown GPU target '{name}'" in message
    assert "cuda:sm_80, cuda:sm_90, cuda:sm_90a" in message


def test_is_gpu_target():
    assert is_gpu_target("cuda:sm_80") and is_gpu_target("cuda:anything")
    assert not is_gpu_target("cpu") and not is_gpu_target("cpu:haswell")
    assert not is_gpu_target("sm_80")  # a bare chip is no target string


def test_a100_and_h100_limits():
    a100, h100 = gpu_target("sm_80"), gpu_target("sm_90")
    assert (a100.sm, a100.chip, a100.sm_count) == (80, "sm_80", 108)
    assert (h100.sm, h100.chip, h100.sm_count) == (90, "sm_90", 132)
    assert a100.shared_memory_per_block_optin == 166912  # 163 KiB
    assert h100.shared_memory_per_block_optin == 232448  # 227 KiB
    assert a100.shared_memory_per_sm == 164 << 10 and h100.shared_memory_per_sm == 228 << 10
    assert (a100.l2_bytes, h100.l2_bytes) == (40 << 20, 50 << 20)
    for target in GPU_TARGETS.values():
        assert target.shared_memory_per_block == 48 << 10
        assert target.shared_memory_per_block < target.shared_memory_per_block_optin
        assert target.shared_memory_per_block_optin < target.shared_memory_per_sm
        assert (target.warp_size, target.max_threads_per_block) == (32, 1024)
        assert (target.registers_per_thread, target.registers_per_sm) == (255, 65536)
        assert target.triple == "nvptx64-nvidia-cuda"


def test_ptx_version_and_features_agree():
    for name, target in GPU_TARGETS.items():
        assert target.name == target.chip == name
        assert target.features == f"+ptx{target.ptx_version}"
        assert target.ptx_version >= 80  # sm_90a needs PTX ISA 8.0


def test_only_sm_90a_has_wgmma():
    assert "wgmma" in gpu_target("sm_90a").tensor_cores
    assert "wgmma" not in gpu_target("sm_90").tensor_cores
    assert "wgmma" not in gpu_target("sm_80").tensor_cores
    for target in GPU_TARGETS.values():
        assert {"mma.sync.f16", "mma.sync.bf16", "mma.sync.tf32"} <= set(target.tensor_cores)


def test_targets_are_frozen_and_keyword_built():
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu_target("sm_80").sm_count = 1
    with pytest.raises(TypeError):
        GpuTarget("x", "sm_80", 80, 80, "+ptx80", 32)  # limits only by keyword


def test_cpu_targets_are_unchanged():
    assert cpu_target("cpu:haswell").vector_bits == 256
    with pytest.raises(ValueError, match="unknown CPU target 'sm_80'"):
        cpu_target("cpu:sm_80")
