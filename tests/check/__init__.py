"""Tests of attnlib.check: one harness over every notebook's answer table (``answers/``), the
shared engine (``test_core.py``), and what only one notebook's checks do (``test_<module>.py``)."""
