"""Pipeline machinery: the pass API, pass options, the textual pipeline parser,
the scheduler that runs upstream and lowerline passes together, the lazy
registry of passes and named pipelines, the attribute protocol between
passes, MLIR contexts, source splitting, diagnostics, remarks (what passes
decided and refused, as records), the lowerer (parse and run a pipeline,
failures as ``LoweringError``), the stage runner (named stages in order:
progress, timing, dumps, a reproducer for the stage that failed) and the
pass trace (the IR after every pass, for the explorer).

May import: ``lowerline.errors``, ``lowerline.weights``, ``lowerline.dialects``
(contexts load lowerline's dialect), MLIR; the registry alone imports
``lowerline.passes`` and the stage modules (lazily). Never the driver, the
runtime, the frontend or the API.
"""
