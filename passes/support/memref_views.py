"""Which memref ops view the memory of a memref operand (their memref results
alias it), for passes that follow a buffer through its views."""

from __future__ import annotations

# Ops whose memref results view (part of) the memory of their first operand.
VIEW_OPS = frozenset(
    {
        "memref.subview",
        "memref.cast",
        "memref.reinterpret_cast",
        "memref.expand_shape",
        "memref.collapse_shape",
        "memref.transpose",
        "memref.view",
        "memref.extract_strided_metadata",
        "memref.assume_alignment",
        "memref.memory_space_cast",
    }
)
