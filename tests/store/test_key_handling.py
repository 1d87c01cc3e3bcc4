"""The archive key and its sub-keys never show up in a repr or an error message."""

from __future__ import annotations

import base64

import pytest

from roam_core import crypto
from roam_core.errors import ArchiveKeyError

KEY = bytes(range(1, 33))


def test_sub_keys_are_not_in_the_repr() -> None:
    keys = crypto.Keys.derive(KEY)
    shown = repr(keys) + str(keys)
    for secret in (keys.encryption, keys.head, keys.naming):
        assert repr(secret)[2:-1] not in shown and secret.hex() not in shown
    assert shown.startswith("Keys(")


@pytest.mark.parametrize("text", [
    "canary-not-base64-!!" + "x" * 30,                          # not base64 at all
    base64.b64encode(b"canary-sixteen-b").decode(),            # decodes, wrong length
    "ab" * 31 + "zz",                                          # 64 characters, not hex
])
def test_a_bad_key_is_described_never_echoed(text: str) -> None:
    with pytest.raises(ArchiveKeyError) as raised:
        crypto.parse_key(text)
    assert text not in str(raised.value) and text[:12] not in str(raised.value)


@pytest.mark.parametrize("naming", [KEY, b"", bytes(64), bytes(range(65)), b"\xff" * 200])
def test_an_object_name_is_the_hmac_of_its_kind_and_digest(naming: bytes) -> None:
    # names are the format (docs/format.md): the copied padded states must give exactly
    # HMAC-SHA256, for the naming key and for keys of any length
    import hashlib
    import hmac

    keys = crypto.Keys(encryption=KEY, head=KEY, naming=naming)
    for kind in (crypto.KIND_BLOB, crypto.KIND_TREE, b""):
        for digest in (hashlib.sha256(kind).digest(), b"", b"x" * 100):
            assert keys.name(kind, digest) == hmac.new(naming, kind + b"\0" + digest,
                                                       hashlib.sha256).hexdigest()
            assert keys.name(kind, digest) == keys.name(kind, digest)  # states not spent
