"""The one error tree of roam.

Every failure a user can cause or meet is a `RoamError`; anything else that escapes is a
bug and keeps its traceback. The CLI maps the tree to exit codes: `ConflictError` exits 2,
every other `RoamError` exits 1 with its one-line message.
"""

from __future__ import annotations


class RoamError(Exception):
    """Root of every error roam raises on purpose."""

    exit_code = 1

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message or self.__class__.__name__


class UserError(RoamError):
    """Bad input or configuration: print the message, exit 1, no traceback."""


class ConfigError(UserError):
    """A settings, rules or YAML file is malformed; the message names the file and line."""


class ArchiveKeyError(UserError):
    """The archive key is missing, malformed or cannot open this store."""


class IntegrityError(RoamError):
    """A stored object failed authentication or decoding; the message names the object."""


class ConflictError(RoamError):
    """Someone else moved first (remote ahead, conflicts kept local): exit 2."""

    exit_code = 2


class LockedError(RoamError):
    """Another roam process holds the home's lock."""


class PluginError(RoamError):
    """A plugin is missing, broken or misbehaving; carries the plugin's name."""

    def __init__(self, message: str, plugin: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin


class BackendError(RoamError):
    """A storage backend failed. Subclasses say how."""


class ObjectNotFound(BackendError):
    """`get` of a key that does not exist."""


class ObjectExists(BackendError):
    """`put_new` of a key that already exists (objects are create-once)."""


class RefConflict(BackendError):
    """`swap_ref` lost the compare-and-swap: the ref is not at the expected version."""


class TransientBackendError(BackendError):
    """A network or service failure that may succeed if tried again later."""


class DeadlineExceeded(TransientBackendError):
    """The operation's time budget ran out before the backend answered."""


def describe(error: RoamError) -> str:
    """The one line a user reads: the message behind a prefix that says what kind it is.

    Only a network failure says "remote unreachable"; a wrong key, a bad setting or a
    missing plugin say so instead, so the fix is looked for in the right place.
    """
    message = str(error)
    if isinstance(error, DeadlineExceeded):
        return message  # it names the operation and how to resume
    prefix = next((label for kind, label in _LABELS if isinstance(error, kind)), "")
    if not prefix or message.startswith(prefix) or f" {prefix}" in message:
        return message
    return f"{prefix}{message}"


_LABELS: tuple[tuple[type[RoamError], str], ...] = (
    (ArchiveKeyError, "key error: "),
    (ConfigError, "configuration error: "),
    (PluginError, "plugin error: "),
    (TransientBackendError, "remote unreachable: "),
    (BackendError, "remote error: "),
)


def describe_os_error(error: OSError) -> str:
    """`No space left on device: /path`, never the empty `()` a missing file name gave."""
    text = error.strerror or (str(error.args[0]) if error.args else "") or type(error).__name__
    return f"{text}: {error.filename}" if error.filename else text
