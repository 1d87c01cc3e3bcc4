"""What roam asks of the Hermes it runs in, across Hermes versions (0.19 and newer).

Every Hermes import is inside a function and guarded: a feature that a Hermes version
lacks degrades to the documented fallback, and the plugin never fails to load because of
it. roam's settings are read from the ROOT home's config.yaml with
`roam_core.settings.load_settings`, on every version: newer Hermes's `ctx.get_config`
reads the current profile's config, while roam's settings belong to the root.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from roam_core.errors import UserError
from roam_core.home import Home, resolve_home

log = logging.getLogger("roam.hermes")

#: Shown instead of text whose redaction failed: nothing unredacted leaves (fail closed).
REDACTION_UNAVAILABLE = "[redaction-unavailable]"


class SecretScopeError(UserError):
    """Hermes has no secret scope for this context (gateway profile multiplexing)."""


def hermes_home_dir() -> Path:
    """The home Hermes is running in, as Hermes sees it (possibly a profile home).

    Hermes may set the home per context (`set_hermes_home_override`) rather than in the
    environment, so ask Hermes first and fall back to `$HERMES_HOME`, then `~/.hermes`.
    """
    try:
        from hermes_constants import get_hermes_home

        return Path(get_hermes_home())
    except Exception:
        return Path(os.environ.get("HERMES_HOME") or "~/.hermes").expanduser()


def current_home() -> Home:
    """The resolved home: a profile home maps up to its root, keeping the profile's name."""
    return resolve_home(str(hermes_home_dir()))


def hermes_secret(name: str) -> str | None:
    """Read one secret through `agent.secret_scope.get_secret`, never from `.env`.

    Raises:
        SecretScopeError: when Hermes refuses an unscoped read (profile multiplexing); the
            caller's work is skipped with that reason.
    """
    from agent.secret_scope import get_secret

    try:
        return get_secret(name)
    except Exception as failure:
        if type(failure).__name__ == "UnscopedSecretError":
            raise SecretScopeError(
                f"no Hermes secret scope is active here, so {name} cannot be read "
                "(gateway profile multiplexing); skipped") from None
        raise


def redact(text: str) -> str:
    """Scrub text that leaves the process for a remote reader (chat platforms, the model).

    Newer Hermes has `agent.redact.redact_for_egress`; 0.19 has
    `redact_sensitive_text(text, force=True)`. Outside Hermes the text is returned as is
    (roam's own output carries no secrets by construction). Fails closed inside Hermes.
    """
    try:
        import agent.redact as redaction
    except ImportError:
        return text
    try:
        egress = getattr(redaction, "redact_for_egress", None)
        if egress is not None:
            return str(egress(text))
        return str(redaction.redact_sensitive_text(text, force=True))
    except Exception:
        log.warning("roam: redaction failed; withholding the text")
        return REDACTION_UNAVAILABLE


def fill_manifest(manifest: Any, meta: dict[str, Any]) -> None:
    """Give Hermes's record of this plugin our metadata where it has none.

    Hermes builds an entry-point plugin's manifest from the entry point alone (0.19: name
    only; `hermes plugins list` reads version and description from the distribution), so
    the loaded plugin's manifest is completed from `plugin.yaml` at register time.
    """
    for key in ("version", "description", "author", "provides_hooks", "provides_tools"):
        if key in meta and hasattr(manifest, key) and not getattr(manifest, key, None):
            try:
                setattr(manifest, key, meta[key])
            except Exception:  # a frozen manifest on some version: metadata is optional
                return


def plugin_dir() -> Path:
    """The folder that holds plugin.yaml and the bundled skills."""
    return Path(__file__).resolve().parent
