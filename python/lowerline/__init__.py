"""lowerline: an ML compiler toolchain in Python on upstream MLIR.

``lowerline.compile`` is imported lazily so that ``import lowerline`` stays
cheap and pulls in neither torch nor MLIR.
"""

__version__ = "0.1.0"

__all__ = [
    "CompileError",
    "CompiledModule",
    "ExportError",
    "ForeignTargetError",
    "GpuFault",
    "GpuOutOfMemory",
    "IndexCheckError",
    "LoadError",
    "LoadedModule",
    "NoCudaDevice",
    "RuntimeCheckError",
    "UnsupportedOpsError",
    "compile",
    "export",
    "load",
]


def __getattr__(name: str):
    if name in ("compile", "CompiledModule"):
        from lowerline import api

        return getattr(api, name)
    if name == "export":  # C header and static library (lowerline.aot)
        from lowerline.aot.export import export as export_model

        return export_model
    if name in ("CompileError", "UnsupportedOpsError"):
        from lowerline.driver import workers

        return getattr(workers, name)
    if name == "ExportError":  # torch.export could not capture the model
        from lowerline.frontend import export

        return export.ExportError
    # A check in compiled code failed; code for a CPU this one is not was called.
    if name in ("RuntimeCheckError", "IndexCheckError", "ForeignTargetError"):
        from lowerline import errors

        return getattr(errors, name)
    if name in ("load", "LoadError", "LoadedModule"):  # saved modules, without the compiler
        from lowerline import saved

        return getattr(saved, name)
    if name == "quant":  # lowerline.quant.Int8 for compile(..., quantize=)
        import lowerline.quant

        return lowerline.quant
    # No device here; a kernel faulted; no room on the device for the buffers.
    if name in ("NoCudaDevice", "GpuFault", "GpuOutOfMemory"):
        from lowerline.runtime import cuda

        return getattr(cuda, name)
    raise AttributeError(f"module 'lowerline' has no attribute '{name}'")
