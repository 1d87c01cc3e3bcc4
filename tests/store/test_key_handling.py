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
