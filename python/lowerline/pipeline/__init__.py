"""Pipeline machinery: the pass API, pass options, the textual pipeline parser,
the scheduler that runs upstream and lowerline passes together, the lazy
registry of passes and named pipelines, MLIR contexts, source splitting,
diagnostics, and remarks (what passes decided and refused, as records).

May import: ``lowerline.errors``, ``lowerline.weights``, MLIR; the registry
alone imports ``lowerline.passes`` and the stage modules (lazily). Never the
driver, the runtime, the frontend or the API.
"""
