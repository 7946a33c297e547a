"""The set-up files agree: one file of exact pins, used by the Makefile, conda and CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [line for line in lines if line.strip() and not line.startswith("#")]
    assert all("==" in r for r in reqs), "every requirement must be an exact pin"
    return {re.sub(r"[-_.]+", "-", r.split("==")[0]).lower(): r.split("==")[1] for r in reqs}


def test_torch_is_pinned_to_the_series_version():
    assert pins()["torch"] == "2.13.0"


def test_every_top_level_dependency_is_pinned():
    top = [
        re.sub(r"[-_.]+", "-", re.split(r"[=<>\[ ]", line)[0]).lower()
        for line in (ROOT / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    missing = [name for name in top if name not in pins()]
    assert not missing, f"in requirements.in but not pinned in requirements.txt: {missing}"


def test_environment_yml_uses_the_pins_and_python_311():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*python=3\.11\s*$", text, re.M), "environment.yml must ask for Python 3.11"
    assert re.search(r"^\s*-\s*-r requirements\.txt\s*$", text, re.M), (
        "environment.yml must install requirements.txt"
    )
    pinned_here = re.findall(r"^\s*-\s*([A-Za-z0-9_.-]+)\s*[=<>]", text, re.M)
    assert pinned_here == ["python"], f"environment.yml must not pin packages itself: {pinned_here}"


def test_makefile_and_ci_use_the_same_pins_and_command():
    makefile = (ROOT / "Makefile").read_text()
    # uv installs requirements.txt; where uv fails, pip installs the very same file.
    assert "$(UV_INSTALL) -r requirements.txt" in makefile
    assert "$(PIP_INSTALL) -r requirements.txt" in makefile
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert sum(line.lower().startswith("torch==") for line in lines) == 1
    assert sum(line.lower().startswith("uv==") for line in lines) == 1
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / ".github" / "workflows" / "test.yml").read_text()


def test_the_modules_compiled_at_set_up_exist():
    # make venv imports these once so that their byte-code is written before the tests start;
    # a name that no longer exists would fail the set-up.
    import importlib.util

    makefile = (ROOT / "Makefile").read_text()
    names = []
    for var in ("WARM_KERNEL", "WARM_TOOLS"):
        match = re.search(rf"^{var}\s*:=(.*)$", makefile, re.M)
        assert match, f"Makefile has no {var}"
        names += match.group(1).split()
    assert "torch" in names and "nbval" in names
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    assert not missing, f"modules named in the Makefile's warm-up that are not installed: {missing}"


def test_installed_versions_match_the_pins():
    from importlib.metadata import PackageNotFoundError, version

    wrong = {}
    for name, pinned in pins().items():
        try:
            installed = version(name).split("+")[0]
        except PackageNotFoundError:
            continue  # e.g. platform-specific packages
        if installed != pinned:
            wrong[name] = (pinned, installed)
    assert not wrong, f"installed versions differ from requirements.txt (pinned, installed): {wrong}"


# The modules that hold models, data and training: importing them must not pull in plotting
# or widgets (a script or a test that trains a model should not pay for them).
LIGHT_MODULES = [
    "attnlib",
    "attnlib.blocks",
    "attnlib.cache",
    "attnlib.data",
    "attnlib.efficient",
    "attnlib.functional",
    "attnlib.gpt",
    "attnlib.masks",
    "attnlib.multihead",
    "attnlib.rotary",
    "attnlib.scorers",
    "attnlib.self_attention",
    "attnlib.seq2seq",
    "attnlib.training",
    "attnlib.transformer",
    "attnlib.vit",
]


def test_import_attnlib_is_light():
    code = (
        f"import sys, {', '.join(LIGHT_MODULES)}; "
        "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
