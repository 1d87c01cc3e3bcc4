"""`--help` that teaches: each verb's description, examples and exit codes; verbs by task."""

from __future__ import annotations

import argparse

EXIT_CODES = """exit codes:
  0   done
  1   failed; one line on stderr says why and what to do
  2   behind the remote, or conflicts kept local (roam pull, then push)
  64  usage error: a mistyped verb or flag (the nearest one is suggested)"""

#: Verbs by task, for the top-level help; a verb missing here is listed under "other".
GROUPS = (
    ("set up", ("init", "config", "rules", "auto", "demo", "completion")),
    ("sync", ("status", "push", "pull", "diff", "restore")),
    ("history", ("history", "devices", "sessions", "backups", "stats")),
    ("managing the store", ("forget", "prune", "key")),
    ("diagnostics", ("doctor", "check", "upgrade")),
    ("plugins", ("plugins", "backends", "sinks", "mirror")),
)

#: Hand-written examples for the verbs people type most; others get their usage lines.
EXAMPLES = {
    ("init",): ["roam config set backend s3 && roam config set s3_bucket my-bucket",
                "roam init --create-remote"],
    ("status",): ["roam status", "roam status --json"],
    ("push",): ["roam push", "roam push --dry-run", "roam push -q   # no progress"],
    ("pull",): ["roam pull            # show the plan", "roam pull --apply    # install it"],
    ("history",): ["roam history", "roam history memories/MEMORY.md"],
    ("stats",): ["roam stats", "roam stats --last 30", "roam stats --json"],
    ("forget",): ["roam forget --keep-last 5", "roam forget --keep-daily 14 --keep-monthly 12 "
                  "--apply", "roam forget --keep-within 30d --json"],
    ("prune",): ["roam prune", "roam prune --apply"],
    ("key", "rotate"): ["roam key rotate   # to the key in ROAM_NEW_ARCHIVE_KEY",
                       "roam key rotate --generate"],
    ("config", "set"): ["roam config set backend s3", "roam config set max_file_mb 200"],
    ("config", "list"): ["roam config list", "roam config list --json"],
    ("config", "unset"): ["roam config unset backup_keep"],
    ("doctor",): ["roam doctor", "roam doctor --json"],
    ("rules",): ["roam rules", "roam rules --init", "roam rules | head"],
    ("demo",): ["roam demo", "roam demo --keep"],
    ("completion",): ["roam completion bash > ~/.local/share/bash-completion/completions/roam",
                      "roam completion zsh > \"${fpath[1]}/_roam\"",
                      "roam completion fish > ~/.config/fish/completions/roam.fish"],
}


def decorate(root: argparse.ArgumentParser, prog: str = "roam") -> None:
    """Give every verb a description (its help line when it has none), examples, exit codes."""
    for path, parser, help_text in verbs(root):
        if not parser.description and help_text:
            parser.description = help_text[0].upper() + help_text[1:] + "."
        examples = EXAMPLES.get(path) or [_example(prog, path, parser)]
        parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples) + \
            "\n\n" + EXIT_CODES
        parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _example(prog: str, path: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    words = [prog, *path]
    for action in parser._actions:
        if not action.option_strings and action.required and \
                not isinstance(action, argparse._SubParsersAction):
            words.append(str(action.metavar or action.dest).upper())
    return " ".join(words)


def verbs(root: argparse.ArgumentParser
           ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every verb below `root` as (path, parser, one-line help), aliases skipped."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser, str]] = []

    def visit(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) in seen:
                    continue
                seen.add(id(child))
                found.append(((*path, name), child, helps.get(name, "")))
                visit(child, (*path, name))

    visit(root, ())
    return found


def grouped_verbs(root: argparse.ArgumentParser) -> str:
    """The top-level verb list, by task (set up, sync, history, diagnostics, plugins)."""
    top = {path[0]: help_text for path, _parser, help_text in verbs(root) if len(path) == 1}
    width = max(map(len, top), default=0) + 2
    lines: list[str] = []
    placed: set[str] = set()
    for title, names in (*GROUPS, ("other", tuple(sorted(top)))):
        present = [name for name in names if name in top and name not in placed]
        if not present:
            continue
        lines.append(f"{title}:")
        lines += [f"  {name.ljust(width)}{top[name]}" for name in present]
        lines.append("")
        placed.update(present)
    return "\n".join(lines) + "run roam COMMAND --help for a verb's options and examples"


class GroupedHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The top-level help: the verb list is replaced by `grouped_verbs` in the epilog."""

    def add_argument(self, action: argparse.Action) -> None:
        if not isinstance(action, argparse._SubParsersAction):
            super().add_argument(action)

