"""pytest hooks of pytest-instrbudget: each hands its work to the session, the meter or the report."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cbuild.build.builder import Builder
from cbuild.build.progress import progress_lines, stderr_width
from cbuild.config import ConfigError, load_settings, parse_percent, table_elsewhere, unread_table
from cbuild.errors import (
    BuildDescriptionWarning,
    CBuildError,
    CompilerWarning,
    ReadOnlyArgumentWarning,
    describe_os_error,
)
from cbuild.models import CostModel, default_registry
from cbuild.models.costs import Cost
from cbuild.report.outputs import first_shared, is_stream, write_output
from cbuild.report.snapshot import DEFAULT_PATH
from cbuild.run.hosts import HostPool, guard_library
from cbuild.run.stops import CodeStopped, Stop, needs_cutoff_build
from pytest_instrbudget import profiles, report
from pytest_instrbudget.baseline import Baseline, BaselineError
from pytest_instrbudget.fixture import CBuild
from pytest_instrbudget.marker import MARKER_HELP, Budget, budget_like, misspelt_marker, registered_markers
from pytest_instrbudget.measure import Meter, measure
from pytest_instrbudget.report import REPORTS
from pytest_instrbudget.results import TestResult
from pytest_instrbudget.session import BudgetSession, Outcome, RunOptions

SESSION = pytest.StashKey[BudgetSession]()
OUTCOME = pytest.StashKey[Outcome]()
METER = pytest.StashKey[Meter]()
BUDGET = pytest.StashKey["Budget | None"]()
#: Why a test's marker is not valid in this run (an error if the test is selected).
BUDGET_ERROR = pytest.StashKey[str | None]()
#: The test's body completed (whatever its budget then said).
BODY_PASSED = pytest.StashKey[bool]()
#: The user interrupted the run (Ctrl-C), not pytest or pytest-xdist stopping it early (-x, errors).
CTRL_C = pytest.StashKey[bool]()
#: The item's markers when its budget was read (:func:`_budget_marks`).
BUDGET_MARKS = pytest.StashKey[str]()
#: The test's metrics against its limits and the baseline.
RESULT = pytest.StashKey[TestResult]()
HOSTS = pytest.StashKey[HostPool]()
WORKER_KEY = "instrbudget"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("instrbudget", "deterministic C/C++ performance budgets")
    group.addoption(
        "--instrbudget-update", action="store_true", help="write new and changed costs to the baseline file"
    )
    group.addoption(
        "--instrbudget-prune", action="store_true", help="remove baseline entries of tests that no longer exist"
    )
    group.addoption(
        "--instrbudget-tolerance",
        metavar="PCT",
        help="allowed growth over the baseline, in percent (default: config, else 0)",
    )
    group.addoption(
        "--instrbudget-baseline",
        metavar="PATH",
        help="baseline file to compare with and update (default: config 'baseline', else .instrbudget/baseline.json)",
    )
    group.addoption("--instrbudget-json", metavar="PATH", help="write all results to a JSON file")
    group.addoption(
        "--instrbudget-disable", action="store_true", help="build without instrumentation; measure and check nothing"
    )
    group.addoption(
        "--instrbudget-model",
        action="append",
        default=[],
        metavar="NAME",
        help="cost model to use (repeatable; overrides `models` in [tool.instrbudget])",
    )
    group.addoption(
        "--instrbudget-report",
        action="append",
        default=[],
        metavar="functions|lines|regions",
        help="print a breakdown for each measured test in the summary (repeatable, or comma-separated)",
    )
    group.addoption(
        "--instrbudget-profile-dir",
        metavar="DIR",
        help="write each measured test's call-path profile: speedscope JSON and collapsed stacks "
        "(flamegraph.pl, inferno)",
    )
    group.addoption(
        "--instrbudget-html",
        metavar="PATH",
        help="write a self-contained HTML report: sortable table, charts, a flame graph of each measured test",
    )
    group.addoption(
        "--instrbudget-table",
        choices=("changed", "all"),
        default=None,
        help="rows of the summary table: tests that failed, changed or are new (default), or all (also with -v)",
    )
    group.addoption(
        "--instrbudget-markdown",
        metavar="PATH",
        help="write a markdown summary of changes against the baseline (e.g. $GITHUB_STEP_SUMMARY)",
    )


def _run_options(config: pytest.Config) -> RunOptions:
    tol = config.getoption("instrbudget_tolerance")

    def output(option: str) -> Path | None:
        # Relative to where pytest was started, as pytest's own path options are: not to the
        # directory a test may have changed to when its profile is written.
        value: str | None = config.getoption(option)
        if value is not None and not value.strip():  # --instrbudget-markdown=$GITHUB_STEP_SUMMARY, unset
            flag = "--" + option.replace("_", "-")
            raise ConfigError(
                f"{flag}: expected a file path, got an empty one (an unset variable, such as $GITHUB_STEP_SUMMARY "
                "outside GitHub Actions?); nothing would be written"
            )
        if not value:
            return None
        # ~ and $VARIABLES as pytest expands them in --junitxml (where the shell left them: addopts).
        expanded = os.path.expandvars(value)
        unset = re.search(r"\$(\w+|\{\w+\})", expanded)
        if unset is not None:  # it would write a file of that name
            flag = "--" + option.replace("_", "-")
            raise ConfigError(f"{flag}={value}: the variable {unset.group(1).strip('{}')} is not set")
        return Path(config.invocation_params.dir / os.path.expanduser(expanded))

    disabled = config.getoption("instrbudget_disable")
    for option in ("update", "prune"):
        if disabled and config.getoption(f"instrbudget_{option}"):
            raise ConfigError(
                f"--instrbudget-disable measures nothing, so --instrbudget-{option} would leave the baseline as it "
                "is: give one of them"
            )
    return RunOptions(
        update=config.getoption("instrbudget_update"),
        prune=config.getoption("instrbudget_prune"),
        disable=config.getoption("instrbudget_disable"),
        tolerance=None if tol is None else parse_percent(tol, where="--instrbudget-tolerance"),
        json_path=output("instrbudget_json"),
        models=tuple(config.getoption("instrbudget_model")),
        reports=_reports(config.getoption("instrbudget_report")),
        markdown_path=output("instrbudget_markdown"),
        profile_dir=output("instrbudget_profile_dir"),
        html_path=output("instrbudget_html"),
        table=config.getoption("instrbudget_table") or ("all" if config.option.verbose > 0 else "changed"),
        baseline=config.getoption("instrbudget_baseline"),
    )


def _reports(values: list[str]) -> tuple[str, ...]:
    kinds = [v.strip() for value in values for v in value.split(",") if v.strip()]
    for kind in kinds:
        if kind not in REPORTS:
            raise ConfigError(f"--instrbudget-report: unknown report {kind!r}; accepted: {', '.join(REPORTS)}")
    return tuple(dict.fromkeys(kinds))


def _progress(config: pytest.Config) -> Callable[[str], None]:
    """Show long-running build steps at once, past output capturing."""

    def emit(message: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            if reporter is not None and not hasattr(config, "workerinput"):
                # Between a test file's name and its tests' letters (a run without -v), the lines
                # go below the name, and the name is written again after them, so that the letters
                # and the file's progress stay on one line.
                open_line = reporter.currentfspath
                for line in progress_lines(message, config.get_terminal_writer().fullwidth):
                    reporter.write_line(line)
                if isinstance(open_line, Path):
                    reporter.write(f"{os.path.relpath(open_line, reporter.startpath)} ")
                    reporter.currentfspath = open_line
            else:
                # An xdist worker's own stderr is the terminal (or the CI log) pytest was started
                # from, whose current line holds the tests' progress letters: start a line of its own.
                lines = progress_lines(message, stderr_width())
                print("\n" + "\n".join(lines), file=sys.stderr, flush=True)

    return emit


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.pluginmanager.register(_CtrlC(config), "instrbudget-ctrl-c")
    try:
        registry = default_registry()
        run = _run_options(config)
        elsewhere = table_elsewhere(config.inipath, config.rootpath)
        if elsewhere is not None:
            raise ConfigError(elsewhere)
        settings = load_settings(config.rootpath, known_models=registry.names)
        chosen = config.getoption("instrbudget_baseline")
        if chosen is not None:
            if not chosen.strip():
                raise ConfigError("--instrbudget-baseline: expected a file path, got an empty one")
            # Relative to where pytest was started, as pytest's own path options are.
            settings = dataclasses.replace(settings, baseline=config.invocation_params.dir / chosen)
            from_root = config.rootpath / chosen
            if not settings.baseline.exists() and from_root.exists() and from_root != settings.baseline:
                # In addopts, run from a subdirectory: an update would write a second baseline there.
                raise ConfigError(
                    f"--instrbudget-baseline={chosen}: no such file ({settings.baseline}), but there is "
                    f"{from_root}: the path is taken from the directory pytest was started in, as pytest's "
                    "own are; run pytest from the rootdir, or give the path absolute or in [tool.instrbudget] "
                    "baseline (relative to pyproject.toml)"
                )
            if not run.update and not settings.baseline.exists():  # a misspelt path compared nothing
                raise ConfigError(
                    f"--instrbudget-baseline={chosen}: no such file ({settings.baseline}); "
                    "--instrbudget-update records one there"
                )
        elif (
            not (run.update or run.disable or config.option.collectonly or config.option.help)
            and settings.baseline != settings.root / DEFAULT_PATH
            and not settings.baseline.exists()
        ):
            # A misspelt baseline = "..." compared nothing and reported every test new.
            shown = report.shown_path(settings.baseline, settings.root)
            raise ConfigError(
                f"[tool.instrbudget] baseline = {str(shown)!r}: no such file ({settings.baseline}); "
                "--instrbudget-update records one there"
            )
        _refuse_shared_outputs(run, settings.baseline, config.getoption("xmlpath", None))
        for name in run.models:
            registry.model_class(name)
        note = None
        try:
            baseline = Baseline.load(settings.baseline)
        except BaselineError as exc:
            if not run.update:
                raise
            baseline = Baseline(settings.baseline)
            note = f"{exc.args[0].split(';')[0]}; --instrbudget-update rewrites it from this run"
        builder = Builder(cache_dir=settings.cache_dir, clang=settings.clang, progress=_progress(config))
        session = BudgetSession(settings, run, registry, baseline, builder)
    except (ConfigError, BaselineError, CBuildError) as exc:
        raise pytest.UsageError(f"instrbudget: {exc}") from None
    session.baseline_note = note
    session.unread_table = unread_table(config.rootpath)
    session.partial_files = _partial_files(config)
    config.stash[SESSION] = session
    config.stash[HOSTS] = HostPool(lambda: guard_library(builder.toolchain, builder.cache))


def _refuse_shared_outputs(run: RunOptions, baseline: Path, junit: str | None = None) -> None:
    """Each output a file of its own: a JSON report written over the baseline would replace it
    (the next run then finds no baseline it can read), and of two outputs at one path the last
    written would be all that is left. Devices and FIFOs (``/dev/stdout``, whatever it is
    redirected to) take any number."""
    outputs = [
        ("the baseline", baseline),
        ("--instrbudget-json", run.json_path),
        ("--instrbudget-html", run.html_path),
        ("--instrbudget-markdown", run.markdown_path),
        ("--instrbudget-profile-dir", run.profile_dir),
        ("--junitxml", Path(os.path.expanduser(os.path.expandvars(junit))) if junit else None),
    ]
    shared = first_shared(outputs)
    if shared is not None:
        earlier, what, path = shared
        raise ConfigError(
            f"{what} and {earlier} are the same file ({path}): "
            f"{'it would replace the baseline' if earlier == 'the baseline' else 'one would replace the other'}; "
            "give each output a path of its own"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    hosts = config.stash.get(HOSTS, None)
    if hosts is not None:
        hosts.close()


def _partial_files(config: pytest.Config) -> set[str]:
    """Test files given with a node id (``file.py::test``), as node-id paths."""
    out = set()
    for arg in config.args:
        if "::" not in arg:
            continue
        path = config.invocation_params.dir / arg.split("::", 1)[0]
        # As given and as resolved, each against the rootdir alike: a test path through a symlinked
        # checkout has a rootdir that pytest does not resolve, and one resolved alone lies outside it.
        for file, root in (
            (Path(os.path.normpath(path)), Path(os.path.normpath(config.rootpath))),
            (path.resolve(), config.rootpath.resolve()),
        ):
            if file.is_relative_to(root):
                out.add(file.relative_to(root).as_posix())
    return out


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    session = config.stash.get(SESSION, None)
    if session is None or session.builder is None:
        return None
    state = "disabled" if session.run.disable else ", ".join(m.name for m in session.models)
    entries = f"{len(session.baseline.tests)} entries" if session.baseline.exists else "none yet"
    path = report.shown_path(session.baseline.path, config.rootpath)
    # A line each, so that a CI log's 80 columns hold them where the baseline's path is short.
    return [
        f"instrbudget: models {state}",
        f"instrbudget: {session.builder.toolchain.summary}",
        f"instrbudget: baseline {path} ({entries})",
    ]


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: deselected tests still exist
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    session = config.stash[SESSION]
    session.collected.update(item.nodeid for item in items)
    registered = registered_markers(config)
    for item in items:
        _read_budget(item, session, registered)


def _read_budget(item: pytest.Item, session: BudgetSession, registered: frozenset[str]) -> None:
    """The item's budget (``BUDGET``), or why its markers are not valid (``BUDGET_ERROR``)."""
    item.stash[BUDGET_MARKS] = _budget_marks(item, session)
    item.stash[BUDGET_ERROR] = None
    misspelt = misspelt_marker(item, registered, session.all_keywords)
    if misspelt is not None:
        item.stash[BUDGET_ERROR] = misspelt
        return
    try:
        budget = item.stash[BUDGET] = Budget.from_item(
            item, session.models, session.all_keywords, choose=session.choose
        )
        session.check_cutoff(item.nodeid, budget)
    except ConfigError as exc:
        item.stash[BUDGET_ERROR] = str(exc)  # an error if the test is selected (after deselection)


def _budget_marks(item: pytest.Item, session: BudgetSession) -> str:
    """What the item's markers say, as far as its budget goes (a misspelt one too), to notice
    those a conftest hook or a fixture adds later."""
    marks = [m for m in item.iter_markers() if budget_like(m, session.all_keywords)]
    return repr([(m.name, m.args, sorted(m.kwargs.items(), key=str)) for m in marks])


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")  # after -k/-m deselect
def pytest_collection_modifyitems_selected(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A marker that is not valid in this run is an error where its test is to run: a test that
    ``-k`` or ``-m`` leaves out (a marker of a model this run's ``--instrbudget-model`` leaves out,
    say) does not stop the others. All of them are said at once, so one run shows what to fix.
    Markers a conftest's ``pytest_collection_modifyitems`` added since they were first read count."""
    session = config.stash[SESSION]
    registered = registered_markers(config)
    for item in items:
        if item.stash.get(BUDGET_MARKS, None) != _budget_marks(item, session):
            _read_budget(item, session, registered)
    errors = [error for item in items if (error := item.stash.get(BUDGET_ERROR, None)) is not None]
    if errors and hasattr(config, "workerinput"):
        # A pytest-xdist worker's usage error reaches the controller as an INTERNALERROR without
        # its message: each such test fails with it instead (pytest_runtest_setup).
        return
    if len(errors) == 1:
        raise pytest.UsageError(f"instrbudget: {errors[0]}")
    if errors:
        listed = "\n".join(f"  {error}" for error in errors)
        raise pytest.UsageError(f"instrbudget: {len(errors)} tests have budget markers that are not valid:\n{listed}")


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    """Tests collected but not run (``-k``, ``-m``, a shard of a split suite): the JSON document
    says which tests this run covered."""
    if items:
        session = items[0].config.stash.get(SESSION, None)
        if session is not None:
            session.deselected.update(item.nodeid for item in items)


def _test_models(item: pytest.Item, session: BudgetSession) -> list[CostModel]:
    """The item's cost models (the session's for items collected before the plugin saw them)."""
    return session.test_models(item.stash.get(BUDGET, None))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test with a budget, or one that builds C code, where this run leaves the project's settings
    and baseline out (a rootdir whose pyproject.toml has no table under one above that has it, or a
    table between the rootdir and the test) fails saying so (a usage error would be lost under
    pytest-xdist, whose workers collect)."""
    session = item.config.stash.get(SESSION, None)
    error = item.stash.get(BUDGET_ERROR, None)
    if error is not None:  # in a pytest-xdist worker, which says it per test (above)
        pytest.fail(f"instrbudget: {error}", pytrace=False)
    if session is None or not (
        item.get_closest_marker("budget") is not None or "cbuild" in getattr(item, "fixturenames", ())
    ):
        return
    unread = session.unread_settings(item.path.parent)
    if unread is not None:
        pytest.fail(f"instrbudget: {unread}", pytrace=False)


@pytest.fixture
def cbuild(request: pytest.FixtureRequest) -> Iterator[CBuild]:
    """Build C/C++ sources (relative to the test file) into measured libraries and programs."""
    session = request.config.stash[SESSION]
    assert session.builder is not None
    unread = session.unread_settings(request.node.path.parent)
    if unread is not None:  # asked for while the test runs (request.getfixturevalue)
        pytest.fail(f"instrbudget: {unread}", pytrace=False)
    meter = request.node.stash.setdefault(METER, Meter())
    meter.fixture = True
    budget = request.node.stash.get(BUDGET, None)
    models = _test_models(request.node, session)
    meter.set_limits(*session.cutoffs(request.node.nodeid, budget))
    builds = CBuild(
        builder=session.builder,
        options=session.settings.build_options(
            instrument=not session.run.disable,
            calls=session.run.wants_calls,
            cutoff=needs_cutoff_build(meter.limits, models),
        ),
        meter=meter,
        models=models,
        registry=session.registry,
        base_dir=request.path.parent,
        hosts=request.config.stash[HOSTS],
        timeout=budget.timeout if budget is not None and budget.timeout is not None else session.settings.timeout,
    )
    try:
        yield builds
    finally:
        builds.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    session = item.config.stash[SESSION]
    if session.run.disable:
        return (yield)
    if BUDGET_MARKS in item.stash and item.stash[BUDGET_MARKS] != _budget_marks(item, session):
        # A fixture's request.node.add_marker(...): the budget was read, and the build set up, before it.
        pytest.fail(
            "instrbudget: a marker was added to the test while it was set up (by a fixture); its budget "
            "was read as the tests were collected, and would not be checked. Add it with a decorator, "
            "pytestmark, or a conftest's pytest_collection_modifyitems",
            pytrace=False,
        )
    # Set up already where the test names the fixture; here for one that may ask for it while it
    # runs (``request.getfixturevalue("cbuild")``), which then measures from its set-up.
    meter = item.stash.setdefault(METER, Meter())
    meter.start()
    completed = False
    stopped: Stop | None = None  # the test's code stopped at its cut-off (and the test did not catch it)
    try:
        outcome = yield
        completed = True
    except CodeStopped as exc:
        stopped = meter.whole_stop(exc.stop)
        raise
    finally:
        # Measured even when the test fails, so its cost shows in the summary.
        counts, lost = meter.stop(completed)
        # Counts a crashed library process took with it leave the measurement incomplete.
        completed = completed and not lost
        # A test that finished having run none of its builds' code measured nothing: its limits
        # were not checked (its row, as one that raised keeps, says what it counted).
        anything = meter.used and (meter.ran or not completed)
        # Such a test with checks fails (below): its cost of nothing is not written to the baseline.
        unmade = None if anything else _unmade_checks(item, session)
        completed = completed and unmade is None
        result = None
        unchecked: list[str] = []
        if meter.used or stopped is not None:
            models = _test_models(item, session)
            measured = measure(models, counts)
            costs = measured.costs
            if stopped is not None:  # the count at the stop: a stopped run or library process counted nothing since
                metric = stopped.metric
                costs[metric] = dataclasses.replace(costs.get(metric, Cost(metric, 0)), total=stopped.count)
                measured.unavailable.pop(metric, None)
            budget = item.stash.get(BUDGET, None)
            problems = sorted({str(p) for c in counts if c.profile is not None for p in c.profile.problems})
            result = session.evaluate(
                item.nodeid,
                budget,
                costs,
                models=models,
                unavailable=measured.unavailable,
                completed=completed,
                region_problems=problems,
                stopped=stopped.metric if stopped is not None else None,
            )
            item.stash[RESULT] = result
            item.user_properties.extend(junit_properties(result))
            # A metric no build measured is unavailable, and said so with the test's policy.
            unchecked = [m for m in meter.unchecked_limits() if m not in measured.unavailable]
            if session.run.profile_dir is not None:
                try:
                    profiles.write(session.run.profile_dir, item.nodeid, costs)
                except OSError as exc:  # said at the end; the test's own outcome stands
                    where = exc.filename or session.run.profile_dir
                    session.output_errors.append(
                        f"cannot write the profile of {item.nodeid} to {where}: {describe_os_error(exc)}"
                    )
    # Reached only where the body completed: a failure from here on is the budget's, not the test's.
    item.stash[BODY_PASSED] = True
    if unchecked:
        pytest.fail(
            f"instrbudget: the cut-off on {', '.join(unchecked)} was not checked: no build of the "
            "test keeps a clock of it for code to stop at (cut-offs stop at the IR instruction total or at the "
            "clock of a model whose dynamic phase keeps one)"
            + (f"\n{result.failure}" if result is not None and result.failure else ""),
            pytrace=False,
        )
    if result is not None and result.failure:
        pytest.fail(result.failure, pytrace=False)
    if lost and _unmade_checks(item, session) is not None:
        # The test caught a library's death or a program run's end (a timeout, a crash, a cut-off
        # it swallowed): what the code would have counted is unknown, so the budget was not checked.
        pytest.fail(
            f"instrbudget: the test passed, but its counts are incomplete ({_lost_reasons(lost)}): the test caught "
            "what ended a library's process or a program run, and what it would have counted is unknown, so "
            "@pytest.mark.budget was not checked. Test the failure in a test without a budget.",
            pytrace=False,
        )
    if unmade is not None:
        why = (
            "ran no measured code (no library call or program run through the cbuild fixture while it ran)"
            if meter.fixture
            else "does not use the cbuild fixture"
        )
        pytest.fail(f"instrbudget: nothing measured: the test {why}, so {unmade}", pytrace=False)
    return outcome


def _lost_reasons(lost: Sequence[str]) -> str:
    """``a.c, b.c: die() called _exit(3)`` for the libraries of one process that ended together."""
    grouped: dict[str, list[str]] = {}
    for text in lost:
        name, _, reason = text.partition(": ")
        grouped.setdefault(reason, []).append(name)
    return "; ".join(f"{', '.join(names)}: {reason}" for reason, names in grouped.items())


def _limited_metrics(item: pytest.Item) -> list[str]:
    """The metrics the test's budget limits (or cuts off, in a region or in all)."""
    budget = item.stash.get(BUDGET, None)
    if budget is None:
        return []
    return sorted({*budget.limits, *budget.stops, *(m for per in budget.regions.values() for m in per)})


def _unmade_checks(item: pytest.Item, session: BudgetSession) -> str | None:
    """What a budgeted test that measured nothing did not check, or None where it asked for nothing
    that needed a measurement: the limits its marker sets, else its comparison with a cost the
    baseline holds for it (a test that stopped calling its code would read as improved to 0)."""
    limited = _limited_metrics(item)
    if limited:
        return f"the limits @pytest.mark.budget sets on {', '.join(limited)} were not checked"
    if item.stash.get(BUDGET, None) is None:
        return None
    # Entries a comparison would have read: of a baseline made alike, with a cost.
    held = sorted(
        (m, c.total)
        for m, c in session.baseline.tests.get(item.nodeid, {}).items()
        if c.total and session.metric_comparable(m)
    )
    if not held:
        return None
    shown = ", ".join(f"{metric} {total:,}" for metric, total in held[:3]) + (" ..." if len(held) > 3 else "")
    return (
        f"its comparison with the baseline, which holds {shown} for it, did not happen (a test that no longer "
        "runs C code on purpose needs no @pytest.mark.budget)"
    )


def junit_properties(result: TestResult) -> list[tuple[str, object]]:
    """The test's metrics as properties of its report (``--junitxml`` writes them as
    ``<property>`` elements): ``instrbudget.<metric>`` and its ``.limit``, ``.baseline`` and
    ``.status``; an unavailable metric has only its status and ``.unavailable``, the reason."""
    out: list[tuple[str, object]] = []
    for metric in result.metrics:
        name = f"instrbudget.{metric.metric}"
        if metric.unavailable is None:
            out.append((name, metric.value))
        if metric.limit is not None:
            out.append((f"{name}.limit", metric.limit))
        if metric.baseline is not None:
            out.append((f"{name}.baseline", metric.baseline))
        out.append((f"{name}.status", metric.status))
        if metric.unavailable is not None:
            out.append((f"{name}.unavailable", metric.unavailable))
    return out


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    rep = yield
    if (
        call.when == "call"
        and getattr(rep, "wasxfail", None) is not None
        and item.stash.get(BODY_PASSED, False)
        and call.excinfo is not None
        and call.excinfo.errisinstance(pytest.fail.Exception)
        and not _expects_failed(item)
    ):
        # The body passed and the budget failed it: an xfail marker expects the test's own failure
        # (where its body passes, a strict one fails the run as XPASS), not its budget's.
        del rep.wasxfail
        rep.outcome = "failed"
    result = item.stash.get(RESULT, None)
    if call.when == "call" and result is not None and hasattr(item.config, "workerinput"):
        # Travels with the report to the xdist controller, so a worker that dies later loses nothing.
        rep.instrbudget_result = json.dumps(result.to_wire())
    session = item.config.stash.get(SESSION, None)
    said = outcome_of(rep)
    if (
        said is not None
        and session is not None
        # A test that builds, or has a budget (every collected test has BUDGET, None without a marker).
        and (_builds(item) or item.stash.get(BUDGET, None) is not None)
    ):
        session.outcomes[item.nodeid] = said
        if hasattr(item.config, "workerinput"):
            rep.instrbudget_outcome = list(said)
    # The engine's errors say what and where (clang's or the linker's diagnostic, the crashed
    # function, the model): the test's line and the message, no traceback through the engine.
    # So do its warnings a run made errors (-W error::cbuild.errors.CompilerWarning).
    if call.excinfo is not None and call.excinfo.errisinstance(_ENGINE_ERRORS) and rep.failed:
        shown = "".join(text for title, text in rep.sections if title.startswith("Captured stderr"))
        rep.longrepr = _short_failure(item, call.excinfo, shown if _stderr_reported(item.config) else "")
    return rep


def _expects_failed(item: pytest.Item) -> bool:
    """Whether the test's xfail marker names ``pytest.fail.Exception`` in ``raises``: it expects
    the failure its budget gives (a known overrun)."""
    mark = item.get_closest_marker("xfail")
    raises = mark.kwargs.get("raises") if mark is not None else None
    expected = raises if isinstance(raises, tuple) else (raises,)
    return any(isinstance(e, type) and issubclass(pytest.fail.Exception, e) for e in expected)


#: Raised by the engine with a message that says what and where (a warning, where ``-W error`` made it one).
_ENGINE_ERRORS = (CBuildError, CompilerWarning, ReadOnlyArgumentWarning, BuildDescriptionWarning)


def _builds(item: pytest.Item) -> bool:
    """Whether the test names the cbuild fixture or had it set up while it ran."""
    meter = item.stash.get(METER, None)
    return "cbuild" in getattr(item, "fixturenames", ()) or (meter is not None and meter.fixture)


def outcome_of(rep: pytest.TestReport) -> tuple[str, str] | None:
    """What pytest says of a test after this phase of it, with its reason: ``passed``, ``failed``,
    ``skipped``, ``xfailed``, ``xpassed`` or ``error`` (its set-up or tear-down failed); None when
    the phase says nothing new (a set-up or tear-down that passed)."""
    wasxfail = getattr(rep, "wasxfail", None)
    if rep.when == "call":
        if wasxfail is not None:
            return ("xfailed" if rep.skipped else "xpassed"), wasxfail
        if rep.skipped:
            return "skipped", _skip_reason(rep)
        return ("failed" if rep.failed else "passed"), ""
    if rep.skipped:  # set-up: a skip marker, pytest.skip() in a fixture, or xfail(run=False)
        return ("xfailed", wasxfail) if wasxfail is not None else ("skipped", _skip_reason(rep))
    return ("error", f"{rep.when} failed") if rep.failed else None


def _skip_reason(rep: pytest.TestReport) -> str:
    longrepr = rep.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return reason.removeprefix("Skipped: ")


def _short_failure(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException], shown: str = "") -> str:
    """``file:line: Type: message`` with the innermost line of the test's own file. A message that
    quotes the end of a process's stderr leaves the quote out where it is in the stderr every report
    of the failure ``shown``."""
    where = item.nodeid
    path = getattr(item, "path", None)
    for entry in reversed(excinfo.traceback):
        if path is not None and Path(entry.path) == path:
            where = f"{item.location[0]}:{entry.lineno + 1}"
            break
    error = excinfo.value
    if isinstance(error, CodeStopped):
        session = item.config.stash[SESSION]
        meter = item.stash.get(METER, None)
        labels = meter.limit_labels if meter is not None else {}
        # The run's own limit was what the test had left: counted for the whole test.
        stop = meter.whole_stop(error.stop) if meter is not None else error.stop
        models = _test_models(item, session)
        units = {m.name: m.unit for model in models for m in model.metrics}
        notes = [note for model in models if (note := model.describe_stop(stop.results.get(model.name, ())))]
        text = stop.describe(units.get(stop.metric), labels.get(stop.metric), notes)
        return f"{where}: {error.what}: {text}"
    message = str(error)
    echoed = getattr(error, "echoed", "")
    if echoed and message.endswith(echoed) and _quoted_lines(echoed) in shown:
        message = message.removesuffix(echoed)
    return f"{where}: {excinfo.typename}: {message}"


def _stderr_reported(config: pytest.Config) -> bool:
    """Whether every report of a failure shows its captured stderr: the terminal's (``--show-capture``)
    and a JUnit XML file's (``junit_logging``)."""
    if config.getoption("showcapture", "all") not in ("all", "stderr"):
        return False
    junit = config.getoption("xmlpath", None)
    return not junit or config.getini("junit_logging") in ("system-err", "out-err", "all")


def _quoted_lines(echoed: str) -> str:
    """The lines a message's stderr quote holds, without its heading."""
    return echoed.split("\n", 2)[-1]


class _CtrlC:
    """Notes in the config's stash that the user interrupted the run (Ctrl-C): KeyboardInterrupt
    itself, where pytest's collection errors and pytest-xdist's -x raise subclasses of it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if excinfo.type is KeyboardInterrupt:
            self.config.stash[CTRL_C] = True


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    budget = config.stash.get(SESSION, None)
    if budget is None:
        return
    if hasattr(config, "workeroutput"):
        config.workeroutput[WORKER_KEY] = json.dumps(
            {
                "results": [r.to_wire() for r in budget.results.values()],
                "collected": sorted(budget.collected),
                "deselected": sorted(budget.deselected),
                "errors": budget.output_errors,
                "cache": [budget.builder.cache.hits, budget.builder.cache.builds] if budget.builder else [{}, {}],
            }
        )
        return
    if config.getoption("lf", False):  # a file with failures was collected with its failed tests alone
        budget.partial_files.update(nodeid.split("::", 1)[0] for nodeid in budget.collected)
    outcome = budget.finish(interrupted=config.stash.get(CTRL_C, False))
    config.stash[OUTCOME] = outcome
    if not budget.run.disable:
        budget.keep_cache()
    outcome.errors[:0] = budget.output_errors
    if budget.run.json_path is not None:
        text = json.dumps(report.json_document(budget), indent=2, sort_keys=True) + "\n"
        _write_output(outcome, "the JSON report", budget.run.json_path, text, config=config)
    if budget.run.html_path is not None:
        _write_output(outcome, "the HTML report", budget.run.html_path, report.html_report(budget), config=config)
    if budget.run.profile_dir is not None and budget.run.profile_dir.is_dir():  # each test's, as it ended
        outcome.reports.append(("the call-path profiles in", Path(os.path.abspath(budget.run.profile_dir))))
    if budget.run.markdown_path is not None:
        # Appended: $GITHUB_STEP_SUMMARY collects what every command of a CI step writes.
        markdown = report.markdown(budget)
        _write_output(outcome, "the markdown summary", budget.run.markdown_path, markdown, append=True, config=config)
    # An update or prune the baseline refused failed: a CI job that asked for it must not go green.
    # So did a budgeted test's comparison with a baseline of another toolchain or other models.
    if (outcome.errors or outcome.refused or report.not_compared(budget)) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _write_output(
    outcome: Outcome, what: str, path: Path, text: str, *, append: bool = False, config: pytest.Config | None = None
) -> None:
    reporter = config.pluginmanager.getplugin("terminalreporter") if config is not None else None
    if reporter is not None and _is_stdout(path):
        reporter.write_line("")  # ends the progress line: the document starts a line of its own
    try:
        write_output(path, text.encode(), append=append)
    except OSError as exc:
        outcome.errors.append(f"cannot write {what} {path}: {describe_os_error(exc)}")
        return
    if not is_stream(path):
        outcome.reports.append((what, Path(os.path.abspath(path))))


def _is_stdout(path: Path) -> bool:
    """Whether ``path`` is the file pytest's own output goes to (``/dev/stdout``, ``/dev/fd/1``)."""
    try:
        here, there = os.stat(path), os.fstat(1)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """xdist controller: record a worker's result and the test's outcome as soon as its test ends."""
    node = getattr(report, "node", None)  # the worker the report came from
    budget = node.config.stash.get(SESSION, None) if node is not None else None
    if budget is None:
        return
    wire = getattr(report, "instrbudget_result", None)
    if wire is not None:
        result = TestResult.from_wire(json.loads(wire))
        budget.results[result.nodeid] = result
    said = getattr(report, "instrbudget_outcome", None)
    if said is not None:
        budget.outcomes[report.nodeid] = (said[0], said[1])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge what a worker measured."""
    budget = node.config.stash.get(SESSION, None)
    data = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if budget is None or data is None:
        return
    doc = json.loads(data)
    budget.collected.update(doc["collected"])
    budget.deselected.update(doc.get("deselected", []))
    for table, theirs in zip((budget.cache_hits, budget.cache_builds), doc.get("cache", [{}, {}]), strict=True):
        for kind, n in theirs.items():
            table[kind] = table.get(kind, 0) + n
    budget.output_errors.extend(doc.get("errors", []))
    for wire in doc["results"]:
        result = TestResult.from_wire(wire)
        budget.results[result.nodeid] = result


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    budget = config.stash.get(SESSION, None)
    if budget is None:
        return
    outcome = config.stash.get(OUTCOME, Outcome())
    if budget.run.disable:  # nothing measured; an output it could not write still says why the run failed
        if budget.outcomes:  # set in addopts, it would pass a CI job without a word at the end
            terminalreporter.write_line(f"instrbudget: {report.disabled_line(budget)}")
        for error in outcome.errors:
            terminalreporter.write_line(f"instrbudget: error: {error}")
        return
    if budget.results:
        terminalreporter.ensure_newline()  # ends the progress line, so the section's lines follow its heading
        terminalreporter.section("instrbudget")
        width = config.get_terminal_writer().fullwidth
        for line in report.table_lines(
            budget.results.values(),
            width=width,
            show_all=budget.run.table == "all",
            outcomes=budget.outcomes,
            order=budget.metric_order,
        ):
            terminalreporter.write_line(line)
        for kind in budget.run.reports:
            terminalreporter.section(f"instrbudget {kind}", sep="-")
            for line in report.breakdown_lines(budget.results.values(), kind, width=width):
                terminalreporter.write_line(line)
    for line in report.summary_lines(budget, outcome):
        terminalreporter.write_line(f"instrbudget: {line}")
