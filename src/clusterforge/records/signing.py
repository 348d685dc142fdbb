"""Certificate signing keys: Ed25519, generated on first use, rotated with key IDs.

In the records directory (the folder of the default records database: `~/.local/state/clusterforge`,
or the folder of `$CLUSTERFORGE_DB`):

    keys/                   0700
    keys/signing.key        0600  the private key (PKCS#8 PEM), made on first signing
    keys/trusted/<kid>.pub  0600  public keys trusted for verification only: retired keys, other controllers

`$CLUSTERFORGE_CERT_KEY_FILE` may name the private key file instead (e.g. a secret manager's mount);
the key material itself is never read from the environment. A certificate verifies only against the
trusted set: the signing key's public half and `keys/trusted/*.pub`. The key ID (`kid`) is the first 32
hex digits of the SHA-256 of the raw public key.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from clusterforge.childenv import env_value
from clusterforge.errors import ClusterforgeError, ExitCode
from clusterforge.records._util import PRIVATE_FILE, private_dir, records_dir, tighten_mode

KEY_FILE_ENV = "CLUSTERFORGE_CERT_KEY_FILE"
LEGACY_KEY_ENV = "CLUSTERFORGE_CERT_KEY"
ALG = "ed25519"
TrustedKeys = Mapping[str, Ed25519PublicKey]


class SigningKeyError(ClusterforgeError):
    """The signing key or a trusted key cannot be read, made or replaced."""

    exit_code = ExitCode.BAD_INPUT


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private: Ed25519PrivateKey
    path: Path

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self.private.sign(data)).decode()

    def __repr__(self) -> str:  # never the key material
        return f"SigningKey(kid={self.kid!r}, path={str(self.path)!r})"


def keys_dir() -> Path:
    return records_dir() / "keys"


def trusted_dir() -> Path:
    return keys_dir() / "trusted"


def key_path() -> Path:
    """`$CLUSTERFORGE_CERT_KEY_FILE`, else `<records dir>/keys/signing.key`."""
    named = env_value(KEY_FILE_ENV)
    return Path(named).expanduser() if named else keys_dir() / "signing.key"


def _no_legacy_key() -> None:
    if env_value(LEGACY_KEY_ENV):
        raise SigningKeyError(
            f"{LEGACY_KEY_ENV} is no longer used: certificates are signed with an Ed25519 key kept in "
            f"{keys_dir()} (or the file ${KEY_FILE_ENV} names). Unset {LEGACY_KEY_ENV} (a key in the "
            "environment reaches every child process) and re-certify: certificates sealed with it do not "
            "verify"
        )


def kid_of(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:32]


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def _private_pem(private: Ed25519PrivateKey) -> bytes:
    return private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_new(path: Path, data: bytes) -> Path:
    """A new 0600 file beside `path` (O_EXCL: never an existing one), written and synced; its name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)  # the umask can only take bits away; set it exactly anyway
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def generate(path: Path) -> bool:
    """Make a private key at `path` unless one is there; True when this call made it.

    Safe when several processes start at once: the key is written to a private temp file and published
    with `link`, which fails when `path` exists, so exactly one key wins and nobody reads a partial file.
    """
    private_dir(path.parent, tighten=path.parent == keys_dir())
    tmp = _write_new(path, _private_pem(Ed25519PrivateKey.generate()))
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    _sync_dir(path.parent)
    return True


def load_private(path: Path) -> SigningKey:
    with contextlib.suppress(OSError):  # e.g. a read-only secret mount: readable is what matters
        tighten_mode(path, PRIVATE_FILE)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"{path}: cannot read the certificate signing key: {exc.strerror}") from None
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        private = None
    if not isinstance(private, Ed25519PrivateKey):
        raise SigningKeyError(
            f"{path}: not an unencrypted Ed25519 private key in PEM (PKCS#8); "
            "fix: point $CLUSTERFORGE_CERT_KEY_FILE at the right file, or move this one away to make a new "
            "key"
        )
    return SigningKey(kid_of(private.public_key()), private, path)


def signing_key() -> SigningKey:
    """The key certificates are signed with, made on first use."""
    _no_legacy_key()
    path = key_path()
    if not path.exists():
        try:
            generate(path)
        except OSError as exc:
            raise SigningKeyError(f"{path}: cannot make the certificate signing key: {exc}") from None
    return load_private(path)


def load_public(path: Path) -> Ed25519PublicKey:
    try:
        public = serialization.load_pem_public_key(path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise SigningKeyError(f"{path}: not a readable Ed25519 public key in PEM: {exc}") from None
    if not isinstance(public, Ed25519PublicKey):
        raise SigningKeyError(f"{path}: not an Ed25519 public key ({type(public).__name__})")
    return public


def trusted_keys(problems: list[str] | None = None) -> dict[str, Ed25519PublicKey]:
    """Key ID → public key: the signing key's public half (when there is one) and `keys/trusted/*.pub`.

    A trusted file that cannot be read is left out (its certificates are then refused) and, when
    `problems` is given, reported there. Nothing is made: a host without any key trusts nothing.
    """
    _no_legacy_key()
    out: dict[str, Ed25519PublicKey] = {}
    folder = trusted_dir()
    for f in sorted(folder.glob("*.pub")) if folder.is_dir() else []:
        try:
            public = load_public(f)
        except SigningKeyError as exc:
            if problems is not None:
                problems.append(str(exc))
            continue
        out[kid_of(public)] = public
    path = key_path()
    if path.exists():
        key = load_private(path)
        out[key.kid] = key.public
    return out


def check_signature(public: Ed25519PublicKey, signature: str, data: bytes) -> bool:
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
        public.verify(raw, data)
    except (InvalidSignature, ValueError, UnicodeEncodeError):
        return False
    return True


def trust(public: Ed25519PublicKey) -> Path:
    """Add a public key to the trusted set (verify only); returns its file."""
    folder = private_dir(trusted_dir(), tighten=True)
    private_dir(keys_dir(), tighten=True)
    dest = folder / f"{kid_of(public)}.pub"
    if dest.exists():
        return dest
    tmp = _write_new(dest, public_pem(public).encode())
    try:
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _sync_dir(folder)
    return dest


@contextlib.contextmanager
def _rotation_lock() -> Iterator[None]:
    folder = private_dir(keys_dir(), tighten=True)
    fd = os.open(folder / ".rotate.lock", os.O_WRONLY | os.O_CREAT, PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def rotate() -> tuple[str | None, SigningKey]:
    """Retire the signing key to verify-only (its public half into `keys/trusted/`) and make a new one.

    Returns (the retired key's ID or None when there was no key, the new key). Certificates signed with
    the retired key keep verifying until its `.pub` file is deleted.
    """
    _no_legacy_key()
    path = key_path()
    with _rotation_lock():
        if not path.exists():
            return None, signing_key()
        old = load_private(path)
        trust(old.public)
        try:
            tmp = _write_new(path, _private_pem(Ed25519PrivateKey.generate()))
            try:
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
            _sync_dir(path.parent)
        except OSError as exc:
            raise SigningKeyError(
                f"{path}: cannot replace the signing key ({exc.strerror}); where a secret manager holds "
                "it, rotate it there and `clusterforge certificate trust-key` the old public key"
            ) from None
        return old.kid, load_private(path)
