"""tools/upstream_e2e.py, the runner of torch-mlir's e2e suite, on a synthetic
suite of our own written against its stand-in framework modules: a test that
passes, one whose module lowerline refuses, one that kills its worker and one
that hangs; each gets its class and the run goes on."""

from __future__ import annotations

import json
import textwrap

import torch

from lowerline.tools import upstream_e2e

SUITE = """
import os
import time

import torch

from torch_mlir_e2e_test.annotations import annotate_args, export
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class ScaleShift(torch.nn.Module):
    @export
    @annotate_args([None, ([-1, -1], torch.float32, True)])
    def forward(self, x):
        return x * 3.0 + 1.0


@register_test_case(module_factory=lambda: ScaleShift())
def ScaleShift_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 5))
    module.forward(tu.rand(1, 7, low=-2.0, high=2.0))


class NonzeroCount(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


@register_test_case(module_factory=lambda: NonzeroCount())
def NonzeroCount_refused(module, tu: TestUtils):
    module.forward(tu.randint(4, 4, high=2))


@register_test_case(module_factory=lambda: ScaleShift())
def WorkerDies_crash(module, tu: TestUtils):
    os._exit(3)


@register_test_case(module_factory=lambda: ScaleShift())
def Sleeps_timeout(module, tu: TestUtils):
    time.sleep(600)
"""


def _suite(tmp_path):
    folder = tmp_path / "suite" / "test_suite"
    folder.mkdir(parents=True)
    (folder / "synthetic.py").write_text(textwrap.dedent(SUITE))
    return str(tmp_path / "suite")


def test_runner_classifies_each_outcome_and_survives_crashes(tmp_path, capsys):
    root = _suite(tmp_path)
    report, results = tmp_path / "report.md", tmp_path / "results.json"
    code = upstream_e2e.main(
        [
            root,
            "--timeout",
            "30",
            "--log-dir",
            str(tmp_path / "logs"),
            "--report",
            str(report),
            "--json",
            str(results),
        ]
    )
    assert code == 1  # not every test passed
    outcomes = {o["name"]: o for o in json.loads(results.read_text())}
    assert set(outcomes) == {
        "ScaleShift_basic",
        "NonzeroCount_refused",
        "WorkerDies_crash",
        "Sleeps_timeout",
    }
    assert outcomes["ScaleShift_basic"]["passed"]
    assert outcomes["NonzeroCount_refused"]["kind"] in ("export", "unsupported-op")
    assert "nonzero" in outcomes["NonzeroCount_refused"]["detail"]
    assert outcomes["WorkerDies_crash"]["kind"] == "crash"
    assert "exited with 3" in outcomes["WorkerDies_crash"]["detail"]
    assert outcomes["Sleeps_timeout"]["kind"] == "timeout"
    text = report.read_text()
    assert "4 tests run (of 4 collected), **1 passed**" in text
    assert "framework, annotations, registry" in text  # the runner's stand-ins were used
    assert "PASS ScaleShift_basic" in capsys.readouterr().out


def test_filter_and_sample_are_deterministic(tmp_path):
    names = [f"T{i}_basic" for i in range(50)]
    first = upstream_e2e.select_tests(names, r"_basic$", 10, seed=7)
    assert first == upstream_e2e.select_tests(names, r"_basic$", 10, seed=7)
    assert len(first) == 10 and first != upstream_e2e.select_tests(names, None, 10, seed=8)
    expected = sorted(["T4_basic"] + [f"T4{i}_basic" for i in range(10)])
    assert upstream_e2e.select_tests(names, r"^T4", None, 0) == expected


def test_comparison_follows_the_suites_tolerances():
    golden = torch.tensor([1.0, float("nan"), 1e-9])
    assert upstream_e2e.mismatch(golden * (1 + 5e-4), golden) is None
    assert "values differ" in upstream_e2e.mismatch(golden * 1.01, golden)
    assert "dtype" in upstream_e2e.mismatch(golden.double(), golden)
    assert "shape" in upstream_e2e.mismatch(golden[:2], golden)
    assert upstream_e2e.mismatch((1, 2.0), (1, 2.0 * (1 + 5e-5))) is None
    assert "[0]" in upstream_e2e.mismatch((2, 2.0), (1, 2.0))
    assert "got a int" in upstream_e2e.mismatch(True and 1, True)
