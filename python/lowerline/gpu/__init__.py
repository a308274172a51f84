"""The NVIDIA GPU target: its stages as textual pipelines (``stages``), the
block/thread planner (``plan``), and what turns the llvm stage into
artifacts: the kernel launch plan and binaries (``artifacts``) and the CUDA
tools ptxas and fatbinary (``ptx``).

May import ``lowerline.pipeline`` (pass API, options: never the registry),
``lowerline.passes.support`` and ``lowerline.targets``.
"""
