"""Mutation testing of the checks (generator/mutate/): the tool finds each kind of weak check, passes a
strong one, tells an equivalent mutant from a survivor by the values it leaves, and keeps its results
as committed data matched by identity."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import pytest

from generator.errors import ContentInvalid
from generator.load import content
from generator.mutate import operators
from generator.mutate import results as store
from generator.mutate import run as mutation
from generator.verify.cache import Cache
from generator.verify.verification import plan
from tests.conftest import ROOT, section, write_content


def _row(row_id: str, setup: str, code: str, check: str, lane: str = "python", declared: str | list[str] = "") -> str:
    def block(text: str) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n") + "\n", " " * 10).rstrip("\n")

    parts = [f"  - id: {row_id}", f"    title: {row_id}", "    cells:", "      pytorch:", f"        lanes: [{lane}]",
             "        setup: |", block(setup), "        code: |", block(code), "        check: |", block(check)]  # fmt: skip
    if declared:
        parts += ["        equivalent_mutants:"]
        for mutant in [declared] if isinstance(declared, str) else declared:
            parts += [f"          - mutant: {json.dumps(mutant)}", "            why: the test says so"]
    parts += ["      jax: {text: fact}"]
    return "\n".join(parts) + "\n"


def _mutate(tmp_path, *rows: str):
    root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
    sheets = content.load(root)
    jobs = plan(sheets)
    report = mutation.mutate(sheets, jobs, cache=Cache(str(tmp_path / "cache")), cores=2, known=store.Results(), show_progress=False)
    recorded = store.Results()
    recorded.add(report.entries)
    return {key[1]: state for key, state in store.standing(sheets, jobs, recorded).items()}, report, sheets, root


def _verdicts(state) -> dict:
    return {m.description: m.verdict for m in state.survived} | {m.description: "declared" for m, _ in state.declared}


def test_an_axis_on_data_where_both_axes_agree_survives_and_a_matrix_that_tells_them_apart_kills_it(tmp_path):
    code = "a = np.argmax(x, axis=1)"
    weak = _row("weak", "import numpy as np\nx = np.array([[1.0, 5.0], [3.0, 2.0]])", code, "assert a.tolist() == [1, 0]")
    strong = _row("strong", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", code, "assert a.tolist() == [1, 2]")
    states, *_ = _mutate(tmp_path, weak, strong)
    assert "axis=0 for axis=1 in `np.argmax(x, axis=1)`" in _verdicts(states["weak"])
    assert states["strong"].survived == () and states["strong"].killed >= 2  # argmin and the axis both die


def test_a_nan_check_whose_input_also_holds_inf_lets_isinf_through(tmp_path):
    weak = _row("weak", "import numpy as np\nx = np.array([1.0, np.nan, np.inf])", "bad = bool(np.isnan(x).any())", "assert bad is True")
    strong = _row("strong", "import numpy as np\nx = np.array([1.0, np.nan, 2.0])", "bad = bool(np.isnan(x).any())", "assert bad is True")
    states, *_ = _mutate(tmp_path, weak, strong)
    assert _verdicts(states["weak"]).get("isinf for isnan in `np.isnan`") == "survived"
    assert "isinf for isnan in `np.isnan`" not in _verdicts(states["strong"])


def test_a_compiled_path_whose_check_passes_the_uncompiled_function_survives(tmp_path):
    setup = "import jax\nimport jax.numpy as jnp\ndef f(a):\n    return a * 2.0"
    weak = _row("weak", setup, "g = jax.jit(f)\ny = g(jnp.arange(3.0))", "assert y.tolist() == [0.0, 2.0, 4.0]", lane="jax")
    # the mechanism: a jitted function is a PjitFunction that can be lowered; the plain one cannot
    strong = _row("strong", setup, "g = jax.jit(f)\ny = g(jnp.arange(3.0))", "assert y.tolist() == [0.0, 2.0, 4.0]\nassert 'mul' in g.lower(jnp.arange(3.0)).as_text()", lane="jax")
    states, *_ = _mutate(tmp_path, weak, strong)
    survivors = {m.description: m for m in states["weak"].survived}
    unwrapped = survivors["jax.jit(...) unwrapped in `jax.jit(f)`"]
    assert unwrapped.family == operators.MECHANISM  # the same values, never equivalent
    assert states["strong"].survived == ()


def test_a_value_equivalent_mutant_is_recognised_without_a_declaration(tmp_path):
    # decimals=0 is np.round's default: dropping it leaves exactly the same values
    row = _row("eq", "import numpy as np\nx = np.array([1.26, 2.5, -0.74])", "y = np.round(x, decimals=0)", "assert y.tolist() == [1.0, 2.0, -1.0]")
    states, *_ = _mutate(tmp_path, row)
    assert states["eq"].equivalent >= 1 and states["eq"].survived == ()


def test_a_declared_survivor_is_left_out_of_the_score_with_its_reason(tmp_path):
    declared = "axis=0 for axis=1 in `np.argmax(x, axis=1)`"
    row = _row("weak", "import numpy as np\nx = np.array([[1.0, 5.0], [3.0, 2.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 0]", declared=declared)
    states, _, sheets, _ = _mutate(tmp_path, row)
    assert [m.description for m, why in states["weak"].declared] == [declared]
    assert declared not in {m.description for m in states["weak"].survived}
    assert store.stale_declarations(sheets, {("t", "weak", "pytorch"): states["weak"]}) == []


def test_a_declaration_of_a_mutant_judged_equivalent_is_kept_and_one_of_a_killed_mutant_is_stale(tmp_path):
    # dropping decimals=0 (np.round's default) is judged equivalent by its values; a declaration of it
    # agrees with the tool and must not fail a later run, where the same mutant may survive instead.
    # axis=0 for axis=1 here changes the answer: it is killed, and declaring it is an error
    equivalent = "drop decimals=0 from `np.round(x, decimals=0)`"
    killed = "axis=0 for axis=1 in `np.argmax(x, axis=1)`"
    row = _row("r", "import numpy as np\nx = np.array([[1.26, 5.0, 2.5], [3.0, 2.0, -0.74]])", "y = np.round(x, decimals=0)\na = np.argmax(x, axis=1)",
               "assert y.tolist() == [[1.0, 5.0, 2.0], [3.0, 2.0, -1.0]]\nassert a.tolist() == [1, 0]", declared=[equivalent, killed])
    states, report, sheets, _ = _mutate(tmp_path, row)
    assert equivalent in states["r"].equivalent_names and killed not in states["r"].timed_out_names
    assert killed not in {m.description for m, _ in states["r"].declared} and states["r"].survived == ()
    errors = store.stale_declarations(sheets, {("t", "r", "pytorch"): states["r"]})
    assert len(errors) == 1 and repr(killed) in errors[0].message, errors
    # a declared mutant that only the clock killed (correct code, compiling past the cell's timeout
    # in this run) keeps its declaration: the next run may let it through
    clocked = store.Results()
    clocked.add([dataclasses.replace(e, mutants=tuple(dataclasses.replace(m, lanes={lane: "killed: timeout: the cell ran past its timeout" for lane in m.lanes})
                                                     if m.description == killed else m for m in e.mutants)) for e in report.entries])  # fmt: skip
    slow = store.standing(sheets, plan(sheets), clocked)[("t", "r", "pytorch")]
    assert killed in slow.timed_out_names and store.stale_declarations(sheets, {("t", "r", "pytorch"): slow}) == []


def test_results_are_matched_by_identity_and_a_malformed_file_stops_the_run(tmp_path):
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    _, report, sheets, root = _mutate(tmp_path, row)
    folder = os.path.join(root, "mutants")
    recorded = store.Results()
    recorded.add(report.entries)
    assert store.write(folder, recorded, sheets) == [os.path.join(folder, "t.json")]
    loaded = store.load(folder)
    jobs = plan(sheets)
    assert {s.state for s in store.standing(sheets, jobs, loaded).values()} == {"current"}
    edited = write_content(tmp_path / "content", {"s.yaml": section(row.replace("a = np.argmax(x, axis=1)", "a = np.argmax(x, axis=-1)"))})
    changed = content.load(edited)
    assert {s.state for s in store.standing(changed, plan(changed), loaded).values()} == {"stale"}
    with open(os.path.join(folder, "t.json"), "a") as handle:
        handle.write("<<<<<<< HEAD\n")
    with pytest.raises(ContentInvalid) as failed:
        store.load(folder)
    assert "t.json" in failed.value.report() and "invalid mutation results JSON" in failed.value.report()


def test_the_mutate_command_records_and_only_reruns_what_changed(tmp_path):
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    command = [sys.executable, "-m", "generator", "mutate", "--content", root, "--cache", str(tmp_path / "cache"), "--quiet", "--check"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "mutated 1 cell(s)" in first.stderr and "0 survived" in first.stderr
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "mutated 0 cell(s)" in again.stderr, again.stderr


def test_operators_keep_every_other_line_and_are_deterministic():
    code = "s = x.sum(dim=1, keepdim=True)   # a comment\n@jax.jit\ndef f(a):\n    return jnp.sin(a)\ny = jax.jit(f)(x)\nopt.zero_grad()\nloss.backward()\n"
    first, second = operators.mutants(code), operators.mutants(code)
    assert [m.code for m in first] == [m.code for m in second]
    assert len({m.description for m in first}) == len(first)
    for mutant in first:
        assert len(mutant.code.splitlines()) == len(code.splitlines()), mutant
        changed = [i for i, (a, b) in enumerate(zip(code.splitlines(), mutant.code.splitlines(), strict=True)) if a != b]
        assert changed and all(abs(i - changed[0]) <= 1 for i in changed), mutant  # one place, or two adjacent lines swapped
    assert first[0].family == operators.MECHANISM  # mechanism operators come first
    kinds = {m.operator for m in first}
    assert {"unwrap-transform", "drop-decorator", "sibling", "axis", "flip-bool", "delete-call", "swap-statements"} <= kinds


def test_mechanism_operators_replace_structured_control_flow_settings_and_bare_transforms():
    code = ("out = torch.cond(a < b, lambda a, b: a * 17, lambda a, b: b * 23, (a, b))\n"
            "keras.distribution.set_distribution(keras.distribution.DataParallel())\n"
            "y = vmap(h)(x)\nmodel.eval()\n")  # fmt: skip
    made = operators.mutants(code)
    found = {m.operator: m for m in made}
    assert "out = (lambda a, b: a * 17)(a, b) if a < b else (lambda a, b: b * 23)(a, b)" in found["python-control-flow"].code
    settings = [m for m in made if m.operator == "delete-setting"]
    assert {m.family for m in settings} == {operators.MECHANISM}
    assert [m.description.split("`")[1][:28] for m in settings] == ["keras.distribution.set_distr", "model.eval()"]
    assert "y = h(x)" in found["unwrap-transform"].code
    assert sum(m.operator == "constant" for m in operators.mutants("a = f(1, 2, 3, 4, 5, 6, 7)")) == operators.CONSTANTS_CAP


def test_structured_loops_become_the_python_loop_a_reader_writes_with_the_same_values(monkeypatch):
    """jax.lax.scan / keras.ops.scan / tf.foldl / tf.scan each get a `python-loop` mutant that computes what
    the structured loop computes (run here against NumPy stand-ins with each loop's documented semantics,
    the outputs stacked), so that only a check of the mechanism (one loop in the traced graph) rejects it;
    `reverse=` or `length=` leave no such mutant, and neither do `nnx.scan(f)` or an unknown `scan`."""
    import types

    import numpy as np

    def stack(outputs):
        return None if outputs[0] is None else np.stack(outputs)

    def scan(f, init, xs):
        carry, ys = init, []
        for i in range(len(xs[0]) if isinstance(xs, tuple) else len(xs)):
            carry, y = f(carry, tuple(e[i] for e in xs) if isinstance(xs, tuple) else xs[i])
            ys.append(y)
        return carry, stack(ys)

    def tf_scan(fn, elems, initializer=None):  # every accumulator; no initializer: the first element
        accs, acc = [], initializer
        for x in elems:
            acc = x if acc is None else fn(acc, x)
            accs.append(acc)
        return np.stack(accs)

    def foldl(fn, elems, initializer=None):
        return tf_scan(fn, elems, initializer)[-1]

    leafwise = types.SimpleNamespace(map=lambda f, *ys: f(*ys), map_structure=lambda f, *ys: f(*ys))
    stand_ins = {
        "jax": types.SimpleNamespace(lax=types.SimpleNamespace(scan=scan), numpy=np, tree=leafwise),
        "keras": types.SimpleNamespace(ops=types.SimpleNamespace(scan=scan, stack=np.stack), tree=leafwise),
        "tensorflow": types.SimpleNamespace(foldl=foldl, scan=tf_scan, stack=np.stack, nest=leafwise),
    }
    for name, module in stand_ins.items():  # what the mutant's stack imports
        monkeypatch.setitem(sys.modules, name, module)
    cases = {
        "final, sums = jax.lax.scan(lambda c, x: (c + x, c * x), 0.5, xs)\n": "jax.lax.scan",
        "y, _ = keras.ops.scan(lambda h, wb: (np.tanh(h @ wb[0] + wb[1]), None), x, (w, b))\n": "keras.ops.scan",
        "y, ys = keras.ops.scan(lambda h, wb: (np.tanh(h @ wb[0] + wb[1]), h.sum()), x, (w, b))\n": "keras.ops.scan",
        "y = tf.foldl(lambda h, x: h * 2 + x, xs, initializer=x0)\n": "tf.foldl",
        "y = tf.foldl(lambda h, x: h * 2 + x, xs)\n": "tf.foldl",
        "sums = tf.scan(lambda t, x: t + x, xs)\n": "tf.scan",
    }
    rng = np.random.default_rng(0)
    for code, name in cases.items():
        loops = [m for m in operators.mutants(code) if m.operator == "python-loop"]
        assert len(loops) == 1 and loops[0].family == operators.MECHANISM and name in loops[0].description, (code, loops)
        assert "scan(" not in loops[0].code and "foldl(" not in loops[0].code
        data = {"np": np, "xs": rng.standard_normal(5), "x0": 1.5, "x": rng.standard_normal((2, 3)),
                "w": rng.standard_normal((4, 3, 3)), "b": rng.standard_normal((4, 3)), "tf": stand_ins["tensorflow"], **stand_ins}  # fmt: skip
        expected, mutated = dict(data), dict(data)
        exec(code, expected)
        exec(loops[0].code, mutated)
        for variable in ("final", "sums", "y", "ys"):
            if variable in expected:
                assert type(mutated[variable]) is type(expected[variable]), variable  # stacked, not a list
                np.testing.assert_allclose(mutated[variable], expected[variable])
    for code in ("c, ys = jax.lax.scan(f, 0.0, xs, reverse=True)\n", "c, ys = jax.lax.scan(f, 0.0, length=4)\n",
                 "step = nnx.scan(f, in_axes=0)\n", "c, ys = torch.scan(f, 0.0, xs)\n"):  # fmt: skip
        assert not [m for m in operators.mutants(code) if m.operator == "python-loop"], code


def test_a_scan_decorator_is_removed_and_an_exporter_switch_takes_the_other_exporter():
    code = "@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)\ndef forward(h, block):\n    return block(h)\n"
    found = {m.operator: m for m in operators.mutants(code)}
    assert found["drop-decorator"].code == "\ndef forward(h, block):\n    return block(h)\n"
    found = {m.operator: m for m in operators.mutants("p = torch.onnx.export(model, (x,), dynamo=True)\n")}
    assert found["flip-mechanism-flag"].code == "p = torch.onnx.export(model, (x,), dynamo=False)\n"
    assert found["flip-mechanism-flag"].family == operators.MECHANISM and "drop-keyword" not in found
    found = {m.operator: m for m in operators.mutants('torch.onnx.export(model, (x,), "model.onnx")\n')}
    assert found["flip-mechanism-flag"].code == "torch.onnx.export(model, (x,), 'model.onnx', dynamo=False)\n"


def test_a_stale_cell_reuses_the_verdicts_of_mutants_it_already_ran(tmp_path):
    # operators.py changed (a new operator, say): every cell is stale, but a mutant whose jobs are the
    # same ones (same code, setup, check, lane, rules) keeps its verdict instead of running again
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    _, report, sheets, _ = _mutate(tmp_path, row)
    known = store.Results()
    known.add([dataclasses.replace(entry, tools=(store.TOOL_VERSION, "an older operators version")) for entry in report.entries])
    again = mutation.mutate(sheets, plan(sheets), cache=Cache(str(tmp_path / "cache")), cores=1, known=known, show_progress=False)
    assert again.ran == 1 and again.jobs == 0
    assert [m.verdict for m in again.entries[0].mutants] == [m.verdict for m in report.entries[0].mutants]


def test_the_site_shows_each_cells_mutants_and_the_report_lists_survivors_and_declarations(tmp_path):
    from generator import build as build_stage

    weak = _row("weak", "import numpy as np\nx = np.array([[1.0, 5.0], [3.0, 2.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 0]")
    declared = _row("declared", "import numpy as np\nx = np.array([[1.0, 5.0], [3.0, 2.0]])", "b = np.argmax(x, axis=1)", "assert b.tolist() == [1, 0]",
                    declared="axis=0 for axis=1 in `np.argmax(x, axis=1)`")  # fmt: skip
    _, report, sheets, root = _mutate(tmp_path, weak, declared)
    recorded = store.Results()
    recorded.add(report.entries)
    store.write(os.path.join(root, "mutants"), recorded, sheets)
    options = build_stage.Options(content_dir=root, out_dir=str(tmp_path / "site"), cache_dir=str(tmp_path / "cache"), show_progress=False, benchmarks=False)
    assert build_stage.build(options).written
    page = (tmp_path / "site" / "t.html").read_text()
    assert page.count("1 mutant survived") == 1  # the weak row's badge; the declared one is not a survivor
    runs = (tmp_path / "site" / "data" / "t.runs.js").read_text()
    assert "1 of 2 rejected by the check" in runs and "declared equivalent: axis=0 for axis=1" in runs
    report_page = (tmp_path / "site" / "verification.html").read_text()
    assert "t/weak</a> [pytorch] value (python): <code>axis=0 for axis=1 in `np.argmax(x, axis=1)`</code>" in report_page
    assert "t/declared</a> [pytorch] <code>axis=0 for axis=1 in `np.argmax(x, axis=1)`</code>: the test says so" in report_page
    exported = json.loads((tmp_path / "site" / "verification.json").read_text())["mutation"]
    assert {(r["row"], tuple(r["survived"])) for r in exported} == {("weak", ("axis=0 for axis=1 in `np.argmax(x, axis=1)`",)), ("declared", ())}


def test_results_from_another_checkout_merge_in(tmp_path):
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    _, report, sheets, root = _mutate(tmp_path, row)
    elsewhere = store.Results()
    elsewhere.add(report.entries)
    store.write(str(tmp_path / "other"), elsewhere, sheets)
    assert mutation.merge(os.path.join(root, "mutants"), str(tmp_path / "cache"), str(tmp_path / "other")) == (1, 0)
    assert {s.state for s in store.standing(sheets, plan(sheets), store.load(os.path.join(root, "mutants"))).values()} == {"current"}


def test_a_lane_that_could_not_run_the_mutants_is_no_verdict_and_nothing_is_recorded(tmp_path, monkeypatch):
    # The environment vanished mid-run once: every later job "failed" because its worker could not
    # start, and those failures were recorded as kills. A lane error is no verdict on a mutant.
    from generator.model import Result, Status
    from generator.verify.runner import RunReport

    def broken(jobs, **_):
        return RunReport({job.id: Result(Status.ERROR, error="the lane could not start: FileNotFoundError") for job in jobs}, {}, 0.0)

    monkeypatch.setattr(mutation, "run_jobs", broken)
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    sheets = content.load(root)
    report = mutation.mutate(sheets, plan(sheets), cache=Cache(str(tmp_path / "cache")), cores=1, known=store.Results(), show_progress=False)
    assert report.entries == [] and any("not recorded" in note and "could not start" in note for note in report.notes)


def test_rekey_carries_verdicts_over_a_worker_digest_change_and_leaves_the_rest(tmp_path, monkeypatch):
    from generator.verify import cache as cache_module

    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    _, report, sheets, root = _mutate(tmp_path, row)
    folder = os.path.join(root, "mutants")
    old = cache_module.runner_code_hash()
    recorded = store.Results()
    recorded.add(report.entries)
    store.write(folder, recorded, sheets)
    monkeypatch.setattr(cache_module, "runner_code_hash", lambda: "a-refactored-worker")  # every identity moves
    jobs = plan(sheets)
    assert {s.state for s in store.standing(sheets, jobs, store.load(folder)).values()} == {"stale"}
    assert mutation.rekey(folder, str(tmp_path / "cache"), sheets, jobs, "not-the-old-digest") == (0, 1)
    assert mutation.rekey(folder, str(tmp_path / "cache"), sheets, jobs, old) == (1, 0)
    after = store.load(folder)
    assert {s.state for s in store.standing(sheets, jobs, after).values()} == {"current"}
    again = mutation.mutate(sheets, jobs, cache=Cache(str(tmp_path / "cache")), cores=1, known=after, show_progress=False)
    assert again.ran == 0  # nothing left to run: every verdict carried over


def test_recording_a_batch_never_drops_entries_of_rows_the_run_does_not_know(tmp_path):
    # A long run knows the content as it was when it started; rows merged since (with their results)
    # must survive its batches. Only the final pass, with the content as it is now, drops what is gone.
    row = _row("r", "import numpy as np\nx = np.array([[4.0, 5.0, 1.0], [3.0, 2.0, 9.0]])", "a = np.argmax(x, axis=1)", "assert a.tolist() == [1, 2]")
    _, report, sheets, root = _mutate(tmp_path, row)
    folder = os.path.join(root, "mutants")
    other = store.CellEntry("t", "merged-later", "pytorch", {"python": "x"}, ())
    mutation.record(folder, str(tmp_path / "cache"), [other])
    mutation.record(folder, str(tmp_path / "cache"), report.entries)  # a batch of the long run
    assert ("t", "merged-later", "pytorch") in store.load(folder).entries
    mutation.record(folder, str(tmp_path / "cache"), [], sheets)  # the final pass: the row is not in the content
    assert ("t", "merged-later", "pytorch") not in store.load(folder).entries


def test_a_run_of_some_rows_after_an_operator_change_leaves_the_rest_of_the_sheet_stale(tmp_path):
    """The operators' version is each cell's: mutating one row after an operator change must not make the
    sheet's other cells, mutated by the older operators, count as current."""
    old = (store.TOOL_VERSION, "older operators")
    cells = [store.CellEntry("t", row, "numpy", {"numpy": row}, (), old) for row in ("a", "b", "c")]
    folder = str(tmp_path / "mutants")
    store.write(folder, store.Results({cell.key: cell for cell in cells}))
    data = json.loads((tmp_path / "mutants" / "t.json").read_text())
    assert data["operators"] == "older operators" and all("tools" not in cell for cell in data["cells"])
    results = store.load(folder)
    results.add([store.CellEntry("t", "b", "numpy", {"numpy": "b"}, ())])  # `mutate --only t/b`, current operators
    store.write(folder, results)
    again = store.load(folder)
    assert again.current("t", "b", "numpy", {"numpy": "b"}) is not None
    assert again.current("t", "a", "numpy", {"numpy": "a"}) is None and again.current("t", "c", "numpy", {"numpy": "c"}) is None
    data = json.loads((tmp_path / "mutants" / "t.json").read_text())
    assert data["operators"] == "older operators"  # most cells were made by it: only b names its own
    assert [cell.get("tools") for cell in data["cells"]] == [None, list(store.current_tools()), None]
    store.write(folder, again)  # a file nothing changed is written back byte for byte
    assert json.loads((tmp_path / "mutants" / "t.json").read_text()) == data


def test_the_merge_driver_keeps_each_cells_operators_version(tmp_path):
    """One branch re-mutated the whole sheet with new operators (the file's versions changed); the other
    added a cell with the old ones. The added cell must stay stale after the merge, not inherit the
    new versions from the file."""
    from generator.mutate import gitmerge

    base = _results_file({("a", "pytorch"): "1", ("b", "pytorch"): "1"})
    ours = {**_results_file({("a", "pytorch"): "1", ("b", "pytorch"): "1"}), "operators": "new"}
    theirs = _results_file({("a", "pytorch"): "1", ("b", "pytorch"): "1", ("c", "jax"): "1"})
    merged, conflicts = gitmerge.merge(base, ours, theirs)
    assert conflicts == [] and merged["operators"] == "new"
    assert [(c["row"], c.get("tools")) for c in merged["cells"]] == [("a", None), ("b", None), ("c", ["a", "b"])]


def _results_file(cells: dict) -> dict:
    return {"format": 1, "sheet": "t", "tool": "a", "operators": "b",
            "cells": [{"row": row, "column": column, "identities": {"python": ident}, "mutants": []} for (row, column), ident in sorted(cells.items())]}  # fmt: skip


def test_the_git_merge_driver_merges_mutation_results_cell_by_cell(tmp_path):
    """Two branches that mutated different rows of one sheet merge cleanly, and the file is written as
    `results.write` writes it; a cell both changed differently is a conflict (exit 1, named). Git's own
    line merge conflicts on the first case: both branches add a row's cell at the same place."""
    from generator.mutate import gitmerge

    base = _results_file({("a", "pytorch"): "1", ("b", "pytorch"): "1", ("c", "jax"): "1"})
    ours = _results_file({("a", "pytorch"): "2", ("b", "pytorch"): "1", ("c", "jax"): "1"})
    theirs = _results_file({("a", "pytorch"): "1", ("b", "pytorch"): "3", ("c", "jax"): "1", ("d", "jax"): "1"})
    merged, conflicts = gitmerge.merge(base, ours, theirs)
    assert conflicts == []
    assert [(c["row"], c["identities"]["python"]) for c in merged["cells"]] == [("a", "2"), ("b", "3"), ("c", "1"), ("d", "1")]
    assert store.file_text(base) == json.dumps(base, indent=1, ensure_ascii=False) + "\n"

    # through git itself, as a contributor's merge runs it
    def git(*args, cwd=tmp_path / "repo"):
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    repo = tmp_path / "repo"
    (repo / "content" / "mutants").mkdir(parents=True)
    path = repo / "content" / "mutants" / "t.json"
    git("init", "-q", "-b", "main")
    git("config", "merge.mutants.driver", f"{sys.executable} -m generator.mutate.gitmerge %O %A %B")
    (repo / ".gitattributes").write_text("content/mutants/*.json merge=mutants\n")
    many = {(f"r{i:02d}", "pytorch"): "1" for i in range(6)}
    path.write_text(store.file_text(_results_file(many)))
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "other")
    path.write_text(store.file_text(_results_file({**many, ("r02b", "pytorch"): "other", ("r04", "pytorch"): "other"})))
    git("commit", "-q", "-am", "other")
    git("checkout", "-q", "main")
    path.write_text(store.file_text(_results_file({**many, ("r02a", "pytorch"): "main"})))  # a new row where other added one
    git("commit", "-q", "-am", "main")
    done = git("merge", "-q", "--no-edit", "other")
    assert done.returncode == 0, done.stdout + done.stderr
    got = {(c["row"]): c["identities"]["python"] for c in json.loads(path.read_text())["cells"]}
    assert got == {"r00": "1", "r01": "1", "r02": "1", "r02a": "main", "r02b": "other", "r03": "1", "r04": "other", "r05": "1"}
    assert path.read_text() == store.file_text(json.loads(path.read_text()))

    # both sides changed one cell: a conflict, named, ours kept
    git("checkout", "-q", "-b", "again")
    merged_cells = {(row, "pytorch"): ident for row, ident in got.items()}
    path.write_text(store.file_text(_results_file({**merged_cells, ("r02", "pytorch"): "x"})))
    git("commit", "-q", "-am", "again")
    git("checkout", "-q", "main")
    path.write_text(store.file_text(_results_file({**merged_cells, ("r02", "pytorch"): "y"})))
    git("commit", "-q", "-am", "main again")
    clash = git("merge", "-q", "--no-edit", "again")
    assert clash.returncode != 0 and "t/r02 [pytorch]" in clash.stdout + clash.stderr, clash.stdout + clash.stderr


def _digests(namespace: dict) -> dict:
    from generator.mutate.fingerprint import FINGERPRINT

    defined: dict = {}
    exec(FINGERPRINT.split("def __mutation_print__")[0], defined)
    return defined["__mutation_fingerprint__"](namespace)


def test_the_fingerprint_ignores_memory_addresses_and_keeps_the_rest_of_a_repr():
    """A tf.function's signature text names its captures by id(); a repr names its object's address.
    Both differ between two runs of the same code, and between an original and a mutant that allocates
    otherwise: they must not decide equivalence. What else the text says still counts."""

    def handle(size, address):  # an object known only by its repr, like many C extension handles
        return type("Handle", (), {"__slots__": (), "__repr__": lambda self: f"<Handle size={size} at 0x{address:x}>"})()

    signature = "Input Parameters:\n  x: TensorSpec(shape=(3,))\nCaptures:\n  {}: TensorSpec(shape=(), dtype=tf.float32)"
    assert _digests({"s": signature.format(140224268201488)}) == _digests({"s": signature.format(140709854653008)})
    assert _digests({"s": signature.format(140224268201488)}) != _digests({"s": signature.format(140224268201488).replace("(3,)", "(4,)")})
    assert _digests({"h": handle(3, 0x7F3A5C2B1D40)}) == _digests({"h": handle(3, 0x7F3A5C2B9E80)})
    assert _digests({"h": handle(3, 0x7F3A5C2B1D40)}) != _digests({"h": handle(4, 0x7F3A5C2B1D40)})  # once dropped whole: "equal"
    assert _digests({"nodes": {"140167840227920_ib-0"}}) == _digests({"nodes": {"140167886955536_ib-0"}})
    # numbers are values, not addresses: a large int and a float's digits still count
    assert _digests({"n": 1099511627776}) != _digests({"n": 1099511627777})
    assert _digests({"ids": {140019091771152, 140019121032336}}) == _digests({"ids": {140019089916304, 140019121031568}})
    assert _digests({"n": 140019091771152}) != _digests({"n": 140019091771153})   # not an address: not aligned
    import numpy as np

    class Device:  # a mesh's devices are an object array: its bytes are pointers
        def __init__(self, id):
            self.id = id

    def devices(*ids):
        found = np.empty(len(ids), object)
        found[:] = [Device(i) for i in ids]
        return found

    assert _digests({"d": devices(0, 1)}) == _digests({"d": devices(0, 1)})
    assert _digests({"d": devices(0, 1)}) != _digests({"d": devices(0, 2)})
    assert _digests({"v": 0.123456789012345}) != _digests({"v": 0.123456789012346})
    assert _digests({"s": "0.123456789012345"}) != _digests({"s": "0.123456789012346"})


def _defined(source: str, filename: str) -> dict:
    namespace = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return {k: v for k, v in namespace.items() if k == "__name__" or not k.startswith("__")}


def test_the_fingerprint_reads_code_by_what_it_does_not_where_it_was_compiled():
    """The runner compiles each job's cell under a random file name; a nested function's code object
    names it. Two runs of one cell must agree, and code that calls another function, or a class whose
    method changed, must not."""
    nested = "import math\ndef f(x):\n    return [math.{} (v) for v in x]\n"
    assert _digests(_defined(nested.format("isnan"), "/tmp/a/cell-1.py")) == _digests(_defined(nested.format("isnan"), "/tmp/b/cell-2.py"))
    assert _digests(_defined(nested.format("isnan"), "/tmp/a/cell-1.py")) != _digests(_defined(nested.format("isinf"), "/tmp/a/cell-1.py"))
    klass = "class Scale:\n    def __call__(self, x):\n        return x * {}\ns = Scale()\n"
    assert _digests(_defined(klass.format("2.0"), "c.py")) == _digests(_defined(klass.format("2.0"), "d.py"))
    assert _digests(_defined(klass.format("2.0"), "c.py"))["Scale"] != _digests(_defined(klass.format("20.0"), "c.py"))["Scale"]


def test_a_survivor_whose_values_differed_only_in_one_run_is_equivalent_after_its_second_run(tmp_path, monkeypatch):
    """The runner's word on a surviving value mutant is checked once more: the mutant runs again and the
    original twice more. A name whose digest moved in the original's own runs does not count; a mutant
    that differed once only (the run's noise, not the mutant's) is equivalent, and one that differs
    again from all four runs of the original still survives."""
    from generator.model import Result, Status
    from generator.mutate.fingerprint import MARKER
    from generator.verify.runner import RunReport

    row = _row("r", "import numpy as np\nx = np.array([1.26, 2.5, -0.74])", "y = np.round(x, decimals=0)", "assert y.tolist() == [1.0, 2.0, -1.0]")
    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    sheets = content.load(root)
    unit = next(iter(mutation.units(sheets, plan(sheets))))
    m = next(i for i, mu in enumerate(unit.mutants, 1) if mu.operator == "drop-keyword")
    job = unit.jobs[0]
    first_mutant = mutation._fingerprinted(job, unit.mutants[m - 1].code, m, job.timeout)
    refs = (mutation._fingerprinted(job, job.cell.code.text, -1, job.timeout), mutation._fingerprinted(job, job.cell.code.text, -2, job.timeout))

    def passed(**digests):
        return Result(Status.PASSED, stdout=f"{MARKER} {json.dumps(digests)}\n")

    def judged(mutant_again, third_reference, mutant_first=None):
        runs = {first_mutant.id: mutant_first or passed(y="same", noise="b"), refs[0].id: passed(y="same", noise="a"), refs[1].id: passed(y="same", noise="a")}
        lanes_of = {(0, m): {job.lane: "survived"}}  # the first run: `noise` moved only in the mutant

        def third_run(jobs, **_):
            found = {}
            for j in jobs:
                found[j.id] = mutant_again if j.mutant > 0 else third_reference if j.mutant == -3 else passed(y="same", noise="a")
            return RunReport(results=found, stats={}, wall=0.0)

        monkeypatch.setattr(mutation, "run_jobs", third_run)
        first = RunReport(results=runs, stats={}, wall=0.0)
        mutation._confirm_survivors([unit], lanes_of, {(0, m, job.lane): first_mutant}, {(0, job.lane): refs}, first, first,
                                    mutation.MutationReport(), cache=None, cores=1, show_progress=False, sandbox=None)  # fmt: skip
        return lanes_of[(0, m)][job.lane]

    # `noise` moves in a later run of the original too: it was the run's, and nothing else differs
    assert judged(passed(y="same", noise="c"), passed(y="same", noise="d")) == "equivalent"
    # the original agrees with itself four times and the mutant differs from it twice: a survivor
    assert judged(passed(y="same", noise="b"), passed(y="same", noise="a")) == "survived"
    # a real difference in `y`, in both of the mutant's runs, survives whatever `noise` does
    assert judged(passed(y="other", noise="c"), passed(y="same", noise="d"), passed(y="other", noise="b")) == "survived"
    # a second run that fails keeps the verdict: the check rejects the mutant only sometimes
    assert judged(Result(Status.FAILED, error="AssertionError"), passed(y="same", noise="d")) == "survived"


def test_the_ranks_of_a_distributed_cell_are_read_in_any_order():
    """Each rank prints its fingerprint into the one output the ranks share, whichever finishes last
    printing last: the digests must not depend on that order."""
    from generator.mutate import fingerprint

    rank0, rank1 = json.dumps({"x": "a0", "rank": "0"}), json.dumps({"x": "a1", "rank": "1"})
    one = fingerprint.read(f"log\n{fingerprint.MARKER} {rank0}\nmore\n{fingerprint.MARKER} {rank1}\n")
    other = fingerprint.read(f"{fingerprint.MARKER} {rank1}\n{fingerprint.MARKER} {rank0}\n")
    assert one == other and one["x"] == "a0|a1"
    assert fingerprint.read(f"out\n{fingerprint.MARKER} {rank0}\n") == {"x": "a0", "rank": "0"}
    assert fingerprint.read("no marker") is None and fingerprint.read(f"{fingerprint.MARKER} not json") is None
