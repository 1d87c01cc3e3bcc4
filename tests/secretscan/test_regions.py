"""The window search reads only part of a file; it must find exactly what a whole read finds."""

from __future__ import annotations

import io
import random
import sys

import pytest

from roam_core.secretscan import regions, scan
from roam_core.secretscan.regions import TOKEN_RUN, long_runs, windows
from roam_core.secretscan.rules import RULES
from roam_core.secretscan.scan import Scanner

PUSH_RULES = [rule for rule in RULES if not rule.mirror_only]
PROSE = "the agent keeps a short note about the plan and the task for the next session\n"
TRICKY = ["token budget is fine; see config: default.\n", "password: required\n",
          "def resolve_access_key_from_environment():\n", "https://example.org/docs?page=2\n"]
#: Secrets in no long run: a short value after a separator, a short literal.
SHORT = ["pwd: abc12345", "pass = 'Zk3x9Qp2'", "db.password:\n  hunter22x", "is short1 ok"]


def _whole(scanner: Scanner, data: bytes) -> list[tuple[int, int, str]]:
    text = data.decode("utf-8", "surrogateescape")
    return sorted((len(text[:s].encode()), len(text[:e].encode()), rule)
                  for (s, e), rule in scanner.text_spans(text).items())


def _windowed(scanner: Scanner, data: bytes) -> list[tuple[int, int, str]]:
    return sorted((s, e, rule) for (s, e), (rule, _secret) in scanner.byte_spans(data).items())


@pytest.fixture(params=["compiled", "stdlib"])
def run_search(request, monkeypatch) -> str:
    """Each window test twice: with the compiled run search and where it cannot be imported."""
    regions.compiled_runs.cache_clear()
    if request.param == "stdlib":
        monkeypatch.setitem(sys.modules, "re2", None)  # `import re2` raises ImportError
    yield request.param
    regions.compiled_runs.cache_clear()


@pytest.mark.parametrize("seed", range(12))
def test_windows_find_what_a_whole_read_finds(seed: int, run_search: str) -> None:
    assert (regions.compiled_runs(TOKEN_RUN) is None) == (run_search == "stdlib")
    # the one-pass program follows the run search (a stdlib run that kept using RE2 would
    # not test the fallback; a None kept after one would leave RE2 untested)
    assert (regions.compiled_cores() is None) == (run_search == "stdlib")
    rng = random.Random(seed)
    parts = []
    for _ in range(40):
        parts.append(rng.choice(TRICKY) + PROSE * rng.randint(20, 60))
        example = rng.choice(SHORT if rng.random() < 0.3 else [r.example for r in PUSH_RULES])
        glue = rng.choice(["", " ", "\n", "\t", "é ", '"', "key: ", "x = '"])
        parts.append(f"{glue}{example}{rng.choice(['', ' ', chr(10), ', ', chr(39)])}")
    data = "".join(parts).encode()
    scanner = Scanner(literals=["qZ7vN2pLx9Rt4WmK8sHd", "short1", "two words here"])
    whole = _whole(scanner, data)
    assert whole, "the corpus holds secrets: a scan that finds none proves nothing"
    assert _windowed(scanner, data) == whole
    assert [f.rule for f in scanner.scan_bytes("f.md", data)] == [rule for _s, _e, rule in whole]
    if b"PRIVATE KEY" not in data:  # a key block is looked for in the whole text
        assert sum(e - s for s, e in windows(data)) < len(data) / 2, "not a partial read"


def test_the_compiled_run_search_is_installed() -> None:
    # a declared dependency of roam-core (docs/decisions.md): a fresh install has it
    assert regions.compiled_runs(TOKEN_RUN) is not None


#: Every byte the run search treats specially, and some it must not (NUL, high bytes,
#: invalid UTF-8, Unicode white space that is not ASCII white space).
_ALPHABET = [*b" \t\n\r\f\v\x1c\x1d\x1e\x1f", 0, 0x85, 0xA0, 0xFF, 0x80, 0xC3, *b"aZ9/:=-_"]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("minimum", [10, 15])
def test_the_compiled_run_search_finds_the_same_runs(seed: int, minimum: int) -> None:
    rng = random.Random(seed)
    spaces = rng.random()  # from runs everywhere to runs nowhere
    data = bytes(rng.choice(_ALPHABET[:10]) if rng.random() < spaces / 2
                 else rng.choice(_ALPHABET[10:]) for _ in range(rng.randint(0, 20_000)))
    data += bytes(rng.choice(_ALPHABET[10:]) for _ in range(rng.choice([0, minimum - 1, minimum])))
    expected = list(regions.int_runs(data, minimum))
    assert list(long_runs(data, minimum)) == expected
    if seed == 0:
        assert expected, "no run: the comparison proves nothing"


#: Pieces the one-pass candidate search treats specially, glued at random.
_PIECES = [b"PRIVATE KEY", b"PRIVATE", b" KEY", b"PRIVATE\tKEY", b"://", b":/", b"//",
           b"-----BEGIN ", b"x" * 14, b"y" * 15, b"\x00", b"\xff\xc3", b"\x1c", b"a=b "]


@pytest.mark.parametrize("seed", range(8))
def test_the_one_pass_candidate_search_finds_what_three_passes_find(seed: int) -> None:
    """RE2's one program (`compiled_cores`): the runs, the URL runs and the key block.

    Many short texts, each compared on its own: one key block found in a long text would
    hide another one missed.
    """
    assert regions.compiled_cores() is not None
    rng = random.Random(seed)
    kinds = set()
    for _ in range(400):
        data = b"".join(rng.choice(_PIECES) if rng.random() < 0.3
                        else bytes([rng.choice(_ALPHABET)]) for _ in range(rng.randint(0, 60)))
        flags = regions.flags_of(data)
        expected = None if regions.KEY_BLOCK in data else sorted(
            {*regions.int_runs(data, TOKEN_RUN, flags), *regions.url_runs(data, flags)})
        found = regions.cores(data)
        assert (sorted(set(found)) if found is not None else None) == expected, data
        kinds.add("block" if expected is None else "runs" if expected else "none")
    assert kinds == {"block", "runs", "none"}, "a kind never met proves nothing"


def test_long_runs_are_the_maximal_runs_of_ten_or_more(run_search: str) -> None:
    text = b"short words only\nabcdefghij x abcdefghi\tlonger-than-ten-chars\n" + b"z" * 10
    assert [text[s:e] for s, e in long_runs(text)] == [b"abcdefghij",
                                                      b"longer-than-ten-chars", b"z" * 10]
    assert list(long_runs(b"")) == [] and list(long_runs(b"nine char")) == []


def test_a_secret_across_a_chunk_boundary_and_past_any_size_is_found(monkeypatch) -> None:
    monkeypatch.setattr(scan, "CHUNK", 1 << 16)
    monkeypatch.setattr(scan, "OVERLAP", 1 << 10)
    token = "ghp_Fake0123456789abcdefghijklmnopqrstu"
    line = b"ordinary words of a long log file\n"
    head = line * ((1 << 16) // len(line))
    cut = (1 << 16) - 20  # the token straddles the first chunk's end
    data = head[:cut] + b" " + token.encode() + b"\n" + line * 5000 + token.encode() + b"\n"
    found = Scanner().scan_stream("big.log", io.BytesIO(data))
    assert [(f.rule, f.line) for f in found] == [
        ("github-token", data[:cut].count(b"\n") + 1), ("github-token", data.count(b"\n"))]
    assert all(token not in f.excerpt for f in found)


#: Secrets at the edges of what the window search looks for: the shortest token (a Slack
#: token of exactly 15 characters), URLs whose run is shorter than ten bytes or whose
#: password is short, a secret query parameter in a short run, a short `name: value`.
EDGES = ["xoxb-12ab34cd56", "a://u:p9@h", "redis://:Zk3x9Qp2@cache", "see ?sig=Zk3x9Qp2a",
         "API_KEY: Zk3x9Qp2", "x://Zk3x9Qp2Lm0vRt7YwE3s@h"]


@pytest.mark.parametrize("edge", EDGES)
def test_secrets_at_the_window_searchs_edges_are_found(edge: str) -> None:
    data = (PROSE * 50 + f"{edge}\n" + PROSE * 50).encode()
    scanner = Scanner()
    whole = _whole(scanner, data)
    assert whole, f"{edge!r} is a secret: a whole read finds it"
    assert _windowed(scanner, data) == whole
    assert sum(e - s for s, e in windows(data)) < len(data) / 4, "not a partial read"


def test_runs_one_byte_short_of_a_token_are_not_windows() -> None:
    line = b"the quick brown fox " * 3 + b"\n"
    for length in (14, 15, 16):
        data = line * 40 + b"word " + b"k" * length + b" end\n" + line * 40
        assert bool(windows(data)) is (length >= 15), length


def test_a_key_after_a_nul_past_the_binary_probe_is_found(tmp_path) -> None:
    """Only a NUL in the first 8 KiB makes a file binary; one later does not hide a key."""
    token = "ghp_Fake0123456789abcdefghijklmnopqrstu"
    data = PROSE.encode() * 200 + b"\0\0 a NUL in a log \n" + f"t {token}\n".encode()
    assert b"\0" not in data[:scan.BINARY_PROBE]
    path = tmp_path / "app.log"
    path.write_bytes(data)
    found = Scanner().scan_file("app.log", str(path))
    assert [(f.rule, f.line) for f in found] == [("github-token", data.count(b"\n"))]
    assert found == Scanner().scan_bytes("app.log", data)
    path.write_bytes(b"\0" + data)  # binary by its first bytes: skipped, as documented
    assert Scanner().scan_file("app.log", str(path)) == []


def test_a_file_scanned_by_path_finds_what_a_stream_finds_across_chunks(tmp_path,
                                                                       monkeypatch) -> None:
    monkeypatch.setattr(scan, "CHUNK", 1 << 16)
    monkeypatch.setattr(scan, "OVERLAP", 1 << 10)
    rng = random.Random(7)
    parts = []
    while sum(map(len, parts)) < 5 << 16:
        parts.append(PROSE * rng.randint(1, 30))
        parts.append(rng.choice([r.example for r in PUSH_RULES]) + "\n")
    data = "".join(parts).encode()
    path = tmp_path / "notes.md"
    path.write_bytes(data)
    scanner = Scanner(literals=["qZ7vN2pLx9Rt4WmK8sHd"])
    by_path = scanner.scan_file("notes.md", str(path))
    assert len(by_path) > 5
    assert by_path == scanner.scan_stream("notes.md", io.BytesIO(data))
    with pytest.raises(FileNotFoundError):
        scanner.scan_file("gone.md", str(tmp_path / "gone.md"))


def test_runs_past_the_kept_mask_are_found_and_the_mask_stays_bounded(run_search: str) -> None:
    token = b"ghp_Fake0123456789abcdefghijklmnopqrstu"
    prose = PROSE.encode()
    data = prose * ((regions.KEPT_MASK + (1 << 16)) // len(prose)) + b"at the end " + token
    assert len(data) > regions.KEPT_MASK
    assert [data[s:e] for s, e in long_runs(data, 15)] == [token]
    assert all(have <= regions.KEPT_MASK for _value, have in regions._REPEATED.values())
