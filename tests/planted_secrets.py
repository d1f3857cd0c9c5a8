"""Secrets planted in test inputs, and the check that none of them survives redaction.

Shared by the recording and the import tests: plant `PLANTED` values (or `planted_payload()`) in an
input, run it through redaction, then `assert_no_planted_secret(output_text)`.
"""

from __future__ import annotations

from typing import Any

# One secret per built-in rule, each shaped like the real thing (none of them is a live credential).
PLANTED: dict[str, str] = {
    "openai-key": "sk-" + "T3stKey0123456789abcdefghijklmnopqrstuvwxyzABCD",
    "openai-project-key": "sk-proj-" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz1BcDeFgHiJkLmN_oPqRsTuVwXyZ-0123456789",
    "anthropic-key": "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-_zyxwvutsrqponm",
    "aws-access-key-id": "AKIA" + "IOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "1234567890abcdefghijklmnopqrstuvwxyzAB",
    "github-pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU",
    "slack-token": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    "bearer-token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJlLXRlc3Q",
    "private-key-body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7planted",
}

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    f"{PLANTED['private-key-body']}\n"
    "c2VjcmV0LXBlbS1ib2R5LXRoYXQtbXVzdC1ub3QtbGVhaw==\n"
    "-----END RSA PRIVATE KEY-----"
)

# What a user rule (`--redact`, `loopguard_redact`) is tested with: a secret no built-in rule knows.
USER_RULE = r"corp-[0-9a-f]{16}"
USER_SECRET = "corp-0123456789abcdef"


def planted_payload() -> dict[str, Any]:
    """A JSON-able mapping holding every planted secret in a different position (nested, in lists,
    inside longer text, as a header, as a PEM block)."""
    return {
        "command": f"curl -H 'Authorization: Bearer {PLANTED['bearer-token']}' https://api.example.com",
        "env": {"OPENAI_API_KEY": PLANTED["openai-key"], "ANTHROPIC_API_KEY": PLANTED["anthropic-key"]},
        "keys": [PLANTED["openai-project-key"], f"aws={PLANTED['aws-access-key-id']}"],
        "note": f"tokens: {PLANTED['github-token']} {PLANTED['github-pat']}, slack {PLANTED['slack-token']}",
        "file": f"id_rsa contents:\n{PEM}\n",
        "internal": f"ticket token {USER_SECRET}",
    }


def all_secrets() -> list[str]:
    return [*PLANTED.values(), USER_SECRET]


def assert_no_planted_secret(text: str) -> None:
    """Fails naming every planted secret (or a recognisable piece of one) found in `text`."""
    found = [s for s in all_secrets() if s in text or s[-20:] in text]
    assert not found, f"planted secrets survived redaction: {found}"


# How each planted kind is recognised on its own, as a mapping key, a URL password, a run id or a file name:
# most kinds carry their vendor prefix; a bearer token is one after the word "Bearer", a private key's body
# one inside its PEM block (a bare token is no secret to a pattern).
def recognisable(kind: str) -> str:
    """The planted secret of `kind` in the form its rule recognises anywhere."""
    if kind == "bearer-token":
        return f"Bearer {PLANTED[kind]}"
    if kind == "private-key-body":
        return PEM
    return PLANTED[kind]


def url_with_password(kind: str) -> str:
    """A URL whose password is the planted secret itself (the URL-credential rule redacts any password)."""
    return f"https://alice:{PLANTED[kind]}@db.example.com:5432/app"


def hostile_positions() -> dict[str, Any]:
    """Every planted kind as a value, a mapping key and a URL password, nested as tool arguments are."""
    return {
        "values": {kind: recognisable(kind) for kind in PLANTED},
        "keys": {recognisable(kind): kind for kind in PLANTED},
        "urls": [url_with_password(kind) for kind in PLANTED],
        "user": {USER_SECRET: f"rule {USER_SECRET}"},
    }
