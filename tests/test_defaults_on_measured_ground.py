"""The examples a newcomer copies first (the README, ``init``'s scaffold, the reference app and
the measure-and-decide guide) serve with the newest LMI release whose engine profile is fitted
to measurements, read from the catalog and the profiles, not restated by hand."""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT_ROOT

from cdk_sagemaker_llm.catalog.containers import DLC_LINES, ContainerFamily, version_tuple
from cdk_sagemaker_llm.commands import init
from cdk_sagemaker_llm.planning.engine_profiles import engine_profile, profile_name_for


def _newest_fitted_lmi() -> str:
    releases = DLC_LINES[ContainerFamily.LMI].releases
    fitted = [
        release
        for release in releases
        if engine_profile(profile_name_for(ContainerFamily.LMI, release)).fitted is not None
    ]
    assert fitted, "no LMI release has a fitted engine profile"
    return max(fitted, key=version_tuple)


NEWEST_FITTED = _newest_fitted_lmi()


def test_older_lmi_releases_run_on_an_unfitted_prior() -> None:
    assert engine_profile(profile_name_for(ContainerFamily.LMI, "0.31.0")).fitted is None
    assert version_tuple(NEWEST_FITTED) > version_tuple("0.31.0")


@pytest.mark.parametrize(
    "document",
    [
        "README.md",
        "cdk_sagemaker_llm/stacks/reference.py",
        "docs/guides/measure-and-decide.md",
        "docs/guides/your-own-app.md",
    ],
)
def test_the_examples_use_the_newest_fitted_lmi(document: str) -> None:
    text = (PROJECT_ROOT / document).read_text()
    used = set(re.findall(r'ContainerImage\.lmi\("([\d.]+)"\)', text))
    used |= set(re.findall(r"lmi:([\d.]+)", text))
    if document == "docs/guides/your-own-app.md":
        assert not used  # it shows no image: init's scaffold (below) does
        return
    assert used == {NEWEST_FITTED}, document


def test_the_scaffold_uses_the_newest_fitted_lmi_and_says_why() -> None:
    app = init.render(PROJECT_ROOT / "scaffold", "LlmPlatform")["app.py"]
    assert f'LMI_VERSION = "{NEWEST_FITTED}"' in app
    assert "fitted to measurements" in app
