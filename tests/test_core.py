"""The core modules' rules, one by one, on plain data: no worker, no subprocess (fast enough for the
mutation run of docs/testing.md). judge (counterexample verdicts, error lines, GPU evidence), equivalence,
the shard partition, the cache key and store, the ledger's coverage, and the typed content fields."""

from __future__ import annotations

import json
import os

import pytest

from generator.lanes import LANES
from generator.load import fields
from generator.load.yamlfile import Map, Seq, Text
from generator.model import CODE, NOT_APPLICABLE, Cell, Equivalence, Job, Result, Snippet, Source
from generator.verify import canonical, equivalence, judge, ledger, shards
from generator.verify.cache import Cache, digest, identity_parts, job_identity, job_key, key_of

CELL = Cell("c", CODE, Source("f.yaml", 1), Snippet("x = 1", 2), lanes=("python",))


def _job(column="c", lane="python", counterexample=0, raises="", same=None, sheet="s", row="r") -> Job:
    return Job(sheet, row, column, lane, CELL, 60.0, f"key-{column}-{lane}-{counterexample}", "id", counterexample, raises, same)


def _failed(stage: str, last: str) -> Result:
    error = f'Traceback (most recent call last):\n  File "f.yaml", line 3, in <module>\n    y = f(x)\n{last}\n'
    return Result(status="failed", stage=stage, error=error)


# --- judge ---------------------------------------------------------------------------------------------------


def test_a_counterexample_that_passes_shows_a_weak_check():
    verdict = judge.judge_counterexample(_job(counterexample=1), Result(status="passed"))
    assert verdict.status == "failed"
    assert verdict.detail == "the counterexample passed the check: the check is too weak to reject it"


def test_a_counterexample_that_crashed_is_reported_as_it_is():
    crashed = Result(status="crashed", error="killed", detail="")
    assert judge.judge_counterexample(_job(counterexample=1), crashed) is crashed
    timeout = Result(status="timeout", error="slow")
    assert judge.judge_counterexample(_job(counterexample=1, raises="slow"), timeout) is timeout


def test_a_counterexample_rejected_by_the_check_passes_with_the_check_line():
    verdict = judge.judge_counterexample(_job(counterexample=1), _failed("check", "AssertionError: wrong"))
    assert (verdict.status, verdict.error, verdict.detail) == ("passed", "", "rejected by the check: AssertionError: wrong")


def test_a_counterexample_that_fails_outside_the_check_without_raises_fails():
    result = _failed("code", "ValueError: boom")
    verdict = judge.judge_counterexample(_job(counterexample=1), result)
    assert verdict.status == "failed" and verdict.error == result.error
    assert verdict.detail == ("the counterexample failed in its code, not in the check, with: ValueError: boom "
                              "(give 'raises' if the wrong code itself is meant to raise)")  # fmt: skip
    assert "failed in its ?," in judge.judge_counterexample(_job(counterexample=1), _failed("", "ValueError: boom")).detail


def test_raises_must_match_in_the_code():
    assert judge.judge_counterexample(_job(counterexample=1, raises="nope"), _failed("code", "AttributeError: no attribute")).status == "failed"
    matched = judge.judge_counterexample(_job(counterexample=1, raises="no attr.*"), _failed("code", "AttributeError: no attribute"))
    assert (matched.status, matched.error, matched.detail) == ("passed", "", "raises as expected: AttributeError: no attribute")
    in_check = judge.judge_counterexample(_job(counterexample=1, raises="Assertion"), _failed("check", "AssertionError: x"))
    assert in_check.status == "failed"
    assert in_check.detail == "expected the code to raise /Assertion/, but it failed in check with: AssertionError: x"
    assert "failed in ? with" in judge.judge_counterexample(_job(counterexample=1, raises="Q"), _failed("", "E: x")).detail


def test_a_name_error_proves_nothing_unless_raises_names_it():
    for stage, raises in (("check", ""), ("code", "name")):
        verdict = judge.judge_counterexample(_job(counterexample=1, raises=raises), _failed(stage, "NameError: name 'y' is not defined"))
        assert verdict.status == "failed", (stage, raises)
        assert verdict.detail.startswith(f"the counterexample failed in its {stage} on a name it does not define (NameError: name 'y'")
        assert verdict.detail.endswith("define in it every name the check reads")
    unnamed = judge.judge_counterexample(_job(counterexample=1), _failed("", "NameError: y"))
    assert "failed in its ? on a name" in unnamed.detail
    named = judge.judge_counterexample(_job(counterexample=1, raises="NameError"), _failed("code", "NameError: name 'y' is not defined"))
    assert named.status == "passed"


def test_error_line_takes_the_exception_after_the_last_frame():
    assert judge.error_line("") == "" and judge.error_line("\n  \n") == ""
    assert judge.error_line("one\ntwo  \n") == "two"
    assert judge.error_line("x" * 300) == "x" * 200
    assert judge.error_line(_failed("check", "ValueError: bad\nmore lines").error) == "ValueError: bad"
    bare = 'Traceback:\n  File "f.yaml", line 9\n    assert str(x.device) == "cpu:0"\n    ^^^^^^^^^^\nAssertionError\n'
    assert judge.error_line(bare) == 'AssertionError at: assert str(x.device) == "cpu:0"'
    long = 'Traceback:\n  File "f.yaml", line 9\n    a\n' + "E: " + "y" * 300 + "\n"
    assert judge.error_line(long) == ("E: " + "y" * 300)[:200]
    two = 'File "a", line 1\n    first\nKeyError: 1\nFile "b", line 2\n    second\nValueError: 2\n'
    assert judge.error_line(two) == "ValueError: 2"
    only_carets = 'File "a", line 1\n    x\n    ~~^~~\n'
    assert judge.error_line(only_carets) == "~~^~~"
    no_message = 'File "a", line 1\n    src\n  ^^^\nStopIteration\ntail\n'
    assert judge.error_line(no_message) == "StopIteration at: src"


def test_device_evidence_names_each_kind_of_gpu_work():
    assert judge.device_evidence({}) == (False, "no GPU work seen: the cell runs anywhere (metadata only)")
    assert judge.device_evidence({"torch_allocations": 0, "jax_live_arrays": 0, "namespace_arrays": 0})[0] is False
    assert judge.device_evidence({"torch_allocations": 3}) == (True, "3 CUDA allocations (torch)")
    assert judge.device_evidence({"jax_live_arrays": 1}) == (True, "1 live JAX arrays on the GPU")
    assert judge.device_evidence({"namespace_arrays": 2}) == (True, "2 arrays left on the GPU")
    assert judge.device_evidence({"torch_allocations": 1, "jax_live_arrays": 2, "namespace_arrays": 3}) == (
        True, "1 CUDA allocations (torch); 2 live JAX arrays on the GPU; 3 arrays left on the GPU")  # fmt: skip


def test_not_applicable_names_what_is_missing_and_where():
    job = Job("s", "r", "c", "python", CELL, 60.0, "k", missing=("tensorflow", "keras"))
    result = judge.not_applicable(job, LANES["python"])
    assert result.status == NOT_APPLICABLE
    assert result.error == "not run here: the cell imports tensorflow, keras, which is not installed on this machine"
    assert result.device.startswith("cpu") and result.versions["numpy"] and len(result.date) == 10
    assert judge.not_applicable(job, LANES["torch:cuda"]).device == "cuda"


def test_the_rules_hash_is_the_judges_canonical_form():
    assert judge.rules_hash() == canonical.module_digest(judge.__file__)
    assert judge.counterexample_expect("E") == {"fail": True, "raises": "E", "rules": judge.rules_hash()}


# --- equivalence ---------------------------------------------------------------------------------------------


def _value(data, shape=None, dtype="float32") -> dict:
    return {"shape": list(shape if shape is not None else [len(data)]), "dtype": dtype, "data": data}


def _same_row(values: dict, **same) -> tuple[list[Job], dict]:
    claim = Equivalence("out", Source("f.yaml", 1), **same)
    jobs, results = [], {}
    for column, value in values.items():
        job = _job(column=column, same=claim)
        jobs.append(job)
        results[job.id] = value if isinstance(value, Result) else Result(status="passed", value=value)
    return jobs, results


def test_equal_values_prove_the_row():
    jobs, results = _same_row({"a": _value([1.0, 2.0]), "b": _value([1.0, 2.0 + 1e-7]), "c": _value([1.0, 2.0])})
    assert equivalence.compare(jobs, results) == {("s", "r"): equivalence.Outcome(True, 3, ("a", "b", "c"))}


def test_the_odd_one_out_is_blamed_with_the_difference():
    jobs, results = _same_row({"a": _value([1.0, 2.0]), "b": _value([1.0, 2.5]), "c": _value([1.0, 2.0])})
    outcome = equivalence.compare(jobs, results)[("s", "r")]
    assert (outcome.proven, outcome.runs, outcome.blamed) == (False, 3, frozenset({"b"}))
    assert outcome.message == ("the columns do not compute the same 'out': b@python differs from a@python: "
                               "max abs difference 0.5 at (1,) (rtol 1e-05, atol 1e-06)")  # fmt: skip


def test_without_a_majority_every_column_outside_the_first_group_is_blamed():
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([2.0])})
    outcome = equivalence.compare(jobs, results)[("s", "r")]
    assert outcome.blamed == frozenset({"a", "b"}) and outcome.message.endswith("b@python differs from a@python: max abs difference 1 at (0,) (rtol 1e-05, atol 1e-06)")
    assert "a@python differs" not in outcome.message


def test_shapes_dtypes_and_tolerances_are_compared():
    jobs, results = _same_row({"a": _value([1.0, 2.0]), "b": _value([1.0, 2.0], shape=[2, 1])})
    assert "shape (2,) vs (2, 1)" in equivalence.compare(jobs, results)[("s", "r")].message
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.0], dtype="float64")}, dtype=True)
    assert "dtype float32 vs float64" in equivalence.compare(jobs, results)[("s", "r")].message
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.0], dtype="float64")})
    assert equivalence.compare(jobs, results)[("s", "r")].proven
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.05])}, rtol=0.1, atol=0.0)
    assert equivalence.compare(jobs, results)[("s", "r")].proven
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.05])}, rtol=0.01, atol=0.0)
    assert not equivalence.compare(jobs, results)[("s", "r")].proven
    jobs, results = _same_row({"a": _value([float("nan")]), "b": _value([float("nan")])})
    assert equivalence.compare(jobs, results)[("s", "r")].proven
    jobs, results = _same_row({"a": _value([], shape=[0]), "b": _value([], shape=[0])})
    assert equivalence.compare(jobs, results)[("s", "r")].proven
    assert equivalence.to_array(_value([1.0, 2.0, 3.0, 4.0], shape=[2, 2])).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_row_where_a_cell_did_not_pass_proves_nothing_and_blames_nobody():
    for broken in (Result(status="failed"), Result(status="passed")):
        jobs, results = _same_row({"a": _value([1.0]), "b": broken, "c": _value([1.0])})
        assert equivalence.compare(jobs, results)[("s", "r")] == equivalence.Outcome(False, 2, ("a", "b", "c"))
    jobs, results = _same_row({"a": _value([1.0])})
    assert equivalence.compare(jobs, results)[("s", "r")] == equivalence.Outcome(False, 1, ("a",))
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.0])})
    del results[jobs[1].id]
    assert equivalence.compare(jobs, results)[("s", "r")].proven is False
    assert equivalence.compare([_job()], {}) == {}  # no row claims anything


# --- the shard partition ---------------------------------------------------------------------------------------


def test_the_longest_job_goes_first_to_the_emptiest_shard():
    items = [shards.Item("a", "g1", 5.0), shards.Item("b", "g2", 4.0), shards.Item("c", "g3", 3.0)]
    imports = {"g1": 0.0, "g2": 0.0, "g3": 0.0}
    assert shards.partition(items, imports, 2) == [["a"], ["b", "c"]]
    assert shards.partition(items, imports, 3) == [["a"], ["b"], ["c"]]
    assert shards.partition(items, imports, 1) == [["a", "b", "c"]]


def test_a_lane_stays_on_its_shard_unless_another_is_lighter_by_more_than_the_import():
    items = [shards.Item("a", "g", 5.0), shards.Item("b", "g", 1.0), shards.Item("c", "h", 4.0)]
    assert shards.partition(items, {"g": 3.0, "h": 3.0}, 2) == [["a", "b"], ["c"]]  # b: 9 with g's worker, 11 with a second
    assert shards.partition(items, {"g": 0.0, "h": 3.0}, 2) == [["a", "b"], ["c"]]
    assert shards.partition(items, {"g": 0.0, "h": 0.0}, 2) == [["a"], ["c", "b"]]  # 5 + 1 > 4 + 1 when imports are free
    two = [shards.Item("a", "g", 4.0), shards.Item("b", "g", 1.0)]
    assert shards.partition(two, {"g": 3.0}, 2) == [["a"], ["b"]]  # a second worker: 0 + 3 + 1 < 4 + 3 + 1
    assert shards.partition(two, {}, 2) == shards.partition(two, {"g": shards.DEFAULT_IMPORT_ESTIMATE}, 2)


def test_ties_go_to_the_shard_with_the_lane_then_the_lowest_index():
    items = [shards.Item("a", "g", 1.0), shards.Item("b", "h", 1.0), shards.Item("c", "g", 1.0)]
    assert shards.partition(items, {"g": 0.0, "h": 0.0}, 2) == [["a", "c"], ["b"]]
    same = [shards.Item("x", "g", 1.0), shards.Item("w", "g", 1.0)]
    assert shards.partition(same, {"g": 1.0}, 2) == [["w"], ["x"]]  # equal cost: by id, w first


def test_loads_and_balance():
    items = [shards.Item("a", "g", 2.0), shards.Item("b", "h", 1.0)]
    assert shards.loads([["a"], ["b"]], items, {"g": 1.0}) == [3.0, 1.0 + shards.DEFAULT_IMPORT_ESTIMATE]
    assert shards.balance([3.0, 1.0]) == 1.5 and shards.balance([]) == 1.0 and shards.balance([0.0, 0.0]) == 1.0
    assert shards.parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "x", "1/2/3"):
        with pytest.raises(ValueError):
            shards.parse_shard(bad)


# --- the cache -----------------------------------------------------------------------------------------------


def test_identity_parts_are_the_cell_and_the_lane():
    cell = Cell("c", CODE, Source("f.yaml", 1), Snippet("x = 1", 2), Snippet("import os", 1), Snippet("assert x", 3), ("python",))
    parts = identity_parts(cell, LANES["jax"], {"expose": "out"}, runner="r" * 64)
    assert parts == {
        "code": "x = 1", "setup": "import os", "check": "assert x", "expect": {"expose": "out"}, "lane": "jax",
        "env": parts["env"], "imports": list(LANES["jax"].imports), "optional_imports": list(LANES["jax"].optional_imports),
        "prelude": "", "processes": 1, "device": "cpu", "default_device": "", "runner": "r" * 64,
    }  # fmt: skip
    assert parts["env"]["JAX_PLATFORMS"] == "cpu" and parts["env"]["OMP_NUM_THREADS"] == "1"
    bare = identity_parts(Cell("c", CODE, Source("f.yaml", 1)), LANES["python"])
    assert (bare["code"], bare["setup"], bare["check"], bare["expect"]) == ("", "", "", {})
    assert job_identity(cell, LANES["jax"]) == digest(identity_parts(cell, LANES["jax"]))
    assert job_key(cell, LANES["jax"]) == key_of(job_identity(cell, LANES["jax"]), LANES["jax"])
    assert digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1}) and len(digest([])) == 64


def test_a_cached_failure_is_no_hit_and_timings_round_trip(tmp_path):
    store = Cache(str(tmp_path))
    key = "ab" * 32
    path = store._path(key)
    assert path == str(tmp_path / "results" / "ab" / f"{key}.json")
    (tmp_path / "results" / "ab").mkdir(parents=True)
    with open(path, "w") as handle:
        json.dump({"key": key, "result": {"status": "failed"}}, handle)
    assert store.get(key) is None and len(store.warnings) == 0  # readable, just not a pass
    store.save_timings({"a": 1.5})
    store.save_timings({"b": 2})
    assert store.load_timings() == {"a": 1.5, "b": 2.0}
    assert json.load(open(tmp_path / "timings.json")) == {"a": 1.5, "b": 2}


# --- the ledger -------------------------------------------------------------------------------------------------


def _run(status="passed", used=True, stale=False) -> ledger.GpuRun:
    return ledger.GpuRun("m", "torch:cuda", Result(status=status, used_device=used), stale)


def test_a_gpu_run_counts_only_when_passed_current_and_working_on_the_gpu():
    assert _run().counts and _run(used=None).counts
    assert not _run(used=False).counts and not _run(stale=True).counts and not _run("failed").counts
    assert _run(used=False).runs_anywhere
    assert not _run().runs_anywhere and not _run(used=False, stale=True).runs_anywhere and not _run("failed", used=False).runs_anywhere


def test_coverage_counts_each_kind_of_cell():
    jobs = [_job(column=c, lane="torch:cuda") for c in "abcdef"]
    merged = {
        ("s", "r", "a"): [_run()],
        ("s", "r", "b"): [_run(used=False)],
        ("s", "r", "c"): [_run(NOT_APPLICABLE), _run(NOT_APPLICABLE)],
        ("s", "r", "d"): [_run(stale=True)],
        ("s", "r", "e"): [_run(NOT_APPLICABLE), _run("failed")],
    }
    counts = ledger.coverage_counts(jobs, merged)
    assert counts == {"cells": 6, "passed": 1, "runs_anywhere": 1, "not_applicable": 1, "possible": 4}
    assert ledger.coverage(jobs, merged) == (1, 4)
    both = {("s", "r", "a"): [_run(used=False), _run()]}
    assert ledger.coverage_counts(jobs[:1], both)["passed"] == 1


def test_merge_marks_stale_entries_and_sorts_runs():
    job = Job("s", "r", "c", "torch:cuda", CELL, 60.0, "k", "now")
    entry = {"id": job.id, "sheet": "s", "row": "r", "column": "c", "lane": "torch:cuda", "status": "passed"}
    ledgers = [
        {"machine": "z", "entries": [{**entry, "identity": "now", "device": "cuda: G (driver 1, CUDA ?)"}]},
        {"machine": "a", "entries": [{**entry, "identity": "old"}, {**entry, "id": "gone", "identity": "x"}]},
    ]
    runs = ledger.merge(ledgers, [job])[("s", "r", "c")]
    assert [(run.machine, run.stale) for run in runs] == [("a", True), ("z", False)]
    assert runs[1].result.device == "cuda: G (driver 1)"
    assert ledger.runs(None, [job]) == {}


def test_machine_names_and_entry_lines():
    assert ledger.machine_name("NVIDIA H200") == "nvidia-h200" and ledger.machine_name("???") == "gpu"
    text = '{\n "entries": [\n  {\n   "id": "a/b"\n  }\n ]\n}'
    assert ledger._line_of(text, "a/b") == 4 and ledger._line_of(text, "c") == 1 and ledger._line_of(text, None) == 1
    for data, problem in (
        ({"format": 2, "machine": "", "entries": []}, "needs 'machine'"),
        ({"format": 2, "machine": "m", "entries": {}}, "needs 'machine'"),
        ({"format": 2, "machine": "m", "entries": [1]}, "entry 1 is not an object"),
    ):
        assert problem in ledger._validate(data, "")[1]
    assert ledger._validate({"format": 2, "machine": "m", "entries": []}, "") == (0, "")


# --- the typed content fields -------------------------------------------------------------------------------


def _map(**values) -> Map:
    data = Map(values)
    data.line = 1
    data.key_lines = {key: index + 2 for index, key in enumerate(values)}
    return data


def _seq(*items) -> Seq:
    seq = Seq(items)
    seq.line, seq.item_lines = 1, [index + 2 for index in range(len(items))]
    return seq


def _read(field, value):
    reader = fields.Reader("f.yaml")
    got = field.read(reader, _map(k=value), "k")
    assert all(error.line == 2 for error in reader.errors), reader.errors  # the key's line
    return got, [error.message for error in reader.errors]


@pytest.mark.parametrize(
    "field, value, expected, errors",
    [
        (fields.Str("d"), "x", "x", []),
        (fields.Str("d"), "  ", "", ["'k' must be a non-empty string"]),
        (fields.Str("d", nonempty=False), "", "", []),
        (fields.Str("d", message="say it"), 3, "", ["say it"]),
        (fields.Str("d"), None, "", []),
        (fields.Str("d", required=True), None, "", ["'k' is required but has no value (nothing after 'k:')"]),
        (fields.Slug("d"), "a-1", "a-1", []),
        (fields.Slug("d"), "A b", "A b", ["'k' must be a slug (lower-case letters, digits and '-'): 'A b'"]),
        (fields.PythonName("d"), "x_1", "x_1", []),
        (fields.PythonName("d"), "1x", "1x", ["'k' must be a Python name, not '1x'"]),
        (fields.Regex("d"), "a+", "a+", []),
        (fields.Choice("d", allowed=("yes", "no")), "no", "no", []),
        (fields.Choice("d", allowed=("yes", "no")), "yse", "yse", ["'k' must be one of ['no', 'yes']: 'yse' (did you mean 'yes'?)"]),
        (fields.Int("d"), 3, 3, []),
        (fields.Int("d", low=1, high=3, default=2), 0, 2, ["'k' must be an integer from 1 to 3"]),
        (fields.Int("d", low=1, high=3), 3, 3, []),
        (fields.Int("d", low=1, high=3), 1, 1, []),
        (fields.Int("d", low=1, high=3, default=2), 4, 2, ["'k' must be an integer from 1 to 3"]),
        (fields.Int("d"), True, None, ["'k' must be an integer"]),
        (fields.Number("d"), 2, 2.0, []),
        (fields.Number("d"), 0, 0.0, []),
        (fields.Number("d", positive=True, unit=" seconds", default=1.0), 0, 1.0, ["'k' must be a positive number seconds"]),
        (fields.Number("d"), -1, None, ["'k' must be a non-negative number"]),
        (fields.Number("d"), True, None, ["'k' must be a non-negative number"]),
        (fields.Number("d"), "1", None, ["'k' must be a non-negative number"]),
        (fields.Bool("d"), False, False, []),
        (fields.Bool("d", default=True), "no", True, ["'k' must be true or false"]),
        (fields.Bool("d"), None, None, ["'k' must be true or false"]),
        (fields.Mapping("d", keys="a", values="b"), None, None, []),
        (fields.Mapping("d", keys="a", values="b"), [1], None, ["'k' must be a mapping of a to b"]),
    ],
)
def test_each_field_type_checks_its_value(field, value, expected, errors):
    got, messages = _read(field, value)
    assert messages == errors
    if expected is not None or not errors:
        assert got == expected


def test_a_regex_field_reports_the_pattern_error():
    got, messages = _read(fields.Regex("d"), "a(")
    assert got == "a(" and messages == ["'k' is not a valid regular expression: missing ), unterminated subpattern at position 1"]


def test_lists_and_lanes():
    assert _read(fields.List("d", of="x"), _seq({"a": 1}))[1] == []
    assert _read(fields.List("d", of="x", nonempty=True), _seq())[1] == ["'k' must be a non-empty list"]
    assert _read(fields.List("d", of="names", strings=True), _seq("a", 1))[1] == ["'k' must be a list of names"]
    assert _read(fields.List("d", of="x", says=" of rows"), "nope")[1] == ["'k' must be a list of rows"]
    assert list(_read(fields.List("d", of="x"), "nope")[0]) == [] and fields.List("d", of="x").missing() == []
    assert fields.List("d", of="rows").type_doc == "list of rows" and fields.List("d", of="rows", nonempty=True).type_doc == "non-empty list of rows"
    assert _read(fields.Lanes("d"), _seq("torch", "jax")) == (("torch", "jax"), [])
    assert _read(fields.Lanes("d"), _seq("pytroch"))[1] == ["unknown lane 'pytroch' (did you mean 'torch'?)"]
    assert fields.Lanes("d").missing() == ()


def test_code_fields_keep_the_line_and_report_syntax_errors():
    text = Text("x = (1 +\n")
    text.style, text.content_line = "|", 7
    reader = fields.Reader("f.yaml")
    snippet = fields.Code("d").check(reader, text, 6, "code")
    assert (snippet.text, snippet.line) == ("x = (1 +\n", 7)
    assert [(e.line, e.message) for e in reader.errors] == [(7, "'code' is not valid Python: '(' was never closed")]
    folded = Text("x = 1\n")
    folded.style, folded.content_line = ">", 3
    assert fields.Code("d").check(reader, folded, 2, "code") is None
    assert reader.errors[-1].message == "'code' must be a literal block ('|'), not a folded one ('>')"
    assert fields.Code("d").check(reader, "x = 1", 2, "code") is None and reader.errors[-1].message == "'code' must be Python source text"
    blank = Text("  ")
    blank.style, blank.content_line = "|", 2
    assert fields.Code("d").check(reader, blank, 2, "code") is None


def test_the_reader_reports_unknown_and_missing_keys_and_reads_defaults():
    spec = fields.Spec("row", id=fields.Slug("the id", required=True), title=fields.Str("t"), n=fields.Int("n", default=4))
    reader = fields.Reader("f.yaml")
    assert reader.mapping([1], spec, 9) is None and reader.errors[-1].message == "a row must be a mapping"
    assert reader.errors[-1].line == 9
    data = _map(titel="x")
    assert reader.mapping(data, spec, 1) is data
    assert [e.message for e in reader.errors[1:]] == ["unknown field 'titel' in row (did you mean 'title'?)", "row is missing the required field 'id'"]
    record = fields.Reader("f.yaml").read(_map(id="a", n=2), spec, 1)
    assert dict(record) == {"id": "a", "title": "", "n": 2} and record.given("id") and not record.given("title")
    assert record.at("n") == 3 and record.at("title") == 1 and record.line == 1
    only = fields.Reader("f.yaml").values(_map(id="a", n=2), spec, only={"n"})
    assert dict(only) == {"n": 2}
    assert fields.Reader("f.yaml").read("x", spec, 5) is None


def test_defaults_as_the_docs_say_them_and_the_generated_table():
    assert fields.Str("d", required=True).default_text() == ""
    assert fields.Bool("d", default=True).default_text() == "default true"
    assert fields.Number("d", default=1e-05).default_text() == "default 1e-5"
    assert fields.Number("d", default=60.0).default_text() == "default 60"
    assert fields.Int("d", default=3).default_text() == "default 3"
    assert fields.Str("d", default_doc="the title").default_text() == "default: the title"
    assert fields.Str("d").default_text() == ""
    assert fields.Int("d", low=0, high=3).type_doc == "integer 0–3" and fields.Int("d").type_doc == "integer"
    assert fields.Choice("d", allowed=("a",)).type_doc == "`a`" and fields.Choice("d", allowed=("a", "b", "c")).type_doc == "`a`, `b` or `c`"
    spec = fields.Spec("row", id=fields.Slug("the id", required=True), n=fields.Int("count", default=4))
    assert fields.table(spec) == "| field | required | type | meaning |\n|---|---|---|---|\n| `id` | yes | slug | the id |\n| `n` | no | integer | count (default 4) |"
    grouped = fields.Spec("cell", code=fields.Code("the code", group="code"), text=fields.Str("a fact", group="text"))
    assert grouped.groups() == {"code": {"code"}, "text": {"text"}}
    assert fields.table(grouped).splitlines()[:3] == ["| field | kind | type | meaning |", "|---|---|---|---|", "| `code` | code | Python | the code |"]
    assert fields.suggest("tilte", ["title", "id"]) == " (did you mean 'title'?)" and fields.suggest("zzz", ["title"]) == ""


# --- more of each rule: what the first mutation run found unasserted ------------------------------------------


def test_a_cache_that_cannot_write_says_so_and_keeps_the_result(tmp_path, monkeypatch):
    from generator.verify import cache as cache_module

    store = Cache(str(tmp_path))
    result = Result(status="passed", duration=0.5, stdout="out")

    def full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module, "write_temp", full)
    kept = store.put("cd" * 32, result)
    assert (kept.stdout, kept.cached) == ("out", False)
    assert list(store.warnings) == [f"a result could not be stored in {tmp_path} (No space left on device): the next build runs its job again"]
    monkeypatch.undo()

    def no_rename(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache_module.os, "replace", no_rename)
    again = store.put("ef" * 32, result, replace=True)
    assert (again.stdout, again.cached) == ("out", False)
    assert list(store.warnings)[-1] == f"a result could not be stored in {tmp_path} (Permission denied): the next build runs its job again"
    assert sorted(os.listdir(tmp_path / "results" / "ef")) == []  # the temporary is removed


def test_a_file_system_without_hard_links_still_stores(tmp_path, monkeypatch):
    from generator.verify import cache as cache_module

    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(cache_module.os, "link", no_links)
    store = Cache(str(tmp_path))
    stored = store.put("ab" * 32, Result(status="passed", stdout="x"))
    assert stored.cached is False and store.get("ab" * 32).stdout == "x"
    assert os.listdir(tmp_path / "results" / "ab") == ["ab" * 32 + ".json"]


def test_unreadable_cache_files_are_warnings_with_their_reason(tmp_path):
    store = Cache(str(tmp_path))
    key = "ab" * 32
    os.makedirs(os.path.dirname(store._path(key)))
    with open(store._path(key), "w") as handle:
        json.dump({"key": "cd" * 32, "result": {"status": "passed"}}, handle)
    assert store.get(key) is None
    assert list(store.warnings) == [f"cache entry {store._path(key)} could not be read (ValueError: it holds the entry of another key (cdcdcdcdcdcd)): its job runs again"]
    with open(tmp_path / "timings.json", "w") as handle:
        handle.write("[1]")
    assert store.load_timings() == {}
    assert list(store.warnings)[-1] == f"{tmp_path / 'timings.json'} could not be read (AttributeError: 'list' object has no attribute 'items'): jobs are scheduled without their last durations"
    os.remove(tmp_path / "timings.json")
    os.mkdir(tmp_path / "timings.json")  # cannot be written over
    store.save_timings({"a": 1.0})
    assert list(store.warnings)[-1] == f"{tmp_path / 'timings.json'} could not be written (Is a directory): the next build schedules without these durations"


def test_the_cache_key_is_the_identity_and_this_machines_versions(monkeypatch):
    from generator.verify import cache as cache_module

    monkeypatch.setattr(cache_module, "lane_versions", lambda lane: {"numpy": "1"})
    monkeypatch.setattr(cache_module, "lane_distributions", lambda packages: {"numpy": "1", "six": "2"})
    monkeypatch.setattr(cache_module.sys, "version", "3.11.7 test")
    expected = digest({"identity": "i" * 64, "python": "3.11.7 test", "versions": {"numpy": "1"}, "distributions": {"numpy": "1", "six": "2"}})
    assert key_of("i" * 64, LANES["python"]) == expected
    assert Cache("x").warnings is not Cache("y").warnings
    from generator.notices import Warnings

    shared = Warnings()
    assert Cache("x", shared).warnings is shared


def test_a_ledger_is_written_in_its_one_format(tmp_path):
    job = Job("s", "r", "c", "torch:cuda", CELL, 60.0, "k", "ident")
    other = Job("s", "r", "d", "torch:cuda", CELL, 60.0, "k2", "ident2")
    result = Result(status="failed", duration=1.23456, error="E" * 2500, versions={"torch": "2"}, device="cuda: G", date="2026-01-01", detail="d")
    path = tmp_path / "g.json"
    data = ledger.write(str(path), "g", [other, job], {job.id: result})
    entry = {"column": "c", "date": "2026-01-01", "detail": "d", "device": "cuda: G", "duration": 1.2346, "error": "E" * 2000,
             "id": job.id, "identity": "ident", "lane": "torch:cuda", "row": "r", "sheet": "s", "status": "failed",
             "used_device": None, "versions": {"torch": "2"}}  # fmt: skip
    assert data == {"format": 2, "machine": "g", "entries": [entry]}
    assert path.read_text() == json.dumps(data, indent=1, sort_keys=True) + "\n"
    tail = Result(status="failed", error="x" * 2001 + "END")
    assert ledger.write(str(path), "g", [job], {job.id: tail})["entries"][0]["error"].endswith("END")


def test_reading_a_ledger_names_the_file_line_and_problem(tmp_path):
    from generator.errors import ContentInvalid

    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ContentInvalid) as raised:
        ledger.read(str(tmp_path / "dir.json"))
    (error,) = raised.value.errors
    assert (error.path, error.line) == (str(tmp_path / "dir.json"), 1) and error.message.startswith("cannot read the ledger: [Errno 21]")
    assert ledger.read(str(tmp_path / "none.json")) is None
    text = '{"format": 2, "machine": "m", "entries": [\n {"id": "a"},\n {"id": "b", "sheet": "s", "row": "r", "column": "c", "lane": "l", "identity": "i", "status": "bad"}]}'
    (tmp_path / "e.json").write_text(text)
    with pytest.raises(ContentInvalid) as raised:
        ledger.read(str(tmp_path / "e.json"))
    (error,) = raised.value.errors
    assert (error.line, error.message) == (2, "malformed ledger: entry a lacks ['sheet', 'row', 'column', 'lane', 'identity', 'status'] (each a non-empty string)")
    assert ledger._validate({"format": 2, "machine": "m", "entries": [{}]}, "")[1].startswith("entry 1 lacks ['id',")
    assert ledger._validate({"format": 2, "machine": "m", "entries": [{}, {}]}, "")[1].startswith("entry 1 lacks")
    two = {"format": 2, "machine": "m", "entries": [dict.fromkeys(ledger.REQUIRED, "x"), {}]}
    two["entries"][0]["status"] = "passed"
    assert ledger._validate(two, "") == (1, "entry 2 lacks ['id', 'sheet', 'row', 'column', 'lane', 'identity', 'status'] (each a non-empty string)")
    bad = dict.fromkeys(ledger.REQUIRED, "x")
    assert ledger._validate({"format": 2, "machine": "m", "entries": [bad]}, "") == (1, "entry x: unknown status 'x' (one of " + ", ".join(__import__("generator.model").model.STATUSES) + ")")
    assert ledger._validate({"format": 2, "machine": 3, "entries": []}, "") == (1, "needs 'machine' (a non-empty string) and 'entries' (a list)")
    assert ledger._validate({"format": 2, "machine": "m", "entries": ["x"]}, "") == (1, "entry 1 is not an object")
    assert ledger._line_of('"id": "a"\n"id": "a"', "a") == 1 and ledger._line_of('x\n"id": "a"', "a") == 2
    assert ledger._line_of('"id": ""', "") == 1 and ledger._line_of("\n\n" + '"id": 5', 5) == 1


def test_ledgers_are_loaded_every_one_and_merged_skipping_cells_that_are_gone(tmp_path):
    job = Job("s", "r", "c", "torch:cuda", CELL, 60.0, "k", "now")
    entry = {"id": job.id, "sheet": "s", "row": "r", "column": "c", "lane": "torch:cuda", "identity": "now", "status": "passed"}
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"format": 2, "machine": name, "entries": [{**entry, "id": "gone"}, entry]}))
    (tmp_path / "notes.txt").write_text("not a ledger")
    assert [data["machine"] for data in ledger.load_all(str(tmp_path))] == ["a", "b"]
    runs = ledger.runs(str(tmp_path), [job])
    assert [run.machine for run in runs[("s", "r", "c")]] == ["a", "b"]
    assert ledger.runs(str(tmp_path / "nothing"), [job]) == {}
    assert ledger._without_unknowns({"id": "x"}) == {"id": "x"}
    assert ledger.machine_name("-H100-") == "h100"


def test_coverage_counts_add_up_over_many_cells():
    jobs = [_job(column=c, lane="torch:cuda") for c in "abcdefgh"]
    merged = {(("s", "r", c)): [_run(used=False)] for c in "abc"} | {(("s", "r", c)): [_run(NOT_APPLICABLE)] for c in "de"}
    assert ledger.coverage_counts(jobs, merged) == {"cells": 8, "passed": 0, "runs_anywhere": 3, "not_applicable": 2, "possible": 3}


def test_more_of_the_judges_lines():
    assert judge.not_applicable(Job("s", "r", "c", "x", CELL, 1.0, "k", missing=("a",)), __import__("dataclasses").replace(LANES["python"], device="tpu")).device == "tpu"
    assert judge.error_line('File "a", line 1\n    src\nE: m\n') == "E: m"
    assert judge.error_line('File "a", line 1\n    src\n') == "src"
    assert judge.error_line('File "a", line 1\n    src\n  ^ ~\nBare\n') == "Bare at: src"
    assert judge.error_line('File "a", line 1\n    src\n^^\n~~\nE: m\n') == "E: m"
    assert judge.error_line('File "a", line 1\n    src\nE: m\n  ^^^\n') == "E: m"
    assert judge.device_evidence({"namespace_arrays": 1}) == (True, "1 arrays left on the GPU")


def test_more_of_equivalence():
    jobs, results = _same_row({"a": _value([1.0, 2.0]), "b": _value([1.0, 2.0 + 5e-6])}, atol=1e-5, rtol=0.0)
    assert equivalence.compare(jobs, results)[("s", "r")].proven
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([1.0])})
    assert equivalence._same(results[jobs[0].id].value, results[jobs[1].id].value, jobs[0].same) == (True, "")
    assert equivalence.to_array(_value([1, 2])).dtype == "float64"
    # three rows, the middle one short of runs: the others are still compared
    claim = Equivalence("out", Source("f.yaml", 1))
    jobs = [_job(column=c, same=claim, row=r) for r in ("r1", "r2", "r3") for c in ("a", "b")]
    results = {job.id: Result(status="passed", value=_value([2.0 if (job.row, job.column) == ("r3", "b") else 1.0])) for job in jobs}
    del results[jobs[2].id]
    outcomes = equivalence.compare(jobs, results)
    assert [outcomes[("s", r)].proven for r in ("r1", "r2", "r3")] == [True, False, False]
    assert outcomes[("s", "r3")].columns == ("a", "b") and outcomes[("s", "r3")].blamed == frozenset({"a", "b"})
    jobs, results = _same_row({"a": _value([1.0]), "b": _value([3.0]), "c": _value([1.0]), "d": _value([3.0]), "e": _value([1.0])})
    outcome = equivalence.compare(jobs, results)[("s", "r")]
    assert outcome.blamed == frozenset({"b", "d"})
    assert outcome.message.count("differs from a@python") == 2 and "; d@python" in outcome.message


def test_parse_shard_messages_and_bounds():
    assert shards.parse_shard("1/1") == (1, 1) and shards.parse_shard("3/3") == (3, 3)
    with pytest.raises(ValueError, match=r"^--shard takes K/N \(e.g. 2/4\), not 'x'$"):
        shards.parse_shard("x")
    with pytest.raises(ValueError, match=r"^--shard 4/3: K must be between 1 and N$"):
        shards.parse_shard("4/3")
    heavy = [shards.Item("a", "g", 1.0)]
    assert shards.loads(shards.partition(heavy, {"g": 0.0}, 2), heavy, {"g": 0.0}) == [1.0, 0.0]


def test_field_declarations_keep_what_they_are_given():
    field = fields.Str("the title", required=True, group="text", type_doc="words", null_ok=False)
    assert (field.description, field.required, field.group, field.type_doc, field.null_ok) == ("the title", True, "text", "words", False)
    assert fields.Str("d").null_ok is True and fields.Str("d").default == "" and fields.Str("d", default="x").default == "x"
    for field in (fields.Choice("the kind", allowed=("a",)), fields.Number("n"), fields.List("items", of="x"), fields.Lanes("lanes"),
                  fields.Mapping("cells", keys="a", values="b"), fields.Int("i"), fields.Bool("b")):  # fmt: skip
        assert field.description in ("the kind", "n", "items", "lanes", "cells", "i", "b")
    assert fields.Choice("d", allowed=("a", "b"), default="a").default == "a"
    assert fields.Number("d", default=2.0).default == 2.0 and fields.List("d", of="x", required=True).required
    assert fields.List("d", of="x", type_doc="stuff").type_doc == "stuff"
    lanes = fields.Lanes("d", required=True)
    assert (lanes.of, lanes.nonempty, lanes.strings, lanes.required, lanes.type_doc) == ("lane names", True, True, True, "non-empty list of lane names")
    mapping = fields.Mapping("d", keys="column id", values="cell", required=True)
    assert (mapping.type_doc, mapping.required, mapping.null_ok, mapping.says) == ("mapping column id → cell", True, True, " of column id to cell")
    assert fields.Mapping("d", keys="a", values="b", type_doc="t").type_doc == "t"
    assert fields.Int("d", low=0).span == "" and fields.Int("d", high=3).span == "" and fields.Int("d", low=0, high=3, default=1).default == 1
    assert fields.Choice("d", allowed=("a", "b")).type_doc == "`a` or `b`"
    assert fields._empty_seq().line == 0 and fields._empty_seq().item_lines == []
    assert fields.Reader("p", fact_values={"x": "1"}).fact_values == {"x": "1"}
    errors = []
    assert fields.Reader("p", errors).errors is errors


def test_strings_with_facts_and_records():
    text = Text("{{nope}}")
    text.style, text.content_line = "|", 9
    reader = fields.Reader("f.yaml")
    fields.Str("d", facts=True).check(reader, text, 8, "k")
    assert [(e.line, e.message.split(";")[0]) for e in reader.errors] == [(9, "unknown fact '{{nope}}'")]
    plain = fields.Reader("f.yaml")
    fields.Str("d").check(plain, "{{nope}}", 8, "k")
    assert plain.errors == []
    filled = fields.Reader("f.yaml", fact_values={"rows": "ten"})
    assert fields.Str("d").check(filled, "we have {{rows}} rows", 8, "k") == "we have ten rows"
    assert filled.errors == []
    unknown = fields.Reader("f.yaml", fact_values={})
    fields.Str("d").check(unknown, "{{nope}}", 8, "k")
    assert [e.line for e in unknown.errors] == [8]
    data = _map(a=text, b="x")
    record = fields.Record(data)
    assert record.content_line("a") == 9 and record.content_line("b") == 3 and record.content_line("c") == 1
    assert fields.suggest("lane", ["lanes", "lane2"]) == " (did you mean 'lanes'?)" or fields.suggest("lane", ["lanes", "lane2"]) == " (did you mean 'lane2'?)"
    assert fields.suggest("abcd", ["abce", "abcf"]).count("'") == 2


def test_gpus_are_counted_from_nvidia_smi(monkeypatch):
    import subprocess

    class Done:
        stdout = "GPU 0: NVIDIA H200 (UUID: GPU-1)\nGPU 1: NVIDIA H200 (UUID: GPU-2)\nMIG 1g.10gb Device 0\n"

    calls = []
    monkeypatch.setattr(ledger.subprocess, "run", lambda *args, **kwargs: calls.append((args, kwargs)) or Done())
    assert ledger.gpu_count() == 2
    assert calls == [((["nvidia-smi", "-L"],), {"capture_output": True, "text": True, "timeout": 30})]

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(ledger.subprocess, "run", missing)
    assert ledger.gpu_count() == 0

    def hangs(*args, **kwargs):
        raise subprocess.TimeoutExpired("nvidia-smi", 30)

    monkeypatch.setattr(ledger.subprocess, "run", hangs)
    assert ledger.gpu_count() == 0


def test_what_the_second_mutation_run_found_unasserted(tmp_path):
    from generator.verify.machine import cpu_description

    job = Job("s", "r", "c", "python", CELL, 60.0, "k", missing=("a",))
    assert judge.not_applicable(job, LANES["python"]).device == cpu_description()
    assert judge.error_line('File "a", line 1\n    src\nBare\n') == "Bare at: src"
    assert judge.error_line('File "a", line 1\n    src\n^ ~\n') == "^ ~"
    # a job without a result before one with a result: the writer goes on to the next
    first, second = (Job("s", "r", c, "torch:cuda", CELL, 60.0, "k", "i") for c in ("a", "b"))
    written = ledger.write(str(tmp_path / "l" / "g.json"), "g", [first, second], {second.id: Result(status="passed")})
    assert [entry["column"] for entry in written["entries"]] == ["b"]
    (tmp_path / "l" / "0-notes.txt").write_text("not a ledger")  # sorted before the ledger: skipped, not the end
    assert [data["machine"] for data in ledger.load_all(str(tmp_path / "l"))] == ["g"]
    assert _read(fields.Lanes("d"), "torch")[1] == ["'k' must be a non-empty list of lane names"]
    spec = fields.Spec("row", id=fields.Slug("the id"))
    reader = fields.Reader("f.yaml")
    reader.mapping(_seq(1), spec, 9)
    reader.read("x", spec, 5)
    assert [(e.line, e.message) for e in reader.errors] == [(1, "a row must be a mapping"), (5, "a row must be a mapping")]
    code = fields.Reader("f.yaml")
    folded = Text("x = 1\n")
    folded.style, folded.content_line = ">", 3
    fields.Code("d").check(code, folded, 2, "code")
    fields.Code("d").check(code, 5, 4, "code")
    assert [e.line for e in code.errors] == [2, 4]
