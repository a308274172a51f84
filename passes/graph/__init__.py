"""Graph-stage passes: rewrites of linalg on tensors before tiling."""
