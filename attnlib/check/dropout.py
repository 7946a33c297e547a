"""Exercise checks for the notebooks on dropout (see attnlib.check._core)."""

__all__: list[str] = []
