"""The compile driver: the processes of a compile (the torch-mlir import worker,
the compile worker) and their memory bound, the random-number seed of a
compiled module, the artifact cache, object code and shared libraries,
the command-line drivers (``lowerline-opt``, ``lowerline run``,
``lowerline compile``), the progress line on a terminal, every stage's
numerics and the bisection to the first divergent pass.

May import everything below it: ``pipeline``, ``cpu``, ``gpu``, ``runtime``,
``frontend``, ``targets``, ``weights``, ``errors``, and the explorer's page
writer (``explore.report``: ``lowerline-opt --explore``). Only the API, the
tools and the explorer import the driver.
"""
