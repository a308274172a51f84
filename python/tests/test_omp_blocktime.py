"""The OpenMP block time that compiled code runs with (runtime.py).

Each case runs in a new process: the OpenMP runtime reads its environment
once, and the block time is a setting of the calling thread. The compiled
library's own ``kmp_get_blocktime`` (found through its OpenMP dependency)
reports what the calling thread's team uses after a call.
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
get = lib.kmp_get_blocktime
get.restype = ctypes.c_int
print(get())
"""


def _blocktime_after_a_call(cache_dir: str, **env: str) -> str:
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir, **env}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


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
    assert _blocktime_after_a_call(cache_dir, **env) == expected


def test_a_bad_block_time_is_a_clear_error(cache_dir):
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir}
    environment["LOWERLINE_OMP_BLOCKTIME"] = "fast"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment
    )
    assert done.returncode != 0
    assert "LOWERLINE_OMP_BLOCKTIME takes milliseconds" in done.stderr
