"""Write the trees of rooms: the README's (one line per package) and docs/rooms.md's (one line
per package and module), each from the first line of its docstring.

python scripts/rooms.py            # print the full tree
python scripts/rooms.py --check    # exit 1 if either tree is out of date
python scripts/rooms.py --write    # rewrite both
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rlvr", "verifiers", "tasks")
BEGIN, END = "<!-- rooms:begin -->", "<!-- rooms:end -->"


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text()))
    return doc.strip().splitlines()[0] if doc else ""


def rooms(modules: bool = True) -> str:
    """Every package (and, with ``modules``, every module) with its docstring's first line."""
    lines: list[str] = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO)
            if path.name == "__init__.py":
                lines.append(f"{str(rel.parent) + '/':<44} {first_line(path)}")
            elif modules and not path.name.startswith("__"):
                lines.append(f"{str(rel):<44} {first_line(path)}")
    return "```\n" + "\n".join(lines) + "\n```"


TREES = {REPO / "README.md": False, REPO / "docs" / "rooms.md": True}  # page -> with modules


def main() -> int:
    if "--write" in sys.argv:
        for page, modules in TREES.items():
            head, rest = page.read_text().split(BEGIN, 1)
            page.write_text(f"{head}{BEGIN}\n{rooms(modules)}\n{END}{rest.split(END, 1)[1]}")
        return 0
    if "--check" not in sys.argv:
        print(rooms())
        return 0
    for page, modules in TREES.items():
        current = page.read_text().split(BEGIN, 1)[-1].split(END, 1)[0].strip()
        if current != rooms(modules):
            print(f"{page.name}'s tree of rooms is out of date: run python scripts/rooms.py --write")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
