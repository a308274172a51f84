from lowerline.pipeline.diagnostics import Diag, parse_expectations, verify_expectations

SOURCE = """\
// expected-error@below {{first}}
// expected-note@below {{attached}}
op1
op2 // expected-warning {{same line}}
op3
// expected-remark@-1 {{previous}}
// expected-error@+2 {{two down}}

op4
op5
// expected-error@above {{above skips designators}}
"""


def test_designators_resolve_like_mlir_opt():
    found = {(e.severity, e.message): e.line for e in parse_expectations(SOURCE)}
    assert found == {
        ("error", "first"): 3,
        ("note", "attached"): 3,
        ("warning", "same line"): 4,
        ("remark", "previous"): 5,
        ("error", "two down"): 9,
        ("error", "above skips designators"): 10,
    }


def test_first_line_offsets_split_chunks():
    (e,) = parse_expectations("op\n// expected-error@-1 {{x}}\n", first_line=20)
    assert (e.line, e.source_line) == (20, 21)


def test_matching_needs_severity_line_and_substring():
    expectations = parse_expectations("op // expected-error {{bad op}}\n")
    diags = [Diag("error", "f.mlir", 1, 1, "this is a bad op indeed")]
    assert verify_expectations(diags, expectations, "f.mlir") == []


def test_unexpected_and_missing_are_both_reported():
    expectations = parse_expectations("op // expected-error {{wanted}}\n")
    diags = [Diag("warning", "f.mlir", 1, 4, "surprise")]
    problems = verify_expectations(diags, expectations, "f.mlir")
    assert problems == [
        "f.mlir:1:4: error: unexpected warning: surprise",
        'f.mlir:1: error: expected error "wanted" was not produced',
    ]
