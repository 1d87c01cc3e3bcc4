"""roam: keep a Hermes Agent home in sync between your machines.

Importing this package is cheap on purpose: no plugin is discovered and no backend
library (boto3, GitPython, httpx) or Hermes module is imported until a command needs it.
"""



def _version() -> str:
    # roam_core/pyproject.toml is the one place the version is written; this reads it back
    # from the installed distribution's metadata.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("roam-core")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> str:
    # Read on first use, not at import: the metadata lookup (importlib.metadata, email,
    # zipfile, a walk of the installed distributions) was most of the start-up of the push
    # scan's worker process, which never needs the version.
    if name == "__version__":
        value = _version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
