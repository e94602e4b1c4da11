"""The conf a FlinkCluster writes per release: flink-conf.yaml before 1.19, config.yaml after, and the keys 2.0
renamed under their 2.x names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitaudit_lab.stack.flink_cluster import FlinkCluster

CONF_FILES = ("log4j.properties", "log4j-console.properties", "log4j-cli.properties", "logback-console.xml")


def _conf(tmp_path: Path, version: str) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    for name in CONF_FILES:
        (home / "conf" / name).write_text("")
    cluster = FlinkCluster(tmp_path / "run", 8081, 6123, version=version, state_backend="rocksdb")
    cluster._write_conf(home)
    files = sorted(p.name for p in cluster.conf_dir.glob("*.yaml"))
    (conf,) = files
    lines = (cluster.conf_dir / conf).read_text().splitlines()
    pairs = dict(line.split(": ", 1) for line in lines)
    return {"file": conf} | {key: json.loads(value) if value.startswith('"') else value for key, value in pairs.items()}


@pytest.mark.parametrize("version", ["2.0.1", "2.2.1"])
def test_a_2x_cluster_writes_the_renamed_checkpoint_keys(tmp_path: Path, version: str) -> None:
    conf = _conf(tmp_path, version)
    assert conf["file"] == "config.yaml"
    assert conf["execution.checkpointing.dir"] == (tmp_path / "run" / "checkpoints").as_uri()
    assert conf["execution.checkpointing.savepoint-dir"] == (tmp_path / "run" / "savepoints").as_uri()
    assert conf["execution.checkpointing.incremental"] == "true"
    assert not {"state.checkpoints.dir", "state.savepoints.dir", "state.backend.incremental"} & set(conf)
    assert conf["state.backend.type"] == "rocksdb"


@pytest.mark.parametrize(
    ("version", "file"), [("1.19.3", "config.yaml"), ("1.20.3", "config.yaml"), ("1.16.3", "flink-conf.yaml")]
)
def test_a_1x_cluster_keeps_the_1x_names(tmp_path: Path, version: str, file: str) -> None:
    conf = _conf(tmp_path, version)
    assert conf["file"] == file
    assert conf["state.checkpoints.dir"] == (tmp_path / "run" / "checkpoints").as_uri()
    assert "execution.checkpointing.dir" not in conf
