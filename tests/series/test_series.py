"""The series as a whole: every notebook has the parts a notebook needs outside itself.

docs/adding-a-notebook.md lists the steps; this test is the one that fails, naming the notebook
and what it lacks, when a new notebook misses its check module, its registration, its row in
README.md's notebook table or its page on the site.
"""

from __future__ import annotations

import re

from attnlib import check
from tests import ROOT
from tools import site

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_every_notebook_has_its_check_module_registration_readme_row_and_site_page():
    registered = [module.__name__.rsplit(".", 1)[1] for module in check._NOTEBOOKS]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = site.readme_sections(readme)
    summaries = site.readme_summaries(sections.get(site.NOTEBOOK_TABLE, ""))
    chapters = site.chapters(NOTEBOOKS, summaries)  # what the site builder makes a page of
    pages = {ch.stem: ch.page for ch in chapters}
    home = site.home_page({"": "", "Two commands": ""}, chapters)  # the chapter list of index.html
    assert len(NOTEBOOKS) >= 14, NOTEBOOKS

    problems = []
    for path in NOTEBOOKS:
        named = re.fullmatch(r"(\d\d)_([a-z0-9_]+)", path.stem)
        if not named:
            problems.append(f"notebooks/{path.name}: not named NN_name.ipynb (two digits, _, the name)")
            continue
        number, name = named.groups()
        lacks = []
        if not (ROOT / "attnlib" / "check" / f"{name}.py").is_file():
            lacks.append(f"its check module attnlib/check/{name}.py")
        if name not in registered:
            lacks.append(f"its registration in attnlib/check/__init__.py (`{name}` in _NOTEBOOKS)")
        elif registered.index(name) != int(number) - 1:
            lacks.append(f"its place in attnlib/check/__init__.py's _NOTEBOOKS (number {int(number)})")
        elif not set(check._NOTEBOOKS[int(number) - 1].__all__) <= set(check.__all__):
            lacks.append(f"its checks in attnlib.check.__all__ (`from .{name} import *`)")
        if path.stem not in summaries:
            lacks.append(
                f'its row in README.md\'s table under "## {site.NOTEBOOK_TABLE}" '
                f"(| {number} | `{path.stem}` | what you learn |)"
            )
        page = pages.get(path.stem)
        if page != f"{path.stem}.html" or f'href="{page}"' not in home:
            lacks.append(f"its page {path.stem}.html on the site, linked from the home page (tools/site.py)")
        if lacks:
            problems.append(f"notebooks/{path.name} lacks " + "; ".join(lacks))
    assert not problems, "\n".join(problems)


def test_the_nbval_budget_and_the_claims_harness_agree_on_which_notebooks_train():
    """conftest.py gives a notebook that trains the 75 s budget and one that does not 20 s;
    benchmarks/claims.py retrains the notebooks in its CHAINS. Both read a notebook's code with
    the same pattern, so a call the pattern misses (``attnlib.train(...)`` in 12 once was) shows
    here as a notebook one list has and the other lacks."""
    import importlib.util
    import json

    import conftest

    spec = importlib.util.spec_from_file_location("claims_harness", ROOT / "benchmarks" / "claims.py")
    claims = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(claims)
    assert claims.TRAINS.pattern == conftest.TRAINS.pattern
    trains = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        if any(conftest.TRAINS.search(source) for source in code):
            trains.add(path.name[:2])
    assert trains == {nb for chain in claims.CHAINS for nb in chain}
    assert not conftest.TRAINS.search("model.train()") and not conftest.TRAINS.search("gpt.train(True)")
