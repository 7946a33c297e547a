"""Exercise checks for the notebooks on seq2seq (see attnlib.check._core)."""

__all__: list[str] = []
