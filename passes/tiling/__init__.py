"""Passes of the CPU tiled stage (tile and fuse, Winograd convolutions, padding,
weight packing, vectorization) and the IR helpers only they use
(``conv_tiles``, ``window_tiles``, ``reduction_chunks``, ``row_kernels``,
``row_moments``, ``thread_reductions``, ``splat_reads``)."""
