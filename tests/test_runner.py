"""The runner against hostile cells: each gets its own status, the rest goes on, nothing leaks."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import ROOT, code_row


def _alive_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if marker.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def test_passing_failing_and_traceback_points_at_yaml(run_rows):
    results = run_rows(
        code_row("ok", "x = 2 + 2", "assert x == 4"),
        code_row("wrong", "x = 2 + 2", "assert x == 5, 'arithmetic'"),
    )
    assert results["ok"].status == "passed"
    wrong = results["wrong"]
    assert wrong.status == "failed"
    assert "content/t/s.yaml\", line 22" in wrong.error.replace(os.sep, "/")
    assert "AssertionError: arithmetic" in wrong.error
    assert "verify/worker" not in wrong.error.replace(os.sep, "/")  # the runner's own frames (any module of the worker) are trimmed


def test_hostile_cells_each_get_their_own_status(run_rows):
    results = run_rows(
        code_row("endless", "while True:\n    pass", timeout=1),
        code_row("sleeper", "import time\ntime.sleep(600)", timeout=1),
        code_row(
            "native-hang",
            "import ctypes, signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nctypes.CDLL(None).sleep(600)",
            timeout=1,
        ),
        code_row("os-exit", "import os\nos._exit(0)"),
        code_row("native-abort", "import os, sys\nsys.stderr.write('fatal: the allocator gave up\\n')\nsys.stderr.flush()\nos._exit(3)"),
        code_row("sys-exit", "import sys\nsys.exit(0)"),
        code_row("raise-systemexit", "raise SystemExit"),
        code_row("keyboard-interrupt", "raise KeyboardInterrupt"),
        code_row("segfault", "import ctypes\nctypes.string_at(0)"),
        code_row("after", "x = 1", "assert x == 1"),
    )
    assert {row: r.status for row, r in results.items()} == {
        "endless": "timeout",
        "sleeper": "timeout",
        "native-hang": "timeout",
        "os-exit": "crashed",
        "native-abort": "crashed",
        "sys-exit": "failed",
        "raise-systemexit": "failed",
        "keyboard-interrupt": "failed",
        "segfault": "crashed",
        "after": "passed",
    }
    assert "exited with status 0" in results["os-exit"].error
    # a crash's error ends with what the process last wrote (a native abort's reason), not its code alone
    assert "exited with status 3" in results["native-abort"].error
    assert results["native-abort"].error.rstrip().endswith("fatal: the allocator gave up")
    assert "SIGSEGV" in results["segfault"].error
    assert "SystemExit" in results["sys-exit"].error
    assert "KeyboardInterrupt" in results["keyboard-interrupt"].error


def test_timeouts_do_not_wait_for_the_cell(run_rows, tmp_path):
    """The run returns with the cell timed out and killed: what it would have done after its sleep never
    happens (no clock in the assertion: a run that waited for the cell would find the marker written)."""
    marker = tmp_path / "cache" / "home" / "python" / "woke-up"  # the lane's home: a sandboxed cell can write there
    marker.parent.mkdir(parents=True, exist_ok=True)
    results = run_rows(code_row("sleeper", f"import time\ntime.sleep(600)\nopen({str(marker)!r}, 'w').close()", timeout=1))
    assert results["sleeper"].status == "timeout", results["sleeper"]
    assert not marker.exists()


def test_huge_output_is_capped_and_marked_cut(run_rows):
    result = run_rows(code_row("loud", "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 1_000_000)\nprint('END')"))["loud"]
    assert result.status == "passed"
    assert result.output_cut
    assert len(result.stdout) < 100_000
    assert "bytes of output cut" in result.stdout
    assert result.stdout.rstrip().endswith("END")


def test_native_output_is_captured(run_rows):
    result = run_rows(code_row("native", "import os\nos.write(1, b'from fd 1\\n')\nos.write(2, b'from fd 2\\n')"))["native"]
    assert result.stdout == "from fd 1\n" and result.stderr == "from fd 2\n"


def test_memory_hog_is_stopped_at_the_cap(run_rows):
    result = run_rows(code_row("hog", "x = bytearray(8 * 2**30)\ny = 1"), memory_cap=512 * 2**20)["hog"]
    assert result.status == "crashed"
    assert "memory cap" in result.error


def test_cells_write_files_in_a_scratch_directory(run_rows, tmp_path):
    before = set(os.listdir(ROOT))
    result = run_rows(
        code_row("writer", "import os\nopen('written.txt', 'w').write('hi')\nwhere = os.getcwd()", "assert os.path.exists(os.path.join(where, 'written.txt'))")
    )["writer"]
    assert result.status == "passed"
    assert set(os.listdir(ROOT)) == before
    assert not any("written.txt" in files for _, _, files in os.walk(tmp_path))


def test_state_changed_by_one_cell_is_not_seen_by_the_next(run_rows):
    changes = """\
import os, sys, builtins
os.chdir('/')
sys.path.insert(0, '/nonexistent-marker')
builtins.len = lambda x: 42
os.environ['LEAKED'] = '1'
import numpy
numpy.set_printoptions(precision=1)
"""
    sees_nothing = """\
import os, sys
assert os.getcwd() != '/'
assert '/nonexistent-marker' not in sys.path
assert len([1, 2]) == 2
assert 'LEAKED' not in os.environ
import numpy
assert numpy.get_printoptions()['precision'] == 8
"""
    results = run_rows(code_row("changes", changes), code_row("clean", sees_nothing), cores=1)
    assert results["changes"].status == "passed"
    assert results["clean"].status == "passed", results["clean"].error


def test_framework_global_config_does_not_leak(run_rows):
    results = run_rows(
        code_row("set-dtype", "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_grad_enabled(False)", lane="torch"),
        code_row("default-dtype", "import torch\nx = torch.ones(1, requires_grad=True)", "assert x.dtype == torch.float32\nassert torch.is_grad_enabled()", lane="torch"),
        code_row("x64-on", "import jax\njax.config.update('jax_enable_x64', True)", lane="jax"),
        code_row("x64-off", "import jax.numpy as jnp\nx = jnp.ones(1)", "assert x.dtype == jnp.float32", lane="jax"),
        cores=1,
    )
    assert {k: r.status for k, r in results.items()} == dict.fromkeys(results, "passed"), {k: r.error for k, r in results.items()}


def test_a_cell_never_gets_another_cells_compiled_executable(run_rows):
    # JAX's persistent compilation cache (shared by a lane's cells) keys executables without
    # metadata by default: whichever of these compiled second was given the first one's op names.
    compiled = """\
import jax, jax.numpy as jnp
@jax.jit
def f(x):
    {scope}
        return jnp.sin(x) * 2
hlo = f.lower(jnp.ones(3)).compile().as_text()
"""
    results = run_rows(
        code_row("plain", compiled.format(scope="if True:"), "assert '/attention/' not in hlo", lane="jax"),
        code_row("scoped", compiled.format(scope="with jax.named_scope('attention'):"), "assert 'jit(f)/attention/' in hlo", lane="jax"),
        code_row("plain-again", compiled.format(scope="if True:"), "assert '/attention/' not in hlo", lane="jax"),
        cores=1,
    )
    assert {k: r.status for k, r in results.items()} == dict.fromkeys(results, "passed"), {k: r.error[-300:] for k, r in results.items()}


def test_cells_at_different_lines_share_an_executable_with_equal_op_names(run_rows, tmp_path):
    # Source frames are left out of JAX's metadata (lanes.py): the same computation called from
    # another line hits the compile cache; one with other op names still compiles its own.
    jax_cache = tmp_path / "cache" / "home" / "jax" / "jax-cache"
    jitted = "import jax, jax.numpy as jnp\n@jax.jit\ndef f(a):\n    {scope}\n        return a * 2 + 1\nx = f(jnp.arange(3.0))\n"
    code, check = jitted.format(scope="if True:"), "assert x.tolist() == [1.0, 3.0, 5.0]"
    first = run_rows(code_row("first", code, check, lane="jax"))
    assert first["first"].status == "passed", first["first"].error
    compiled = set(os.listdir(jax_cache))
    assert any(name.startswith("jit_f-") for name in compiled), compiled
    again = run_rows(code_row("first", code, check, lane="jax"), code_row("lower", "# two lines lower\n\n" + code, check, lane="jax"), cores=1)
    assert {k: r.status for k, r in again.items()} == {"first": "passed", "lower": "passed"}
    assert set(os.listdir(jax_cache)) == compiled  # the lower lines compiled nothing new
    scoped = run_rows(code_row("scoped", jitted.format(scope="with jax.named_scope('s'):"), check, lane="jax"))
    assert scoped["scoped"].status == "passed", scoped["scoped"].error
    assert len(set(os.listdir(jax_cache)) - compiled) == 1  # other op names: its own executable


def test_threads_and_child_processes_do_not_survive_the_cell(run_rows):
    marker = f"mlsheets-orphan-{os.getpid()}-{time.time_ns()}"
    code = f"""\
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(300,)).start()
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'], start_new_session=True)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'])
time.sleep(0.5)
"""
    result = run_rows(code_row("spawner", code))["spawner"]
    assert result.status == "passed", result.error
    deadline = time.time() + 60  # returns as soon as they are gone; generous for a loaded machine
    while _alive_with(marker) and time.time() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker) == []


def test_cells_share_the_workers_objects_frozen_and_collect_their_own(run_rows):
    # The worker freezes what it imported before it forks (gc.freeze): a collection in a cell then
    # leaves the parent's objects, and the pages they live on, alone. The cell's own garbage is
    # still collected.
    code = "import gc\nfrozen = gc.get_freeze_count()\nclass Node: pass\nnode = Node()\nnode.me = node\ndel node\nfreed = gc.collect()"
    result = run_rows(code_row("gc", code, "assert frozen > 1000, frozen\nassert freed >= 1, freed"))["gc"]
    assert result.status == "passed", result.error


def test_cells_get_a_minimal_environment(run_rows, monkeypatch):
    monkeypatch.setenv("MLSHEETS_TEST_SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    result = run_rows(
        code_row("env", "import os\nleaked = [k for k, v in os.environ.items() if v == 'hunter2']", "assert leaked == [], leaked")
    )["env"]
    assert result.status == "passed", result.error


def test_warnings_are_captured_by_category(run_rows):
    result = run_rows(code_row("warns", "import warnings\nwarnings.warn('old API', DeprecationWarning)"))["warns"]
    assert result.status == "passed"
    assert [(w["category"], w["message"]) for w in result.warnings] == [("DeprecationWarning", "old API")]
    assert result.warnings[0]["where"].endswith("s.yaml:11")


@pytest.mark.parametrize("cores", [1, 2])
def test_many_cells_in_one_lane_all_run(run_rows, cores):
    rows = [code_row(f"r{i}", f"x = {i}", f"assert x == {i}") for i in range(12)]
    results = run_rows(*rows, cores=cores)
    assert len(results) == 12 and all(r.status == "passed" for r in results.values())


def test_torch_dist_lane_runs_two_ranks(run_rows):
    code = """\
import os
import torch.distributed as dist
dist.init_process_group('gloo')
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
"""
    result = run_rows(code_row("dist", "import torch\n" + code, "assert dist.get_world_size() == 2\nassert t.item() == 1.0", lane="torch-dist"))["dist"]
    assert result.status == "passed", result.error


def test_a_cell_sees_its_own_source_even_if_the_yaml_changed_on_disk(tmp_path):
    """tf.function's AutoGraph and torch.compile read a function's source with inspect; they must
    get the code that runs, not the YAML file as edited since the content was loaded."""
    from generator.load import content as content_module
    from generator.verify.cache import Cache
    from generator.verify.verification import verify
    from tests.conftest import code_row, section, write_content

    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("src", "def f(x):\n    return x + 1\nimport inspect\nsrc = inspect.getsource(f)", "assert src == 'def f(x):\\n    return x + 1\\n', src"))})
    sheets = content_module.load(root)
    path = tmp_path / "content" / "t" / "s.yaml"
    path.write_text("# edited after loading\n" * 3 + path.read_text())  # every line moves down by three
    verification = verify(sheets, cache=Cache(str(tmp_path / "cache")), cores=1, show_progress=False)
    result = verification.verdicts[("t", "src", "pytorch")].results[0][1]
    assert result.status == "passed", result.error


def test_a_cell_is_compiled_under_a_python_file_of_its_own(tmp_path):
    """TorchDynamo tokenizes the file a function was compiled from; a YAML file is not Python
    (here a counterexample's `why:` follows a deeper code block), the cell's own source file is."""
    from generator.load import content as content_module
    from generator.verify.cache import Cache
    from generator.verify.verification import verify
    from tests.conftest import write_content

    rows = """\
    id: s
    title: S
    rows:
      - id: tok
        title: tok
        cells:
          pytorch:
            lanes: [python]
            code: |
              def f():
                  return 1
              import tokenize
              with tokenize.open(f.__code__.co_filename) as handle:
                  tokens = list(tokenize.generate_tokens(handle.readline))
            check: |
              assert f.__code__.co_filename.endswith(".py") and tokens
            counterexamples:
              - code: |
                  def f():
                          return 1
                  tokens = []
                why: indented deeper than the line after it
          jax: {text: x}
    """
    root = write_content(tmp_path / "content", {"s.yaml": rows})
    verification = verify(content_module.load(root), cache=Cache(str(tmp_path / "cache")), cores=1, show_progress=False)
    verdict = verification.verdicts[("t", "tok", "pytorch")]
    assert verdict.status == "passed", verdict.results[0][1].error


def test_cells_do_not_inherit_the_workers_future_imports(run_rows):
    result = run_rows(code_row("annotations", "def f(x: Undefined) -> int:\n    return x"))["annotations"]
    assert result.status == "failed" and "NameError: name 'Undefined' is not defined" in result.error
