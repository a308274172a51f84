"""The CPU target: its stages as textual pipelines (``stages``) and the tile
planner that turns a target description into tile and vector sizes
(``tile_plan``).

May import ``lowerline.pipeline`` (pass API, options: never the registry) and
``lowerline.targets``.
"""
