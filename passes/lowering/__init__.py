"""Passes of the loops and llvm stages: OpenMP schedules, i1 memrefs, bf16
truncation and vector math that LLVM would otherwise call libm for, and the
explorer builds' kernel timers."""
