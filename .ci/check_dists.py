"""Check built wheels and sdists the way an index and a packager would look at them.

    python .ci/check_dists.py DIST_DIR

Every wheel carries LICENSE, py.typed, a README long description, the classifiers (Python
versions, POSIX, Typing :: Typed) and, for plugins, a bounded roam-core requirement; the
roam-core wheel leaves the benchmark helper out; every sdist carries LICENSE and README.md.
Prints the file list of the roam-core wheel. Exit 1 naming every problem.
"""

from __future__ import annotations

import email
import sys
import tarfile
import zipfile
from pathlib import Path

CLASSIFIERS = ("Operating System :: POSIX", "Typing :: Typed",
               "Programming Language :: Python :: 3.11")


def check_wheel(path: Path) -> list[str]:
    problems: list[str] = []
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(wheel.read(meta_name))
    package = meta["Name"].replace("-", "_")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append("no LICENSE")
    if f"{package}/py.typed" not in names:
        problems.append("no py.typed")
    if meta.get("License-Expression") != "MIT":
        problems.append(f"License-Expression is {meta.get('License-Expression')!r}")
    if meta.get("Description-Content-Type") != "text/markdown" or \
            len(meta.get_payload().splitlines()) < 20:
        problems.append("the README (long description) is missing or a stub")
    if len(meta["Summary"] or "") > 120:
        problems.append(f"summary is {len(meta['Summary'])} characters (keep it one line)")
    have = set(meta.get_all("Classifier") or [])
    problems += [f"classifier missing: {c}" for c in CLASSIFIERS if c not in have]
    if package != "roam_core":
        requires = [r for r in meta.get_all("Requires-Dist") or [] if r.startswith("roam-core")]
        if not requires or "<" not in requires[0]:
            problems.append(f"roam-core requirement has no upper bound: {requires}")
    if package == "roam_core" and "roam_core/testing/rss.py" in names:
        problems.append("the benchmark helper roam_core/testing/rss.py ships")
    return [f"{path.name}: {problem}" for problem in problems]


def check_sdist(path: Path) -> list[str]:
    with tarfile.open(path) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    return [f"{path.name}: no {needed}" for needed in ("LICENSE", "README.md", "pyproject.toml")
            if needed not in names]


def main(folder: str) -> int:
    dist = Path(folder)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    problems = [p for wheel in wheels for p in check_wheel(wheel)]
    problems += [p for sdist in sdists for p in check_sdist(sdist)]
    if len(wheels) != 5 or len(sdists) != 5:
        problems.append(f"expected 5 wheels and 5 sdists, found {len(wheels)} and {len(sdists)}")
    core = next((w for w in wheels if w.name.startswith("roam_core-")), None)
    if core is not None:
        print(f"contents of {core.name}:")
        with zipfile.ZipFile(core) as wheel:
            for info in wheel.infolist():
                print(f"  {info.file_size:>8}  {info.filename}")
    for problem in problems:
        print(f"packaging: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
