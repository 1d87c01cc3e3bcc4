"""The compact index catalogue (issue 23): refs as arrays, a blob table without a dict."""

from __future__ import annotations

import hashlib

import pytest

from roam_core.store.catalog import BlobTable, KnownBlobs, RefTable, compact


def _id(number: int) -> str:
    return hashlib.sha256(str(number).encode()).hexdigest()


def _refs(pack: str, numbers: range) -> list[tuple[str, str, int, int]]:
    return [(_id(n), pack, n * 100, 50 + n) for n in numbers]


def test_a_ref_table_gives_back_the_refs_it_was_made_of() -> None:
    refs = _refs("packs/aa/one", range(5))
    table = compact(refs)
    assert isinstance(table, RefTable)
    assert list(table) == refs and table[2] == refs[2] and table[-1] == refs[-1]
    assert table == refs and len(table) == 5 and table[1:3] == refs[1:3]
    assert table.id_at(3) == bytes.fromhex(refs[3][0])
    with pytest.raises(IndexError):
        table[5]


@pytest.mark.parametrize("bad", [("AB" * 32, "p", 0, 1), ("ab" * 31, "p", 0, 1),
                                 ("ab" * 32, "p", -1, 1), ("ab" * 32, "p", 0, 1.5)])
def test_a_malformed_ref_is_refused(bad: tuple) -> None:
    with pytest.raises(ValueError):
        compact([bad])


def test_the_blob_table_finds_every_blob_and_a_later_copy_wins() -> None:
    first, second = _refs("packs/aa/one", range(0, 300)), _refs("packs/bb/two", range(200, 400))
    table = BlobTable([compact(first), compact([]), compact(second)])
    assert len(table) == 400 and set(table) == {_id(n) for n in range(400)}
    assert table[_id(5)] == first[5]
    assert table[_id(250)] == second[50]  # in both: the later index's, as a dict built in order
    assert _id(400) not in table and "not hex" not in table and table.get(_id(401)) is None


def test_known_blobs_keep_what_a_push_adds_and_drops_to_its_own_view() -> None:
    known = KnownBlobs(BlobTable([compact(_refs("packs/aa/one", range(10)))]))
    mine = known.copy()
    mine.setdefault(_id(3), ("x", "y", 0, 0))  # there already: unchanged
    mine.setdefault(_id(20), (_id(20), "packs/cc/new", 0, 9))
    del mine[_id(4)]
    assert mine[_id(3)][1] == "packs/aa/one" and _id(20) in mine and _id(4) not in mine
    assert len(mine) == 10 and mine.get(_id(4)) is None
    assert _id(20) not in known and _id(4) in known and len(known) == 10
