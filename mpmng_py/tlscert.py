"""A throwaway TLS certificate for private servers (tests, benchmarks),
and the client side that trusts anything."""
import os
import ssl
import subprocess


def make_certificate(directory, name="server"):
    """A self-signed ECDSA P-256 certificate for localhost in directory;
    returns (certificate path, key path), both readable by the server's
    children."""
    crt = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", key, "-out", crt], check=True, capture_output=True, timeout=60)
    os.chmod(key, 0o644)
    return crt, key


def client_context(version=None, alpn=None):
    """A client context for private servers: no verification; one TLS
    version only if given; ALPN protocols if given."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if version:
        ctx.minimum_version = ctx.maximum_version = version
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx
