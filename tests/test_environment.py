"""The set-up files agree: one file of exact pins, used by the Makefile, conda and CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / ".github" / "workflows" / "test.yml").read_text()


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
