"""lowerline's own dialects, declared in IRDL (``*.irdl.mlir``) with Python builders.

None exists yet: every stage so far is expressed in upstream dialects. The
quantization work on the roadmap is expected to add the first one here.
"""
