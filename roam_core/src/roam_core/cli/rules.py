"""`roam rules`: the scope rules in force on this device, and what they make of this home.

`roam rules [--json]` prints the effective rules (this device's rules.yaml first, then the
defaults, each with its provider and reason), the three tiers evaluated against the home
(what is shared, kept local and ignored), each profile's state and every optional item.
`roam rules --init` writes a commented `roam/rules.yaml` and never overwrites one.
`roam rules list [--json]` lists the rule providers.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.cli.listing import register_rules_listing
from roam_core.cli.output import emit_json, sanitize, table
from roam_core.store.manifest import over_limits

if TYPE_CHECKING:
    from roam_core.scope import ScopeModel

TIERS = ("shared", "local", "ignored")
_ESCAPED = re.compile(r"\[([*?\[])\]")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rules", help="show the scope rules and what they make of this home",
        description="Show the effective scope rules (this device's roam/rules.yaml first, "
        "then the defaults), what is shared, kept local and ignored in this home, each "
        "profile's state and every optional item.")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--init", action="store_true",
                        help="write a commented roam/rules.yaml template (never overwrites)")
    parser.set_defaults(func=_run)
    verbs = parser.add_subparsers(dest="verb", metavar="list")
    register_rules_listing(verbs)


def _run(args: argparse.Namespace) -> int:
    from roam_core.home import resolve_home

    home = resolve_home(getattr(args, "home", None))
    if args.init:
        return _init(home.root)
    from roam_core.scope import load_scope

    model = load_scope(home.root)
    if getattr(args, "verbose", 0):
        _log_decisions(model)
    report = build_report(model, home.profile)
    report.update(_secret_findings(home.root, home.state_dir, model))
    if args.json:
        emit_json(report)
    else:
        print_report(report)
    return 0


def _log_decisions(model: ScopeModel) -> None:
    """`roam rules -v`: one log line per file of the home with its class and the rule."""
    import logging

    log = logging.getLogger("roam_core.scope")
    for folder, dirs, files in os.walk(model.root):
        prefix = os.path.relpath(folder, model.root)
        prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
        kept = []
        for name in sorted(dirs):
            rel = f"{prefix}{name}"
            if rel == "roam" or os.path.islink(os.path.join(folder, name)):
                continue  # roam's own state, and links are never followed
            scope, reason = model.explain_dir(rel)
            if model.could_share(rel):
                kept.append(name)
            else:  # nothing below can travel: one line for the whole folder
                log.info("rules: %s/: %s (%s)", sanitize(rel), scope.value, sanitize(reason))
        dirs[:] = kept
        for name in sorted(files):
            scope, reason = model.explain(f"{prefix}{name}")
            log.info("rules: %s: %s (%s)", sanitize(prefix + name), scope.value, sanitize(reason))


def _init(root: Path) -> int:
    from roam_core.errors import UserError
    from roam_core.scope.rulesfile import TEMPLATE, rules_path

    if not root.is_dir():
        raise UserError(f"{root} is not a Hermes home (no such folder)")
    path = rules_path(root)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    try:
        # O_EXCL: an existing file (or one created meanwhile) is never overwritten
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UserError(f"{path} already exists; not overwritten (edit it, or delete it and "
                        "run roam rules --init again)") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(TEMPLATE)
    print(f"wrote {path}")
    return 0


# -- the report ------------------------------------------------------------------------


def _literal(pattern: str) -> str | None:
    """The path a pattern names literally, or None when it holds a wildcard."""
    plain = _ESCAPED.sub("", pattern)
    if any(char in plain for char in "*?["):
        return None
    return _ESCAPED.sub(r"\1", pattern)


def _top_level(model: ScopeModel, prefix: str) -> list[tuple[str, str, str]]:
    """(path, tier, reason) for each name at the top of the root home or of one profile."""
    from roam_core.scope.walk import display_name

    folder = model.root / prefix if prefix else model.root
    try:
        with os.scandir(folder) as listing:
            items = sorted(listing, key=lambda item: item.name)
    except OSError:
        return []
    rows: list[tuple[str, str, str]] = []
    for item in items:
        rel = f"{prefix}{item.name}"
        if not prefix and item.name == "profiles" and item.is_dir(follow_symlinks=False):
            continue  # each profile is listed on its own
        if not prefix and item.name == "roam" and item.is_dir(follow_symlinks=False):
            rows.extend(_roam_folder(model))
            continue
        if item.is_symlink():
            rows.append((display_name(rel), "ignored", "symbolic link (never followed)"))
        elif item.is_dir(follow_symlinks=False):
            scope, reason = model.explain_dir(rel)
            rows.append((f"{display_name(rel)}/", scope.value, reason))
        else:
            scope, reason = model.explain(rel)
            rows.append((display_name(rel), scope.value, reason))
    return rows


def _roam_folder(model: ScopeModel) -> list[tuple[str, str, str]]:
    """roam/ is roam's own; only its plugin record travels."""
    from roam_core.scope.never import ROAM_STATE

    rows = [("roam/", "ignored", f"{ROAM_STATE} (except installed-plugins.json)")]
    if (model.root / "roam" / "installed-plugins.json").is_file():
        scope, reason = model.explain("roam/installed-plugins.json")
        rows.append(("roam/installed-plugins.json", scope.value, reason))
    return rows


def _pinned(model: ScopeModel) -> list[tuple[str, str, str]]:
    """Folders inside shared areas that literal local/ignored rules keep on this machine."""
    rows: list[tuple[str, str, str]] = []
    for rule in model.rules():
        if rule.layer == "hard" or not rule.active or rule.scope.value == "shared":
            continue
        literal = _literal(rule.pattern)
        if literal is None or "/" not in literal.rstrip("/"):
            continue
        parent = literal.rstrip("/").rsplit("/", 1)[0]
        if (model.root / literal).exists() and model.could_share(parent):
            scope, reason = model.explain_dir(literal) if literal.endswith("/") \
                else model.explain(literal)
            rows.append((literal, scope.value, reason))
    return rows


def build_report(model: ScopeModel, profile: str = "default") -> dict[str, Any]:
    """Everything `roam rules` shows, as JSON-ready data."""
    from roam_core.config import DEFAULT_HOST_KEYS

    tiers: dict[str, list[dict[str, str]]] = {tier: [] for tier in TIERS}
    rows = _top_level(model, "")
    for name, excluded in model.profiles():
        prefix = f"profiles/{name}/"
        if excluded:
            scope, reason = model.explain_dir(prefix)
            rows.append((prefix, scope.value, f"profile excluded: {reason}"))
        else:
            rows.extend(_top_level(model, prefix))
    listed = {row[0] for row in rows}
    rows.extend(row for row in _pinned(model) if row[0] not in listed)  # once per folder
    for path, tier, reason in rows:
        tiers[tier].append({"path": path, "reason": reason})
    return {
        "root": str(model.root),
        "profile": profile,
        "rules_file": str(model.rules_file) if model.rules_file else None,
        "rules": [rule.as_json() for rule in model.rules()],
        "tiers": tiers,
        "profiles": [{"name": name, "excluded": excluded}
                     for name, excluded in model.profiles()],
        "optional": model.optional_items(),
        "host_keys": {"default": list(DEFAULT_HOST_KEYS), "device": list(model.host_keys)},
        "skipped": _skipped(model),
    }


def _secret_findings(root: Path, state_dir: Path, model: ScopeModel) -> dict[str, Any]:
    """What a push of every shared file would stop on (cached per file between runs)."""
    from roam_core.engine.secretwarn import findings_in
    from roam_core.errors import RoamError, describe
    from roam_core.settings import load_settings

    try:
        found = findings_in(root, state_dir, load_settings(root),
                            [entry.rel for entry in model.walk()], is_config=model.is_config,
                            host_keys=tuple(model.host_keys), prune=True)
    except RoamError as error:
        return {"secret_findings": [], "secret_scan_error": describe(error)}
    return {"secret_findings": [finding.as_json() for finding in found]}


def _skipped(model: ScopeModel) -> list[dict[str, str]]:
    """Shared paths the walk leaves out, and those over the format's limits, with reasons.

    Left out: symlinks, odd names, special files. Over the limits: too deep or too long for
    the format, which push refuses until they are moved or made local.
    """
    walked = [entry.rel for entry in model.walk()]
    said = [*sorted(model.skipped), *over_limits(walked)]
    return [{"path": rel, "reason": why} for rel, why in said]


def print_report(report: dict[str, Any]) -> None:
    """The human form of `build_report`."""
    root = report["root"]
    mapped = f" (profile {report['profile']} maps up to it)" \
        if report["profile"] != "default" else ""
    print(f"Covered root: {sanitize(root)}{mapped}")
    print(f"Rules file: {sanitize(report['rules_file'] or 'none (roam rules --init writes one)')}")
    print()
    print("Effective rules (first match wins; this device's rules first, then the defaults):")
    table(("Pattern", "Scope", "Source", "Reason"),
          [(r["pattern"], r["scope"] + ("" if r["active"] else f" (off: {r['tier']})"),
            r["source"], r["reason"]) for r in report["rules"]])
    print()
    print("This home, tier by tier:")
    for tier in TIERS:
        entries = report["tiers"][tier]
        print(f"  {tier} ({len(entries)}):")
        for entry in entries:
            print(f"    {sanitize(entry['path'])}  - {sanitize(entry['reason'])}")
    print()
    names = [p["name"] + ("(excluded)" if p["excluded"] else "") for p in report["profiles"]]
    print(f"Profiles: {', '.join(names) if names else 'none'}")
    optional = report["optional"]
    print("Optional items: " + ", ".join(
        f"{name} {'on' if state else 'off'}" for name, state in sorted(optional.items())))
    if optional.get("hooks"):
        print("  hooks is on: this device runs hook code written on your other machines")
    device = report["host_keys"]["device"]
    print("Host-scoped config keys: " + ", ".join(report["host_keys"]["default"] + device))
    from roam_core.cli.sync import print_secret_findings, print_skipped

    print_skipped(report["skipped"])
    print_secret_findings(report)
