"""The series' publishing tools, which the Makefile runs from the repository root.

- ``python -m tools.student notebooks student``: the student edition (``make student``);
- ``python -m tools.slides notebooks build/slides``: one reveal.js deck per notebook (``make slides``);
- ``python -m tools.site notebooks build/site build/slides``: the static web site (``make site``);
- ``python -m tools.notes notebooks``: label and collapse the speaker notes.
- ``python -m tools.course notebooks build/course``: the nbgrader course (``make course``).
- ``tools.kernels``: nbclient without stalls on a missed socket wake-up, for the tools' notebook runs.

They live outside ``attnlib`` on purpose: ``attnlib`` is what notebooks import, and its wheel
ships neither these modules, their templates, nor their dependencies (nbconvert, Jinja2,
latex2mathml, sphinx-revealjs), which requirements.txt pins for the Makefile.
"""
