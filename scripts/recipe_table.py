"""Write docs/recipe.md's fidelity table from the plan of experiment=m2rl_study.

python scripts/recipe_table.py            # print the table
python scripts/recipe_table.py --check    # exit 1 if the page's table is out of date
python scripts/recipe_table.py --write    # rewrite it
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "recipe.md"
BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"


def current_table() -> str:
    from rlvr.study.__main__ import plan
    from rlvr.study.fidelity import to_markdown

    with tempfile.TemporaryDirectory() as out:
        fidelity = plan(["experiment=m2rl_study", f"study.out_dir={out}"]).fidelity
    if fidelity is None or fidelity.message:
        sys.exit(fidelity.message if fidelity else "m2rl_study names no recipe")
    return to_markdown(fidelity.rows)


def main(argv: list[str]) -> int:
    table = current_table()
    if not argv:
        sys.stdout.write(table + "\n")
        return 0
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    updated = text[:start] + "\n" + table + "\n" + text[end:]
    if argv[0] == "--check":
        return 0 if updated == text else 1
    DOC.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
