"""The framework-choice guide and the trade-off matrix: strict loading of content/guide.yaml and
content/tradeoffs.yaml, evidence links checked against the sheets, and their pages.

Every claim carries evidence: a row of the site (which must exist), a benchmark (which must be one
the benchmarks page measures), or an external source with the date it was read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from generator.errors import ContentError, ContentInvalid
from generator.load import facts, yamlfile
from generator.load.content import OUTSIDE, inside
from generator.load.fields import Reader, Record, suggest
from generator.load.schema import (
    CRITERION,
    GUIDE,
    GUIDE_SECTION,
    ITEM,
    MATRIX_CRITERION,
    MATRIX_FRAMEWORK,
    MATRIX_SECTION,
    SCORE,
    SELECTOR,
    SELECTOR_FRAMEWORK,
    TRADEOFFS,
    VERDICT,
    VERDICTS,
)
from generator.load.yamlfile import Map

BENCHMARK_IDS = ("mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EVIDENCE_FORMS = ({"row"}, {"benchmark"}, {"url", "title", "accessed"})
__all__ = ["BENCHMARK_IDS", "VERDICTS", "Link", "load", "render"]  # the kinds' fields: generator/load/schema.py


@dataclass(frozen=True)
class Link:
    """One piece of evidence, ready for a page: where it points and what it says."""

    kind: str  # row, benchmark or external
    href: str
    label: str
    accessed: str = ""


class _Checker(Reader):
    """A Reader of the guide and trade-off files: facts filled in, ids unique, evidence resolved."""

    def __init__(self, path: str, rows: dict[str, str], fact_values: dict[str, str] | None = None):
        super().__init__(path, [], fact_values or {})
        self.rows = rows  # "sheet/row" -> row title

    def each(self, items, spec) -> list[Record]:
        """The items of a list field read as spec's kind, those that are mappings."""
        records = (self.read(item, spec, line) for item, line in zip(items, items.item_lines, strict=True))
        return [record for record in records if record is not None]

    def unique(self, record: Record, seen: dict[str, int], what: str, key: str = "id") -> str:
        value = record[key]
        if value in seen:
            self.error(record.at(key), f"duplicate {what} '{value}' (first on line {seen[value]})")
        elif value:
            seen[value] = record.at(key)
        return value

    def evidence(self, items) -> list[Link]:
        links = []
        for item, line in zip(items, items.item_lines, strict=True):
            if not isinstance(item, Map) or set(item) not in EVIDENCE_FORMS:
                keys = sorted(item) if isinstance(item, Map) else item
                self.error(line, f"an evidence link is one of {{row}}, {{benchmark}} or {{url, title, accessed}}; got {keys}")
                continue
            if "row" in item:
                target = str(item["row"])
                if target not in self.rows:
                    self.error(item.key_lines["row"], f"evidence points at a missing row '{target}'{suggest(target, self.rows)}")
                    continue
                sheet, row = target.split("/", 1)
                links.append(Link("row", f"{sheet}.html#{row}", f"{self.rows[target]} ({sheet})"))
            elif "benchmark" in item:
                bench = str(item["benchmark"])
                if bench not in BENCHMARK_IDS:
                    self.error(item.key_lines["benchmark"], f"unknown benchmark '{bench}'{suggest(bench, BENCHMARK_IDS)}")
                    continue
                links.append(Link("benchmark", f"benchmarks.html#{bench}", f"benchmark: {bench}"))
            else:
                url, accessed = str(item["url"]), str(item["accessed"])
                if not url.startswith("https://"):
                    self.error(item.key_lines["url"], f"an external source must be an https URL: '{url}'")
                    continue
                if not DATE.match(accessed):
                    self.error(item.key_lines["accessed"], f"'accessed' must be a date YYYY-MM-DD: '{accessed}'")
                links.append(Link("external", url, str(item["title"]), accessed))
        return links


def _read(path: str, errors: list[ContentError]):
    with open(path, encoding="utf-8") as handle:
        data, file_errors = yamlfile.read(path, handle.read())
    errors.extend(file_errors)
    return data


def load(content_dir: str, sheets) -> dict:
    """Load guide.yaml and tradeoffs.yaml (those present); raise ContentInvalid on any error."""
    rows = {f"{sheet.id}/{row.id}": row.title for sheet in sheets for row in sheet.rows()}
    fact_values = facts.compute(sheets)
    pages, errors = {}, []
    for name, loader in (("guide", _guide), ("tradeoffs", _tradeoffs)):
        path = os.path.join(content_dir, f"{name}.yaml")
        if not os.path.isfile(path):
            continue
        if not inside(path, content_dir):
            errors.append(ContentError(path, 1, OUTSIDE, quote=False))
            continue
        data = _read(path, errors)
        if data is None:
            continue
        checker = _Checker(path, rows, fact_values)
        pages[name] = loader(checker, data)
        errors.extend(checker.errors)
    if errors:
        raise ContentInvalid(errors)
    return pages


# a guide statement that says one framework is faster is a claim the benchmarks page measured
SPEED = re.compile(r"\bfaster\b", re.I)


def _guide(c: _Checker, data) -> dict | None:
    guide = c.read(data, GUIDE, 1)
    if guide is None:
        return None
    selector = _selector(c, guide["selector"], guide.line) if guide.given("selector") else None
    framework_ids = {f["id"] for f in selector["frameworks"]} if selector else set()
    sections, seen = [], {}
    for section in c.each(guide["sections"], GUIDE_SECTION):
        framework = section["framework"]
        if framework and framework_ids and framework not in framework_ids:
            c.error(section.at("framework"), f"unknown framework '{framework}'{suggest(framework, framework_ids)}")
        claims = []
        for claim in c.each(section["items"], ITEM):
            evidence = c.evidence(claim["evidence"])
            if SPEED.search(claim["text"]) and not any(link.kind == "benchmark" for link in evidence):
                c.error(claim.line, "a statement about speed links the benchmark that measured it: add `- benchmark: ID` to its evidence "
                                    f"(one of {', '.join(BENCHMARK_IDS)})")  # fmt: skip
            claims.append({"text": claim["text"], "evidence": evidence})
        sections.append({"id": c.unique(section, seen, "section id"), "title": section["title"], "framework": framework, "items": claims})
    return {"title": guide["title"], "intro": guide["intro"], "sections": sections, "selector": selector}


def _selector(c: _Checker, data, line: int) -> dict | None:
    selector = c.read(data, SELECTOR, line)
    if selector is None:
        return None
    seen: dict[str, int] = {}
    criteria = [{"id": c.unique(criterion, seen, "criterion id"), "label": criterion["label"]} for criterion in c.each(selector["criteria"], CRITERION)]
    criterion_ids = [cr["id"] for cr in criteria]
    frameworks, seen_frameworks = [], {}
    for framework in c.each(selector["frameworks"], SELECTOR_FRAMEWORK):
        scores = {}
        for score in c.each(framework["scores"], SCORE):
            criterion = score["criterion"]
            if criterion not in criterion_ids:
                c.error(score.at("criterion"), f"unknown criterion '{criterion}'{suggest(criterion, criterion_ids)}")
                continue
            if criterion in scores:
                c.error(score.at("criterion"), f"criterion '{criterion}' is scored twice")
            scores[criterion] = {"score": score["score"], "reason": score["reason"], "evidence": c.evidence(score["evidence"])}
        missing = [cr for cr in criterion_ids if cr not in scores]
        if missing and framework.given("scores"):
            c.error(framework.at("scores"), f"no score for criteria {missing}")
        frameworks.append({"id": c.unique(framework, seen_frameworks, "framework id"), "name": framework["name"], "scores": scores})
    return {"intro": selector["intro"], "criteria": criteria, "frameworks": frameworks}


def _tradeoffs(c: _Checker, data) -> dict | None:
    matrix = c.read(data, TRADEOFFS, 1)
    if matrix is None:
        return None
    seen: dict[str, int] = {}
    frameworks = [{"id": c.unique(f, seen, "framework id"), "name": f["name"]} for f in c.each(matrix["frameworks"], MATRIX_FRAMEWORK)]
    order = [f["id"] for f in frameworks]
    sections, seen_sections, seen_criteria = [], {}, {}
    for section in c.each(matrix["sections"], MATRIX_SECTION):
        criteria = []
        for criterion in c.each(section["criteria"], MATRIX_CRITERION):
            verdicts = [
                {
                    "framework": verdict["framework"],
                    "verdict": verdict["verdict"],
                    "symbol": VERDICTS.get(verdict["verdict"], "?"),
                    "reason": verdict["reason"],
                    "evidence": c.evidence(verdict["evidence"]),
                }
                for verdict in c.each(criterion["verdicts"], VERDICT)
            ]
            got = [v["framework"] for v in verdicts]
            if criterion.given("verdicts") and got != order:
                c.error(criterion.at("verdicts"), f"verdicts must be one per framework in the order {order}; got {got}")
            criteria.append({"id": c.unique(criterion, seen_criteria, "criterion id"), "label": criterion["label"], "notes": criterion["notes"], "verdicts": verdicts})
        sections.append({"id": c.unique(section, seen_sections, "section id"), "title": section["title"], "criteria": criteria})
    return {"title": matrix["title"], "intro": matrix["intro"], "frameworks": frameworks, "sections": sections}


TEMPLATES = {"guide": ("guide.html", "guide"), "tradeoffs": ("tradeoffs.html", "matrix")}


def render(env, kind: str, page, context: dict) -> bytes:
    """The guide ('guide') or the trade-off matrix ('tradeoffs') as HTML."""
    template, name = TEMPLATES[kind]
    return env.get_template(template).render(**{name: page}, page_path=template, nav=context["nav"], assets=context["assets"]).encode()
