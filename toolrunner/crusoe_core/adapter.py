"""How agent-side code authenticates to platform-internal services such as sandboxd ($SANDBOX_URL)."""
import os

DEFAULT_TOKEN_FILE = "/var/run/secrets/sandboxd/token"


class MissingTokenError(RuntimeError):
    pass


def internal_caller_headers():
    """{"Authorization": "Bearer <token>"} with the project's internal token.

    The token comes from $SANDBOX_TOKEN, else from the file named by $SANDBOX_TOKEN_FILE
    (default /var/run/secrets/sandboxd/token), both put there by the control plane at deploy time.
    """
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
    return {"Authorization": f"Bearer {token}"}
