"""The content schema: every kind of mapping the content may hold, one declaration per field.

This is the one place a field is added: its type, whether it is required (or its default), its
allowed values and the line docs/schema.md says about it. The loaders (content.py for the sheets,
pages.py for the guide and the trade-off matrix) read with these specs; docs/schema.md's field
tables are generated from them:

    python -m generator.load.schema            # rewrite the tables of docs/schema.md (make docs)
    python -m generator.load.schema --check    # exit 1 when docs/schema.md is stale

Each table sits between `<!-- schema: KIND -->` and `<!-- /schema -->` in docs/schema.md; the
prose around them is written by hand.
"""

from __future__ import annotations

import os
import re
import sys

from generator.load.fields import (
    Bool,
    Choice,
    Code,
    Int,
    Lanes,
    List,
    Mapping,
    Markdown,
    Number,
    Object,
    PythonName,
    Regex,
    Slug,
    Spec,
    Str,
    table,
)
from generator.model import CODE, NONE, TEXT

# --- sheets: content/<sheet>/sheet.yaml and its section files ---------------------------------------------------
SHEET = Spec(
    "sheet",
    id=Slug("the sheet's id; its page is `site/<id>.html`", required=True),
    title=Str("the page title", required=True),
    description=Markdown("shown under the title", nonempty=False, facts=True),
    order=Int("position on the index page, lower first", default=100),
    columns=List("the frameworks, left to right", of="columns", nonempty=True, required=True),
    sections=List("the section files of this folder, in page order", of="file names", strings=True, null_ok=True, required=True),
    pages=List("split the sheet into pages of consecutive sections, each under the page-weight budget (below)", of="sheet pages", nonempty=True),
)
SHEET_PAGE = Spec(
    "sheet page",
    id=Slug("the page's id: the first page is `<sheet>.html`, the others `<sheet>-<id>.html`", required=True),
    title=Str("the page's heading and its name in the sheet's page list", required=True),
    sections=List("its section files, consecutive and in the order of `sections`", of="file names", strings=True, nonempty=True, required=True),
)
COLUMN = Spec(
    "column",
    id=Slug("the key cells use", required=True),
    name=Str("the column heading", required=True),
    lanes=Lanes("where this column's code cells run by default (a Keras column lists one lane per backend)", required=True),
    note=Markdown('shown in the sheet\'s column notes (e.g. "Theano cells run on PyTensor")', nonempty=False),
)
SECTION = Spec(
    "section",
    id=Slug("the section's anchor", required=True),
    title=Str("the section heading", required=True),
    rows=List("the section's rows, in page order", of="rows", null_ok=True, required=True),
)
ROW = Spec(
    "row",
    id=Slug("unique in its sheet; the row's permalink anchor", required=True),
    title=Str("the row heading", required=True),
    notes=Markdown("shown below the table, linked from the row title", nonempty=False, facts=True),
    timeout=Number("seconds each of this row's cells may run", positive=True, unit=" of seconds", default=60.0),
    same=Object("the row's columns compute the same value: compared across columns after the run", type_doc="equivalence"),
    differs=List(
        "how the columns behave differently (a default, a dtype, a keyword): the compare view's \"differences only\" shows the row with this reason (below)",
        of="differences",
        nonempty=True,
        says=" of {what, columns, checked}",
    ),
    see_also=List(
        "rows elsewhere that answer the same task, as `sheet/row` (or `row` on this sheet): linked from this row and back; each must exist",
        of="row references",
        strings=True,
        nonempty=True,
    ),
    cells=Mapping("one cell for every column of the sheet", keys="column id", values="cell", required=True),
)
DIFFERENCE = Spec(
    "difference",
    what=Str("one line: what differs, e.g. \"integers default to int64 in PyTorch, int32 elsewhere\"", required=True),
    columns=List("the columns that behave this way, set apart from the others", of="column ids", strings=True, nonempty=True, default_doc="every column differs from every other"),
    checked=Slug("the label of the check line that proves it (`# checked: LABEL` in a check of this row)"),
)
SAME = Spec(
    "same",
    value=PythonName(
        "the variable every participating cell leaves behind: a numeric array-like (tensor, array; at most 65,536 elements), compared as float64",
        required=True,
    ),
    rtol=Number("relative tolerance", default=1e-5),
    atol=Number("absolute tolerance", default=1e-6),
    dtype=Bool("also require the same dtype", default=False),
    columns=List("the columns compared", of="column ids", strings=True, default_doc="every column with a code cell"),
)
CELL = Spec(
    "cell",
    code=Code("Python shown on the page and executed", group=CODE),
    setup=Code("hidden Python run before `code`, in the same namespace", group=CODE),
    check=Code("hidden Python run after `code` that asserts what the row claims", group=CODE),
    lanes=Lanes("lanes to run this cell in, instead of its column's `lanes`", group=CODE),
    counterexamples=List("wrong snippets the `check` must reject (below)", of="counterexamples", nonempty=True, says=" of {code, why}", group=CODE),
    equivalent_mutants=List(
        "mutants of this cell's code that `make mutate` found surviving and that change nothing the row is about (below)",
        of="equivalent mutants",
        nonempty=True,
        says=" of {mutant, why}",
        group=CODE,
    ),
    cpu_only=Str("why this cell does not run on a GPU: it is left out of GPU runs and coverage, and the reason is shown", group=CODE),
    gpu_only=Str("why this cell means nothing on a CPU: it runs only on a GPU and shows its GPU ledger result (never CPU-verified)", group=CODE),
    text=Str("a prose fact", group=TEXT),
    source=Str("a URL backing the fact", nonempty=False, group=TEXT),
    none=Str(
        "the framework lacks the feature: the reason, required",
        message="a 'none' cell needs a reason: what the framework lacks, and what to use instead",
        null_ok=False,
        group=NONE,
    ),
)
CELL_KIND_FIELDS = CELL.groups()  # {code: {"code", "setup", …}, text: {…}, none: {"none"}}
COUNTEREXAMPLE = Spec(
    "counterexample",
    code=Code('the wrong snippet, shown on the page under "Not this"', required=True),
    why=Str("one line: what is wrong with it", required=True),
    raises=Regex(
        "the wrong code itself must raise an error whose text matches (an API that does not exist, a refused call); without it, the code must run and the `check` must reject it"
    ),
)

EQUIVALENT_MUTANT = Spec(
    "equivalent mutant",
    mutant=Str("the mutant's description, as `make mutate` and the verification report give it", required=True),
    why=Str("one line: why the row's claim does not depend on what the mutant changed", required=True),
)

# --- the guide (content/guide.yaml) and the trade-off matrix (content/tradeoffs.yaml) ----------------------------
# Every string of these may use {{facts}} (pages.py reads them with the facts' values).
VERDICTS = {"good": "✓", "caution": "⚠", "poor": "✗"}  # verdict -> its glyph, one every text font has
EVIDENCE = "evidence list"  # the type of an evidence field: its links are checked by pages.py


def _evidence(description: str, **options) -> List:
    return List(description, of="evidence links", nonempty=True, null_ok=True, type_doc=EVIDENCE, **options)


def _items(description: str, of: str, **options) -> List:
    return List(description, of=of, nonempty=True, null_ok=True, required=True, **options)


GUIDE = Spec(
    "guide",
    title=Str("the page title", required=True),
    intro=Markdown("shown under the title"),
    sections=_items("the advice, in page order", "guide sections"),
    selector=Object("the data for ranking frameworks by the reader's priorities", type_doc="selector", required=True),
)
GUIDE_SECTION = Spec(
    "guide section",
    id=Slug("unique in the file; the section's anchor", required=True),
    title=Str('the heading, e.g. "Choose JAX when…"', required=True),
    framework=Str("the framework the advice is about; one of `selector.frameworks[].id`", type_doc="framework id"),
    items=_items("the claims", "items"),
)
ITEM = Spec(
    "item",
    text=Markdown("the claim, in the site's own words", required=True),
    evidence=_evidence("what backs it", required=True),
)
SELECTOR = Spec(
    "selector",
    intro=Markdown("how to read the scores"),
    criteria=_items("what a reader may care about, in display order", "criteria"),
    frameworks=_items("the frameworks to rank, in display order", "selector frameworks"),
)
CRITERION = Spec(
    "criterion",
    id=Slug("unique among the criteria", required=True),
    label=Str("what the reader weighs", required=True),
)
SELECTOR_FRAMEWORK = Spec(
    "selector framework",
    id=Slug("unique among the frameworks", required=True),
    name=Str("the display name", required=True),
    scores=_items("exactly one score for every criterion, no more", "scores"),
)
SCORE = Spec(
    "score",
    criterion=Str("which criterion this scores", required=True, type_doc="criterion id"),
    score=Int("0 weak … 3 strong", low=0, high=3, default=0, required=True),
    reason=Str("one line saying what the score rests on", required=True),
    evidence=_evidence("what backs the reason"),
)
TRADEOFFS = Spec(
    "tradeoffs",
    title=Str("the page title", required=True),
    intro=Markdown("shown under the title"),
    frameworks=_items("the matrix columns, left to right", "matrix frameworks"),
    sections=_items("groups of criteria (rows), in page order", "matrix sections"),
)
MATRIX_FRAMEWORK = Spec(
    "matrix framework",
    id=Slug("unique among the frameworks", required=True),
    name=Str("the column heading", required=True),
)
MATRIX_SECTION = Spec(
    "matrix section",
    id=Slug("unique in the file", required=True),
    title=Str("the heading over its criteria", required=True),
    criteria=_items("the rows of this part of the matrix", "matrix criteria"),
)
MATRIX_CRITERION = Spec(
    "matrix criterion",
    id=Slug("unique in the file; the row's anchor", required=True),
    label=Str("the row heading", required=True),
    notes=Markdown("shown below the matrix, linked from the label (e.g. what changed since the source)"),
    verdicts=_items("exactly one per framework, in the order of `frameworks`", "verdicts"),
)
VERDICT = Spec(
    "verdict",
    framework=Str("the column", required=True, type_doc="framework id"),
    verdict=Choice("rendered " + ", ".join(VERDICTS.values()), allowed=VERDICTS, required=True),
    reason=Str("one line", required=True),
    evidence=_evidence("what backs the verdict", required=True),
)

SPECS = {
    spec.kind: spec
    for spec in (SHEET, SHEET_PAGE, COLUMN, SECTION, ROW, SAME, DIFFERENCE, CELL, COUNTEREXAMPLE, EQUIVALENT_MUTANT, GUIDE, GUIDE_SECTION, ITEM, SELECTOR, CRITERION,
                 SELECTOR_FRAMEWORK, SCORE, TRADEOFFS, MATRIX_FRAMEWORK, MATRIX_SECTION, MATRIX_CRITERION, VERDICT)
}

# --- docs/schema.md ----------------------------------------------------------------------------------------------
DOC = "docs/schema.md"
_DOC_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), DOC)
_TABLE = re.compile(r"(<!-- schema: (?P<kind>[^>]+?) -->\n).*?(<!-- /schema -->)", re.S)


def document(text: str) -> str:
    """text (docs/schema.md) with every generated table rewritten from the specs.

    Raises ValueError when a marker names no kind, or a kind has no table."""
    seen = set()

    def fill(match: re.Match) -> str:
        kind = match.group("kind")
        if kind not in SPECS:
            raise ValueError(f"{DOC}: '<!-- schema: {kind} -->' names no kind of the schema; kinds: {', '.join(SPECS)}")
        seen.add(kind)
        return f"{match.group(1)}{table(SPECS[kind])}\n{match.group(3)}"

    out = _TABLE.sub(fill, text)
    missing = [kind for kind in SPECS if kind not in seen]
    if missing:
        raise ValueError(f"{DOC} has no table for {missing}: add '<!-- schema: KIND -->' and '<!-- /schema -->' where each goes")
    return out


def main(argv: list[str]) -> int:
    with open(_DOC_PATH, encoding="utf-8") as handle:
        text = handle.read()
    new = document(text)
    if "--check" in argv:
        if new != text:
            print(f"{DOC} is stale: run `python -m generator.load.schema` (make docs)", file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(_DOC_PATH, "w", encoding="utf-8") as handle:
            handle.write(new)
        print(f"rewrote the tables of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
