"""The real jars the patch tests work on, all produced by the one Maven build `splitaudit setup` runs.

Every test that uses one of them is marked `needs_build` here, so none can be added without the mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from splitaudit.home import JAVA_ROOT, PIPELINE_JARS, maven_repo

BUILD = "mvn -B -Dmaven.repo.local=.stack/m2 -f beam_pipelines/java/pom.xml package -DskipTests"


# Released `beam-runners-flink-*` jars the enumerator-patch module copies for these tests (not on any classpath).
REFERENCE_RUNNERS = JAVA_ROOT / "enumerator-patch" / "target" / "reference-runners"

BUILT = frozenset({"stock_jar", "patched_jar", "released_runners", "maven_artifact"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if BUILT & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.needs_build)


def _built(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make setup` (or `{BUILD}`) first")
    return path


@pytest.fixture(scope="session")
def stock_jar() -> Path:
    """The reference pipeline's shaded jar on Beam 2.62.0 as released."""
    return _built(PIPELINE_JARS["stock"])


@pytest.fixture(scope="session")
def patched_jar() -> Path:
    """The same pipeline shaded with the enumerator patch by Maven."""
    return _built(PIPELINE_JARS["patched"])


@pytest.fixture(scope="session")
def released_runners() -> Path:
    """Released runner jars the build copies for these tests: every supported release and 2.70.0 (fixed)."""
    return _built(REFERENCE_RUNNERS / "beam-runners-flink-1.19-2.70.0.jar").parent


@pytest.fixture(scope="session")
def maven_artifact() -> Path:
    """The Maven repository the build filled, for jars the pipeline depends on."""
    return maven_repo()
