"""How agent-side code authenticates to platform-internal services such as sandboxd ($SANDBOX_URL)."""
import base64
import json
import os
from typing import Any

DEFAULT_TOKEN_FILE = "/var/run/secrets/sandboxd/token"


class MissingTokenError(RuntimeError):
    pass


class MalformedTokenError(RuntimeError):
    pass


def internal_caller_headers() -> dict[str, str]:
    """{"Authorization": "Bearer <token>"} with the project's internal token.

    The token comes from $SANDBOX_TOKEN, else from the file named by $SANDBOX_TOKEN_FILE
    (default /var/run/secrets/sandboxd/token), both put there by the control plane at deploy time.
    """
    return {"Authorization": f"Bearer {internal_token()}"}


def internal_token() -> str:
    """The project's internal token (a JWT the control plane minted for this agent), read afresh on
    every call so a rotated token file is picked up."""
    token = os.environ.get("SANDBOX_TOKEN", "").strip()
    token_file = os.environ.get("SANDBOX_TOKEN_FILE") or DEFAULT_TOKEN_FILE
    if not token:
        try:
            with open(token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError:
            pass
    if not token:
        raise MissingTokenError(
            f"no internal sandbox token: SANDBOX_TOKEN is not set and {token_file} is missing or "
            f"empty; redeploy the agent so the control plane mints it a current token")
    return token


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, decoded but not verified: sandboxd verifies the signature; the agent only
    reads what the control plane wrote for it (e.g. its own image)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise MalformedTokenError("the internal sandbox token is not a JWT (three dot-separated parts); "
                                  "redeploy the agent so the control plane mints it a current token")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
    except (ValueError, UnicodeError):
        claims = None
    if not isinstance(claims, dict):
        raise MalformedTokenError("the internal sandbox token's claims do not decode to a JSON object; "
                                  "redeploy the agent so the control plane mints it a current token")
    return claims


def agent_image() -> str:
    """The agent's own image, from the `image` claim of its token: the only image sandboxd runs this
    agent's tools in (D2), so the agent cannot name another by mistake."""
    image = token_claims(internal_token()).get("image")
    if not isinstance(image, str) or not image:
        raise MalformedTokenError("the internal sandbox token has no `image` claim, so the agent's tools "
                                  "cannot be sandboxed; redeploy the agent so the control plane mints it "
                                  "a current token")
    return image
