"""Passes of the bufferized stage: buffers per value, repeated results,
strided copies, and the arena that holds an entry function's buffers."""
