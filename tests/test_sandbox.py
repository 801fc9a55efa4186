"""Contributed code cannot reach what builds the site: each escape a hostile cell tries is refused by the
sandbox, and, with the sandbox off, detected by the build's digest of what it reads after verification.

The escapes are real: the same cells, run with `sandbox="off"`, do write into a folder of the checkout,
read an ancestor's environment and reach the build's loopback (`test_..._without_the_sandbox` shows each
succeeds there, so the sandboxed tests cannot pass by accident). Where bubblewrap cannot run, the
sandboxed tests are skipped with the reason, except under CI=true, where every protection must hold.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid

import pytest

from generator import build as build_stage
from generator import integrity
from generator.verify import sandbox as sandboxes
from generator.verify.cache import Cache
from tests.conftest import ROOT, code_row, section, write_content

PROGRAM, WHY = sandboxes.probe()
needs_sandbox = pytest.mark.skipif(
    PROGRAM is None and os.environ.get("CI", "").lower() != "true", reason=f"no sandbox on this machine: {WHY}"
)

# A cell that walks up its process tree to the build's working directory (the checkout) and writes
# there, and writes into a folder of the checkout by its absolute path. Its check passes only when
# every attempt was refused.
ESCAPE = """\
import os
def ancestors():
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/stat") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        yield pid
written = []
for pid in ancestors():
    try:
        folder = os.readlink(f"/proc/{pid}/cwd")
        with open(os.path.join(folder, "ESCAPED-{marker}"), "w") as handle:
            handle.write("a cell was here")
        written.append(folder)
    except OSError:
        pass
try:
    with open("{target}", "a") as handle:
        handle.write("<script>alert('from a cell')</script>")
    written.append("{target}")
except OSError:
    pass
"""

# A cell that reads every visible process's environment, looking for the build's secret.
SNOOP = """\
import os
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            if b"{secret}" in handle.read():
                found.append(pid)
    except OSError:
        pass
"""

# A cell that connects to a port the build machine listens on (its loopback, as a stand-in for the network).
CONNECT = """\
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    reached = True
except OSError:
    reached = False
"""


@pytest.fixture
def checkout_folder():
    """A folder inside the checkout (tests/output/, ignored by git), with a template to tamper with: not
    under /tmp, which the sandbox replaces with a private one (a test there would pass for that reason)."""
    folder = os.path.join(ROOT, "tests", "output", f"sandbox-{uuid.uuid4().hex[:8]}")
    os.makedirs(folder)
    with open(os.path.join(folder, "base.html"), "w") as handle:
        handle.write("<html></html>")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
    for name in os.listdir(ROOT):
        if name.startswith("ESCAPED-"):
            os.unlink(os.path.join(ROOT, name))


def _run(tmp_path, row: str, policy: str, cores: int = 1):
    from generator.load import content
    from generator.verify.verification import verify

    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    verification = verify(content.load(root), cache=Cache(str(tmp_path / "cache")), cores=cores, force=True, show_progress=False, sandbox=policy)
    ((_, verdict),) = verification.verdicts.items()
    return verdict.results[0][1], verification


def _escape_row(marker: str, target: str, expect_refused: bool) -> str:
    # the run's scratch folder (the workers' working directory) is writable by design: anything else is an escape
    outside = "[w for w in written if not w.startswith(os.path.dirname(os.getcwd()))]"
    check = f"assert {outside} == [], written" if expect_refused else f"assert {outside}, written"
    return code_row("escape", ESCAPE.replace("{marker}", marker).replace("{target}", target), check)


@needs_sandbox
def test_a_cell_cannot_write_into_the_checkout(tmp_path, checkout_folder):
    marker = uuid.uuid4().hex[:8]
    template = os.path.join(checkout_folder, "base.html")
    result, _ = _run(tmp_path, _escape_row(marker, template, expect_refused=True), "require")
    assert result.status == "passed", result.error
    assert open(template).read() == "<html></html>"
    assert not [name for name in os.listdir(ROOT) if name == f"ESCAPED-{marker}"]


def test_a_cell_writes_into_the_checkout_without_the_sandbox(tmp_path, checkout_folder):
    marker = uuid.uuid4().hex[:8]
    template = os.path.join(checkout_folder, "base.html")
    result, _ = _run(tmp_path, _escape_row(marker, template, expect_refused=False), "off")
    assert result.status == "passed", result.error
    assert "<script>" in open(template).read()
    assert os.path.exists(os.path.join(ROOT, f"ESCAPED-{marker}"))  # the ancestor walk found the checkout


def _verify_in_a_build_process(tmp_path, row: str, policy: str, secret: str):
    """Verify `row` with the command line, in a process started with `secret` in its environment (as a
    CI job holds its token): /proc shows a process's environment as it was when it started."""
    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    env = {**os.environ, "MLSHEETS_TEST_DEPLOY_TOKEN": secret}
    argv = [sys.executable, "-m", "generator", "verify", "--content", root, "--cache", str(tmp_path / "cache"), "--sandbox", policy, "--quiet", "--jobs", "1"]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@needs_sandbox
def test_a_cell_cannot_read_an_ancestors_environment(tmp_path):
    secret = f"mlsheets-token-{uuid.uuid4().hex}"
    done = _verify_in_a_build_process(tmp_path, code_row("snoop", SNOOP.replace("{secret}", secret), "assert found == [], found"), "require", secret)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_cell_reads_an_ancestors_environment_without_the_sandbox(tmp_path):
    secret = f"mlsheets-token-{uuid.uuid4().hex}"
    done = _verify_in_a_build_process(tmp_path, code_row("snoop", SNOOP.replace("{secret}", secret), "assert found, 'no ancestor seen'"), "off", secret)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture
def listening_port():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@needs_sandbox
def test_a_cell_cannot_reach_the_network(tmp_path, listening_port):
    row = code_row("net", CONNECT.replace("{port}", str(listening_port)), "assert reached is False")
    result, _ = _run(tmp_path, row, "require")
    assert result.status == "passed", result.error


def test_a_cell_reaches_the_machines_loopback_without_the_sandbox(tmp_path, listening_port):
    row = code_row("net", CONNECT.replace("{port}", str(listening_port)), "assert reached is True")
    result, _ = _run(tmp_path, row, "off")
    assert result.status == "passed", result.error


@needs_sandbox
def test_cells_keep_their_scratch_folder_home_and_loopback_in_the_sandbox(tmp_path):
    code = """\
import os, socket, tempfile
open("here.txt", "w").write("scratch")
home = os.environ["HOME"]
open(os.path.join(home, "cache-entry"), "w").write("compile cache")
tempfile.NamedTemporaryFile(dir="/tmp").close()
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
socket.create_connection(server.getsockname(), timeout=3).close()
pid1 = open("/proc/1/cmdline", "rb").read()
"""
    result, _ = _run(tmp_path, code_row("ok", code, "assert b'bwrap' in pid1, pid1"), "require")
    assert result.status == "passed", result.error
    homes = os.path.join(tmp_path, "cache", "home", "python")
    assert open(os.path.join(homes, "cache-entry")).read() == "compile cache"  # the lane's home persists


def test_the_policy_defaults_to_require_under_ci_and_refuses_an_unknown_one():
    assert sandboxes.default_policy({"CI": "true"}) == "require"
    assert sandboxes.default_policy({}) == "auto"
    assert sandboxes.default_policy({"CI": "true", "MLSHEETS_SANDBOX": "off"}) == "off"
    with pytest.raises(ValueError, match="MLSHEETS_SANDBOX"):
        sandboxes.default_policy({"MLSHEETS_SANDBOX": "maybe"})


def test_a_required_sandbox_that_cannot_start_refuses_to_run_anything(tmp_path, monkeypatch):
    monkeypatch.setattr(sandboxes, "probe", lambda: (None, "bubblewrap (bwrap) is not installed"))
    with pytest.raises(sandboxes.SandboxUnavailable, match="bubblewrap"):
        _run(tmp_path, code_row("x", "x = 1"), "require")
    result, verification = _run(tmp_path, code_row("x", "x = 1"), "auto")  # auto: runs, and says so
    assert result.status == "passed"
    assert any("without the sandbox" in note for note in verification.report.notes)


def test_the_cli_exits_3_when_the_sandbox_is_required_and_missing(tmp_path, monkeypatch, capsys):
    from generator import cli

    monkeypatch.setattr(sandboxes, "probe", lambda: (None, "bubblewrap (bwrap) is not installed"))
    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("x", "x = 1", "assert x"))})
    assert cli.main(["verify", "--content", root, "--cache", str(tmp_path / "cache"), "--sandbox", "require", "--quiet"]) == 3
    assert "bubblewrap" in capsys.readouterr().err


def test_without_the_sandbox_the_build_refuses_to_render_what_a_cell_tampered_with(tmp_path, monkeypatch):
    # The digest of what the build reads after verification (templates, the generator's code, ledgers,
    # the highlighted-code cache) is taken before any cell runs: a cell that rewrites one, with no
    # sandbox to stop it, makes the build refuse to render, naming the file; the last site stays.
    ledger = tmp_path / "content" / "ledger"
    ledger.mkdir(parents=True)
    (ledger / "gpu.json").write_text('{"format": 2, "machine": "gpu", "entries": []}\n')
    tamper = f"open({str(ledger / 'gpu.json')!r}, 'a').write(' ')"
    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("tamper", tamper))})
    out = tmp_path / "site"
    options = build_stage.Options(content_dir=root, out_dir=str(out), cache_dir=str(tmp_path / "cache"), show_progress=False,
                                  benchmarks=False, sandbox="off", cores=1)  # fmt: skip
    outcome = build_stage.build(options)
    assert outcome.tampered == (str(ledger / "gpu.json"),) and not outcome.written
    assert not out.exists()
    assert "gpu.json" in str(integrity.Tampered(list(outcome.tampered)))


def test_the_digest_names_changed_added_and_removed_files(tmp_path):
    (tmp_path / "a.html").write_text("a")
    (tmp_path / "b.html").write_text("b")
    snapshot = integrity.Snapshot.take([str(tmp_path), str(tmp_path / "missing.json")])
    assert snapshot.changed() == []
    (tmp_path / "a.html").write_text("a!")
    (tmp_path / "b.html").unlink()
    (tmp_path / "c.html").write_text("c")
    (tmp_path / "missing.json").write_text("{}")
    assert snapshot.changed() == sorted(str(tmp_path / name) for name in ("a.html", "b.html", "c.html", "missing.json"))


def test_a_checkout_under_tmp_is_bound_back_read_only(monkeypatch):
    # the private /tmp would hide a checkout (or a virtual environment) that lives under /tmp: the
    # worker's own script and interpreter; they are bound back, read-only (a build of a clone in /tmp
    # failed with "bwrap: execvp ...: No such file or directory" before)
    monkeypatch.setattr(sandboxes, "REPOSITORY", "/tmp/some-clone")
    args = sandboxes.bwrap_arguments(writable=("/tmp/scratch",))
    tmpfs, bound = args.index("/tmp", args.index("--tmpfs")), args.index("/tmp/some-clone")
    assert args[bound - 1] == "--ro-bind" and args[bound + 1] == "/tmp/some-clone" and bound > tmpfs
