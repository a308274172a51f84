"""PyTorch frontend. ``import_worker`` is the only module of lowerline that
imports ``torch_mlir``, and it runs in its own process (DESIGN.md: two MLIRs
must not meet in a process that generates code). ``fastpath`` writes out
torch's fused inference kernels that TorchDynamo graphs call and
``torch.export`` never sees (for ``lowerline.dynamo``)."""
