"""Tests of attnlib.viz: plots, diagrams and explorers, and the wing's import borders."""
