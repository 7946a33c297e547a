"""Exercise checks for the notebooks on heads (see attnlib.check._core)."""

__all__: list[str] = []
