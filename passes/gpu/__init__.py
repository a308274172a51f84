"""Passes of the GPU stages (thread blocks, threads and shared memory, launches,
device buffers) and the alignment analysis only they use (``alignment``)."""
