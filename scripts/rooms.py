"""Print the README's tree of rooms: one line per package and module, from its docstring.

python scripts/rooms.py            # print the tree
python scripts/rooms.py --check    # exit 1 if README.md's tree is out of date
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


def rooms() -> str:
    lines: list[str] = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO)
            name = str(rel.parent) + "/" if path.name == "__init__.py" else str(rel)
            if path.name == "__init__.py" or not path.name.startswith("__"):
                lines.append(f"{name:<44} {first_line(path)}")
    return "```\n" + "\n".join(lines) + "\n```"


def main() -> int:
    tree = rooms()
    if "--check" not in sys.argv:
        print(tree)
        return 0
    readme = (REPO / "README.md").read_text()
    current = readme.split(BEGIN, 1)[-1].split(END, 1)[0].strip()
    if current != tree:
        print("README.md's tree of rooms is out of date: run python scripts/rooms.py --write")
        return 1
    return 0


if __name__ == "__main__" and "--write" in sys.argv:
    text = (REPO / "README.md").read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    (REPO / "README.md").write_text(f"{head}{BEGIN}\n{rooms()}\n{END}{tail}")
elif __name__ == "__main__":
    sys.exit(main())
