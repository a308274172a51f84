"""PyTorch frontend. ``import_worker`` is the only module of lowerline that
imports ``torch_mlir``, and it runs in its own process (DESIGN.md: two MLIRs
must not meet in a process that generates code)."""
