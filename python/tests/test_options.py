from dataclasses import dataclass

import pytest

from lowerline.pipeline.options import (
    OptionError,
    describe_options,
    format_options,
    opt,
    parse_options,
)


@dataclass(frozen=True)
class Knobs:
    max_depth: int = opt(4, "how deep")
    enable: bool = opt(False, "switch")
    scale: float = opt(1.0, "factor")
    name: str = opt("x", "label")
    sizes: tuple[int, ...] = opt((8, 32), "tile sizes")


def test_parses_every_type():
    knobs = parse_options(Knobs, "max-depth=7 enable scale=0.5 name='a b' sizes={1,2,3}", "p")
    assert knobs == Knobs(7, True, 0.5, "a b", (1, 2, 3))


def test_bool_accepts_explicit_values_and_lists_accept_bare_commas():
    assert parse_options(Knobs, "enable=false sizes=4,5", "p") == Knobs(enable=False, sizes=(4, 5))


def test_format_prints_only_changed_options_and_round_trips():
    knobs = Knobs(max_depth=2, sizes=(1, 2))
    text = format_options(knobs)
    assert text == "max-depth=2 sizes=1,2"
    assert parse_options(Knobs, text, "p") == knobs


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("depth=3", "'p' has no option 'depth' (its options: enable, max-depth, name, scale"),
        ("max-depth=three", "option 'max-depth' of 'p' expects int, got 'three'"),
        ("enable=maybe", "option 'enable' of 'p' expects bool, got 'maybe'"),
        ("sizes=1,x", "expects list of int"),
        ("max-depth", "needs a value"),
    ],
)
def test_bad_options_name_the_option(text, fragment):
    with pytest.raises(OptionError, match=None) as info:
        parse_options(Knobs, text, "p")
    assert fragment in str(info.value)


def test_only_restricts_accepted_and_listed_options():
    with pytest.raises(OptionError):
        parse_options(Knobs, "enable", "p", only=("max_depth",))
    assert [row[0] for row in describe_options(Knobs, only=("max_depth",))] == ["max-depth"]
