"""TLS: a gateway with a self-signed certificate made here answers a client that trusts
it, and refuses plaintext and clients that do not trust it."""

from __future__ import annotations

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import chronoray as cr
from chronoray.errors import GatewayError
from tests.gateway.gateway_helpers import client, served_graph

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _self_signed(folder, name="localhost"):
    """A key and a certificate for ``name`` and 127.0.0.1, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = folder / f"{name}.key", folder / f"{name}.pem"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def test_tls_round_trip_and_plaintext_refused(ray_session, tmp_path):
    key, cert = _self_signed(tmp_path)
    _, other = _self_signed(tmp_path, "elsewhere")
    with served_graph("gw-tls", tmp_path, tls_cert=str(cert), tls_key=str(key)) as (_, gateway):
        assert "(TLS, token authentication)" in gateway.describe()
        with client(gateway, tls_ca=cert, timeout=20) as trusted:
            result = trusted.ingest([cr.Update.add_edge(1, 2, 5)], name="over-tls")
            assert result.acked_through == 1
            assert trusted.stats()["edges"] == 1
            assert trusted.vertex(1)["out_edges"] == {2: {"count": 1, "first_ts": 5, "last_ts": 5}}
        with client(gateway, timeout=5) as plaintext:
            with pytest.raises(GatewayError, match="^UNAVAILABLE"):
                plaintext.stats()
        with client(gateway, tls_ca=other, timeout=5) as untrusting:
            with pytest.raises(GatewayError, match="^UNAVAILABLE"):
                untrusting.stats()
