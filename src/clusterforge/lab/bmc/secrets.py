"""The lab BMCs' TLS material (a CA of their own, made with openssl) and their one account (bcrypt htpasswd).

Everything lives in `<state>/bmc/`: `ca.pem` (what clients verify against: `bios_ca_path`), `ca.key`,
`server.pem`/`server.key` (one certificate for every lab BMC, with each BMC's address as a SAN),
`htpasswd` (sushy-emulator's basic-auth file), `credentials.json` and `password` (mode 0600: the account;
Ansible and the validators get CLUSTERFORGE_BMC_USER and CLUSTERFORGE_BMC_PASSWORD_FILE, so that the
password itself is never in an environment that ansible-runner records in its `command` artifact).
Made once and kept; a new address in the plan re-issues the server certificate only.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import subprocess
from pathlib import Path

import bcrypt

USER = "clusterforge"
BCRYPT_ROUNDS = 4  # the lab only: every request is checked, and cost 12 makes each ~0.3 s on 2 cores


def _openssl(*args: str, cwd: Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {res.stderr.strip()[-500:]}")


def _san(hosts: list[str]) -> str:
    out = []
    for h in sorted(set(hosts) | {"127.0.0.1", "localhost"}):
        try:
            ipaddress.ip_address(h)
            out.append(f"IP:{h}")
        except ValueError:
            out.append(f"DNS:{h}")
    return ",".join(out)


def ensure_tls(folder: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """CA and server certificate (SANs: `hosts` + loopback). Returns (ca.pem, server.pem, server.key)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, san_file = folder / "server.pem", folder / "server.key", folder / "server.san"
    if not (ca.exists() and ca_key.exists()):
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            ca_key.name,
            "-out",
            ca.name,
            "-days",
            "3650",
            "-subj",
            "/CN=clusterforge lab BMC CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            cwd=folder,
        )
        os.chmod(ca_key, 0o600)
        cert.unlink(missing_ok=True)
    san = _san(hosts)
    if cert.exists() and key.exists() and san_file.exists() and san_file.read_text() == san:
        return ca, cert, key
    _openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        key.name,
        "-out",
        "server.csr",
        "-subj",
        "/CN=clusterforge lab BMC",
        cwd=folder,
    )
    ext = folder / "server.ext"
    ext.write_text(
        f"subjectAltName={san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        ca.name,
        "-CAkey",
        ca_key.name,
        "-CAcreateserial",
        "-out",
        cert.name,
        "-days",
        "825",
        "-sha256",
        "-extfile",
        ext.name,
        cwd=folder,
    )
    os.chmod(key, 0o600)
    (folder / "server.csr").unlink(missing_ok=True)
    san_file.write_text(san)
    return ca, cert, key


def ensure_account(folder: Path) -> dict[str, str]:
    """The lab BMCs' account: made once (random password), written as htpasswd + credentials.json."""
    folder.mkdir(parents=True, exist_ok=True)
    creds_file, htpasswd = folder / "credentials.json", folder / "htpasswd"
    if creds_file.exists():
        creds: dict[str, str] = json.loads(creds_file.read_text())
    else:
        creds = {"user": USER, "password": secrets.token_urlsafe(18)}
        fd = os.open(creds_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(creds, fh)
    pw_file = folder / "password"
    if not pw_file.exists() or pw_file.read_text() != creds["password"]:
        fd = os.open(pw_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(creds["password"])
    if not htpasswd.exists() or not htpasswd.read_text().startswith(creds["user"] + ":"):
        digest = bcrypt.hashpw(creds["password"].encode(), bcrypt.gensalt(rounds=BCRYPT_ROUNDS)).decode()
        htpasswd.write_text(f"{creds['user']}:{digest}\n")
        os.chmod(htpasswd, 0o600)
    return creds


def credentials_env(folder: Path) -> dict[str, str]:
    """CLUSTERFORGE_BMC_USER / CLUSTERFORGE_BMC_PASSWORD_FILE for the lab BMCs (empty when never started)."""
    f = folder / "credentials.json"
    if not f.exists():
        return {}
    creds = json.loads(f.read_text())
    return {
        "CLUSTERFORGE_BMC_USER": creds["user"],
        "CLUSTERFORGE_BMC_PASSWORD_FILE": str(folder / "password"),
    }
