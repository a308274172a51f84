"""The command-line entry points: exit codes and one-line errors."""

import os
import subprocess
import sys

import pytest

from lowerline.tools import cli, opt
from lowerline.tools.errors import run_guarded


def test_internal_errors_are_one_line_without_traceback(capsys, monkeypatch):
    monkeypatch.delenv("LOWERLINE_DEBUG", raising=False)

    def broken(argv):
        raise KeyError("oops")

    assert run_guarded("prog", broken, []) == 2
    err = capsys.readouterr().err
    assert err == (
        "prog: internal error: KeyError: 'oops' (set LOWERLINE_DEBUG=1 for a traceback)\n"
    )


def test_opt_unknown_pass_is_one_line(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text("func.func @f() { return }\n")
    code = opt.main([str(source), "--pass-pipeline=builtin.module(nope)"])
    assert code == 1
    err = capsys.readouterr().err
    assert err == ("lowerline-opt: <pass-pipeline>:1:16: error: unknown pass or pipeline 'nope'\n")


def test_opt_failure_leaves_no_output_file(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text("func.func @f() { return %x : i32 }\n")
    out = tmp_path / "out.mlir"
    assert opt.main([str(source), "-o", str(out)]) == 1
    assert not out.exists()
    assert "error: use of undeclared SSA value name" in capsys.readouterr().err


def test_cli_run_prints_results(capsys):
    from lowerline.examples import EXAMPLES_DIR

    assert cli.main(["run", f"{EXAMPLES_DIR}/mlp.mlir"]) == 0
    out = capsys.readouterr().out
    assert "@mlp: lowered to LLVM and ran on the CPU" in out
    assert "result #0: float32[3, 4]" in out


@pytest.mark.parametrize("argv", [["run", "/nonexistent.mlir"]])
def test_cli_errors_exit_1(argv, capsys):
    assert cli.main(argv) == 1
    assert capsys.readouterr().err.startswith("lowerline: error: cannot open input file")


def test_a_pass_failing_without_diagnostics_still_says_so(tmp_path, capsys):
    from dataclasses import dataclass

    from lowerline.pipeline.pass_api import Pass, PassFailed
    from lowerline.pipeline.registry import register_pass

    @register_pass
    @dataclass(frozen=True)
    class FailsSilently(Pass):
        flag = "test-fails-silently"
        summary = "test only: signals failure without a diagnostic"

        def run(self, op):
            raise PassFailed()

    source = tmp_path / "in.mlir"
    source.write_text("func.func @f() { return }\n")
    code = opt.main([str(source), "--pass-pipeline=builtin.module(test-fails-silently)"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"{source}: error: pass pipeline failed in 'test-fails-silently' on 'builtin.module'\n"
    )


I1_STORE = """
func.func @i1_store(%m: memref<4xi1>, %v: i1) {
  %c0 = arith.constant 0 : index
  memref.store %v, %m[%c0] : memref<4xi1>
  return
}
"""


def test_opt_program_survives_an_llvm_abort_in_a_pass(tmp_path):
    """Issue 20: the program runs its driver in a forked child; the assertion
    in finalize-memref-to-llvm (an i1 store) is exit status 1, located."""
    source = tmp_path / "in.mlir"
    source.write_text(I1_STORE)
    command = [
        os.path.join(os.path.dirname(sys.executable), "lowerline-opt"),
        str(source),
        "--pass-pipeline=builtin.module(finalize-memref-to-llvm)",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOWERLINE_OPT")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.endswith(
        f"{source}:2:1: error: lowerline-opt crashed (SIGABRT) in pass "
        "'finalize-memref-to-llvm', on the input starting here: an abort inside MLIR/LLVM "
        "(a bug to report with this input); nothing was written for this run\n"
    )
    # In one process (for a debugger), the abort is the process's.
    env["LOWERLINE_OPT_IN_PROCESS"] = "1"
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == -6
