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
from generator.load.content import SLUG, _Reader, _suggest
from generator.load.yamlfile import Map, Seq

BENCHMARK_IDS = ("mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads")
VERDICTS = {"good": "✓", "caution": "⚠", "poor": "✗"}  # glyphs every text font has
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# kind -> {field: required}. docs/schema.md documents each; tests/test_docs.py keeps them in step.
SCHEMA: dict[str, dict[str, bool]] = {
    "guide": {"title": True, "intro": False, "sections": True, "selector": True},
    "guide section": {"id": True, "title": True, "framework": False, "items": True},
    "item": {"text": True, "evidence": True},
    "selector": {"intro": False, "criteria": True, "frameworks": True},
    "criterion": {"id": True, "label": True},
    "selector framework": {"id": True, "name": True, "scores": True},
    "score": {"criterion": True, "score": True, "reason": True, "evidence": False},
    "tradeoffs": {"title": True, "intro": False, "frameworks": True, "sections": True},
    "matrix framework": {"id": True, "name": True},
    "matrix section": {"id": True, "title": True, "criteria": True},
    "matrix criterion": {"id": True, "label": True, "notes": False, "verdicts": True},
    "verdict": {"framework": True, "verdict": True, "reason": True, "evidence": True},
}
EVIDENCE_FORMS = ({"row"}, {"benchmark"}, {"url", "title", "accessed"})


@dataclass(frozen=True)
class Link:
    """One piece of evidence, ready for a page: where it points and what it says."""

    kind: str  # row, benchmark or external
    href: str
    label: str
    accessed: str = ""


class _Checker(_Reader):
    """Walks the located YAML data, collecting every error with its file:line."""

    schema = SCHEMA

    def __init__(self, path: str, rows: dict[str, str], fact_values: dict[str, str] | None = None):
        super().__init__(path, [])
        self.rows = rows  # "sheet/row" -> row title
        self.fact_values = fact_values or {}

    def text(self, data: Map, key: str) -> str:
        value = data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str) or not value.strip():
            self.error(data.key_lines[key], f"'{key}' must be a non-empty string")
            return ""
        facts.validate(self, value, getattr(value, "content_line", 0) or data.key_lines[key])
        return facts.expand(str(value), self.fact_values)

    def slug(self, data: Map, key: str, seen: dict[str, int], what: str) -> str:
        value = self.text(data, key)
        if value and not SLUG.match(value):
            self.error(data.key_lines[key], f"'{key}' must be a slug: '{value}'")
        if value in seen:
            self.error(data.key_lines[key], f"duplicate {what} '{value}' (first on line {seen[value]})")
        elif value:
            seen[value] = data.key_lines[key]
        return value

    def items(self, data: Map, key: str, *, required: bool = True) -> list:
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, Seq) or (required and not value):
            self.error(data.key_lines[key], f"'{key}' must be a non-empty list")
            return []
        return list(zip(value, value.item_lines, strict=True))

    def evidence(self, data: Map, key: str = "evidence") -> list[Link]:
        links = []
        for item, line in self.items(data, key):
            if not isinstance(item, Map) or set(item) not in EVIDENCE_FORMS:
                keys = sorted(item) if isinstance(item, Map) else item
                self.error(line, f"an evidence link is one of {{row}}, {{benchmark}} or {{url, title, accessed}}; got {keys}")
                continue
            if "row" in item:
                target = str(item["row"])
                if target not in self.rows:
                    self.error(item.key_lines["row"], f"evidence points at a missing row '{target}'{_suggest(target, self.rows)}")
                    continue
                sheet, row = target.split("/", 1)
                links.append(Link("row", f"{sheet}.html#{row}", f"{self.rows[target]} ({sheet})"))
            elif "benchmark" in item:
                bench = str(item["benchmark"])
                if bench not in BENCHMARK_IDS:
                    self.error(item.key_lines["benchmark"], f"unknown benchmark '{bench}'{_suggest(bench, BENCHMARK_IDS)}")
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
        data = _read(path, errors)
        if data is None:
            continue
        checker = _Checker(path, rows, fact_values)
        pages[name] = loader(checker, data)
        errors.extend(checker.errors)
    if errors:
        raise ContentInvalid(errors)
    return pages


def _guide(c: _Checker, data) -> dict | None:
    data = c.mapping(data, "guide", 1)
    if data is None:
        return None
    selector = _selector(c, data.get("selector"), data.line)
    framework_ids = {f["id"] for f in selector["frameworks"]} if selector else set()
    sections, seen = [], {}
    for item, line in c.items(data, "sections"):
        section = c.mapping(item, "guide section", line)
        if section is None:
            continue
        framework = c.text(section, "framework")
        if framework and framework_ids and framework not in framework_ids:
            c.error(section.key_lines["framework"], f"unknown framework '{framework}'{_suggest(framework, framework_ids)}")
        claims = []
        for claim, claim_line in c.items(section, "items"):
            claim = c.mapping(claim, "item", claim_line)
            if claim is not None:
                claims.append({"text": c.text(claim, "text"), "evidence": c.evidence(claim)})
        sections.append({"id": c.slug(section, "id", seen, "section id"), "title": c.text(section, "title"), "framework": framework, "items": claims})
    return {"title": c.text(data, "title"), "intro": c.text(data, "intro"), "sections": sections, "selector": selector}


def _selector(c: _Checker, data, line: int) -> dict | None:
    data = c.mapping(data, "selector", line)
    if data is None:
        return None
    criteria, seen = [], {}
    for item, item_line in c.items(data, "criteria"):
        criterion = c.mapping(item, "criterion", item_line)
        if criterion is not None:
            criteria.append({"id": c.slug(criterion, "id", seen, "criterion id"), "label": c.text(criterion, "label")})
    criterion_ids = [cr["id"] for cr in criteria]
    frameworks, seen_frameworks = [], {}
    for item, item_line in c.items(data, "frameworks"):
        framework = c.mapping(item, "selector framework", item_line)
        if framework is None:
            continue
        scores = {}
        for entry, entry_line in c.items(framework, "scores"):
            score = c.mapping(entry, "score", entry_line)
            if score is None:
                continue
            criterion = c.text(score, "criterion")
            value = score.get("score")
            if criterion not in criterion_ids:
                c.error(score.key_lines.get("criterion", score.line), f"unknown criterion '{criterion}'{_suggest(criterion, criterion_ids)}")
                continue
            if criterion in scores:
                c.error(score.key_lines["criterion"], f"criterion '{criterion}' is scored twice")
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
                c.error(score.key_lines.get("score", score.line), "'score' must be an integer from 0 to 3")
                value = 0
            evidence = c.evidence(score) if "evidence" in score else []
            scores[criterion] = {"score": value, "reason": c.text(score, "reason"), "evidence": evidence}
        missing = [cr for cr in criterion_ids if cr not in scores]
        if missing and "scores" in framework:
            c.error(framework.key_lines["scores"], f"no score for criteria {missing}")
        frameworks.append({"id": c.slug(framework, "id", seen_frameworks, "framework id"), "name": c.text(framework, "name"), "scores": scores})
    return {"intro": c.text(data, "intro"), "criteria": criteria, "frameworks": frameworks}


def _tradeoffs(c: _Checker, data) -> dict | None:
    data = c.mapping(data, "tradeoffs", 1)
    if data is None:
        return None
    frameworks, seen = [], {}
    for item, line in c.items(data, "frameworks"):
        framework = c.mapping(item, "matrix framework", line)
        if framework is not None:
            frameworks.append({"id": c.slug(framework, "id", seen, "framework id"), "name": c.text(framework, "name")})
    order = [f["id"] for f in frameworks]
    sections, seen_sections, seen_criteria = [], {}, {}
    for item, line in c.items(data, "sections"):
        section = c.mapping(item, "matrix section", line)
        if section is None:
            continue
        criteria = []
        for entry, entry_line in c.items(section, "criteria"):
            criterion = c.mapping(entry, "matrix criterion", entry_line)
            if criterion is None:
                continue
            verdicts = []
            for verdict_item, verdict_line in c.items(criterion, "verdicts"):
                verdict = c.mapping(verdict_item, "verdict", verdict_line)
                if verdict is None:
                    continue
                value = c.text(verdict, "verdict")
                if value and value not in VERDICTS:
                    c.error(verdict.key_lines["verdict"], f"'verdict' must be one of {sorted(VERDICTS)}: '{value}'{_suggest(value, VERDICTS)}")
                verdicts.append(
                    {
                        "framework": c.text(verdict, "framework"),
                        "verdict": value,
                        "symbol": VERDICTS.get(value, "?"),
                        "reason": c.text(verdict, "reason"),
                        "evidence": c.evidence(verdict),
                    }
                )
            got = [v["framework"] for v in verdicts]
            if "verdicts" in criterion and got != order:
                c.error(criterion.key_lines["verdicts"], f"verdicts must be one per framework in the order {order}; got {got}")
            criteria.append(
                {
                    "id": c.slug(criterion, "id", seen_criteria, "criterion id"),
                    "label": c.text(criterion, "label"),
                    "notes": c.text(criterion, "notes"),
                    "verdicts": verdicts,
                }
            )
        sections.append({"id": c.slug(section, "id", seen_sections, "section id"), "title": c.text(section, "title"), "criteria": criteria})
    return {"title": c.text(data, "title"), "intro": c.text(data, "intro"), "frameworks": frameworks, "sections": sections}


def render(env, pages: dict, context: dict) -> dict[str, bytes]:
    """The guide and trade-off pages, for those present."""
    files = {}
    common = {"nav": context["nav"], "assets": context["assets"]}
    if pages.get("guide"):
        files["guide.html"] = env.get_template("guide.html").render(guide=pages["guide"], page_path="guide.html", **common).encode()
    if pages.get("tradeoffs"):
        files["tradeoffs.html"] = env.get_template("tradeoffs.html").render(matrix=pages["tradeoffs"], page_path="tradeoffs.html", **common).encode()
    return files
