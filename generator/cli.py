"""The command line: `python -m generator COMMAND`. Exit 0 all good, 1 a cell failed, 2 invalid content,
3 refused for safety: the sandbox is required and missing, or cells changed files the build reads.

It is the one module that prints a command's outcome and chooses its exit status (the stages return
report objects; reports.py turns them into text), which keeps it over the 400 lines a module keeps to:
one short function per command and per kind of run, each importing only what it uses."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from generator.errors import ContentInvalid, UnknownRow

# Each command imports the stages it uses inside its function (mkdocs' __main__ does the same): `check`
# need not import the renderer, the runner or NumPy, and every CLI process starts in a fraction of the time.


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--content", default="content", help="the content folder (default: content)")


def _running(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", action="append", metavar="ROW_ID", help="run only this row's cells (SHEET/ROW or ROW; repeatable)")
    parser.add_argument("--force", action="store_true", help="run cells even when a cached result exists")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N", help="cells to run at once (default: the number of cores)")
    parser.add_argument("--cache", default=".cache", help="the cache folder (default: .cache)")
    parser.add_argument("--memory-cap", type=int, metavar="MIB", help="memory one cell may use, in MiB (default 6144)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.add_argument("--strict", action="store_true", help="a warning (a result not stored, a cache entry not read) fails the command; CI=true implies it")
    parser.add_argument(
        "--sandbox",
        choices=("auto", "require", "off"),  # sandbox.POLICIES (a test checks), named here so that parsing imports nothing
        help="run cells in the bubblewrap sandbox: auto (where it works), require (refuse to run without it), off "
        "(default: MLSHEETS_SANDBOX, else require under CI=true, else auto; docs/sandbox.md)",
    )


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m generator", description="Build the ML Hyperpolyglot reference sheets.")
    commands = main.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = commands.add_parser("build", help="verify every code cell and render the site")
    _common(build)
    _running(build)
    build.add_argument("--out", default="site", help="where the site goes (default: site)")
    build.add_argument("--keep-going", action="store_true", help="render the site even when cells fail, showing the failures")
    build.add_argument("--no-benchmarks", action="store_true", help="leave out the benchmarks page (rendered from content/benchmarks/, written by make bench)")
    build.add_argument("--merge", nargs="+", metavar="BUNDLE", help="first import the results of these shard bundles (every shard of this plan, all passing)")
    build.add_argument("--preview", action="store_true", help="with --only: render only the sheets that hold those rows (no guide, trade-off or benchmarks page)")

    verify = commands.add_parser("verify", help="run the code cells and report; render nothing")
    _common(verify)
    _running(verify)
    verify.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cuda: run the GPU-capable lanes on the GPU and write content/ledger/MACHINE.json")
    verify.add_argument("--machine", help="the ledger's machine name (default: from the GPU's name)")
    verify.add_argument("--environment", metavar="NAME", help="run environments/NAME.txt's lanes with this interpreter (make verify-env) and write content/versions/NAME.json")

    verify.add_argument("--changed-since", metavar="REF", help="run only the rows whose cells differ from git REF")
    verify.add_argument("--summary", metavar="FILE", help="write a Markdown table of the cells run (for a CI job summary)")
    verify.add_argument("--explain", action="append", metavar="ROW_ID", help="say why each cell of this row would run or comes from the cache; run nothing (repeatable)")
    verify.add_argument("--shard", metavar="K/N", help="run only shard K of N of the jobs and write them to --bundle")
    verify.add_argument("--bundle", metavar="FILE", help="the results bundle --shard writes (default: shard-K-of-N.json)")
    verify.add_argument("--timings", metavar="FILE", help="the durations --shard balances on; give every shard the same file")
    verify.add_argument("--merge", nargs="+", metavar="BUNDLE", help="import the results of these shard bundles into the cache, then report")

    mutate = commands.add_parser("mutate", help="run every code cell's mutants, judge them and write content/mutants/SHEET.json")
    _common(mutate)
    _running(mutate)
    mutate.add_argument("--changed-since", metavar="REF", help="mutate only the rows whose cells differ from git REF")
    mutate.add_argument("--shard", metavar="K/N", help="mutate only shard K of N of the cells to run (every shard merges its results into the files)")
    mutate.add_argument("--check", action="store_true", help="exit 1 when a cell of the rows mutated has a surviving mutant it does not declare")
    mutate.add_argument("--merge", nargs="+", metavar="DIR", help="first merge the results in these folders (another checkout's content/mutants) into this content's")
    mutate.add_argument("--rekey-from-runner", metavar="DIGEST", help="first carry the recorded verdicts over a worker change that changes no behaviour (as ledger rekey does), then run what is left")

    cache = commands.add_parser("cache", help="look after the result cache")
    cache.add_argument("action", choices=("prune", "export", "import"), help="prune: remove the results no current cell can use, and stale "
                       "temporary files; export FILE: the passed results of the content's jobs, as the pages workflow publishes them; "
                       "import [SOURCE]: store those of a published file (path or URL; default: the origin's GitHub Pages site) whose keys "
                       "are this checkout's")  # fmt: skip
    cache.add_argument("source", nargs="?", help="export: the file to write; import: the file or URL to read")
    _common(cache)
    cache.add_argument("--cache", default=".cache", help="the cache folder (default: .cache)")
    cache.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")

    ledgers = commands.add_parser("ledger", help="look after the committed ledgers (GPU runs, older releases)")
    ledgers.add_argument("action", choices=("rekey",), help="rekey: carry the entries over a change of the worker's digest that changes no behaviour")
    _common(ledgers)
    ledgers.add_argument("--from-runner", required=True, metavar="DIGEST", help="the worker digest the entries were written under")
    ledgers.add_argument("--dry-run", action="store_true", help="say what would be re-keyed; write nothing")

    check = commands.add_parser("check", help="load and validate the content; run nothing")
    _common(check)

    new_row = commands.add_parser("new-row", help="append a row skeleton with a placeholder cell per column")
    _common(new_row)
    new_row.add_argument("sheet", help="the sheet id, e.g. frameworks")
    new_row.add_argument("section", help="the section id or file name, e.g. layers")
    new_row.add_argument("title", help="the row title, e.g. \"Group normalisation\"")
    new_row.add_argument("--id", help="the row id (default: made from the title)")

    coverage = commands.add_parser("coverage", help="per sheet: which cells are none, lack a check, or have CPU results only")
    _common(coverage)

    serve = commands.add_parser("serve", help="serve the site locally and rebuild on change (never writes site/)")
    _common(serve)
    _running(serve)
    serve.add_argument("--out", default=os.path.join(".cache", "serve"), help="where its site goes (default: .cache/serve; never the published site/)")
    serve.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default: 8000)")
    return main


def _terminate(signum, frame):
    raise KeyboardInterrupt  # unwinds like Ctrl-C: workers reaped, staging removed, last site kept


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # SIGTERM unwinds like Ctrl-C while the command runs; the caller's handler is back afterwards
    # (main is also called in-process, by tests and `serve`, and must leave no handler behind)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    from generator.verify.sandbox import SandboxUnavailable

    try:
        return COMMANDS[args.command](args)
    except ContentInvalid as invalid:
        print(invalid.report(), file=sys.stderr)
        return 2
    except UnknownRow as unknown:
        print(f"error: {unknown}", file=sys.stderr)
        return 2
    except SandboxUnavailable as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("interrupted: the last good site is left in place", file=sys.stderr)
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _options(args):
    from generator import build as build_stage

    return build_stage.Options(
        content_dir=args.content,
        out_dir=getattr(args, "out", "site"),
        cache_dir=args.cache,
        only=set(args.only) if args.only else None,
        force=args.force,
        keep_going=getattr(args, "keep_going", False),
        cores=max(1, args.jobs),
        show_progress=not args.quiet,
        memory_cap=args.memory_cap * 2**20 if args.memory_cap else None,
        benchmarks=not getattr(args, "no_benchmarks", False),
        sandbox=getattr(args, "sandbox", None),
        preview=getattr(args, "preview", False),
    )


def _report(verification, started: float) -> None:
    from generator import reports

    print(reports.verification_text(verification), file=sys.stderr)
    print(f"done in {time.perf_counter() - started:.2f} s", file=sys.stderr)


def _strict(args) -> bool:
    """--strict, or a CI run (CI=true, as GitHub Actions and .ci/run set it): warnings fail."""
    return bool(getattr(args, "strict", False)) or os.environ.get("CI", "").lower() == "true"


def _strict_fails(args, warnings) -> bool:
    """Whether the warnings (printed already) fail this command: under --strict or CI, any does."""
    if _strict(args) and len(warnings):
        print(f"--strict: {len(warnings)} warning(s) fail this command", file=sys.stderr)
        return True
    return False


def _merged(args, options) -> bool:
    """--merge's bundles checked and imported into the cache (True), or why not, naming the shard."""
    from generator.verify import shards
    from generator.verify.cache import Cache

    try:
        imported = shards.merge(args.merge, _planned(options), Cache(options.cache_dir))
    except shards.MergeError as error:
        print(f"merge failed, nothing imported:\n{error}", file=sys.stderr)
        return False
    print(f"merged {len(args.merge)} bundle(s): {imported} passed result(s) in {options.cache_dir}", file=sys.stderr)
    return True


def cmd_build(args) -> int:
    from generator import build as build_stage

    started = time.perf_counter()
    options = _options(args)
    if args.merge and not _merged(args, options):
        return 1
    outcome = build_stage.build(options)
    _report(outcome.verification, started)
    if outcome.tampered:
        from generator import integrity

        print(f"error: {integrity.Tampered(list(outcome.tampered))}", file=sys.stderr)
        return 3
    if outcome.failures:
        where = f"the site in {args.out} shows them" if outcome.written else f"the last good site in {args.out} is left in place"
        if outcome.superseded:
            where = f"a build started after this one has already written {args.out}, left in place"
        print(f"{len(outcome.failures)} cell(s) failed; {where}.", file=sys.stderr)
        return 1
    if outcome.superseded:
        print(f"not written: a build started after this one has already written {args.out}/, left in place", file=sys.stderr)
    else:
        print(f"site written to {args.out}/", file=sys.stderr)
    return 1 if _strict_fails(args, outcome.verification.warnings) else 0


def _planned(options) -> list:
    """The jobs of the content (of --only's rows): what a shard splits and a merge checks against."""
    from generator.load import content
    from generator.verify.verification import plan

    return plan(content.load(options.content_dir), only=options.only)


def cmd_verify(args) -> int:
    from generator import build as build_stage
    from generator import reports
    from generator.contrib import changes
    from generator.load import content

    if args.explain:
        return _explain(args)
    if args.device != "cpu":
        return _verify_on_device(args)
    if args.environment:
        return _verify_environment(args)
    started = time.perf_counter()
    options = _options(args)
    if args.shard:
        if args.changed_since or args.merge:
            print("--shard cannot be combined with --changed-since or --merge", file=sys.stderr)
            return 2
        return _run_shard(args, options)
    if args.merge and not _merged(args, options):
        return 1
    if args.changed_since:
        changed = changes.changed_rows(args.content, args.changed_since)
        print(f"{len(changed)} row(s) changed since {args.changed_since}: {' '.join(sorted(changed)) or '-'}", file=sys.stderr)
        if not changed:
            return 0
        options.only = (options.only or set()) | changed
    sheets = content.load(args.content)
    _enforce_rules(args.content, sheets, options.only)
    if options.only is not None:  # the sheets that hold the rows: what it reports (planning every sheet's jobs took seconds)
        sheets = build_stage.preview_sheets(sheets, options.only)
    _, verification = build_stage.run_verification(options, sheets)
    _report(verification, started)
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as handle:
            handle.write(reports.markdown_summary(verification, options.only))
    return 1 if verification.failures() or _strict_fails(args, verification.warnings) else 0


def _explain(args) -> int:
    from generator.lanes import LANES
    from generator.load import content
    from generator.verify import explain
    from generator.verify.cache import Cache
    from generator.verify.verification import plan

    jobs = plan(content.load(args.content), only=set(args.explain))
    if not jobs:
        print(f"no code cell in {', '.join(args.explain)}", file=sys.stderr)
        return 2
    print("\n".join(explain.explain(jobs, Cache(args.cache), LANES, force=args.force)))
    return 0


def _recorded(args, run, summary: str, warnings, started: float) -> None:
    """What a GPU or older-release run did (and --summary FILE: its ledger's summary)."""
    from generator import reports

    print(reports.recorded_text(run, summary, warnings), file=sys.stderr)
    if getattr(args, "summary", None):
        with open(args.summary, "w", encoding="utf-8") as handle:
            handle.write(summary)
    print(f"wrote {run.path}; {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _verify_on_device(args) -> int:
    from generator.load import content
    from generator.verify import gpu, ledger
    from generator.verify.cache import Cache

    started = time.perf_counter()
    gpus = ledger.gpu_count()
    if gpus == 0:
        print("no NVIDIA GPU here (`nvidia-smi -L` lists none): nothing was run and no ledger was written", file=sys.stderr)
        return 1
    cache = Cache(args.cache)
    run = gpu.verify_on_device(content.load(args.content), args.content, device=args.device, gpus=gpus, cache=cache, cores=args.jobs,
                               only=set(args.only) if args.only else None, machine=args.machine, force=args.force,
                               show_progress=not args.quiet, sandbox=args.sandbox)  # fmt: skip
    _recorded(args, run, gpu.summary(run.jobs, run.report.results), cache.warnings, started)
    return 1 if run.failed or _strict_fails(args, cache.warnings) else 0


def _verify_environment(args) -> int:
    from generator.verify import environments
    from generator.verify.cache import Cache

    started = time.perf_counter()
    try:
        env = environments.load_environment(args.environment)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    wrong = environments.mismatched(env)
    if wrong:
        print(f"this interpreter ({sys.executable}) is not environment {env.name}: {'; '.join(wrong)}. "
              f"Run `make verify-env ENV={env.name}`, which builds .venvs/{env.name}", file=sys.stderr)  # fmt: skip
        return 2
    cache = Cache(args.cache)
    run = environments.verify_environment(env, _planned(_options(args)), args.content, cache=cache, cores=args.jobs,
                                          force=args.force, show_progress=not args.quiet, sandbox=args.sandbox)  # fmt: skip
    _recorded(args, run, environments.summary(env, run.jobs, run.report.results), cache.warnings, started)
    return 1 if _strict_fails(args, cache.warnings) else 0


def _run_shard(args, options) -> int:
    from generator import reports
    from generator.verify import shards
    from generator.verify.cache import Cache

    try:
        k, n = shards.parse_shard(args.shard)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    cache = Cache(options.cache_dir)
    run = shards.run_shard(cache, _planned(options), k, n, args.bundle or f"shard-{k}-of-{n}.json", args.timings, cores=options.cores,
                           force=options.force, show_progress=options.show_progress, memory_cap=options.memory_cap,
                           sandbox=options.sandbox)  # fmt: skip
    print(reports.shard_text(run, args.timings, cache.warnings), file=sys.stderr)
    return 1 if run.failed or _strict_fails(args, cache.warnings) else 0


def cmd_mutate(args) -> int:
    from generator.contrib import changes
    from generator.load import content
    from generator.mutate import results as mutation_results
    from generator.mutate import run as mutation
    from generator.verify import shards
    from generator.verify.cache import Cache
    from generator.verify.verification import plan

    started = time.perf_counter()
    sheets = content.load(args.content)
    only = set(args.only) if args.only else None
    if args.changed_since:
        changed = changes.changed_rows(args.content, args.changed_since)
        print(f"{len(changed)} row(s) changed since {args.changed_since}: {' '.join(sorted(changed)) or '-'}", file=sys.stderr)
        if not changed:
            return 0
        only = (only or set()) | changed
    shard = None
    if args.shard:
        shard = shards.parse_shard(args.shard)
    folder = os.path.join(args.content, "mutants")
    for other in args.merge or ():
        merged, skipped = mutation.merge(folder, args.cache, other)
        print(f"merged {merged} cell(s) from {other}" + (f"; left out {skipped} made by other rules or operators" if skipped else ""), file=sys.stderr)
    if args.rekey_from_runner:
        rekeyed, left = mutation.rekey(folder, args.cache, sheets, plan(sheets), args.rekey_from_runner)
        print(f"re-keyed {rekeyed} cell(s) from worker digest {args.rekey_from_runner[:12]}; left {left} (changed, or a lane could not run them)", file=sys.stderr)
    known = mutation_results.load(folder)
    jobs = plan(sheets, only=only)
    def recorded_batch(entries, done, total):  # each batch is in the files before the next runs
        mutation.record(folder, args.cache, entries)
        print(f"mutate: {done} of {total} cell(s) judged and recorded ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    report = mutation.mutate(sheets, jobs, cache=Cache(args.cache), cores=max(1, args.jobs), known=known, force=args.force,
                             shard=shard, show_progress=not args.quiet, sandbox=args.sandbox, on_batch=recorded_batch)  # fmt: skip
    # entries of cells gone from the content are dropped, by the content as it is now
    recorded = mutation.record(folder, args.cache, [], content.load(args.content))
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    standings = mutation_results.standing(sheets, jobs, recorded)
    lines, survivors = mutation.summary(sheets, standings)
    stale = mutation_results.stale_declarations(sheets, standings)
    lines = [error.format() for error in stale] + lines
    print("\n".join(lines), file=sys.stderr)
    print(f"mutated {report.ran} cell(s) ({report.jobs} job(s)) in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if args.check and (survivors or stale) else 0


def cmd_cache(args) -> int:
    from generator.load import content
    from generator.verify import explain
    from generator.verify.cache import Cache
    from generator.verify.verification import plan

    sheets = content.load(args.content)
    if args.action in ("export", "import"):
        return _published(args, Cache(args.cache), plan(sheets))
    keep = {job.key for device in ("cpu", "cuda") for job in plan(sheets, device=device, gpus=8)}
    removed, kept, freed = explain.prune(Cache(args.cache), keep, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"{verb} {removed} result(s) ({freed / 2**20:.1f} MiB) that no current cell can use; kept {kept}")
    return 0


def _published(args, cache, jobs) -> int:
    from generator.verify import published

    try:
        if args.action == "export":
            if not args.source:
                print("cache export FILE: name the file to write", file=sys.stderr)
                return 2
            print(f"wrote {published.export(cache, jobs, args.source)} passed result(s) of {len(jobs)} job(s) to {args.source}", file=sys.stderr)
            return 0
        source = args.source or published.origin_url()
        stored, present, left, why = published.import_results(cache, jobs, source)
    except published.PublishedError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"from {source}: stored {stored} result(s) in {args.cache}, {present} were here already; left out {left} whose keys are "
          "not this checkout's (another version of a cell, a package or the worker)", file=sys.stderr)  # fmt: skip
    if why:
        print(f"note: {why}", file=sys.stderr)
    return 0


def cmd_ledger(args) -> int:
    from generator.load import content
    from generator.verify import rekey

    done = rekey.rekey(args.content, content.load(args.content), args.from_runner, dry_run=args.dry_run)
    for item in done:
        print(item.line())
    print(f"{'would re-key' if args.dry_run else 're-keyed'} {sum(item.rekeyed for item in done)} entries in {len(done)} file(s)")
    return 0


def cmd_check(args) -> int:
    from generator.bench import results as bench_results
    from generator.load import content, pages
    from generator.verify import ledger

    sheets = content.load(args.content)
    pages.load(args.content, sheets)
    bench_results.load_published(os.path.join(args.content, "benchmarks"))
    for folder in ("ledger", "versions"):  # the GPU ledgers and the older releases' runs: malformed is invalid
        ledger.load_all(os.path.join(args.content, folder))
    _enforce_rules(args.content, sheets, None)
    rows = sum(1 for sheet in sheets for _ in sheet.rows())
    print(f"{len(sheets)} sheet(s), {rows} row(s): the content is valid", file=sys.stderr)
    return 0


def _enforce_rules(content_dir: str, sheets, only) -> None:
    """The content rules beyond the schema (contrib/rules.py), for the rows in `only`: raise ContentInvalid."""
    from generator.contrib import rules

    found = rules.findings(content_dir, sheets, only)
    if found:
        raise ContentInvalid(found)


def cmd_new_row(args) -> int:
    from generator.contrib import newrow

    row_id, path, line = newrow.new_row(args.content, args.sheet, args.section, args.title, args.id)
    print(f"{path}:{line}: added row '{row_id}' with a placeholder cell per column", file=sys.stderr)
    print(f"fill it in, then run: make verify ROW={row_id}", file=sys.stderr)
    return 0


def cmd_coverage(args) -> int:
    from generator.contrib import coverage as coverage_module
    from generator.load import content
    from generator.verify.verification import Verification, gpu_runs

    sheets = content.load(args.content)
    verification = Verification(None, {}, *gpu_runs(sheets, os.path.join(args.content, "ledger")))
    print(coverage_module.report(sheets, verification))
    return 0


def cmd_serve(args) -> int:
    from generator.contrib import serve as serve_module

    serve_module.serve(_options(args), port=args.port)
    return 0


COMMANDS = {
    "build": cmd_build,
    "verify": cmd_verify,
    "check": cmd_check,
    "new-row": cmd_new_row,
    "coverage": cmd_coverage,
    "serve": cmd_serve,
    "cache": cmd_cache,
    "ledger": cmd_ledger,
    "mutate": cmd_mutate,
}
