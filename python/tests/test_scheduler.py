import pytest

from lowerline.pipeline.context import make_context
from lowerline.pipeline.scheduler import (
    NestStep,
    PipelineError,
    PythonStep,
    UpstreamStep,
    plan_pipeline,
)


@pytest.fixture(scope="module")
def context():
    return make_context()


def kinds(steps):
    return [type(s).__name__ for s in steps]


def test_upstream_runs_merge_into_one_mlir_pipeline(context):
    steps = plan_pipeline("builtin.module(canonicalize,func.func(cse),cse)", context)
    assert kinds(steps) == ["UpstreamStep"]
    assert steps[0].text == "canonicalize,func.func(cse),cse"


def test_lowerline_pass_splits_the_pipeline_and_nests(context):
    text = "builtin.module(canonicalize,func.func(cse,lowerline-widen-i1-memrefs,cse),cse)"
    steps = plan_pipeline(text, context)
    assert kinds(steps) == ["UpstreamStep", "NestStep", "UpstreamStep"]
    nest = steps[1]
    assert isinstance(nest, NestStep) and nest.anchor == "func.func"
    assert kinds(nest.steps) == ["UpstreamStep", "PythonStep", "UpstreamStep"]


def test_named_pipelines_expand_in_place(context):
    steps = plan_pipeline("builtin.module(lowerline-to-llvm)", context)
    assert isinstance(steps[0], PythonStep)
    assert steps[0].pass_.flag == "lowerline-widen-i1-memrefs"
    steps = plan_pipeline("builtin.module(lowerline-to-llvm{widen-i1=false})", context)
    python_flags = [s.pass_.flag for s in steps if isinstance(s, PythonStep)]
    assert python_flags == [
        "lowerline-expand-bf16-truncf",
        "lowerline-check-integer-division",
        "lowerline-report-failed-asserts",
        "lowerline-minmax-accumulators",
        "lowerline-expand-minmax-reductions",
        "lowerline-approximate-exp",
        "lowerline-approximate-math",
        "lowerline-require-llvm-dialect",
    ]
    assert not any("lowerline-widen-i1-memrefs" in s.text for s in steps if hasattr(s, "text"))


def test_fine_mode_gives_each_pass_its_own_step(context):
    steps = plan_pipeline("builtin.module(canonicalize,func.func(cse,canonicalize))", context, True)
    assert kinds(steps) == ["UpstreamStep", "NestStep"]
    assert [s.text for s in steps[1].steps] == ["cse", "canonicalize"]
    assert all(isinstance(s, UpstreamStep) for s in steps[1].steps)


@pytest.mark.parametrize(
    ("text", "col", "fragment"),
    [
        ("builtin.module(cse,canonicalise)", 19, "unknown pass or pipeline 'canonicalise'"),
        ("builtin.module(canonicalize{bogus=1})", 15, "invalid options 'bogus=1'"),
        ("builtin.module(lowerline-widen-i1-memrefs{x=1})", 15, "has no option 'x'"),
        ("builtin.module(lowerline-to-graph{widen-i1=1})", 15, "has no option 'widen-i1'"),
        ("builtin.module(func.func(lowerline-cpu-pipeline))", 25, "runs on 'builtin.module'"),
        ("builtin.module(cse", 18, "expected ')'"),
    ],
)
def test_planning_errors_carry_the_offset(context, text, col, fragment):
    with pytest.raises(PipelineError) as info:
        plan_pipeline(text, context)
    assert info.value.pos == col
    assert fragment in info.value.message
