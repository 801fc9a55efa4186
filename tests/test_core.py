"""The core modules' rules, one by one, on plain data: no worker, no subprocess (fast enough for the
mutation run of docs/testing.md). judge (counterexample verdicts, error lines, GPU evidence), equivalence,
the shard partition, the cache key and store, the ledger's coverage, and the typed content fields."""

from __future__ import annotations

import json

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
