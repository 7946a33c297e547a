"""The set-up files agree: one file of exact pins, used by the Makefile, conda and CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT


def pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [line for line in lines if line.strip() and not line.startswith("#")]
    assert all("==" in r for r in reqs), "every requirement must be an exact pin"
    return {re.sub(r"[-_.]+", "-", r.split("==")[0]).lower(): r.split("==")[1] for r in reqs}


def test_torch_is_pinned_to_the_series_version():
    assert pins()["torch"] == "2.13.0"


def test_attnlib_declares_only_the_torch_versions_the_series_ran_on():
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from setuptools.config.pyprojecttoml import read_configuration

    (torch,) = [
        Requirement(r) for r in read_configuration(ROOT / "pyproject.toml")["project"]["dependencies"]
    ]
    compat = re.search(r"^COMPAT_TORCH\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)[1]
    ran_on = {pins()["torch"], compat}  # the pins (stored outputs) and make compat
    assert all(torch.specifier.contains(v) for v in ran_on), f"{torch} leaves out {ran_on}"
    assert torch.specifier == SpecifierSet(">=2.13,<2.15"), f"wider or narrower than what was run: {torch}"


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
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text, "torch's CPU build"
    pinned_here = re.findall(r"^\s*-\s*([A-Za-z0-9_.-]+)\s*[=<>]", text, re.M)
    assert pinned_here == ["python"], f"environment.yml must not pin packages itself: {pinned_here}"


def test_makefile_and_ci_use_the_same_pins_and_command():
    makefile = (ROOT / "Makefile").read_text()
    # uv installs requirements.txt; where uv fails, pip installs the very same file.
    assert "$(UV_INSTALL) $(NO_DEPS) -r requirements.txt" in makefile
    assert "$(PIP_INSTALL) $(NO_DEPS) -r requirements.txt" in makefile
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert sum(line.lower().startswith("torch==") for line in lines) == 1
    assert sum(line.lower().startswith("uv==") for line in lines) == 1
    # CI runs both tiers: make test, then the tests it leaves out (marked publish).
    for ci in (ROOT / ".ci" / "run", ROOT / ".github" / "workflows" / "test.yml"):
        commands = re.findall(r"^\s*(?:- run: )?(make [\w-]+)\s*$", ci.read_text(), re.M)
        assert commands == ["make test", "make test-publish"], (ci, commands)


def test_the_pins_hold_no_cuda_packages():
    # The CPU build of torch needs none; PyPI's Linux build would pull about 3 GB of them.
    cuda = [name for name in pins() if name.startswith(("nvidia-", "triton", "cuda-"))]
    assert not cuda, f"requirements.txt pins CUDA packages (a lock made with PyPI's torch?): {cuda}"


# A surrounding `make test` (or a user's TORCH_INDEX) must not change what the inner make prints.
OUTER_MAKE_SETTINGS = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TORCH_INDEX")


def make_venv_commands(find_links: Path) -> str:
    """What `make venv` would run (make -n) with only `find_links` as a folder of wheels."""
    result = subprocess.run(
        ["make", "-n", "-B", "venv", f"FIND_LINKS={find_links}"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in OUTER_MAKE_SETTINGS},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("make") is None, reason="Linux with make")
def test_make_venv_installs_torch_cpu_build_on_linux(tmp_path: Path) -> None:
    torch_pin = pins()["torch"]
    from_index = f"--no-deps --index-url https://download.pytorch.org/whl/cpu torch=={torch_pin}"
    # No folder of wheels holds the CPU build: uv (and pip, if uv fails) take it from PyTorch's
    # index first, then the pins, which keep it.
    commands = make_venv_commands(tmp_path)
    for installer in ("uv pip install", "-m pip install"):
        first = commands.index(f"{installer} --quiet", commands.index("$(grep -i '^uv=="))
        torch_at = commands.find(from_index, first)
        pins_at = commands.find("--no-deps -r requirements.txt", first)
        assert -1 < torch_at < pins_at, f"{installer}: torch's CPU build is not installed before the pins"
    # A folder of wheels that holds it (as on the development machine): no index needed.
    (tmp_path / f"torch-{torch_pin}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").touch()
    commands = make_venv_commands(tmp_path)
    assert "--index-url" not in commands
    assert f"--find-links={tmp_path}" in commands


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


# Every module outside attnlib.viz (models, data, training, the exercise checks, and the aliases
# of moved modules): importing it must not pull in plotting or widgets (a script or a test that
# trains a model should not pay for them).
def light_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "attnlib").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "viz" not in parts:
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_import_attnlib_is_light():
    """Every module outside the drawing wing, and the wing's lazy index, load no drawing library."""
    modules = [*light_modules(), "attnlib.viz"]
    assert {"attnlib", "attnlib.functional", "attnlib.check"} <= set(modules)
    code = (
        f"import sys, {', '.join(modules)}; "
        "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- attnlib is what notebooks import, and nothing else -------------------------------------------
# The publishing tools (student edition, decks, site) live in tools/, outside the package: the
# wheel ships neither them, nor their templates, nor a dependency on what they import.
TOOLS = ("notes", "publish", "site", "slides", "student")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules(source: str) -> set[str]:
    """The top-level names of the absolute imports in Python source."""
    import ast

    found = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def imported_by(folder: str) -> set[str]:
    """The third-party modules that the Python files under ``folder`` import."""
    found = set().union(
        *(imported_modules(p.read_text(encoding="utf-8")) for p in (ROOT / folder).rglob("*.py"))
    )
    return third_party(found)


def third_party(modules: set[str]) -> set[str]:
    return {m for m in modules if m not in sys.stdlib_module_names and m not in ("attnlib", "tools")}


def distributions(modules: set[str]) -> set[str]:
    """The (canonical) names of the installed distributions that provide these modules."""
    from importlib.metadata import packages_distributions

    provided = packages_distributions()
    unknown = sorted(m for m in modules if m not in provided)
    assert not unknown, f"imported but installed by no distribution: {unknown}"
    return {canonical(d) for m in modules for d in provided[m]}


def declared_by_attnlib() -> tuple[set[str], set[str]]:
    """attnlib's dependencies and its `notebooks` extra, as canonical names."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        return {canonical(re.split(r"[=<>!~\[; ]", r)[0]) for r in reqs}

    return names(project["dependencies"]), names(project["optional-dependencies"]["notebooks"])


def test_the_wheel_ships_only_attnlib():
    from setuptools.config.pyprojecttoml import read_configuration

    config = read_configuration(ROOT / "pyproject.toml")["tool"]["setuptools"]
    packages = config["packages"]
    assert "attnlib" in packages
    assert all(p == "attnlib" or p.startswith("attnlib.") for p in packages), f"not attnlib: {packages}"
    # The one kind of data file: attnlib's compiled catalogues, which its feedback in other
    # languages reads (attnlib/i18n.py); their sources stay in locale/ outside the package.
    assert config.get("package-data", {}) == {"attnlib": ["locale/*/LC_MESSAGES/*.mo"]}, "other data files"
    assert not config.get("data-files"), "the wheel ships data files"
    data = [p for p in (ROOT / "attnlib" / "locale").rglob("*") if p.is_file()]
    assert data and all(p.suffix == ".mo" for p in data), f"not compiled catalogues: {data}"
    assert not (ROOT / "MANIFEST.in").exists(), "a MANIFEST.in would add files to the wheel"
    shipped = [path for p in packages for path in (ROOT / p.replace(".", "/")).iterdir()]
    tools_inside = sorted(
        str(p.relative_to(ROOT)) for p in shipped if p.stem in TOOLS or "templates" in p.name
    )
    assert not tools_inside, f"publishing tools inside the package (they belong in tools/): {tools_inside}"
    assert all((ROOT / "tools" / f"{name}.py").exists() for name in TOOLS)


def test_attnlib_imports_nothing_of_the_publishing_tools():
    tools_deps = imported_by("tools")
    assert {"nbconvert", "nbformat"} <= tools_deps
    wrong = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in (ROOT / "attnlib").rglob("*.py")
        if (found := imported_modules(path.read_text(encoding="utf-8")) & (tools_deps | {"tools"}))
    }
    assert not wrong, f"attnlib modules that import the publishing tools or their dependencies: {wrong}"


def test_the_tools_dependencies_are_pinned_and_not_attnlibs():
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    direct = distributions(imported_by("tools"))
    top = {
        canonical(re.split(r"[=<>\[ ]", line)[0])
        for line in (ROOT / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert not direct - top, f"tools/ imports these, requirements.in does not list them: {direct - top}"
    # What they need in turn (without optional extras) is pinned too: requirements.txt is the
    # whole environment that the Makefile installs with --no-deps.
    needed, todo = set(), list(direct)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for spec in requires(name) or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonical(req.name))
    unpinned = sorted(needed - set(pins()))
    assert not unpinned, f"the publishing tools need these, requirements.txt does not pin them: {unpinned}"
    dependencies, extra = declared_by_attnlib()
    assert not direct & (dependencies | extra), "attnlib must not depend on the publishing tools' packages"


def test_attnlib_declares_what_notebooks_import():
    import json

    dependencies, extra = declared_by_attnlib()
    assert dependencies == {"torch"}
    used = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":  # IPython magics and shell lines are not Python
                lines = "".join(cell["source"]).splitlines()
                code = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
                used |= imported_modules(code)
    # NumPy: seeded by attnlib.repro where installed (matplotlib brings it), never required.
    missing = distributions(third_party(used) | (imported_by("attnlib") - {"numpy"})) - dependencies - extra
    assert not missing, f"imported by the notebooks or attnlib, not declared in pyproject.toml: {missing}"
