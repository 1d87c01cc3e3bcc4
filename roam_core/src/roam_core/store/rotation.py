"""What a key rotation keeps in the store: its journal (new key) and one tombstone (old key).

`roam key rotate` moves the store from one archive key to another in resumable steps. Each
step that completes leaves a journal record under `rotation/<new key's fingerprint>/`, sealed
under the new key (kind `R`), so a rerun with the same two keys continues where the last one
stopped and nobody without the new key can read what it did. When the rotation is done every
record is deleted.

The one object the old key still opens afterwards is the tombstone `rotated/<id>` (kind `X`,
named by the old key's naming sub-key, so a device holding only the old key finds it without a
listing). It holds when the fleet was rotated and by which device, nothing else: a device
still on the old key says "the fleet's key was rotated on <date> by <device>" instead of a
bare authentication failure (docs/security.md).
"""

from __future__ import annotations

import hashlib
from typing import Any

from roam_core import crypto
from roam_core.errors import IntegrityError, ObjectNotFound
from roam_core.storage import Backend
from roam_core.store.objects import canonical, parse_json
from roam_core.store.uploads import put_once

ROTATION_PREFIX = "rotation/"
TOMBSTONE_PREFIX = "rotated/"
#: The journal record that says a rotation to this key started (and from which key).
STARTED = "started"


def journal_prefix(new_keys: crypto.Keys) -> str:
    """Where the journal of a rotation to `new_keys` lives."""
    return f"{ROTATION_PREFIX}{new_keys.fingerprint}/"


def write_record(backend: Backend, new_keys: crypto.Keys, name: str,
                 value: dict[str, Any]) -> str:
    """Seal one journal record under the new key; return its key (re-writing one is a no-op)."""
    key = journal_prefix(new_keys) + name
    sealed = crypto.seal(new_keys.encryption, crypto.KIND_ROTATION, key,
                         canonical({"v": 1, **value}))
    put_once(backend, key, sealed)
    return key


def read_record(backend: Backend, new_keys: crypto.Keys, key: str) -> dict[str, Any]:
    """One journal record, authenticated under the new key (bound to its own key)."""
    try:
        sealed = backend.get(key)
    except ObjectNotFound:
        raise IntegrityError(f"integrity error: rotation record {key} is missing") from None
    plain = crypto.open_sealed(new_keys.encryption, crypto.KIND_ROTATION, key, sealed,
                               f"rotation record {key}")
    return parse_json(plain, f"rotation record {key}")


def tombstone_key(old_keys: crypto.Keys) -> str:
    """The one key the tombstone of `old_keys` has (found without a listing)."""
    digest = hashlib.sha256(b"roam rotated").digest()
    return TOMBSTONE_PREFIX + old_keys.name(crypto.KIND_TOMBSTONE, digest)


def write_tombstone(backend: Backend, old_keys: crypto.Keys, when: str, device: str) -> None:
    """Leave the old key's tombstone; one already there (an earlier attempt) is kept."""
    key = tombstone_key(old_keys)
    sealed = crypto.seal(old_keys.encryption, crypto.KIND_TOMBSTONE, key,
                         canonical({"v": 1, "rotated": when, "device": device}))
    put_once(backend, key, sealed)


def read_tombstone(backend: Backend, old_keys: crypto.Keys) -> tuple[str, str] | None:
    """(when, device) when the store says the fleet moved away from `old_keys`, else None.

    Only an authentic tombstone counts: anything that fails to open under the key is ignored
    (it says nothing to this device).
    """
    key = tombstone_key(old_keys)
    try:
        sealed = backend.get(key)
        plain = crypto.open_sealed(old_keys.encryption, crypto.KIND_TOMBSTONE, key, sealed,
                                   "rotation tombstone")
        value = parse_json(plain, "rotation tombstone")
    except (ObjectNotFound, IntegrityError):
        return None
    when, device = value.get("rotated"), value.get("device")
    if not isinstance(when, str) or not isinstance(device, str):
        return None
    return when, device


def rekeyed_store(backend: Backend) -> bool:
    """Whether a key rotation runs or ran here (so objects of two keys may sit side by side)."""
    for prefix in (ROTATION_PREFIX, TOMBSTONE_PREFIX):
        for _key in backend.list(prefix):
            return True
    return False


def rotated_message(when: str, device: str) -> str:
    """The one line a device still holding the old key gets."""
    return (f"the fleet's key was rotated on {when[:10]} by {device}; set the new "
            "ROAM_ARCHIVE_KEY (see docs/security.md)")
