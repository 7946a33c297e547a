"""Launch without installing: Colab and Binder links, and each notebook's set-up lines (tools.links)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tests import ROOT
from tools.links import (
    EDITION_FOLDERS,
    Repo,
    bootstrap,
    edition_folder,
    find_repo,
    parse_remote,
    readme_repo,
    update_notebook,
    with_bootstrap,
    with_links,
    with_readme_links,
    without_readme_links,
)
from tools.site import readme_sections, readme_summaries

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REPO = Repo("someone", "attention-series")


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/someone/attention-series",
        "https://github.com/someone/attention-series.git",
        "https://x-access-token:abc@github.com/someone/attention-series.git\n",
        "git@github.com:someone/attention-series.git",
        "ssh://git@github.com/someone/attention-series.git",
    ],
)
def test_github_remotes_give_owner_and_name(url):
    assert parse_remote(url) == ("someone", "attention-series")


@pytest.mark.parametrize("url", ["https://gitlab.com/someone/series.git", "/srv/git/series.git", ""])
def test_other_remotes_give_no_address(url):
    assert parse_remote(url) is None


def _git_repo(path: Path, remote: str | None) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def test_the_address_comes_from_github_actions_first_then_the_remote(tmp_path):
    with_remote = _git_repo(tmp_path / "a", "git@github.com:other/fork.git")
    no_remote = _git_repo(tmp_path / "b", None)
    actions = {"GITHUB_REPOSITORY": "someone/attention-series"}
    assert find_repo(actions, no_remote) == REPO
    assert find_repo(actions, with_remote) == REPO
    assert find_repo({}, with_remote) == Repo("other", "fork")
    assert find_repo({}, no_remote) is None
    assert find_repo({}, tmp_path) is None  # not a git repository at all


def test_colab_and_binder_urls_have_their_documented_form():
    path = "notebooks/03_masking.ipynb"
    assert REPO.colab(path) == (
        "https://colab.research.google.com/github/someone/attention-series/blob/student-edition/student/03_masking.ipynb"
    )
    assert REPO.binder(path) == (
        "https://mybinder.org/v2/gh/someone/attention-series/student-edition?labpath=student%2F03_masking.ipynb"
    )
    assert Repo("a", "b", "dev").pip_source == "git+https://github.com/a/b@dev"


def _run_bootstrap(code: str, found: bool, env: dict[str, str]) -> list[tuple[str, str]]:
    """Run the set-up lines as IPython would, with attnlib found or not; return the magics called."""
    calls: list[tuple[str, str]] = []

    class Shell:
        def run_line_magic(self, name: str, line: str) -> None:
            calls.append((name, line.format(**namespace)))  # IPython expands {source} the same way

    class Util:
        @staticmethod
        def find_spec(name: str) -> object:
            return object() if found else None

    python = TransformerManager().transform_cell(code)
    python = python.replace("import importlib.util, os\n", "")
    namespace = {
        "get_ipython": Shell,
        "importlib": type("M", (), {"util": Util}),
        "os": type("M", (), {"environ": env}),
    }
    exec(python, namespace)
    return calls


def test_where_attnlib_is_installed_the_set_up_does_nothing():
    for repo in (None, REPO):
        assert _run_bootstrap(bootstrap(repo), found=True, env={}) == []


def test_elsewhere_it_installs_attnlib_without_its_dependencies_then_the_extras():
    calls = _run_bootstrap(bootstrap(REPO), found=False, env={})
    assert calls == [
        ("pip", "install --quiet --no-deps git+https://github.com/someone/attention-series@main"),
        ("pip", "install --quiet matplotlib ipywidgets tqdm scikit-learn"),
    ]
    # ATTNLIB_SOURCE wins, with or without an address (make compat points it at a local copy).
    for repo in (None, REPO):
        calls = _run_bootstrap(bootstrap(repo), found=False, env={"ATTNLIB_SOURCE": "/srv/series"})
        assert calls[0] == ("pip", "install --quiet --no-deps /srv/series")
        assert "torch" not in " ".join(line for _, line in calls)


def test_with_no_address_known_it_says_what_to_do():
    with pytest.raises(ModuleNotFoundError, match=r"%pip install --no-deps <path or git URL.*ATTNLIB_SOURCE"):
        _run_bootstrap(bootstrap(None), found=False, env={})


def test_set_up_lines_and_links_are_written_once_and_refreshed(tmp_path):
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / NOTEBOOKS[2].name
    shutil.copy(NOTEBOOKS[2], path)
    before = nbformat.read(path, as_version=4)
    rel = f"notebooks/{path.name}"

    assert update_notebook(path, REPO, tmp_path)
    nb = nbformat.read(path, as_version=4)
    first_md = next(c for c in nb.cells if c.cell_type == "markdown").source
    first_code = next(c for c in nb.cells if c.cell_type == "code").source
    assert first_md.endswith(REPO.links(rel)) and REPO.colab(rel) in first_md and REPO.binder(rel) in first_md
    assert first_code.startswith(bootstrap(REPO)) and first_code.count("find_spec") == 1
    assert not update_notebook(path, REPO, tmp_path), "a second run changes nothing"

    moved = Repo("someone", "renamed", "dev")
    assert update_notebook(path, moved, tmp_path)
    nb = nbformat.read(path, as_version=4)
    text = json.dumps([c.source for c in nb.cells])
    assert "attention-series" not in text and text.count("colab.research.google.com") == 1

    # Back to no address: the very cells that were stored, the other cells never touched.
    assert update_notebook(path, None, tmp_path)
    after = nbformat.read(path, as_version=4)
    assert [c.source for c in after.cells] == [c.source for c in before.cells]
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]


def test_stored_notebooks_begin_with_the_set_up_lines_and_matching_links():
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        first_md = next(c for c in nb.cells if c.cell_type == "markdown")
        first_code = next(c for c in nb.cells if c.cell_type == "code")
        found = re.search(r"git\+https://github\.com/([\w.-]+)/([\w.-]+)@([\w./-]+)\"", first_code.source)
        repo = Repo(*found.groups()) if found else None
        assert with_bootstrap(first_code.source, repo) == first_code.source, f"{path.name}: set-up lines"
        rel = f"notebooks/{path.name}"
        assert with_links(first_md.source, repo, rel) == first_md.source, f"{path.name}: links line"
        assert first_code.outputs == [], f"{path.name}: the first code cell prints nothing where attnlib is"


def test_readme_gets_a_column_of_links_and_nothing_else_changes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = with_readme_links(readme, REPO)
    assert with_readme_links(linked, REPO) == linked, "idempotent"
    before, after = readme_sections(readme), readme_sections(linked)
    assert {k: v for k, v in before.items() if k != "The notebooks"} == {
        k: v for k, v in after.items() if k != "The notebooks"
    }
    assert readme_summaries(after["The notebooks"]) == readme_summaries(before["The notebooks"])
    for path in NOTEBOOKS:
        assert REPO.links(f"notebooks/{path.name}") in after["The notebooks"], path.name
    assert after["The notebooks"].count("colab.research.google.com") == len(NOTEBOOKS)


def test_the_links_open_what_the_student_edition_workflow_publishes():
    """The links point at the branch and folder that .github/workflows/student-edition.yml pushes."""
    import yaml

    from tools.links import EDITION_BRANCH, EDITION_FOLDER

    workflow = ROOT / ".github" / "workflows" / "student-edition.yml"
    steps = yaml.safe_load(workflow.read_text())["jobs"]["publish"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps)
    assert f"python -m tools.student notebooks {EDITION_FOLDER}" in script
    assert (
        f"git checkout -B {EDITION_BRANCH}" in script
        and f"git push --force origin {EDITION_BRANCH}" in script
    )
    url = REPO.colab("notebooks/03_masking.ipynb")
    assert url.endswith(f"/blob/{EDITION_BRANCH}/{EDITION_FOLDER}/03_masking.ipynb")


def test_an_explicit_address_comes_before_github_actions_and_the_remote(tmp_path):
    with_remote = _git_repo(tmp_path / "a", "git@github.com:other/fork.git")
    actions = {"GITHUB_REPOSITORY": "actions/repo"}
    assert find_repo(actions, with_remote, slug="someone/attention-series") == REPO
    assert find_repo(actions, with_remote) == Repo("actions", "repo")
    with pytest.raises(ValueError, match="OWNER/NAME"):
        find_repo(actions, with_remote, slug="https://github.com/someone/attention-series")


def test_make_links_and_make_site_pass_repo_the_same_way():
    dry = subprocess.run(
        ["make", "-n", "links", "site", "REPO=someone/attention-series"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    for tool in ("tools.links", "tools.site"):
        line = next(line for line in dry.splitlines() if f"-m {tool}" in line)
        assert line.endswith("--repo someone/attention-series"), line


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_links_with_no_address_leaves_every_file_as_it_was(tmp_path):
    """Run in a copy of the repository with no remote and no GITHUB_REPOSITORY, after a run with
    an address wrote links: every file stays byte for byte as it was (no links stripped)."""
    import os
    import sys

    copy = _git_repo(tmp_path / "repo", None)
    shutil.copytree(ROOT / "tools", copy / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", copy / "notebooks")
    shutil.copytree(ROOT / "locale", copy / "locale")  # README.po, site.po: the Chinese README's links
    (copy / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "glossary.md", copy / "docs" / "glossary.md")
    for name in ("README.md", "README.zh-CN.md"):
        shutil.copy(ROOT / name, copy / name)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_REPOSITORY"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def links(*args: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "tools.links", *args], cwd=copy, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    links("--repo", "someone/attention-series")
    before = _snapshot(copy)
    assert b"colab.research.google.com/github/someone" in before["README.md"]
    # the Chinese README follows, its links opening the Chinese edition
    assert b"/blob/student-edition/student-zh/03_masking.ipynb" in before["README.zh-CN.md"]
    assert links("--repo", "someone/attention-series").endswith("nothing to change\n")
    said = links()
    assert "nothing written" in said
    assert _snapshot(copy) == before


def test_a_readme_without_the_notebook_table_is_named_not_a_bare_substring_error():
    with pytest.raises(ValueError, match='no section "## The notebooks"'):
        with_readme_links("# Title\n\n## Notebooks\n\n| 01 | `01_a` | a |\n", REPO)


def test_make_compat_installs_torch_s_cpu_build_from_the_index_as_make_venv_does():
    """PyPI's Linux torch is the CUDA build (about 3 GB of NVIDIA packages); make compat takes
    COMPAT_TORCH's CPU build from TORCH_INDEX, unless a wheel folder holds it (no 9.9.9 does)."""

    def pip_line(*args: str) -> str:
        dry = subprocess.run(["make", "-n", "compat", *args], cwd=ROOT, capture_output=True, text=True).stdout
        return next(line for line in dry.splitlines() if "pip install" in line and "torch" in line)

    line = pip_line("UNAME=Linux", "COMPAT_TORCH=9.9.9", "TORCH_INDEX=https://mirror.example/cpu")
    assert line.endswith("--index-url https://mirror.example/cpu torch==9.9.9"), line
    assert pip_line("UNAME=Darwin", "COMPAT_TORCH=9.9.9").endswith(" torch==9.9.9")
    assert "--index-url" not in pip_line("UNAME=Darwin", "COMPAT_TORCH=9.9.9")


# --- the Chinese student edition ----------------------------------------------------------------


def test_the_chinese_links_open_student_zh_and_say_so_in_chinese():
    path = "notebooks/03_masking.ipynb"
    assert REPO.colab(path, "zh_CN") == (
        "https://colab.research.google.com/github/someone/attention-series/blob/student-edition/"
        "student-zh/03_masking.ipynb"
    )
    assert REPO.binder(path, "zh_CN").endswith("?labpath=student-zh%2F03_masking.ipynb")
    line = REPO.links(path, "zh_CN")
    assert line.startswith("[在 Colab 中打开](") and "[在 Binder 中打开](" in line
    assert REPO.links(path) == REPO.links(path, "en") and "student-zh" not in REPO.links(path)
    assert EDITION_FOLDERS == {"en": "student", "zh_CN": "student-zh"}
    with pytest.raises(ValueError, match="zh_TW"):
        edition_folder("zh_TW")


def test_a_translated_notebook_gets_the_links_to_its_own_edition_in_place_of_the_english(tmp_path):
    english_line = REPO.links("notebooks/03_masking.ipynb")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"# 03 · 掩码\n\n{english_line}"),
            nbformat.v4.new_code_cell("import attnlib\nattnlib.reproducible()"),
        ]
    )
    path = tmp_path / "03_masking.ipynb"
    nbformat.write(nb, path)
    assert update_notebook(path, REPO, tmp_path, lang="zh_CN")
    first = nbformat.read(path, as_version=4).cells[0].source
    assert first == f"# 03 · 掩码\n\n{REPO.links('03_masking.ipynb', 'zh_CN')}"
    assert "student-zh/03_masking.ipynb" in first and "/student/" not in first
    code = nbformat.read(path, as_version=4).cells[1].source
    assert code == "import attnlib\nattnlib.reproducible()", "the code stays the English notebook's"
    assert not update_notebook(path, REPO, tmp_path, lang="zh_CN"), "idempotent"


def test_the_chinese_readme_table_gets_its_own_column_and_loses_it_again():
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    linked = with_readme_links(zh, REPO, lang="zh_CN", section="笔记本一览")
    assert with_readme_links(linked, REPO, lang="zh_CN", section="笔记本一览") == linked, "idempotent"
    table = readme_sections(linked)["笔记本一览"]
    assert "| # | 笔记本 | 你将学到什么 | 免安装运行 |" in table
    for path in NOTEBOOKS:
        assert REPO.links(f"notebooks/{path.name}", "zh_CN") in table, path.name
    assert readme_summaries(table) == readme_summaries(readme_sections(zh)["笔记本一览"])
    assert without_readme_links(linked, section="笔记本一览") == zh
    assert readme_repo(linked) == Repo("someone", "attention-series") and readme_repo(zh) is None


def test_readme_links_come_off_as_they_went_on():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert without_readme_links(with_readme_links(readme, REPO)) == readme
    assert readme_repo(with_readme_links(readme, REPO)) == REPO


def test_the_workflow_publishes_the_chinese_edition_where_its_links_point():
    import yaml

    workflow = ROOT / ".github" / "workflows" / "student-edition.yml"
    steps = yaml.safe_load(workflow.read_text())["jobs"]["publish"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps)
    folder = EDITION_FOLDERS["zh_CN"]
    build = script.index("python -m tools.i18n build --lang zh_CN --out build/zh")
    links = script.index("python -m tools.links --lang zh_CN build/zh")
    student = script.index(f"python -m tools.student build/zh {folder} --lang zh_CN")
    assert build < links < student < script.index(f"git add -f student {folder}")
    pins = re.findall(r"^(babel|mistune|nbformat)==", (ROOT / "requirements.txt").read_text(), re.M | re.I)
    assert len(pins) == 3 and "grep -iE '^(babel|mistune|nbformat)==' requirements.txt" in script


def test_links_for_a_language_without_an_edition_or_without_its_folder_are_refused(capsys):
    from tools.links import main

    with pytest.raises(SystemExit):
        main(["--lang", "zh_CN"])  # no folder of translated notebooks
    with pytest.raises(SystemExit):
        main(["build/zh"])  # a folder without --lang
    with pytest.raises(ValueError, match="zh_TW"):
        main(["--lang", "zh_TW", "build/zh", "--repo", "someone/attention-series"])
