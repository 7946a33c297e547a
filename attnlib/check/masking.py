"""Exercise checks for the notebooks on masking (see attnlib.check._core)."""

__all__: list[str] = []
