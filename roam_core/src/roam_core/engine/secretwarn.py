"""Secret findings for `status` and `rules`: what would stop the next push, found cheaply.

`status` scans only the shared files changed since the last synced generation (a home
without changes scans nothing and reads nothing), `rules` every shared file. Each file's
findings are remembered in `roam/cache/secret-findings.json` under its stat signature and a
key of the scanner (the literal secrets, `redact_patterns`, the rule table), so asking again
reads only what changed since. The findings are stored as push prints them: masked
excerpts and fingerprints, never a secret. The allow-list is applied when they are shown,
so an edit of `roam/secrets-allow.yaml` counts at once.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat as stat_module
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from roam_core.engine.scan import projected_bytes, stat_signature
from roam_core.errors import RoamError
from roam_core.fs import write_atomic
from roam_core.secretscan.scan import Finding, Scanner, scanner_for
from roam_core.tiers.cron import is_jobs_file

CACHE_FILE = "secret-findings.json"


def _scanner_key(scanner: Scanner) -> str:
    # keyed like a finding's fingerprint: it names the scanner, the secrets cannot be read back
    digest = hashlib.blake2b(digest_size=12, key=b"roam-secret-scanner")
    for part in (*scanner.literals, "\0", *(rule.name + rule.pattern.pattern
                                             for rule in scanner.rules)):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _content(location: Path, rel: str, projected: bool, host_keys: Iterable[str],
             projections: dict[str, str] | None) -> BinaryIO:
    """The bytes a push would upload: the file, or a config's shared projection."""
    if projected:
        return io.BytesIO(projected_bytes(location, rel, host_keys, (projections or {}).get(rel)))
    return open(location, "rb")  # the caller closes it


def findings_in(root: Path, state_dir: Path, settings: dict[str, Any], paths: Iterable[str],
                *, is_config: Any, host_keys: Iterable[str] = (),
                projections: dict[str, str] | None = None,
                prune: bool = False) -> list[Finding]:
    """The findings a push of `paths` (shared paths under `root`) would stop on.

    `is_config(rel)` says which paths travel as a config projection (scanned as projected,
    never cached: the projection depends on the rules too). With `prune`, `paths` is every
    shared path and the cache forgets the others.

    Raises:
        UserError, ConfigError: as `scanner_for` (an unreadable `.env`, a bad allow-list).
    """
    wanted = sorted(set(paths))
    if not wanted:
        return []
    scanner = scanner_for(root, state_dir, dict(settings))
    raw = Scanner(scanner.literals, scanner.extra)  # cached unfiltered; allowed when shown
    key = _scanner_key(raw)
    cache_path = state_dir / "cache" / CACHE_FILE
    cache = _load(cache_path)
    entries = cache.get("files") if cache.get("key") == key else None
    entries = entries if isinstance(entries, dict) else {}
    changed = False
    found: list[Finding] = []
    for rel in wanted:
        location = root / rel
        try:
            st = os.lstat(location)
        except OSError:
            continue
        if not stat_module.S_ISREG(st.st_mode):
            continue
        projected = bool(is_config(rel)) or is_jobs_file(rel)
        signature = stat_signature(st)
        hit = entries.get(rel)
        if not projected and isinstance(hit, list) and len(hit) == 2 and hit[0] == signature:
            found.extend(Finding(**item) for item in hit[1])
            continue
        try:
            with _content(location, rel, projected, host_keys, projections) as handle:
                here = raw.scan_stream(rel, handle)
        except (OSError, ValueError, RoamError):
            continue  # vanished or unreadable: push says so when it gets there
        found.extend(here)
        if not projected:
            entries[rel] = [signature, [finding.as_json() for finding in here]]
            changed = True
    if prune:
        kept = {rel: entry for rel, entry in entries.items() if rel in set(wanted)}
        changed = changed or len(kept) != len(entries)
        entries = kept
    if changed:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cache_path, json.dumps({"key": key, "files": entries}).encode())
        except OSError:
            pass  # only slower next time
    return [finding for finding in found if finding.fingerprint not in scanner.allowed]


def finding_lines(findings: list[dict[str, Any]]) -> list[str]:
    """`path:line rule (excerpt) [fingerprint]`, as push lists them."""
    return [str(Finding(**item)) for item in findings]
