"""Ahead-of-time C artifacts: ``lowerline.export`` writes a header, a static
library with the weights linked in and a README for a C program on this
machine or another (AArch64 edge boards), with no lowerline, Python or MLIR
at run time.

``signature`` describes the compiled entry's arguments as C sees them,
``cgen`` writes the header, the wrapper that builds memref descriptors from
the caller's pointers, and the README, ``toolchain`` compiles and archives
for the target with its C compiler and the llvm wheel's tools, ``export`` is
the API and ``cli`` the ``lowerline export`` command.

At the level of the API: may import ``api``, ``driver``, ``frontend``,
``runtime`` (for ``runtime_support.c``), ``targets`` and ``errors``; only
the package's ``__init__`` and the tools import it.
"""
