"""The compile driver: the processes of a compile (the torch-mlir import worker,
the compile worker) and their memory bound, the random-number seed of a
compiled module, the artifact cache, object code and shared libraries,
and the command-line drivers (``lowerline-opt``, ``lowerline run``,
``lowerline compile``).

May import everything below it: ``pipeline``, ``cpu``, ``gpu``, ``runtime``,
``frontend``, ``targets``, ``weights``, ``errors``. Only the API and the tools
import the driver.
"""
