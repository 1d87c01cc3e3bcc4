"""The push scanner: secret-shaped content in the files a push is about to upload.

Like a code host's push protection: before anything is uploaded, the content of every
changed shared file (and the config projection) is searched with the shared rule table in
its strict form, the user's `redact_patterns`, and the literal secrets of this machine
(secret-named or random-looking `.env` values and roam's own secrets, held in memory only).
A finding stops the push (exit 1) unless its fingerprint is listed in the local file
`roam/secrets-allow.yaml`. A fingerprint is a keyed digest of the path, the rule and the
secret: it never contains the secret, and the same secret elsewhere is a new finding.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from roam_core.errors import ConfigError, UserError
from roam_core.secretscan.mask import MASK, mask_text
from roam_core.secretscan.regions import TOKEN_RUN, windows
from roam_core.secretscan.rules import RULES, Rule, Runs, user_rules

ALLOW_FILE = "secrets-allow.yaml"
#: Files whose first bytes hold a NUL are binary: images, archives, databases.
BINARY_PROBE = 8192
#: Files are read in chunks this large (memory stays bounded whatever a file's size)...
CHUNK = 8 << 20
#: ...each overlapping the next by this much, so a secret across a boundary is found whole.
OVERLAP = 64 << 10
EXCERPT = 80


@dataclass(frozen=True)
class Finding:
    """One secret-looking thing in one file, described without the secret."""

    path: str
    line: int
    rule: str
    excerpt: str
    fingerprint: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.rule} ({self.excerpt}) [{self.fingerprint}]"

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "rule": self.rule,
                "excerpt": self.excerpt, "fingerprint": self.fingerprint}


class SecretsFound(UserError):
    """A push met secret-looking content; nothing was uploaded."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        lines = "\n".join(f"  {finding}" for finding in findings[:50])
        more = f"\n  … and {len(findings) - 50} more" if len(findings) > 50 else ""
        super().__init__(
            f"push stopped: {len(findings)} secret-looking value(s) in shared files; nothing "
            f"was uploaded:\n{lines}{more}\nFix the file, keep it local (`local:` in "
            "roam/rules.yaml), or allow one finding by adding its fingerprint to "
            f"roam/{ALLOW_FILE}")


def fingerprint(path: str, rule: str, secret: str) -> str:
    """A digest naming one finding; the secret cannot be read back from it."""
    digest = hashlib.blake2b(f"{path}\0{rule}\0{secret}".encode("utf-8", "surrogatepass"),
                             digest_size=10, key=b"roam-secret-finding")
    return digest.hexdigest()


def _excerpt(data: bytes, start: int, end: int) -> str:
    """The finding's line with the secret (and anything else secret on it) masked."""
    line_start = max(data.rfind(b"\n", 0, start) + 1, start - 4 * EXCERPT)
    line_end = data.find(b"\n", start)
    line_end = len(data) if line_end < 0 else line_end
    line_end = min(line_end, max(end, start) + 4 * EXCERPT)
    line = (data[line_start:start].decode("utf-8", "replace") + MASK
            + data[min(end, line_end):line_end].decode("utf-8", "replace"))
    line = mask_text(line).strip()
    return line if len(line) <= EXCERPT else line[:EXCERPT - 1] + "…"


def _read_full(fd: int, size: int) -> bytes:
    """Up to `size` bytes from `fd`: fewer only at the end of the file."""
    data = os.read(fd, size)
    if 0 < len(data) < size:  # a short read of a regular file is rare, but allowed
        parts = [data]
        while size > len(data):
            more = os.read(fd, size - len(data))
            if not more:
                break
            parts.append(more)
            data = b"".join(parts)
    return data


def _byte_offset(text: str, raw: bytes, at: int) -> int:
    """Where character `at` of `text` (decoded from `raw`) is in `raw`."""
    return at if raw.isascii() else len(text[:at].encode("utf-8", "surrogateescape"))


class Scanner:
    """The rules, user patterns, literals and allowed fingerprints of one push."""

    def __init__(self, literals: Iterable[str] = (), extra: Iterable[Rule] = (),
                 allowed: Iterable[str] = ()) -> None:
        self.extra = tuple(extra)
        self.rules = tuple(rule for rule in (*RULES, *self.extra) if not rule.mirror_only)
        self.literals = tuple(literal for literal in literals if literal)
        self.allowed = frozenset(allowed)
        # A literal that is long and holds no white space lies in a long run, which the
        # window search reads anyway; the others are looked for on their own.
        self._loose = tuple(literal.encode("utf-8", "surrogateescape")
                            for literal in self.literals
                            if len(literal) < TOKEN_RUN or any(c.isspace() for c in literal))

    def text_spans(self, text: str) -> dict[tuple[int, int], str]:
        """(start, end) → rule name of every secret in `text`, one per secret."""
        spans: dict[tuple[int, int], str] = {}
        for literal in self.literals:
            at = text.find(literal)
            while at >= 0:
                spans.setdefault((at, at + len(literal)), "literal-secret")
                at = text.find(literal, at + len(literal))
        lowered = text.lower()
        runs = Runs(text)
        for rule in self.rules:
            if rule.local and not runs.joined:
                continue  # a window found by its separator alone: no long run in it
            for span in rule.secrets(text, strict=True, lowered=lowered,
                                     runs=runs if rule.local else None):
                if not any(s <= span[0] < e for s, e in spans):  # one finding per secret
                    spans.setdefault(span, rule.name)
        return spans

    def byte_spans(self, data: bytes) -> dict[tuple[int, int], tuple[str, str]]:
        """(start, end) in `data` → (rule name, secret) of every secret in `data`.

        Only the windows of `regions.windows` are decoded and read by the rules.
        """
        found: dict[tuple[int, int], tuple[str, str]] = {}
        for low, high in windows(data, self._loose, whole=bool(self.extra)):
            raw = data[low:high]
            text = raw.decode("utf-8", "surrogateescape")
            for (start, end), rule in self.text_spans(text).items():
                first = low + _byte_offset(text, raw, start)
                found.setdefault((first, low + _byte_offset(text, raw, end)),
                                 (rule, text[start:end]))
        return found

    def scan_stream(self, path: str, handle: BinaryIO) -> list[Finding]:
        """Every finding in one file read from `handle`, allowed ones left out.

        Binary files (a NUL in the first bytes) are skipped. Any size is scanned, in
        overlapping chunks: memory stays bounded, and a secret across a chunk boundary lies
        whole in the overlap, which the next chunk reads again.
        """
        return self._scan_reads(path, handle.read)

    def scan_file(self, path: str, location: str) -> list[Finding]:
        """`scan_stream` of the file at `location`, read with plain system calls.

        A push scans thousands of small files: `open()`'s buffered file object costs more
        system calls (`fstat` twice, an `isatty` probe) and more Python than the read
        itself; a descriptor read into one buffer does not.

        Raises:
            FileNotFoundError: when the file vanished (the caller skips it).
        """
        fd = os.open(location, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return self._scan_reads(path, functools.partial(_read_full, fd))
        finally:
            os.close(fd)

    def _scan_reads(self, path: str, read: Callable[[int], bytes]) -> list[Finding]:
        data = read(BINARY_PROBE)
        if b"\0" in data:
            return []
        if len(data) == BINARY_PROBE:
            data += read(CHUNK - len(data))
        found: list[Finding] = []
        lines = 0  # newlines before data[0]
        carried = 0  # how far the previous chunk's secrets reach into this one
        while True:
            tail = read(CHUNK) if len(data) >= CHUNK else b""
            keep = len(data) if not tail else len(data) - OVERLAP
            reach = 0
            for (start, end), (rule, secret) in sorted(self.byte_spans(data).items()):
                if start >= keep or start < carried:
                    continue  # the next chunk reads it whole / the tail of a reported one
                reach = max(reach, end)
                mark = fingerprint(path, rule, secret)
                if mark not in self.allowed:
                    found.append(Finding(path, lines + data.count(b"\n", 0, start) + 1, rule,
                                         _excerpt(data, start, end), mark))
            if not tail:
                return found
            lines += data.count(b"\n", 0, keep)
            carried = max(0, reach - keep)
            data = data[keep:] + tail

    def scan_bytes(self, path: str, data: bytes) -> list[Finding]:
        """Findings in a file's bytes; binary files are skipped."""
        return self.scan_stream(path, io.BytesIO(data))


def load_allowed(state_dir: Path) -> set[str]:
    """Fingerprints in `roam/secrets-allow.yaml` (strings, or mappings with `fingerprint`).

    Raises:
        ConfigError: naming the file when it is not such a list.
    """
    path = state_dir / ALLOW_FILE
    if not path.exists():
        return set()
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the allowed findings: "
                          f"{str(error).splitlines()[0]}") from None
    if data is None:
        return set()
    if isinstance(data, Mapping):
        data = data.get("allow") or []
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of fingerprints")
    allowed = set()
    for item in data:
        mark = item.get("fingerprint") if isinstance(item, Mapping) else item
        if not isinstance(mark, str) or not mark.strip():
            raise ConfigError(f"{path}: every entry needs a fingerprint, e.g. "
                              "'- fingerprint: 0123abcd…'")
        allowed.add(mark.strip())
    return allowed


def scanner_for(root: Path, state_dir: Path, settings: Mapping[str, Any]) -> Scanner:
    """The scanner of one push of `root`.

    Raises:
        UserError: when the literal secrets cannot be read (fail closed: no push).
        ConfigError: for unusable `redact_patterns` or `secrets-allow.yaml`.
    """
    from roam_core.secretscan.literals import LiteralsUnavailable, literal_secrets
    from roam_core.settings import CoreSettings

    profiles = root / "profiles"
    names = ["default", *sorted(p.name for p in profiles.iterdir() if p.is_dir())] \
        if profiles.is_dir() else ["default"]
    found: set[str] = set()
    try:
        for name in names:
            found.update(literal_secrets(root, name, all_env_values=False))
    except LiteralsUnavailable as error:
        raise UserError(f"push stopped: {error} (the secret scan needs it)") from None
    patterns = CoreSettings.build(settings).redact_patterns
    return Scanner(sorted(found, key=len, reverse=True), user_rules(patterns),
                   load_allowed(state_dir))
