"""The journal's ops as text: what `json.dumps` of each op's `as_json` writes, to the letter."""

from __future__ import annotations

import json

from roam_core.engine.journal import Op, _encoded_ops

ODD = ["plain.md", 'quo"te\\back.md', "tab\there\nnewline.md", "ünï/cödé ✓.md",
       "surrogate-\udcff.bin", "emoji/😀.txt", "ctl\x01\x1f.md", "/slash/../dots"]


def _ops() -> list[Op]:
    ops: list[Op] = []
    for number, rel in enumerate(ODD):
        ops.append(Op(rel, "write", "a" * 64, 0o644 + number))
        ops.append(Op(rel, "write", "b" * 64, 0o600, expect=[1, 2, 3], original_sha="c" * 64,
                      backup=f"/backups/{rel}"))
        ops.append(Op(rel, "delete", expect=[4, 5], original_sha="d" * 64, backup=rel))
        ops.append(Op(rel, "delete"))
    return ops


def test_the_ops_are_written_as_json_dumps_writes_them() -> None:
    ops = _ops()

    def temp(index: int) -> str | None:
        return None if ops[index].action == "delete" else f"{ops[index].rel}.tmp-{index}"

    for batch in (1, 3, 1024):
        text = b"".join(_encoded_ops(ops, temp, batch)).decode()
        expected = json.dumps([op.as_json(temp(index)) for index, op in enumerate(ops)]) + "}"
        assert text == expected
        assert json.loads(text[:-1]) == [op.as_json(temp(i)) for i, op in enumerate(ops)]


def test_no_ops_is_an_empty_list() -> None:
    assert b"".join(_encoded_ops([], lambda index: None)) == b"[]}"
