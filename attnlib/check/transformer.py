"""Exercise checks for the notebooks on transformer (see attnlib.check._core)."""

__all__: list[str] = []
