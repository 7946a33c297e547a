"""The licences and the citation file say the same thing everywhere they are stated."""

from __future__ import annotations

import tomllib

import yaml

from tests import ROOT


def test_code_licence_is_mit_in_the_licence_file_and_the_package_metadata():
    assert ROOT.joinpath("LICENSE").read_text().startswith("MIT License")
    project = tomllib.loads(ROOT.joinpath("pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"}


def test_content_licence_is_cc_by_4_in_its_file_and_the_readme():
    content = ROOT.joinpath("LICENSE-content.md").read_text()
    readme = ROOT.joinpath("README.md").read_text()
    for text in (content, readme):
        assert "CC BY 4.0" in text and "https://creativecommons.org/licenses/by/4.0/" in text


def test_citation_file_is_valid_cff_and_matches_the_package():
    cff = yaml.safe_load(ROOT.joinpath("CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors", "version", "license"):
        assert cff[key], key
    assert all("name" in a or "family-names" in a for a in cff["authors"])
    project = tomllib.loads(ROOT.joinpath("pyproject.toml").read_text())["project"]
    assert cff["version"] == project["version"]
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    readme = ROOT.joinpath("README.md").read_text()
    assert cff["title"] in readme and f"version {cff['version']}" in readme
