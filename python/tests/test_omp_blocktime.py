"""The OpenMP block time and dynamic teams that compiled code runs with
(runtime/native.py).

Each case runs in a new process: the OpenMP runtime reads its environment
once, and both are settings of the calling thread. The compiled library's
own ``kmp_get_blocktime`` and ``omp_get_dynamic`` (found through its OpenMP
dependency) report what the calling thread's teams use after a call.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import ctypes, torch, lowerline
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).eval()
x = torch.randn(64, 256)
compiled = lowerline.compile(model, x, num_threads=2)
torch.testing.assert_close(compiled(x), model(x).detach())
lib = compiled.specializations[0].function._lib
print(lib.kmp_get_blocktime(), lib.omp_get_dynamic())
"""


def _settings_after_a_call(cache_dir: str, **env: str) -> tuple[str, str]:
    """The calling thread's block time and dynamic-teams flag after a call."""
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir, **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    blocktime, dynamic = done.stdout.strip().splitlines()[-1].split()
    return blocktime, dynamic


def _error_of(cache_dir: str, **env: str) -> str:
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir, **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment
    )
    assert done.returncode != 0
    return done.stderr


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # The default: spin 1 ms between the parallel regions of a call,
        # whatever KMP_BLOCKTIME says.
        ({"KMP_BLOCKTIME": "0", "OMP_WAIT_POLICY": "PASSIVE"}, "1"),
        ({"LOWERLINE_OMP_BLOCKTIME": "7", "KMP_BLOCKTIME": "0"}, "7"),
        # 'env' leaves the OpenMP runtime's own setting alone.
        ({"LOWERLINE_OMP_BLOCKTIME": "env", "KMP_BLOCKTIME": "3"}, "3"),
    ],
    ids=["default", "set", "env"],
)
def test_calls_set_the_block_time(cache_dir, env, expected):
    assert _settings_after_a_call(cache_dir, **env)[0] == expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        # The default: teams of the compiled size, whatever OMP_DYNAMIC says
        # (torch's own spinning pool would shrink them to one thread).
        ({"OMP_DYNAMIC": "true"}, "0"),
        ({"LOWERLINE_OMP_DYNAMIC": "1", "OMP_DYNAMIC": "false"}, "1"),
        # 'env' leaves the OpenMP runtime's own setting alone.
        ({"LOWERLINE_OMP_DYNAMIC": "env", "OMP_DYNAMIC": "false"}, "0"),
        ({"LOWERLINE_OMP_DYNAMIC": "env", "OMP_DYNAMIC": "true"}, "1"),
    ],
    ids=["default", "on", "env-false", "env-true"],
)
def test_calls_set_dynamic_teams(cache_dir, env, expected):
    assert _settings_after_a_call(cache_dir, **env)[1] == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LOWERLINE_OMP_BLOCKTIME": "fast"}, "LOWERLINE_OMP_BLOCKTIME takes milliseconds"),
        ({"LOWERLINE_OMP_DYNAMIC": "yes"}, "LOWERLINE_OMP_DYNAMIC takes 1"),
    ],
    ids=["blocktime", "dynamic"],
)
def test_a_bad_setting_is_a_clear_error(cache_dir, env, message):
    assert message in _error_of(cache_dir, **env)


SMALLER_TEAM = """
import torch, lowerline
torch.manual_seed(0)
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(520, 260)
    def forward(self, x):
        y = torch.softmax(self.linear(x), dim=-1)
        return y, x.abs().sum()
model = Model().eval()
x = torch.randn(129, 520)
compiled = lowerline.compile(model, x, num_threads=2)
for got, want in zip(compiled(x), model(x)):
    torch.testing.assert_close(got, want.detach())
print("same")
"""


def test_a_team_smaller_than_compiled_computes_the_same(cache_dir):
    # Dynamic teams may run the 2-thread code on 1 thread (a busy machine);
    # OMP_THREAD_LIMIT=1 makes every team that small, deterministically. The
    # sizes give two parallel regions (the matmul's rows, the whole-tensor
    # sum split in two) with per-thread scratch slots: none may depend on
    # the team's size.
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir, "OMP_THREAD_LIMIT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SMALLER_TEAM], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "same"
