"""The gateway's pieces that need no server: the checked-in generated code, the wire
format and its validation, settings and tokens, the rate limiter."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

import chronoray
from chronoray.config import Config
from chronoray.gateway.guard import RateLimiter
from chronoray.gateway.settings import GatewaySettings, client_token, read_token
from chronoray.gateway.wire import (
    InvalidField,
    to_record,
    to_value,
    update_of,
    value_of,
    values_of,
)
from chronoray.v1 import gateway_pb2 as pb
from vertex import Update

_ROOT = Path(chronoray.__file__).parent.parent
_GENERATED = ("gateway_pb2.py", "gateway_pb2.pyi", "gateway_pb2_grpc.py")


def test_checked_in_modules_are_what_protoc_makes_of_the_proto(tmp_path):
    proto = "chronoray/v1/gateway.proto"
    (tmp_path / "chronoray" / "v1").mkdir(parents=True)
    (tmp_path / proto).write_bytes((_ROOT / proto).read_bytes())
    made = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I."]
        + ["--python_out=.", "--pyi_out=.", "--grpc_python_out=.", proto],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    for name in _GENERATED:
        fresh = (tmp_path / "chronoray" / "v1" / name).read_text()
        assert fresh == (_ROOT / "chronoray" / "v1" / name).read_text(), (
            f"chronoray/v1/{name} is stale: regenerate it (see chronoray/v1/__init__.py)"
        )


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**63),
        2**63 - 1,
        2.5,
        -0.0,
        math.inf,
        "é",
        b"\x00\xff",
        [1, [2, "x"]],
        {"a": {1: None, "b": [1.5]}},
        {},
    ],
)
def test_values_cross_the_wire_unchanged(value):
    assert value_of(to_value(value)) == value
    assert type(value_of(to_value(value))) is type(value)


def test_values_without_a_form_travel_as_their_repr_and_cannot_be_sent():
    assert to_value({1, 2}).repr == "{1, 2}"
    assert to_value(2**70).repr == repr(2**70)
    assert value_of(to_value((1, 2))) == [1, 2]  # a tuple arrives as a list
    with pytest.raises(InvalidField, match=r"^props\['w'\]: repr is what a server sends"):
        values_of({"w": pb.Value(repr="{1}")}, "props", sent=True)
    with pytest.raises(InvalidField, match=r"^props\['w'\]: no value set"):
        values_of({"w": pb.Value()}, "props", sent=True)


def test_a_record_round_trips_and_keeps_integer_times():
    for update in (
        Update.add_edge(1, "b", 10, weight=-2.5),
        Update.add_vertex("v", 3.25, None, name="x"),
        Update.message(7, 0, text="hi"),
        Update.remove_edge(1, 2, 4),
    ):
        stamped = update.with_origin("s", 9)
        back = update_of(to_record(stamped), "s", "r")
        assert back == stamped and type(back.ts) is type(stamped.ts)


def _record(**fields):
    """A good add_edge record with ``fields`` changed (``None``: unset)."""
    record = to_record(Update.add_edge(1, 2, 10).with_origin("s", 1))
    for name, value in fields.items():
        record.ClearField(name)
        if name == "props":
            for key, item in value.items():
                record.props[key].CopyFrom(item)
        elif hasattr(value, "CopyFrom"):
            getattr(record, name).CopyFrom(value)
        elif value is not None:
            setattr(record, name, value)
    return record


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"offset": 0}, r"^r\.offset: offsets start at 1"),
        ({"kind": pb.UPDATE_KIND_UNSPECIFIED}, r"^r\.kind: not an update kind"),
        ({"kind": 42}, r"^r\.kind: not an update kind: 42"),
        ({"vertex": None}, r"^r\.vertex: no vertex id set"),
        ({"vertex": pb.VertexId(str="")}, r"^r\.vertex: an empty string is not a vertex id"),
        ({"dst": None}, r"^r\.dst: add_edge needs the edge's target"),
        ({"kind": pb.MESSAGE}, r"^r\.dst: message takes no dst"),
        ({"ts": None}, r"^r\.ts: no time set"),
        ({"ts": pb.Time(float=math.nan)}, r"^r\.ts: time must be finite"),
        ({"ts": pb.Time(float=math.inf)}, r"^r\.ts: time must be finite"),
        ({"props": {"": pb.Value(int=1)}}, r"^r\.props: an empty key"),
        ({"vertex_type": "Person"}, r"^r\.vertex_type: add_edge takes no vertex_type"),
    ],
)
def test_every_field_of_a_record_is_checked(fields, message):
    with pytest.raises(InvalidField, match=message):
        update_of(_record(**fields), "s", "r")


def test_a_vertex_type_must_be_one_the_graph_knows():
    record = to_record(Update.add_vertex(5, 1, "Person").with_origin("s", 1))
    assert update_of(record, "s", "r", ["Person"]).vertex_type == "Person"
    with pytest.raises(InvalidField, match=r"unknown vertex type 'Person' \(known: Other\)"):
        update_of(record, "s", "r", ["Other"])


def test_settings_come_from_the_gateway_table_then_env_then_arguments(tmp_path, monkeypatch):
    file = tmp_path / "chronoray.toml"
    file.write_text("[chronoray]\nnum_shards = 3\n[gateway]\nport = 6000\nrate_limit = 5.0\n")
    monkeypatch.setenv("CHRONORAY_GATEWAY_RATE_LIMIT", "7")
    settings = GatewaySettings.load(file, host="0.0.0.0")
    assert (settings.port, settings.rate_limit, settings.host) == (6000, 7.0, "0.0.0.0")
    assert Config.load(file).num_shards == 3  # the [gateway] table is not Config's
    top_level = tmp_path / "flat.toml"
    top_level.write_text("num_shards = 4\n[gateway]\nport = 1\n")
    assert Config.load(top_level).num_shards == 4
    with pytest.raises(ValueError, match="unknown setting"):
        GatewaySettings.load(None, colour="red")
    with pytest.raises(ValueError, match="both tls_cert and tls_key"):
        GatewaySettings(tls_cert="c.pem")
    with pytest.raises(ValueError, match="ingest_window must be >= 1, got 0"):
        GatewaySettings(ingest_window=0)
    monkeypatch.setenv("CHRONORAY_GATEWAY_INGEST_WINDOW", "2")
    assert GatewaySettings.load(None).ingest_window == 2
    assert "secret" not in repr(GatewaySettings(token="secret"))


def test_tokens_from_settings_files_and_the_default_file(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "chronoray.gateway.settings.DEFAULT_TOKEN_FILE", tmp_path / "home" / "gateway-token"
    )
    for name in ("CHRONORAY_GATEWAY_TOKEN", "CHRONORAY_GATEWAY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert client_token() is None  # nothing made yet
    made = GatewaySettings().server_token()
    default = tmp_path / "home" / "gateway-token"
    assert len(made) >= 32 and default.stat().st_mode & 0o777 == 0o600
    assert GatewaySettings().server_token() == made == client_token()  # found again
    file = tmp_path / "token"
    file.write_text("  abc  \nignored\n")
    assert GatewaySettings(token_file=str(file)).server_token() == "abc" == read_token(file)
    assert GatewaySettings(auth=False).server_token() is None
    monkeypatch.setenv("CHRONORAY_GATEWAY_TOKEN_FILE", str(file))
    assert client_token() == "abc"
    assert client_token("given") == "given"
    file.write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        read_token(file)


def test_the_rate_limiter_refills_per_client():
    limiter = RateLimiter(rate=10.0, burst=3)
    assert [limiter.take("a", now=0.0) for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(0.1)]
    assert limiter.take("b", now=0.0) == 0.0
    assert limiter.take("a", now=0.1) == 0.0
    assert limiter.take("a", now=10.0) == 0.0  # full again, never more than the burst
    assert [limiter.take("a", now=10.0) for _ in range(3)][-1] > 0


def test_serve_takes_the_ingest_window_as_an_option():
    from click.testing import CliRunner

    from chronoray.cli import main

    runner = CliRunner()
    shown = runner.invoke(main, ["serve", "--help"], terminal_width=200)
    assert shown.exit_code == 0
    assert "--ingest-window" in shown.output and "CHRONORAY_GATEWAY_INGEST_WINDOW" in shown.output
    refused = runner.invoke(main, ["serve", "--graph", "g", "--ingest-window", "0"])
    assert refused.exit_code == 2 and "--ingest-window" in refused.output
