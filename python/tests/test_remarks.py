"""Remarks: the records passes publish, how they print, where they go."""

import pytest

from lowerline.pipeline.remarks import (
    DECISION,
    FALLBACK,
    Remark,
    collecting,
    frames_of,
    publish,
)

CALLSITE = (
    'loc(callsite("/t/pooling.py":224:0 at callsite("/t/container.py":250:0 at "/m.py":12:4)))'
)


def test_frames_are_the_file_locations_innermost_first():
    assert frames_of(CALLSITE) == ("/t/pooling.py:224:0", "/t/container.py:250:0", "/m.py:12:4")
    assert frames_of('loc("x.mlir":0:0)') == ()  # a parsed module's: says nothing
    assert frames_of("loc(unknown)") == ()


def test_a_remark_prints_like_mlir_with_its_callers_as_notes():
    remark = Remark("lowerline-x", "linalg.pooling_nchw_max", "left as loops: why", FALLBACK,
                    frames_of(CALLSITE))  # fmt: skip
    assert remark.location == "/t/pooling.py:224:0"
    assert remark.source_line == "/m.py:12:4"
    assert remark.format().splitlines() == [
        "/t/pooling.py:224:0: remark: linalg.pooling_nchw_max: left as loops: why [lowerline-x]",
        "/t/container.py:250:0: note: called from",
        "/m.py:12:4: note: called from",
    ]
    assert Remark("p", "builtin.module", "target host").format() == (
        "remark: builtin.module: target host [p]"
    )


def test_remarks_survive_json():
    remark = Remark("p", "linalg.matmul", "g0: matmul", DECISION, ("a.mlir:3:5",))
    assert Remark.from_json(remark.to_json()) == remark


def test_kind_is_checked():
    with pytest.raises(ValueError, match="not one of decision, refusal, fallback"):
        Remark("p", "op", "m", "skipped")


def test_publish_reaches_every_open_collector_and_explain_prints(capsys):
    first = Remark("p", "op", "one")
    second = Remark("p", "op", "two")
    publish([first])  # nobody collects: dropped, nothing printed
    with collecting() as outer:
        publish([first])
        with collecting() as inner:
            publish([second], explain=True)
    publish([first])
    assert outer == [first, second]
    assert inner == [second]
    assert capsys.readouterr().err == "remark: op: two [p]\n"
