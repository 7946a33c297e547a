"""Tests of attnlib's library modules, one file per module or concept."""
