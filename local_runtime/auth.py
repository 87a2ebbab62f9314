"""Local JWT issuer and a verifier that behaves like the API Gateway HTTP API JWT authorizer.

The RS256 key pair is kept under `<state dir>/jwt/`, so printed tokens survive restarts (docs/local-runtime.md,
"Authorizer").
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import threading
import time
from dataclasses import dataclass
from typing import Any

LOCAL_ISSUER = "http://localhost/shop-local-issuer"
LOCAL_AUDIENCE = "shop-local-client"
DEFAULT_TTL_S = 12 * 3600
_lock = threading.Lock()


class Unauthorized(Exception):
    """The authorizer rejects the request: 401 {"message": "Unauthorized"}."""


@dataclass(frozen=True)
class KeyPair:
    private_pem: bytes
    public_pem: bytes
    kid: str


def load_or_create_keys(state_dir: pathlib.Path) -> KeyPair:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key_dir = pathlib.Path(state_dir) / "jwt"
    private_path, public_path = key_dir / "private.pem", key_dir / "public.pem"
    with _lock:
        if not private_path.exists():
            key_dir.mkdir(parents=True, exist_ok=True)
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            private = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            public = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            tmp = private_path.with_suffix(".tmp")
            tmp.write_bytes(private)
            os.chmod(tmp, 0o600)
            public_path.write_bytes(public)
            tmp.replace(private_path)
        private = private_path.read_bytes()
        if not public_path.exists():
            key_obj = serialization.load_pem_private_key(private, password=None)
            public_path.write_bytes(
                key_obj.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
        public = public_path.read_bytes()
    kid = base64.urlsafe_b64encode(hashlib.sha256(public).digest()[:12]).decode().rstrip("=")
    return KeyPair(private, public, kid)


def issue_token(
    keys: KeyPair,
    sub: str,
    *,
    groups: list[str] | None = None,
    issuer: str = LOCAL_ISSUER,
    audience: str = LOCAL_AUDIENCE,
    ttl_s: int = DEFAULT_TTL_S,
    extra: dict[str, Any] | None = None,
    now: float | None = None,
) -> str:
    """A Cognito-like access token: sub, iss, client_id/aud, token_use, exp, cognito:groups (a list)."""
    import jwt

    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "sub": sub,
        "iss": issuer,
        "aud": audience,
        "client_id": audience,
        "token_use": "access",
        "scope": "aws.cognito.signin.user.admin",
        "auth_time": issued,
        "iat": issued,
        "nbf": issued,
        "exp": issued + ttl_s,
        "jti": base64.urlsafe_b64encode(os.urandom(12)).decode(),
        "username": sub,
    }
    if groups:
        claims["cognito:groups"] = list(groups)
    claims.update(extra or {})
    return jwt.encode(claims, keys.private_pem, algorithm="RS256", headers={"kid": keys.kid})


class JwtAuthorizer:
    """Validates like API Gateway's JWT authorizer: RS256 signature by the key its `kid` names, `iss`
    equal to the issuer, `aud` or `client_id` among the audiences, `exp`/`nbf`/`iat` against the
    clock, and the route's scopes (any of them in `scope`/`scp`)."""

    def __init__(self, keys: KeyPair, *, issuer: str = LOCAL_ISSUER, audiences: list[str] | None = None) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audiences = audiences or [LOCAL_AUDIENCE]

    def verify(self, authorization: str | None, scopes: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
        import jwt

        if not authorization:
            raise Unauthorized("missing token")
        token = authorization.strip()
        if token[:7].lower() == "bearer ":
            token = token[7:].strip()
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"malformed token: {exc}") from None
        if header.get("alg") != "RS256":
            raise Unauthorized("token must be signed with RS256")
        if header.get("kid") != self.keys.kid:
            raise Unauthorized("the token's kid names no known signing key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self.keys.public_pem,
                algorithms=["RS256"],
                issuer=self.issuer,
                options={"require": ["exp", "iss"], "verify_aud": False},
                leeway=0,
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(str(exc)) from None
        # `client_id` counts only when the token has no `aud` (Cognito's access tokens).
        aud = claims.get("aud", claims.get("client_id"))
        audiences = aud if isinstance(aud, list) else [aud]
        if not any(a in self.audiences for a in audiences if a is not None):
            raise Unauthorized("audience not allowed")
        token_scopes = str(claims.get("scope") or claims.get("scp") or "").split()
        if scopes and not any(s in token_scopes for s in scopes):
            raise Unauthorized("insufficient scope")
        return claims, token_scopes
