"""Which key opens each object of a store: the check behind "the old key opens nothing".

Every sealed object carries its kind in its header (`crypto.KINDS`); sealed JSON objects are
bound to their id (the key's last part) or, for rotation records and tombstones, to their
whole key. Packs hold blobs bound to their blob ids, so a pack counts as opened by a key
when an index that key opens names it and every blob in it opens under that key.
"""

from __future__ import annotations

from collections import Counter

from roam_core import crypto
from roam_core.errors import IntegrityError
from roam_core.storage import Backend
from roam_core.store import rotation
from roam_core.store.objects import HEAD_REF, STORE_FORMATS

#: Objects whose authenticated data is their whole key (not the last part of it).
WHOLE_KEY = (rotation.ROTATION_PREFIX, rotation.TOMBSTONE_PREFIX)


def _opens(keys: crypto.Keys, key: str, sealed: bytes) -> bool:
    if len(sealed) < crypto.HEADER_BYTES + crypto.TAG_BYTES:
        return False
    kind = sealed[3:4]
    object_id = key if key.startswith(WHOLE_KEY) else key.rpartition("/")[2]
    try:
        crypto.open_sealed(keys.encryption, kind, object_id, sealed, key)
    except IntegrityError:
        return False
    return True


def _pack_blobs(backend: Backend, keys: crypto.Keys) -> dict[str, list[tuple[str, int, int]]]:
    """pack key → (blob id, offset, length) from every index `keys` opens."""
    import json

    from roam_core.store import codec

    found: dict[str, list[tuple[str, int, int]]] = {}
    for key in backend.list("index/"):
        sealed = backend.get(key)
        index_id = key.rpartition("/")[2]
        try:
            plain = crypto.open_sealed(keys.encryption, crypto.KIND_INDEX, index_id, sealed, key)
        except IntegrityError:
            continue
        data = json.loads(codec.decode(plain, key))
        # format 2 indexes list a tree pack's trees under "trees", sealed the same way
        found.setdefault(data["pack"], []).extend(
            (str(blob[0]), int(blob[1]), int(blob[2]))
            for blob in [*data["blobs"], *data.get("trees", [])])
    return found


def audit(backend: Backend, keys: crypto.Keys) -> Counter[str]:
    """How many objects of each top-level prefix `keys` opens (packs blob by blob), + HEAD."""
    opened: Counter[str] = Counter()
    packs = _pack_blobs(backend, keys)
    for key in backend.list(""):
        prefix = key.partition("/")[0]
        if prefix == "packs":
            blobs = packs.get(key)
            if blobs and all(_opens(keys, blob_id, backend.get(key, offset, length))
                             for blob_id, offset, length in blobs):
                opened[prefix] += 1
        elif _opens(keys, key, backend.get(key)):
            opened[prefix] += 1
    found = backend.read_ref(HEAD_REF)
    if found is not None:
        try:
            crypto.open_sealed(keys.head, crypto.KIND_HEAD, HEAD_REF, found[0], "HEAD",
                              STORE_FORMATS)
            opened["HEAD"] += 1
        except IntegrityError:
            pass
    return opened


def every_object(backend: Backend) -> Counter[str]:
    """How many objects the store holds under each top-level prefix (+ HEAD)."""
    found: Counter[str] = Counter(key.partition("/")[0] for key in backend.list(""))
    if backend.read_ref(HEAD_REF) is not None:
        found["HEAD"] += 1
    return found
