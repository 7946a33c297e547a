"""Tests of the publishing tools in tools/ (decks, site, student edition, notes, links) and of benchmarks/."""
