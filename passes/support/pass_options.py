"""Pass options that several passes declare alike, so that their flag text
and checks stay the same."""

from __future__ import annotations

from typing import Any

from lowerline.pipeline.options import opt
from lowerline.targets import check_cpu_target


def cpu_target_option() -> Any:
    """A ``target`` option: the CPU a pass plans for ('host' or a name of CPU_TARGETS)."""
    return opt(
        "host", "target description: 'host' or a name of CPU_TARGETS", check=check_cpu_target
    )
