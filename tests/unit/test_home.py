"""Where the stack home is: $SPLITAUDIT_HOME, else a checkout's .stack/, else the per-user data folder (never the
installed package's folder); and the jars the wheel carries as package data."""

from __future__ import annotations

from pathlib import Path

import pytest

import splitaudit_lab
from splitaudit import home
from splitaudit_lab.stack.job_jar import pipeline_classes_jar


def test_splitaudit_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPLITAUDIT_HOME", str(tmp_path / "stackhome"))
    assert home.stack_home() == tmp_path / "stackhome"


def test_a_checkout_keeps_its_stack_in_dot_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPLITAUDIT_HOME", raising=False)
    assert home.in_checkout()
    assert home.stack_home() == home.REPO_ROOT / ".stack"


def test_an_installed_package_keeps_its_stack_in_the_users_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site-packages"
    monkeypatch.delenv("SPLITAUDIT_HOME", raising=False)
    monkeypatch.setattr(home, "REPO_ROOT", site)
    monkeypatch.setattr(home, "JAVA_ROOT", site / "beam_pipelines" / "java")
    assert not home.in_checkout()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert home.stack_home() == tmp_path / "data" / "splitaudit"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert home.stack_home() == tmp_path / "user" / ".local" / "share" / "splitaudit"


def test_the_patch_jars_are_package_data_of_splitaudit_patch() -> None:
    assert home.patch_jar_path("beam-runners-flink-1.19", "2.62.0") == (
        Path(home.__file__).parent / "patch" / "classes" / "beam-runners-flink-1.19-patch-2.62.0.jar"
    )
    assert home.built_patch_jar("beam-runners-flink-1.16", "2.54.0") == (
        home.JAVA_ROOT
        / "enumerator-patch"
        / "flink-1.16-beam-2.54.0"
        / "target"
        / "beam-runners-flink-1.16-patch-2.54.0.jar"
    )


def test_the_lineage_kit_and_the_pipelines_own_jar_are_package_data_of_the_product_and_the_lab() -> None:
    package = Path(home.__file__).parent
    assert home.lineage_kit_jar() == package / "patch" / "classes" / "beam-kafka-lineage-0.1.0.jar"
    assert home.built_lineage_kit() == home.JAVA_ROOT / "lineage-kit" / "target" / "beam-kafka-lineage-0.1.0.jar"
    lab = Path(splitaudit_lab.__file__).parent
    assert pipeline_classes_jar() == lab / "stack" / "jobs" / "reference-pipeline-beam-2.62.0-0.1.0.jar"
    assert home.built_pipeline_classes() == (
        home.JAVA_ROOT / "reference-pipeline" / "beam-2.62.0" / "target" / "reference-pipeline-beam-2.62.0-0.1.0.jar"
    )


def test_the_demo_runs_the_reactors_jars_in_a_checkout_and_the_stack_homes_from_a_wheel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPLITAUDIT_HOME", str(tmp_path / "stackhome"))
    target = home.JAVA_ROOT / "reference-pipeline" / "beam-2.62.0" / "target"
    built = {variant: target / f"splitaudit-pipeline-{variant}.jar" for variant in ("stock", "patched")}
    assert home.pipeline_jars() == home.PIPELINE_JARS == built
    monkeypatch.setattr(home, "in_checkout", lambda: False)
    jobs = tmp_path / "stackhome" / "jobs"
    assert home.pipeline_jars() == {variant: jobs / f"splitaudit-pipeline-{variant}.jar" for variant in built}
    # the matrix's releases are a checkout's only
    fixed = home.JAVA_ROOT / "reference-pipeline" / "beam-2.70.0" / "target" / "splitaudit-pipeline-stock.jar"
    assert home.pipeline_jars("2.70.0") == {"stock": fixed}
