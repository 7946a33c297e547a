"""Exercise checks for the notebooks on attention (see attnlib.check._core)."""

__all__: list[str] = []
