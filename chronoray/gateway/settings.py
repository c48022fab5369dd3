"""Settings of the gRPC gateway and where its token comes from.

:class:`GatewaySettings` follows the rule of :class:`~chronoray.config.Config`: defaults <
the ``[gateway]`` table of the settings file (``chronoray --config FILE``) <
``CHRONORAY_GATEWAY_*`` environment variables < explicit arguments (the options of
``chronoray serve``).

The token: authentication is on unless ``auth`` is false. The server uses ``token``
(``CHRONORAY_GATEWAY_TOKEN``) if given, else the first line of ``token_file``
(``CHRONORAY_GATEWAY_TOKEN_FILE``), else of :data:`DEFAULT_TOKEN_FILE`, which it creates
with a fresh random token (readable by its owner only) if it does not exist -- so on one
machine a server and its clients find the same token with no setting at all, the way
``ray start`` and Ray's drivers share ``~/.ray/auth_token``. A client looks in the same
places (:func:`client_token`).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chronoray.config import load_settings, read_settings_file

__all__ = [
    "DEFAULT_TOKEN_FILE",
    "ENV_PREFIX",
    "GatewaySettings",
    "client_token",
    "read_token",
]

ENV_PREFIX = "CHRONORAY_GATEWAY_"
DEFAULT_TOKEN_FILE = Path("~/.chronoray/gateway-token")
"""Where a server without a configured token keeps the one it made (``~`` expanded)."""


@dataclass(frozen=True)
class GatewaySettings:
    """How ``chronoray serve`` listens, authenticates and limits its clients."""

    host: str = "127.0.0.1"
    """Address to listen on (``0.0.0.0``: every interface; then use TLS)."""
    port: int = 50051
    """Port to listen on (0: a free one, see ``Gateway.port``)."""
    auth: bool = True
    """Token authentication (every call but the health check needs the token)."""
    token: str | None = field(default=None, repr=False)
    """The token itself (prefer ``token_file``: variables leak into process listings)."""
    token_file: str | None = None
    """File whose first line is the token [default: ``~/.chronoray/gateway-token``]."""
    tls_cert: str | None = None
    """PEM certificate chain of the server; with ``tls_key``, the server speaks TLS only."""
    tls_key: str | None = None
    """PEM private key of ``tls_cert``."""
    max_message_bytes: int = 16 * 1024 * 1024
    """Largest message the server receives or sends (a larger one: RESOURCE_EXHAUSTED)."""
    max_batch_records: int = 10_000
    """Most records in one ingestion batch."""
    stream_window_bytes: int = 1024 * 1024
    """HTTP/2 flow-control window of a stream: what a client can send ahead of what the
    server took (bounds the server's memory per ingestion stream)."""
    ingest_window: int = 4
    """Batches of an ingestion stream the server takes ahead of their acknowledgement:
    checked and fed to the shards while earlier ones are still being logged (1: one at a
    time). With ``max_batch_records`` (or ``max_message_bytes``) it bounds what the
    server holds per stream, besides ``stream_window_bytes``."""
    rate_limit: float = 1000.0
    """Requests per second per client address (calls, stream opens and ingestion batches;
    0: no limit). Calls over it are refused with RESOURCE_EXHAUSTED; batches wait."""
    rate_burst: int = 2000
    """Requests a client may make at once before ``rate_limit`` applies."""
    max_calls: int = 64
    """Calls served at once (ingestion and subscription streams included); more are
    refused with RESOURCE_EXHAUSTED."""
    output_dir: str = "chronoray-gateway"
    """Directory (on the server) where snapshots and analyses asked for are written."""
    grace: float = 10.0
    """Seconds calls in progress get to finish when the server stops."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        for name in ("max_batch_records", "ingest_window", "max_calls", "rate_burst"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_message_bytes", "stream_window_bytes"):
            if getattr(self, name) < 1024:
                raise ValueError(f"{name} must be >= 1024, got {getattr(self, name)}")
        if self.rate_limit < 0 or self.grace < 0:
            raise ValueError("rate_limit and grace must be >= 0")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both tls_cert and tls_key")

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, **overrides: Any) -> GatewaySettings:
        """Defaults < the ``[gateway]`` table of the TOML file ``path`` <
        ``CHRONORAY_GATEWAY_*`` variables < ``overrides`` that are not ``None``."""
        section = read_settings_file(path).get("gateway", {})
        return load_settings(cls, section, ENV_PREFIX, overrides)

    @property
    def tls(self) -> bool:
        """Whether the server speaks TLS."""
        return self.tls_cert is not None

    def server_token(self) -> str | None:
        """The token clients must present (``None``: authentication off); see the module
        doc for where it comes from. Creates the default token file if needed."""
        if not self.auth:
            return None
        if self.token:
            return self.token
        if self.token_file is not None:
            return read_token(Path(self.token_file))
        path = DEFAULT_TOKEN_FILE.expanduser()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as out:
                out.write(secrets.token_urlsafe(32) + "\n")
        return read_token(path)

    def as_dict(self) -> dict[str, Any]:
        """The settings as keyword arguments (to rebuild them elsewhere, e.g. in an actor)."""
        return asdict(self)


def read_token(path: Path) -> str:
    """The first line of the token file ``path``; ``ValueError`` naming the file if it is
    empty, ``FileNotFoundError`` if it does not exist."""
    token = path.expanduser().read_text().strip().splitlines()
    if not token or not token[0].strip():
        raise ValueError(f"token file {path} is empty")
    return token[0].strip()


def client_token(
    token: str | None = None, token_file: str | os.PathLike[str] | None = None
) -> str | None:
    """The token a client sends: ``token``, else ``CHRONORAY_GATEWAY_TOKEN``, else the file
    ``token_file`` or ``CHRONORAY_GATEWAY_TOKEN_FILE``, else the default token file if it
    exists; ``None`` if there is none (a server with authentication off)."""
    token = token or os.environ.get(f"{ENV_PREFIX}TOKEN")
    if token:
        return token
    path = token_file or os.environ.get(f"{ENV_PREFIX}TOKEN_FILE")
    if path:
        return read_token(Path(path))
    default = DEFAULT_TOKEN_FILE.expanduser()
    return read_token(default) if default.exists() else None
