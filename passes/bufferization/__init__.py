"""Passes of the bufferized stage: buffers per value, repeated results,
strided copies."""
