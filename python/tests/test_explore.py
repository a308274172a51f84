"""The explorer's data: the per-pass trace the stage runner keeps, what the
page is built from (locations, elided constants, diffs, op counts, the arena
plan), ``lowerline-opt --explore`` and ``compiled.explore``. The page in a
browser: test_explore_browser.py."""

from __future__ import annotations

import os

import torch

import lowerline
from lowerline.explore import memory_plan, report
from lowerline.tools import opt

ADD_RELU = """\
func.func @add_relu(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %e = tensor.empty() : tensor<3x5xf32>
  %0 = linalg.add ins(%a, %b : tensor<3x5xf32>, tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %c = arith.constant 0.0 : f32
  %z = linalg.fill ins(%c : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %1 = linalg.max ins(%0, %z : tensor<3x5xf32>, tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}
"""


def _explore(tmp_path, pipeline: str, source: str = ADD_RELU, *extra: str) -> tuple[int, str]:
    path = tmp_path / "in.mlir"
    path.write_text(source)
    page = str(tmp_path / "page.html")
    args = [str(path), f"--pass-pipeline={pipeline}", "--explore", page, "-o", os.devnull, *extra]
    return opt.main(args), page


def test_shorten_dense_keeps_small_payloads_and_cuts_large_ones():
    small = "%c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>"
    assert report.shorten_dense(small) == small
    hex_payload = '"0x' + "AB" * 400 + '"'
    line = f"%w = arith.constant dense<{hex_payload}> : tensor<200xf32>"
    short = report.shorten_dense(line)
    assert "AB" * 60 not in short
    assert short.startswith("%w = arith.constant dense<") and short.endswith("> : tensor<200xf32>")
    assert f"{len(hex_payload)} chars elided" in short
    # Nested brackets and a quoted '>' do not end the payload early.
    nested = "dense<[" + ", ".join(["[1, 2]"] * 60) + ', ">"]> : x'
    assert report.shorten_dense(nested).endswith("> : x")


def test_clean_ir_resolves_call_site_locations_to_the_outer_line():
    text = "\n".join(
        [
            "module {",
            "  %0 = arith.addf %a, %b : f32 loc(#loc3)",
            "  %1 = arith.mulf %0, %b : f32 loc(#loc4)",
            "} loc(#loc)",
            "#loc = loc(unknown)",
            '#loc1 = loc("/torch/nn/functional.py":20:0)',
            '#loc2 = loc("/models/net.py":7:0)',
            "#loc3 = loc(callsite(#loc1 at #loc2))",
            '#loc4 = loc("/models/net.py":9:4)',
        ]
    )
    cleaned = report.clean_ir(text)
    assert cleaned.lines == [
        "module {",
        "  %0 = arith.addf %a, %b : f32",
        "  %1 = arith.mulf %0, %b : f32",
        "}",
    ]
    assert cleaned.sources == {1: "/models/net.py:7", 2: "/models/net.py:9"}


def test_delta_rebuilds_the_text_and_marks_only_changed_lines():
    before = ["a", "b", "c", "d"]
    after = ["a", "B", "c", "d", "e"]
    edits = report.delta(before, after, [-1, 4, -1, -1, 5])
    assert [0, 0, 1] in edits and [1, 1, 2] in edits
    assert [e[1] for e in edits if e[0] == 2] == ["B", "e"]


def test_op_counts():
    lines = [
        "module {",
        "  func.func @f() {",
        "    %0 = linalg.generic {",
        "    linalg.yield %x : f32",
    ]
    lines += ['    %1:2 = "test.op"() : () -> (i32, i32)', "    return", "  }", "}"]
    assert report.op_counts(lines) == {
        "func.func": 1,
        "linalg.generic": 1,
        "linalg.yield": 1,
        "test.op": 1,
    }


def test_memory_plan_reads_offsets_sizes_and_live_ranges():
    lines = [
        "  func.func @main(%arg0: memref<4xf32>, %arg1: memref<?xi8>) attributes {lowerline.arena = array<i64: 128, 64>} {",
        "    %c0 = arith.constant 0 : index",
        "    %c64 = arith.constant 64 : index",
        "    %view = memref.view %arg1[%c0][] : memref<?xi8> to memref<4xf32>",
        "    %view_1 = memref.view %arg1[%c64][] : memref<?xi8> to memref<2x3xf32>",
        "    %e = memref.expand_shape %view [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>",
        "    linalg.fill ins(%cst : f32) outs(%view_1 : memref<2x3xf32>)",
        "    scf.for %i = %c0 to %c64 step %c64 {",
        "      memref.store %x, %e[%i, %i] : memref<2x2xf32>",
        "    }",
        "    return",
        "  }",
    ]
    plan = memory_plan.read_plan(lines)
    assert plan is not None
    assert (plan["function"], plan["bytes"], plan["lower_bound"]) == ("main", 128, 64)
    first, second = plan["buffers"]
    # %view lives until its expanded view's last use, inside the loop.
    assert (first["offset"], first["bytes"], first["start"], first["end"]) == (0, 16, 2, 7)
    assert (second["offset"], second["bytes"], second["start"], second["end"]) == (64, 24, 3, 5)
    assert plan["per_thread"] == 0
    assert memory_plan.read_plan(["func.func @f() {", "}"]) is None
    # A view at an offset computed from the thread number is counted, not placed.
    threaded = [
        *lines[:4],
        "    %slot = memref.view %arg1[%off][] : memref<?xi8> to memref<4xf32>",
        *lines[4:],
    ]
    plan = memory_plan.read_plan(threaded)
    assert plan is not None and plan["per_thread"] == 1 and len(plan["buffers"]) == 2


def test_opt_explore_records_every_pass_with_diffs(tmp_path):
    pipeline = "builtin.module(func.func(linalg-generalize-named-ops),canonicalize,cse)"
    code, page = _explore(tmp_path, pipeline)
    assert code == 0
    data = report.read_page(page)
    labels = [p["label"] for p in data["passes"]]
    assert labels == ["(input)", "func.func(linalg-generalize-named-ops)", "canonicalize", "cse"]
    generalized = data["passes"][1]
    assert generalized["changed"]
    after = report.page_text(data, generalized["text"])
    assert sum("linalg.generic" in line for line in after) == 3
    assert not any("linalg.add" in line for line in after)
    removed = [e for e in data["texts"][generalized["text"]] if e[0] == 1]
    assert removed, "the named ops show as removed lines"
    # Every op line of the input keeps its line of in.mlir.
    assert any(loc.endswith("in.mlir:3") for loc in data["locs"])
    assert data["sources"][str(tmp_path / "in.mlir")][2].lstrip().startswith("%0 = linalg.add")
    assert data["stages"][-1]["ops"]["linalg.generic"] == 3


def test_opt_explore_keeps_the_passes_before_a_failure(tmp_path):
    # linalg-generalize-named-ops runs; the bad IR for lowerline-require-llvm-dialect fails.
    pipeline = (
        "builtin.module(func.func(linalg-generalize-named-ops),lowerline-require-llvm-dialect)"
    )
    code, page = _explore(tmp_path, pipeline)
    assert code == 1
    labels = [p["label"] for p in report.read_page(page)["passes"]]
    assert labels == ["(input)", "func.func(linalg-generalize-named-ops)"]


def test_opt_explore_refuses_split_input(tmp_path, capsys):
    code, page = _explore(tmp_path, "builtin.module(cse)", ADD_RELU, "--split-input-file")
    assert code == 1
    assert "--explore shows one module" in capsys.readouterr().err
    assert not os.path.exists(page)


def test_large_constants_are_elided_in_the_page(tmp_path):
    values = ", ".join(f"{i}.5" for i in range(300))
    source = (
        "func.func @f(%x: tensor<300xf32>) -> tensor<300xf32> {\n"
        f"  %w = arith.constant dense<[{values}]> : tensor<300xf32>\n"
        "  %e = tensor.empty() : tensor<300xf32>\n"
        "  %0 = linalg.add ins(%x, %w : tensor<300xf32>, tensor<300xf32>) outs(%e : tensor<300xf32>) -> tensor<300xf32>\n"
        "  return %0 : tensor<300xf32>\n"
        "}\n"
    )
    code, page = _explore(tmp_path, "builtin.module(canonicalize)", source)
    assert code == 0
    with open(page, encoding="utf-8") as handle:
        text = handle.read()
    assert "150.5" not in text.split('<script id="lowerline-data"')[1].split('"sources"')[0]
    assert os.path.getsize(page) < 200_000


class _TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(7, 5)
        self.second = torch.nn.Linear(5, 3)

    def forward(self, x):
        hidden = torch.relu(self.first(x))
        return self.second(hidden)


def test_compiled_explore_on_odd_shapes(tmp_path):
    torch.manual_seed(0)
    model = _TwoLayers().eval()
    x = torch.randn(3, 7)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path / "cache"))
    page = compiled.explore(str(tmp_path / "page.html"), bisect=str(tmp_path / "bisect"))
    data = report.read_page(page)
    stages = [s["name"] for s in data["stages"]]
    assert stages == ["input", "graph", "tiled", "bufferized", "loops", "llvm"]
    # Every stage's IR ran on the inputs (lowered the rest of the way and
    # JIT-compiled), and so did the library: all inside the tolerance.
    assert [row["stage"] for row in data["numerics"]] == [*stages[1:], "library"]
    assert all(row["ok"] for row in data["numerics"]), data["numerics"]
    assert data["notes"] == []
    assert data["bisection"] == {"divergence": None}  # every pass right
    assert data["memory"] is not None and data["memory"]["function"] == "main"
    assert any(r["kind"] == "decision" for r in data["remarks"])
    # Ops point at the lines of forward above, whose source the page holds.
    forward = [loc for loc in data["locs"] if loc.startswith(__file__ + ":")]
    assert forward
    lines = data["sources"][__file__]
    assert {lines[int(loc.rsplit(":", 1)[1]) - 1].strip() for loc in forward} <= {
        "hidden = torch.relu(self.first(x))",
        "return self.second(hidden)",
    }


def test_bad_paths_are_named(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text(ADD_RELU)
    blocked = tmp_path / "file"
    blocked.write_text("")
    page = str(blocked / "page.html")  # a folder inside a file
    code = opt.main([str(source), "--pass-pipeline=builtin.module(cse)", "--explore", page])
    assert code == 1
    assert f"cannot write the explorer's page '{page}'" in capsys.readouterr().err
    from lowerline.tools import cli

    assert cli.main(["explore", str(source), "-o", str(tmp_path / "x.html")]) == 1
    assert "lowerline explore takes a model's .py file" in capsys.readouterr().err


def test_a_quantized_model_s_page_holds_its_quant_report(tmp_path):
    torch.manual_seed(0)
    model = _TwoLayers().eval()
    batches = [torch.randn(3, 7) for _ in range(4)]
    compiled = lowerline.compile(
        model,
        batches[0],
        cache_dir=str(tmp_path / "cache"),
        quantize=lowerline.quant.Int8(calibration=batches),
    )
    data = report.read_page(compiled.explore(str(tmp_path / "page.html")))
    quantization = data["quantization"]
    assert [layer["kind"] for layer in quantization["layers"]] == ["linear", "linear"]
    assert quantization["ok"] and all(
        layer["max_steps"] <= 1 and "i8" in layer["kernel"] for layer in quantization["layers"]
    )
    # A float model's page has none.
    plain = lowerline.compile(model, batches[0], cache_dir=str(tmp_path / "cache"))
    assert report.read_page(plain.explore(str(tmp_path / "plain.html")))["quantization"] is None
