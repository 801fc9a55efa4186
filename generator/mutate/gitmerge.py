"""A git merge driver for the committed mutation results (`content/mutants/<sheet>.json`).

Two branches that each mutate some rows of one sheet both rewrite that sheet's file. Git's line merge
may then conflict, or may silently interleave a cell's entries. This driver merges them cell by cell:
a cell that only one side changed takes that side, a cell both sides changed the same way is kept,
and a cell both sides changed differently is a conflict. The run then exits 1, keeps our side of
that cell and names it, so `mutate --only SHEET/ROW` can run it again. The file is written as
`results.write` writes it (`results.file_text`). It imports no third-party package: git runs it with
whatever Python is first on PATH.

Set it up once per clone (the attribute is committed in .gitattributes; without this setting git
merges the files line by line, as before):

    git config merge.mutants.driver "python3 -m generator.mutate.gitmerge %O %A %B"
"""

from __future__ import annotations

import json
import sys

from generator.mutate.results import compact, explicit_cells, file_text


def _cells(data: dict) -> dict:
    """The cells by (row, column), each naming the versions it was made with (a cell that relies on its
    file's versions means other versions once the other side changes the file's)."""
    return {(cell["row"], cell["column"]): cell for cell in explicit_cells(data)}


def merge(base: dict, ours: dict, theirs: dict) -> tuple[dict, list]:
    """(the merged file's data, the (row, column) of each cell both sides changed differently)."""
    b, o, t = _cells(base), _cells(ours), _cells(theirs)
    merged, conflicts = {}, []
    for key in sorted(set(b) | set(o) | set(t)):
        was, mine, other = b.get(key), o.get(key), t.get(key)
        if mine == other or other == was:
            pick = mine
        elif mine == was:
            pick = other
        else:
            conflicts.append(key)
            pick = mine
        if pick is not None:  # a cell one side removed and the other left alone stays removed
            merged[key] = pick
    return compact(ours["sheet"], [merged[key] for key in sorted(merged)]), conflicts


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m generator.mutate.gitmerge BASE OURS THEIRS (git's %O %A %B)", file=sys.stderr)
        return 2
    base_path, ours_path, theirs_path = argv
    loaded = []
    for path in (base_path, ours_path, theirs_path):
        try:
            with open(path, encoding="utf-8") as handle:
                loaded.append(json.load(handle))
        except (OSError, ValueError) as error:  # an unreadable side: leave the merge to a person
            print(f"mutation results merge: {path} cannot be read ({error}); merge it by hand", file=sys.stderr)
            return 1
    data, conflicts = merge(*loaded)
    with open(ours_path, "w", encoding="utf-8") as handle:
        handle.write(file_text(data))
    if conflicts:
        rows = ", ".join(f"{data['sheet']}/{row} [{column}]" for row, column in conflicts)
        print(f"mutation results merge: both sides changed {rows}; ours is kept: run `python -m generator mutate --only ROW` for each", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
