"""The CPU target: its stages as textual pipelines (``stages``), the tile
planner that turns a target description into tile and vector sizes
(``tile_plan``), and the ops the tiled stage left as plain loops
(``fallbacks``).

May import ``lowerline.pipeline`` (pass API, options: never the registry) and
``lowerline.targets``.
"""
