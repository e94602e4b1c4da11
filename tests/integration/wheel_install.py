"""The wheel as a user installs it, for the wheel tests: built from this checkout, installed into a fresh venv
outside the repository, and its `splitaudit` run with no trace of the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from splitaudit.home import REPO_ROOT, downloads_dir, maven_repo
from splitaudit_lab.stack.lock import read_lock

UV = Path(sys.executable).parent / "uv"


def build_wheel(out: Path) -> Path:
    """The product's wheel `uv build` makes of this checkout, in `out`, beside the lab's (lab/), which its extra
    [stack] installs from there (`install`)."""
    for project in (REPO_ROOT, REPO_ROOT / "lab"):
        subprocess.run([str(UV), "build", "--wheel", "--out-dir", str(out), str(project)], check=True, timeout=600)
    (built,) = out.glob("splitaudit-0*.whl")
    return built


def install(kind: str, wheel: Path, root: Path, extra: str | None = None) -> Path:
    """A fresh venv under `root` with the wheel installed by `kind` (uv or pip), with `extra` if given: its bin/
    folder. An extra's dependencies are held to requirements.lock's pins (`-c`), as `make setup` installs them; the
    lab's wheel ([stack]) comes from beside the product's."""
    venv = root / f"{kind}-venv"
    requirement = f"{wheel}[{extra}]" if extra else str(wheel)
    pins = ["-c", str(REPO_ROOT / "requirements.lock"), "--find-links", str(wheel.parent)] if extra else []
    if kind == "uv":
        subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, timeout=120)
        python = str(venv / "bin" / "python")
        argv = [str(UV), "pip", "install", "-q", "--python", python, requirement, *pins]
        subprocess.run(argv, check=True, timeout=900)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", requirement, *pins], check=True, timeout=900)
    return venv / "bin"


def outside_env(cwd: Path) -> dict[str, str]:
    """The environment of a user outside the checkout: no PYTHONPATH, venv or stack home of the checkout's, and a
    HOME and XDG_DATA_HOME (so the stack home `data/splitaudit`) under `cwd`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPLITAUDIT_HOME")}
    return env | {"HOME": str(cwd / "home"), "XDG_DATA_HOME": str(cwd / "data")}


def run(
    bin_dir: Path, *args: str, cwd: Path, offline: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`splitaudit ARGS` of an installed venv, from `cwd` outside the checkout (`outside_env`); `offline` runs it in
    a network namespace with no interface up (`unshare -n`), where any download fails."""
    argv = [*(["unshare", "-n"] if offline else []), str(bin_dir / "splitaudit"), *args]
    return subprocess.run(argv, cwd=cwd, env=outside_env(cwd), capture_output=True, text=True, timeout=timeout)


def tree(folder: Path) -> dict[str, int]:
    """Every file under `folder` by its relative path, with its size."""
    return {str(path.relative_to(folder)): path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def seed(downloads: Path) -> None:
    """`downloads` holding hard links (copies across filesystems) of every locked file the checkout has: those its
    setup downloaded, and from its Maven repository those only a wheel downloads (the demo pipeline's jars, which
    the checkout's reactor resolved there)."""
    for component in read_lock().components.values():
        for file in component:
            target = downloads / file.download_path
            sources = [downloads_dir() / file.download_path]
            if file.path is not None:
                sources.append(maven_repo() / file.path)
            source = next((s for s in sources if s.is_file() and s.stat().st_size == file.size), None)
            if source is not None and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copyfile(source, target)
