"""Regenerate the parts of docs/ that are read off the code, so they cannot drift.

    python docs/generate.py           # rewrite them
    python docs/generate.py --check   # exit 1 and name the stale files

- `docs/cli.md`, whole: every `roam` verb, walked from `roam_core.cli.main.build_parser()`;
- the settings table in `docs/settings.md`: `roam_core.settings.DEFAULTS` plus every installed
  plugin's `Setting` records;
- the tiers table in `docs/what-syncs.md`: the built-in scope rules and the hard rules.

A generated block sits between `<!-- generated:NAME -->` and `<!-- end generated:NAME -->`;
the prose around it is written by hand. `tests/docs/test_docs_generated.py` runs the check.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent

#: What each core setting means: declared beside the settings themselves (a key of
#: `DEFAULTS` missing there fails the docs tests, so a new setting cannot ship undocumented).
from roam_core.settings import CORE_HELP as CORE_SETTINGS  # noqa: E402

#: Secrets roam reads (environment, or `ROAM_*` lines of the root home's `.env`; inside
#: Hermes, Hermes's secret scope). Never in config.yaml. A test checks each is in the code.
SECRETS = {
    "ROAM_ARCHIVE_KEY": ("core", "the fleet's 32-byte archive key (64 hex characters or "
                                 "base64); required"),
    "ROAM_NEW_ARCHIVE_KEY": ("core", "`roam key rotate` only: the key to rotate the store to "
                                     "(or `--generate` makes one)"),
    "ROAM_S3_ACCESS_KEY_ID": ("backend s3", "access key id; unset (with the secret) to use "
                                            "the usual AWS credential chain"),
    "ROAM_S3_SECRET_ACCESS_KEY": ("backend s3", "secret access key"),
    "ROAM_S3_SESSION_TOKEN": ("backend s3", "session token for temporary credentials "
                                            "(optional)"),
    "ROAM_DISCORD_BOT_TOKEN": ("sink discord", "the Discord bot's token"),
    "ROAM_DISCORD_WEBHOOK_URL": ("sink discord-webhook",
                                 "a forum channel's webhook URL (a secret)"),
}

#: Environment variables that are not secrets.
ENVIRONMENT = {
    "HERMES_HOME": "the home when `--home` is not given (default `~/.hermes`)",
    "HERMES_BUNDLED_SKILLS": "where Hermes's bundled skills are (Hermes's own variable); roam "
                             "reads the category `DESCRIPTION.md` files there to tell a seeded "
                             "one from the user's",
    "ROAM_DISABLED_PLUGINS": "plugin names (comma or space separated) roam must not import",
    "ROAM_TEST_KILL_AT": "tests only: kill the process at a named point of an install",
    "ROAM_TEST_KILL_SIGNAL": "tests only: the signal `ROAM_TEST_KILL_AT` sends (default "
                             "`SIGKILL`; `SIGINT` is a Ctrl-C)",
}

#: Optional items that no home path carries, and what they mean.
PATHLESS_TIERS = {
    "sync_sessions": "the session archive: each push exports this device's ended sessions with "
                     "`hermes sessions export --format md --redact` (newest first, up to "
                     "`sessions_max_mb`) into its own namespace of the store; other devices' "
                     "land read-only under `roam/session-archive/` (`roam sessions` lists them)",
}


# -- generated blocks --------------------------------------------------------------------


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _literal(value: Any) -> str:
    if value is None:
        return "(none)"
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


def settings_rows() -> list[tuple[str, str, str, str, str]]:
    """(setting, default, required, provided by, meaning) for core and installed plugins."""
    from roam_core.manager import get_manager
    from roam_core.settings import DEFAULTS

    rows = [(name, _literal(DEFAULTS[name]), "", "core", CORE_SETTINGS.get(name, ""))
            for name in DEFAULTS]
    manager = get_manager()
    plugins: list[tuple[str, Any]] = [
        *((f"backend {name}", record) for name, record in
          sorted(manager.storage_backends().items())),
        *((f"sink {name}", record) for name, record in sorted(manager.session_sinks().items())),
    ]
    for owner, record in plugins:
        for setting in record.settings:
            if setting.secret:
                continue
            rows.append((setting.name, _literal(setting.default),
                         "yes" if setting.required else "", owner, setting.help))
    return rows


def secret_names() -> list[str]:
    """Every secret a plugin declares (`Setting.secret`) plus the ones roam reads itself."""
    from roam_core.manager import get_manager

    names = dict.fromkeys(SECRETS)
    manager = get_manager()
    for record in [*manager.storage_backends().values(), *manager.session_sinks().values()]:
        for setting in record.settings:
            if setting.secret:
                names.setdefault(setting.name)
    return list(names)


def settings_block() -> str:
    """The settings and secrets tables of docs/settings.md."""
    lines = ["| Setting | Default | Required | Provided by | Meaning |",
             "|---|---|---|---|---|"]
    lines += [f"| `{name}` | {default} | {required} | {owner} | {_cell(meaning)} |"
              for name, default, required, owner, meaning in settings_rows()]
    lines += ["", "| Secret | Used by | Meaning |", "|---|---|---|"]
    for name in secret_names():
        owner, meaning = SECRETS.get(name, ("plugin", "declared secret"))
        lines.append(f"| `{name}` | {owner} | {_cell(meaning)} |")
    lines += ["", "| Environment variable | Meaning |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in ENVIRONMENT.items()]
    return "\n".join(lines)


def _where(pattern: str, profile_copies: set[str]) -> tuple[str, str]:
    """(display pattern, where it applies) for one built-in rule."""
    from roam_core.scope.builtin import PROFILE

    if pattern.startswith("**/"):
        return pattern[3:], "anywhere"
    if pattern.startswith(PROFILE):
        return pattern[len(PROFILE):], "each profile"
    if pattern in profile_copies:
        return pattern, "home and each profile"
    return pattern, "home"


def tier_rows() -> list[tuple[str, str, str, str]]:
    """(tier, path, where, why) for the hard rules, the built-in rules and the optional items."""
    from roam_core.scope.builtin import PROFILE, SKILLS_PROVIDER, hermes_rules, rule_sets
    from roam_core.scope.model import HOOKS_ITEM, KNOWN_TIERS
    from roam_core.scope.never import HARD_RULES
    from roam_core.types import Scope

    rules = hermes_rules()
    profile_copies = {r.pattern[len(PROFILE):] for r in rules if r.pattern.startswith(PROFILE)}
    shared: list[tuple[str, str, str, str]] = []
    optional: list[tuple[str, str, str, str]] = []
    never: list[tuple[str, str, str, str]] = []
    for rule in HARD_RULES:
        path, where = _where(rule.pattern, set())
        tier = "shared" if rule.scope is Scope.SHARED else "never (hard rule)"
        if rule.pattern.startswith("**/"):
            where = "anywhere, any letter case"
        (shared if rule.scope is Scope.SHARED else never).append(
            (tier, f"`{path}`", where, rule.reason))
    for rule in rules:
        if rule.pattern.startswith(PROFILE) and rule.pattern[len(PROFILE):] in {
                r.pattern for r in rules}:
            continue  # shown once, as "home and each profile"
        path, where = _where(rule.pattern, profile_copies)
        if rule.tier:
            optional.append((f"optional: `{rule.tier}: true`", f"`{path}`", where, rule.reason))
        elif rule.scope is Scope.SHARED:
            shared.append(("shared", f"`{path}`", where, rule.reason))
        else:
            never.append(("never", f"`{path}`", where, rule.reason))
    ruled = {rule.tier for rule in rules if rule.tier}
    for tier in KNOWN_TIERS:
        if tier not in ruled:
            optional.append((f"optional: `{tier}: true`", "(no home path)", "-",
                             PATHLESS_TIERS.get(tier, "")))
    optional.append((f"optional: `{HOOKS_ITEM}`", "`hooks/`", "home and each profile",
                     "only through a `shared:` rule in `roam/rules.yaml`; this machine then "
                     "runs hook code written on your other machines"))
    skills = next(s for s in rule_sets(Path("/nonexistent")) if s.provider == SKILLS_PROVIDER)
    never.append(("local", "bundled skills unchanged since Hermes installed them, hub skills",
                  "`skills/` of home and each profile", f"{skills.summary} "
                  f"(provider `{SKILLS_PROVIDER}`, decided per home)"))
    everything_else = ("never", "anything no rule names", "anywhere",
                       "the defaults are an allowlist: an unknown path is never shared")
    return [*shared, *optional, *never, everything_else]


def _grouped(rows: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """One row per (tier, where, why).

    The same path at home and in profiles, and runs of paths with one reason, go together.
    """
    merged: dict[tuple[str, str, str], list[str]] = {}
    for tier, path, where, why in rows:
        merged.setdefault((tier, path, why), []).append(where)
    places: list[tuple[str, str, str, str]] = []
    for (tier, path, why), wheres in merged.items():
        where = "home and each profile" if set(wheres) == {"home", "each profile"} \
            else ", ".join(dict.fromkeys(wheres))
        places.append((tier, path, where, why))
    out: list[tuple[str, str, str, str]] = []
    for tier, path, where, why in places:
        if out and out[-1][0] == tier and out[-1][2] == where and out[-1][3] == why:
            out[-1] = (tier, f"{out[-1][1]}, {path}", where, why)
        else:
            out.append((tier, path, where, why))
    return out


def tiers_block() -> str:
    """The one table of docs/what-syncs.md."""
    lines = ["| Tier | Path | Applies in | Why |", "|---|---|---|---|"]
    lines += [f"| {tier} | {path} | {where} | {_cell(why)} |"
              for tier, path, where, why in _grouped(tier_rows())]
    return "\n".join(lines)


def host_keys_block() -> str:
    """The config keys that never leave a machine, from `roam_core.config`."""
    from roam_core.config import DEFAULT_HOST_KEYS

    return "  " + ", ".join(f"`{key}`" for key in DEFAULT_HOST_KEYS)


# -- the CLI reference -------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
         ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every parser under `parser` as (verb path, parser, one-line help), depth first."""
    sub = _subparsers(parser)
    if sub is None:
        return
    helps = {choice.dest: choice.help or "" for choice in sub._choices_actions}
    seen: set[int] = set()
    for name, child in sub.choices.items():
        if id(child) in seen:
            continue  # an alias
        seen.add(id(child))
        yield (*path, name), child, helps.get(name, "")
        yield from walk(child, (*path, name))


def _option_usage(action: argparse.Action) -> str:
    flag = max(action.option_strings, key=len)
    if action.nargs == 0:
        text = flag
    else:
        metavar = action.metavar or action.dest.upper()
        text = f"{flag} {metavar}"
    return text if action.required else f"[{text}]"


def _positional_usage(action: argparse.Action) -> str:
    if isinstance(action, argparse._SubParsersAction):
        name = str(action.metavar or "{" + ",".join(action.choices) + "}")
        return name if action.required else f"[{name}]"
    name = str(action.metavar or action.dest)
    return f"[{name}]" if action.nargs == "?" else name


def usage(path: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    """`roam [global options] VERB … [options]`, built from the parser's own actions."""
    parts = ["roam", *path]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if path and action.dest in GLOBAL_DESTS:
            continue
        parts.append(_option_usage(action) if action.option_strings
                     else _positional_usage(action))
    return " ".join(parts)


#: The global options every verb also takes after its name; listed once, at the top.
GLOBAL_DESTS = ("home", "verbose", "quiet")


def _arguments(parser: argparse.ArgumentParser, verb: bool = False) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if verb and action.dest in GLOBAL_DESTS:
            continue
        if action.option_strings:
            names = ", ".join(action.option_strings)
            if action.nargs != 0:
                names += f" {action.metavar or action.dest.upper()}"
        else:
            names = str(action.metavar or action.dest)
        help_text = action.help or ""
        if action.nargs == 0:
            pass
        elif action.default not in (None, argparse.SUPPRESS) and not action.required:
            help_text += f" (default: {action.default})"
        if action.required and action.option_strings:
            help_text += " (required)"
        rows.append((names, help_text))
    return rows


def _anchor(path: tuple[str, ...]) -> str:
    return "roam-" + "-".join(path)


def cli_reference() -> str:
    """The whole of docs/cli.md."""
    from roam_core.cli.main import build_parser

    parser = build_parser()
    entries = list(walk(parser))
    out = [
        "# CLI reference",
        "",
        "<!-- Generated by docs/generate.py from roam_core.cli.main.build_parser(); "
        "do not edit. -->",
        "",
        "Generated from the same argparse tree that prints `roam … --help` (and that "
        "`hermes roam …` mounts), so it lists every verb this version has. Exit codes: `0` "
        "ok, `1` error, `2` conflict (the remote moved ahead, or conflicts were kept local), "
        "`64` usage error (a mistyped verb or flag; the nearest one is suggested), "
        "`130` interrupted, `141` the output pipe closed early (`roam rules | head`).",
        "",
        f"```text\n{usage((), parser)}\n```",
        "",
        str(parser.description or ""),
        "",
        "Global options go before or after the verb (`roam --home ~/other-home status`, "
        "`roam status -v`); `--json` before the verb works for verbs that have it:",
        "",
        "| Option | Meaning |",
        "|---|---|",
        *(f"| `{names}` | {_cell(text)} |" for names, text in _arguments(parser)),
        "",
        "| Verb | What it does |",
        "|---|---|",
    ]
    for path, _child, help_text in entries:
        out.append(f"| [`roam {' '.join(path)}`](#{_anchor(path)}) | {_cell(help_text)} |")
    for path, child, help_text in entries:
        out += ["", f'<a id="{_anchor(path)}"></a>', "", f"## roam {' '.join(path)}", ""]
        description = child.description or help_text
        if description:
            out += [description[0].upper() + description[1:], ""]
        out += [f"```text\n{usage(path, child)}\n```"]
        rows = _arguments(child, verb=True)
        if rows:
            out += ["", "| Argument | Meaning |", "|---|---|"]
            out += [f"| `{names}` | {_cell(text)} |" for names, text in rows]
    return "\n".join(out) + "\n"


def secret_rules_block() -> str:
    """The table of docs/security.md: every rule of roam_core.secretscan.rules."""
    from roam_core.secretscan.rules import RULES

    out = ["| Rule | What it catches | Push |", "|---|---|---|"]
    out += [f"| `{rule.name}` | {_cell(rule.title)} | {'no' if rule.mirror_only else 'yes'} |"
            for rule in RULES]
    out.append("| (literal) | the values of the root's and the profile's `.env`, and roam's "
               "own secrets | yes |")
    return "\n".join(out)


# -- writing and checking ----------------------------------------------------------------

BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "settings": ("settings.md", settings_block),
    "guide-settings": ("user-guide.md", settings_block),
    "tiers": ("what-syncs.md", tiers_block),
    "host-keys": ("what-syncs.md", host_keys_block),
    "secret-rules": ("security.md", secret_rules_block),
}
WHOLE: dict[str, Callable[[], str]] = {"cli.md": cli_reference}


def replace_block(text: str, name: str, body: str) -> str:
    """`text` with the generated block `name` replaced by `body`."""
    start, end = f"<!-- generated:{name} -->", f"<!-- end generated:{name} -->"
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise SystemExit(f"docs/generate.py: the markers of block {name!r} are missing")
    _old, _, tail = rest.partition(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def expected(docs: Path = DOCS) -> dict[Path, str]:
    """Every generated file's intended text."""
    texts: dict[Path, str] = {docs / name: make() for name, make in WHOLE.items()}
    for name, (filename, make) in BLOCKS.items():
        path = docs / filename
        current = texts.get(path) or path.read_text(encoding="utf-8")
        texts[path] = replace_block(current, name, make())
    return texts


def stale(docs: Path = DOCS) -> list[Path]:
    """Generated files whose text on disk differs from what the code says."""
    found = []
    for path, text in expected(docs).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated docs, or with `--check` report the stale ones."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(DOCS.parent)} (run python docs/generate.py)")
        return 1 if old else 0
    for path, text in expected().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
