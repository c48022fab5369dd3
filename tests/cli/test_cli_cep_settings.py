"""``chronoray cep`` reads its run settings the way the rest of chronoray does (issue 24,
item 6): defaults < the ``[cep]`` table of ``chronoray --config`` < ``CHRONORAY_CEP_*``
variables < options; a setting out of range is one usage line wherever it comes from."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cep.cli import CepSettings
from chronoray.cli import main
from chronoray.config import Config


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cep-settings")
    done = CliRunner().invoke(main, ["cep", "generate", str(folder), "--events", "600"])
    assert done.exit_code == 0, done.output
    return folder


def _q1(data, out, *argv, env=None):
    command = [*argv, "cep", "q1", "--posts", str(data / "posts.dat")]
    command += ["--comments", str(data / "comments.dat"), "--out", str(out)]
    return CliRunner(env=env).invoke(main, command)


def _row(result, name: str) -> str:
    """The value of table row ``name`` (``│ name │ value │``)."""
    for line in result.stdout.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 2 and cells[1] == name:
            return cells[2]
    raise AssertionError(f"no row {name!r} in {result.stdout}")


def _instances(result) -> str:
    """The instances and runtime rows, as ``N (runtime)``."""
    return f"{_row(result, 'instances')} ({_row(result, 'runtime')})"


def test_option_over_environment_over_settings_file(data, tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text('[chronoray]\nnum_shards = 3\n\n[cep]\nruntime = "local"\ninstances = 2\n')
    out = tmp_path / "q1.txt"
    from_file = _q1(data, out, "--config", settings)
    assert from_file.exit_code == 0, from_file.output
    assert _instances(from_file) == "2 (local)"
    env = {"CHRONORAY_CEP_INSTANCES": "3"}
    from_env = _q1(data, out, "--config", settings, env=env)
    assert _instances(from_env) == "3 (local)", from_env.output
    given = CliRunner(env=env).invoke(
        main,
        ["--config", str(settings), "cep", "q1", "--posts", str(data / "posts.dat"),
         "--comments", str(data / "comments.dat"), "--out", str(out), "--instances", "1"],
    )  # fmt: skip
    assert given.exit_code == 0, given.output
    assert _instances(given) == "1 (local)"
    # the [cep] table is no setting of the graph's
    assert Config.load(settings).num_shards == 3


@pytest.mark.parametrize(
    ("toml", "env", "says"),
    [
        ('[cep]\nruntime = "gpu"\n', {}, "runtime must be one of"),
        ("[cep]\nbatch = 5\n", {}, "unknown setting(s): batch"),
        (
            '[cep]\nruntime = "local"\n',
            {"CHRONORAY_CEP_INSTANCES": "many"},
            "CHRONORAY_CEP_INSTANCES",
        ),
    ],
)
def test_a_bad_setting_is_one_usage_line(data, tmp_path, toml, env, says):
    settings = tmp_path / "settings.toml"
    settings.write_text(toml)
    result = _q1(data, tmp_path / "q1.txt", "--config", settings, env=env)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and says in line, line


def test_defaults():
    assert CepSettings() == CepSettings.load(None)
    assert CepSettings.load(None, instances=2, rate=None).instances == 2
