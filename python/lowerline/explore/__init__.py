"""The pass explorer: one self-contained HTML page that shows how lowerline
lowered a program (``lowerline explore FILE.py``, ``compiled.explore(path)``,
``lowerline-opt ... --explore report.html``).

The data comes from the one stage runner: with a ``pipeline.trace.PassTrace``
it keeps the IR after every pass, with its stage and wall time; the compile
worker adds the passes' remarks (``trace.json``). Here that becomes a page:
``report`` (diffs, op counts, the arena plan via ``memory_plan``, the
template with the data inlined), ``numerics`` (outputs against eager),
``roofline`` (per-kernel times of the explorer's timed build, the
machine's cached peaks),
``model`` (a model file, compiled and explored or bisected) and ``browser``
(headless chromium for the tests and the bench).

May import: ``lowerline.driver`` (tolerances), the API (``model`` only: the
API imports ``report`` and ``numerics``, never ``model``); never MLIR, which
the user's process does not load.
"""
