import pytest

from lowerline.pipeline.parser import (
    NestedPipeline,
    PassElement,
    PipelineSyntaxError,
    parse_elements,
    parse_pipeline,
)


def test_nested_pipeline_keeps_structure_and_offsets():
    text = "builtin.module(func.func(canonicalize, lowerline-x{a=1 b={2,3}}),cse)"
    pipeline = parse_pipeline(text)
    assert pipeline.anchor == "builtin.module"
    func, cse = pipeline.elements
    assert isinstance(func, NestedPipeline) and func.anchor == "func.func"
    assert [e.name for e in func.elements] == ["canonicalize", "lowerline-x"]
    assert func.elements[1].options == "a=1 b={2,3}"
    assert text[func.elements[1].pos :].startswith("lowerline-x")
    assert isinstance(cse, PassElement) and text[cse.pos :].startswith("cse")


def test_text_round_trips_through_mlir_syntax():
    text = "builtin.module(func.func(canonicalize{max-iterations=3}),cse)"
    assert parse_pipeline(text).text() == text


def test_quoted_braces_in_options_do_not_close_them():
    (element,) = parse_elements("p{s='a}b' t=1}")
    assert element.options == "s='a}b' t=1"


def test_empty_nested_pipeline_is_allowed():
    assert parse_pipeline("builtin.module()").elements == []


@pytest.mark.parametrize(
    ("text", "pos", "fragment"),
    [
        ("canonicalize", 0, "wrapped in its anchor op"),
        ("builtin.module(cse", 18, "expected ')'"),
        ("builtin.module(cse))", 19, "unexpected text"),
        ("builtin.module(,cse)", 15, "expected a pass or anchor name"),
        ("builtin.module(p{a=1)", 16, "unbalanced '{'"),
    ],
)
def test_syntax_errors_point_at_the_fault(text, pos, fragment):
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    assert info.value.pos == pos
    assert fragment in info.value.message


def test_deep_pipelines_are_a_located_error_not_a_recursion_error(tmp_path):
    """Issue 20 item 4: a 500-deep pipeline gave a RecursionError (status 2)."""
    from lowerline.tools import opt

    source = tmp_path / "in.mlir"
    source.write_text("func.func @f() { return }\n")
    deep = "builtin.module(" * 500 + ")" * 500
    with pytest.raises(PipelineSyntaxError, match="nested deeper than 64 anchors") as err:
        parse_pipeline(deep)
    assert err.value.pos == 960
    assert opt.main([str(source), f"--pass-pipeline={deep}"]) == 1
