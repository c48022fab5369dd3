"""Config precedence: defaults < TOML < CHRONORAY_* environment < explicit arguments."""

from __future__ import annotations

import pytest

from chronoray.config import Config, env_name


def test_precedence(tmp_path, monkeypatch):
    toml = tmp_path / "c.toml"
    toml.write_text("[chronoray]\nnum_shards = 3\nbatch_size = 10\nsync = true\n")
    assert Config.load().num_shards == 2
    assert Config.load(toml).num_shards == 3
    monkeypatch.setenv(env_name("num_shards"), "5")
    monkeypatch.setenv("CHRONORAY_SYNC", "no")
    cfg = Config.load(toml)
    assert (cfg.num_shards, cfg.batch_size, cfg.sync) == (5, 10, False)
    assert Config.load(toml, num_shards=7, batch_size=None).num_shards == 7


def test_bad_values_are_named(monkeypatch):
    monkeypatch.setenv("CHRONORAY_NUM_SHARDS", "many")
    with pytest.raises(ValueError, match="CHRONORAY_NUM_SHARDS='many'"):
        Config.load()
    monkeypatch.delenv("CHRONORAY_NUM_SHARDS")
    with pytest.raises(ValueError, match="num_shards must be >= 1"):
        Config.load(num_shards=0)
    with pytest.raises(ValueError, match="unknown setting"):
        Config.load(shards=2)
    with pytest.raises(ValueError, match="batch_linger must be >= 0"):
        Config.load(batch_linger=-0.5)
    monkeypatch.setenv("CHRONORAY_BATCH_LINGER", "0.005")
    assert Config.load().batch_linger == 0.005
