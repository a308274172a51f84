"""Command-line entry points (installed as ``lowerline.tools``); logic lives in the package."""
