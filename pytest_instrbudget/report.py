"""Rendering results: the terminal summary table and the ``--instrbudget-json`` document.

JSON schema (``version`` 2: function names demangled, their symbols beside them)::

    {
      "version": 2,
      "disabled": bool,                     # --instrbudget-disable: nothing measured (merge refuses it)
      "fingerprint": {"clang": str, "llvm": str, "target": str, "pipeline": str, "models": str,
                      "models.<name>": str},   # each model tests chose beyond the session's (models=)
      "models": [str, ...],
      "baseline": str,                      # path of the baseline file
      "root": str,                          # the project's directory (rootdir)
      "commit": str | null,                 # the git commit checked out there (null outside git)
      "collected": [str, ...],              # node ids of every test collected (before -k, -m, shards)
      "selected": [str, ...],               # those this run ran: a shard's part (python -m cbuild merge)
      "partial_files": [str, ...],          # files named with a node id on the command line
      "metric_models": {"<metric>": str},   # the model reporting each metric
      "tests": {
        "<node id>": {
          "nodeid": str,
          "budgeted": bool,                 # has a @pytest.mark.budget marker
          "status": str,                    # worst metric status (see below), or "not measured"
          "completed": bool,                # false when the body raised: not written to the baseline
          "outcome": str | null,            # pytest's: passed, failed, xfailed, xpassed, skipped, error
          "failure": str | null,            # the failure message, when the test failed on cost
          "metrics": {
            "<metric>": {
              "value": int, "limit": int | null, "baseline": int | null,
              "change_percent": float | null, "tolerance_percent": float,
              "status": "ok" | "new" | "improved" | "regressed" | "over limit" | "not comparable"
                        | "accepted"        # grew past its tolerance in an --instrbudget-update run
                        | "error",          # the test raised or a library's process died: partial counts
              "functions": {"<function>": int},  # exclusive cost per function (demangled name)
              "symbols": {"<function>": str},    # the symbol of each function whose name differs from it
              "regions": {"<region path>": int}, # inclusive cost between the markers
              "region_limits": {"<region path>": int},
              "lines": [["<function>", "<file>:<line>", int], ...],  # costliest source lines
              "inclusive": {"<function>": int}, "calls": {"<function>": int},  # with call tracking
              "outside_calls": {"<function>": int}  # calls of host library functions, not counted
            }
          },
          "unavailable": {                  # metrics the test's models could not measure (not in "metrics")
            "<metric>": {
              "model": str, "reason": str,
              "where": "<file>:<line>" | null,   # where the reason points, when in a source file
              "function": str | null,            # the function around it (demangled), when found
              "limit": int | null,               # the marker's limit, not checked
              "stop": int | null,                # the marker's cut-off (stop_at_...), not checked
              "baseline": int | null             # the baseline's value, kept as it was
            }
          },
          "region_problems": [str, ...]     # unbalanced markers, "file:line: ..."
        }
      }
    }
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cbuild.build.demangle import demangle, readable, readable_names
from cbuild.models.costs import line_label
from cbuild.report import texttable
from cbuild.report.flamegraph import flame_tree
from cbuild.report.html import render
from cbuild.report.markdown import code_span, table_code
from cbuild.report.order import display_order
from cbuild.report.shards import checkout_commit
from cbuild.report.update import changed_parameters
from pytest_instrbudget.marker import stop_keyword
from pytest_instrbudget.results import (
    ERROR,
    NOT_MEASURED,
    OK,
    OVER_LIMIT,
    REGRESSED,
    UNAVAILABLE,
    MetricResult,
    TestResult,
)
from pytest_instrbudget.session import BudgetSession, Outcome

#: Breakdowns ``--instrbudget-report`` prints.
REPORTS = ("functions", "lines", "regions")


def _fmt_change(change: float | None) -> str:
    return "" if change is None else f"{change:+.2f}%"


#: What pytest says of a test that qualifies its status: a test that was expected to fail, or was skipped.
EXPECTED_OUTCOMES = ("xfailed", "xpassed", "skipped")
#: What pytest says of a test that failed.
FAILED = ("failed", "error")


def _status(result: TestResult, outcomes: Mapping[str, tuple[str, str]] | None = None) -> str:
    """A test's status, with what qualifies it; ``outcomes`` are pytest's (:attr:`BudgetSession.outcomes`).

    A test that raised as expected (``xfailed``) or skipped itself part-way has partial counts:
    its status is that outcome, not an error."""
    status = result.status
    outcome = _outcome(outcomes, result.nodeid)
    expected = outcome in EXPECTED_OUTCOMES
    if expected and status == ERROR:
        status = str(outcome)
    if not result.budgeted and status in (REGRESSED, OVER_LIMIT):
        status += " (no budget)"
    if not result.completed and status != ERROR:  # over its limit, or xfailed, with partial counts
        status += " (partial)"
    if expected and not status.startswith(str(outcome)):
        status += f" ({outcome})"
    models = list(dict.fromkeys(m.model for m in result.unavailable))
    if models:
        status += f" ({', '.join(models)} unavailable)"
    return status


def notable(result: TestResult) -> bool:
    """Worth a row in the compact table: failed, changed against the baseline, new, in error, or with
    metrics unavailable."""
    return (
        bool(result.failure)
        or result.status != OK
        or bool(result.unavailable)
        or any(m.change not in (None, 0.0) for m in result.metrics)
    )


def _cell(m: MetricResult | None) -> str:
    """A metric's value in a table: empty when the test has no such metric."""
    if m is None:
        return ""
    if m.status == UNAVAILABLE:
        return UNAVAILABLE
    return "-" if m.no_value else f"{m.value:,}"


def _metric_names(results: Sequence[TestResult], *, measured: bool = False, order: Sequence[str] = ()) -> list[str]:
    """Every metric of the results (``measured``: only those with a value, not unavailable), in
    ``order`` (the session's, whichever tests ran), then in the order the models report them."""
    found = dict.fromkeys(m.metric for r in results for m in (r.measured if measured else r.metrics))
    return [name for name in order if name in found] + [name for name in found if name not in order]


#: Below this many characters for test names, the summary lists each test's metrics under its name.
NAME_ROOM = 24


def in_display_order(results: Iterable[TestResult]) -> list[TestResult]:
    """``results`` in :func:`display_order`, the order of every output."""
    return sorted(results, key=lambda r: display_order(r.nodeid))


def table_lines(
    results: Iterable[TestResult],
    *,
    width: int | None = None,
    show_all: bool = False,
    outcomes: Mapping[str, tuple[str, str]] | None = None,
    order: Sequence[str] = (),
) -> list[str]:
    """The summary table: one row per test, each metric's value and change, then the status;
    the metrics' columns in ``order`` (:attr:`BudgetSession.metric_order`) as far as it goes.

    Without ``show_all`` only :func:`notable` tests get a row, and a line counts the others.
    Names are never cut: within ``width`` a test name too long for its column goes on a line
    of its own above its row, and when the metric columns leave less than :data:`NAME_ROOM`
    characters for names, each test's metrics are listed under its name instead.
    """
    everything = in_display_order(results)
    shown = everything if show_all else [r for r in everything if notable(r)]
    metrics = _metric_names(everything, order=order)
    out: list[str] = []
    if shown:
        by_test = [{m.metric: m for m in r.metrics} for r in shown]
        # A change column only where some shown test has a change to show.
        changed = {name for row in by_test for name, m in row.items() if m.change not in (None, 0.0)}
        header = ["test"]
        for name in metrics:
            header += [name, "change"] if name in changed else [name]
        header.append("status")
        rows = []
        for result, row in zip(shown, by_test, strict=True):
            cells = [result.nodeid]
            for name in metrics:
                m = row.get(name)
                cells.append(_cell(m))
                if name in changed:
                    cells.append(_change_cell(m))
            cells.append(_status(result, outcomes))
            rows.append(cells)
        if width is None or texttable.width_without(header, rows, 0) + 2 + NAME_ROOM <= width:
            right = set(range(1, len(header) - 1))
            out += texttable.render(header, rows, right=right, width=width, flex=0)
        else:
            out += _listed_lines(shown, by_test, metrics, outcomes)
    hidden = len(everything) - len(shown)
    if hidden:
        out.append(f"{hidden} unchanged test(s) not listed (-v or --instrbudget-table=all lists them)")
    return out


def _outcome(outcomes: Mapping[str, tuple[str, str]] | None, nodeid: str) -> str | None:
    """pytest's outcome of a test, when known."""
    said = (outcomes or {}).get(nodeid)
    return said[0] if said is not None else None


def _change_cell(m: MetricResult | None) -> str:
    return "" if m is None or m.change in (None, 0.0) else _fmt_change(m.change)


def _listed_lines(
    shown: list[TestResult],
    by_test: list[dict[str, MetricResult]],
    metrics: list[str],
    outcomes: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """The summary for a terminal too narrow for a column per metric: each test's name and
    status, then one line per metric, aligned across tests."""
    per_test = [[(n, _cell(row[n]), _change_cell(row[n])) for n in metrics if n in row] for row in by_test]
    cells = [cell for rows in per_test for cell in rows]
    widths = texttable.widths_of(None, cells) if cells else [0, 0, 0]
    out: list[str] = []
    for result, rows in zip(shown, per_test, strict=True):
        out.append(f"{result.nodeid}: {_status(result, outcomes)}")
        out += [f"    {n:<{widths[0]}}  {v:>{widths[1]}}  {c:>{widths[2]}}".rstrip() for n, v, c in rows]
    return out


def baseline_notes(session: BudgetSession) -> list[str]:
    """Why the baseline's costs, or a model's among them, are not comparable with this session's."""
    lines: list[str] = []
    if session.baseline.exists and not session.comparable:
        differs = ", ".join(session.fingerprint_differences())
        lines.append(
            f"baseline {session.baseline.path} was made with another toolchain or other build settings "
            f"(differs in: {differs}); costs are not comparable"
            + (
                ""
                if session.run.update  # the advice is what this run does
                else " (rewrite it with --instrbudget-update, or keep another configuration's costs apart with "
                "--instrbudget-update --instrbudget-baseline=PATH)"
            )
        )
        if "libraries" in session.fingerprint_differences():
            recorded = session.baseline.fingerprint.get("libraries", "")
            if recorded.startswith("counted") and session.settings.build.count_libraries:
                lines.append(
                    "  the counted C library grew: printf, scanf and strtod's formatting and ctype are counted "
                    f"now (the baseline has: {recorded}); rewrite the baseline with --instrbudget-update"
                )
            else:
                lines.append(
                    "  count_libraries changed: with it the C library's and libc++'s string, memory, allocation, "
                    "sorting, conversion and formatting work is counted, without it only your own code; rewrite the "
                    "baseline with --instrbudget-update, or set count_libraries back to what the baseline was made with"
                )
        if "assertions" in session.fingerprint_differences():
            lines.append(
                "  assertions changed: with assertions = false NDEBUG is defined and assert checks cost nothing; "
                "rewrite the baseline with --instrbudget-update, or set assertions back to what it was made with"
            )
    for name, (recorded, now) in session.changed_models().items():
        lines.append(
            f"baseline {session.baseline.path} holds {name} costs made with other {name} parameters "
            f"({changed_parameters(recorded, now)}); they are not comparable (rewrite them with --instrbudget-update)"
        )
    return lines


def shown_path(path: Path, root: Path) -> Path:
    """``path`` relative to the project's directory where it lies in it, as a CI log shows it."""
    return path.relative_to(root) if path.is_relative_to(root) else path


def not_compared(session: BudgetSession) -> list[str]:
    """The budgeted tests the baseline could not be compared on, which fail the run (not in an update)."""
    if session.run.update:
        return []
    return [r.nodeid for r in in_display_order(list(session.results.values())) if r.uncompared]


def summary_lines(session: BudgetSession, outcome: Outcome) -> list[str]:
    """Everything the terminal summary prints after the table."""
    lines: list[str] = []
    results = list(session.results.values())
    problems = [(r.nodeid, p) for r in in_display_order(results) for p in r.region_problems]
    if problems:
        lines.append(f"{len(problems)} unbalanced region marker(s); their regions were not measured:")
        lines.extend(f"  {nodeid}: {p}" for nodeid, p in problems)
    lines.extend(baseline_notes(session))
    if not session.baseline.exists and not session.run.update and results:
        # A first run, or a CI job whose checkout lacks the file: said at the end, not in the header alone.
        lines.append(
            f"no baseline yet ({shown_path(session.baseline.path, session.settings.root)}): this run compared "
            f"nothing with one; record it with {session.run.update_command()} and commit it"
        )
    uncompared = not_compared(session)
    if uncompared:
        lines.append(f"{len(uncompared)} budgeted test(s) were not compared with the baseline, so the run fails:")
        lines += _indented(uncompared)
    lines.extend(unavailable_lines(results))
    lines.extend(left_out_lines(session))
    improved = [r.nodeid for r in in_display_order(results) if r.improved]
    if improved and not session.run.update:
        named = ", ".join(improved[:5]) + (" ..." if len(improved) > 5 else "")
        # --instrbudget-update records every completed test's costs, a failing one's too.
        failing = sum(1 for r in results if r.completed and r.failure is not None)
        # The command as the failures' "accept it with" gives it: this run's baseline and models.
        command = session.run.update_command()
        if failing:
            lines.append(
                f"{len(improved)} test(s) improved on the baseline: {named}; {command} would also "
                f"record the costs of the {failing} test(s) instrbudget failed here: run it on the improved "
                "tests alone"
            )
        else:
            lines.append(f"{len(improved)} test(s) improved on the baseline; record it with {command}: {named}")
    if session.baseline_note:  # why the baseline is rewritten, before what was written
        lines.append(session.baseline_note)
    if outcome.refused:
        lines.append(f"baseline not written: {outcome.refused}")
    lines.extend(f"error: {error}" for error in outcome.errors)
    if outcome.written:
        lines.append(
            f"baseline {session.baseline.path} written: {len(outcome.added)} added, "
            f"{len(outcome.changed)} changed, {len(outcome.pruned)} pruned"
        )
        if outcome.rewrite_note is not None:
            lines.append(f"  {outcome.rewrite_note}")
    if outcome.kept_damaged is not None:
        lines.append(
            f"the baseline could not be read, so it holds this run's tests only; its earlier entries are in "
            f"the unreadable file, kept as {outcome.kept_damaged}"
        )
    if outcome.not_written:
        lines.append(
            f"{len(outcome.not_written)} failing test(s) not written to the baseline: "
            + ", ".join(outcome.not_written[:5])
            + (" ..." if len(outcome.not_written) > 5 else "")
        )
    if session.cache_note:
        lines.append(session.cache_note)
    lines.extend(f"wrote {what} {path}" for what, path in outcome.reports)  # as pytest says of --junitxml
    unpruned = [n for n in outcome.stale if n not in outcome.pruned]
    if unpruned:
        lines.append(
            f"{len(unpruned)} baseline entr{'y' if len(unpruned) == 1 else 'ies'} for tests that no longer "
            f"exist (remove with --instrbudget-prune):"
        )
        lines.extend(f"  {n}" for n in unpruned)
    return lines


def unavailable_lines(results: Iterable[TestResult]) -> list[str]:
    """Per model, the tests whose metrics it could not measure: the reason, where it points, and
    the limits left unchecked."""
    by_model: dict[str, list[tuple[TestResult, list[MetricResult]]]] = {}
    for result in in_display_order(results):
        per: dict[str, list[MetricResult]] = {}
        for m in result.unavailable:
            per.setdefault(m.model, []).append(m)
        for model, metrics in per.items():
            by_model.setdefault(model, []).append((result, metrics))
    lines: list[str] = []
    for model, tests in sorted(by_model.items()):
        lines.append(
            f"{model} metrics unavailable in {len(tests)} test(s): not measured, their limits not checked "
            "and their baseline entries kept:"
        )
        for result, metrics in tests:
            first = metrics[0]
            lines.append(f"  {result.nodeid}: {first.unavailable}")
            if first.unavailable_where:
                function = first.unavailable_function
                lines.append(f"    at {first.unavailable_where}" + (f", in {readable(function)}" if function else ""))
            limits = [f"{m.keyword}={m.limit}" for m in metrics if m.limit is not None and m.keyword]
            limits += [f"{stop_keyword(m.keyword)}={m.stop}" for m in metrics if m.stop is not None and m.keyword]
            limits += [f"{m.metric} of region {path!r}" for m in metrics for path in sorted(m.region_limits)]
            if limits:
                lines.append(f"    not checked: {', '.join(limits)}")
    return lines


def left_out_lines(session: BudgetSession) -> list[str]:
    """Per model, the budgeted tests whose baseline entries of its metrics this run left
    uncompared: the run did not measure them (``--instrbudget-model``, a test's ``models=``),
    and the model could measure them (not unavailable). Said, not failed: leaving a model out
    is the user's choice, but a green run should not read as having compared them."""
    by_model: dict[str, dict[str, None]] = {}  # model -> its tests, in display order
    if not session.comparable:
        return []
    for r in in_display_order(session.results.values()):
        if not r.budgeted:
            continue
        seen = {m.metric for m in r.metrics}
        for metric in session.baseline.tests.get(r.nodeid, {}):
            model = session.metric_models.get(metric)
            if metric not in seen and model is not None:
                by_model.setdefault(model, {})[r.nodeid] = None
    lines = []
    for model, tests in sorted(by_model.items()):
        lines.append(f"{model} left out of this run: {len(tests)} budgeted test(s) not compared on it:")
        lines += _indented(list(tests))
    return lines


def _indented(nodeids: Sequence[str], shown: int = 5) -> list[str]:
    """The first ``shown`` of ``nodeids``, a line each, indented, then how many more there are."""
    more = [f"  and {len(nodeids) - shown} more"] if len(nodeids) > shown else []
    return [f"  {nodeid}" for nodeid in nodeids[:shown]] + more


def json_document(session: BudgetSession) -> dict[str, Any]:
    """The ``--instrbudget-json`` document."""
    fingerprint = session.fingerprint
    collected = sorted(session.collected)
    return {
        "version": 2,
        # --instrbudget-disable: nothing was measured and no budget checked (cbuild merge refuses it).
        "disabled": session.run.disable,
        "fingerprint": fingerprint,
        "models": [m.name for m in session.models],
        "baseline": str(session.baseline.path),
        "root": str(session.settings.root),
        "commit": checkout_commit(session.settings.root),
        "collected": collected,
        "selected": [n for n in collected if n not in session.deselected],
        "partial_files": sorted(session.partial_files),
        "metric_models": dict(sorted(session.metric_models.items())),
        "tests": {
            n: {**r.to_json(), "outcome": _outcome(session.outcomes, n)} for n, r in sorted(session.results.items())
        },
    }


def breakdown_lines(results: Iterable[TestResult], kind: str, top: int = 10, width: int | None = None) -> list[str]:
    """Per measured test and metric, its costliest functions, source lines or its regions.

    Within ``width``, source lines are shown relative to the directory they all lie in (named
    once), and a name longer than its column goes whole on a line of its own above its figures.
    """
    out: list[str] = []
    for result in in_display_order(results):
        block: list[str] = []
        for m in result.measured:
            if kind == "functions":
                block.extend(_function_rows(m.metric, m.value, m.functions, m.inclusive, m.calls, top, width))
                if (outside := m.outside_line()) is not None:
                    block.extend(texttable.wrap(outside, width, indent="    ", subsequent="      "))
                continue
            title = [f"  {m.metric}  (total {m.value:,})"]
            if kind == "lines":
                picked = m.lines[:top]
                labels = [line_label(where) for _, where, _ in picked]
                if width is not None:  # 26: the columns beside a label
                    folder, labels = texttable.fold_directory(labels, width - 26)
                    title += [f"    in {folder}"] if folder else []
                names = readable_names(f for f, _, _ in picked)
                rows = [(f"{label} ({names[f]})", v) for label, (f, _, v) in zip(labels, picked, strict=True)]
            else:
                rows = sorted(m.regions.items())[:top]
            if not rows:
                continue
            block += title
            cells = [[name, f"{v:,}", f"{100.0 * v / m.value if m.value else 0.0:5.1f}%"] for name, v in rows]
            block += texttable.render(None, cells, right={1, 2}, width=width, indent="    ")
        if block:
            out.append(result.nodeid)
            out.extend(block)
    if not out:
        out.append(f"no {kind} to show" + (" (no test passed a region marker)" if kind == "regions" else ""))
    return out


#: GitHub refuses a job step's summary over 1 MiB; the markdown summary stays under it.
MARKDOWN_LIMIT = 1024 * 1024 - 4096


def disabled_line(session: BudgetSession) -> str:
    """What a run with ``--instrbudget-disable`` did not do: said at its end and in its reports,
    since set in addopts it would pass a CI job without a word."""
    return (
        f"measuring disabled (--instrbudget-disable): {len(session.outcomes)} test(s) that build C code or have "
        "a budget were not measured, their budgets not checked"
    )


def markdown(session: BudgetSession, limit: int = MARKDOWN_LIMIT) -> str:
    """A markdown summary for a CI job page: what changed against the baseline, and failures."""
    if session.run.disable:  # not "0 test(s) measured ... No cost changed", which reads as a pass
        return f"## instrbudget\n\n{disabled_line(session)}.\n"
    return markdown_text(
        list(session.results.values()),
        limit,
        session.outcomes,
        order=session.metric_order,
        notes=[*baseline_notes(session), *_not_compared_note(session)],
    )


def _not_compared_note(session: BudgetSession) -> list[str]:
    uncompared = not_compared(session)
    if not uncompared:
        return []
    named = ", ".join(code_span(nodeid) for nodeid in uncompared[:5]) + (" ..." if len(uncompared) > 5 else "")
    return [f"{len(uncompared)} budgeted test(s) were not compared with the baseline, so the run fails: {named}"]


def markdown_text(
    results: list[TestResult],
    limit: int = MARKDOWN_LIMIT,
    outcomes: Mapping[str, tuple[str, str]] | None = None,
    *,
    order: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> str:
    """The markdown summary of ``results``: one table row per notable test, then for each
    failure its message with the functions that grew most and its costliest lines. ``notes``
    (why the baseline is not comparable) follow the headline.

    At most ``limit`` bytes of UTF-8: what does not fit is counted, not cut mid-way.
    """
    results = in_display_order(results)
    shown = [r for r in results if notable(r)]
    failed = [r for r in results if r.failure and r.status != NOT_MEASURED]
    improved = [r for r in results if r.improved and not r.failure]
    # Every measured test in one of the headline's counts: the other changes (and the tests failed
    # as not measured) by their status.
    over = {r.nodeid for r in failed}
    others = Counter(_status(r, outcomes) for r in shown if r.nodeid not in over and not r.improved)
    head = [
        "## instrbudget",
        "",
        f"{len(results)} test(s) measured, {len(failed)} over budget, {len(improved)} improved, "
        + "".join(f"{n} {status}, " for status, n in sorted(others.items()))
        + f"{len(results) - len(shown)} unchanged.",
        "",
        *(f"> {note.strip()}" for note in notes),
        *([""] if notes else []),
    ]
    body: list[str] = []
    size = sum(len(line.encode()) + 1 for line in head)
    reserve = 512  # for the closing note

    def fits(lines: list[str]) -> bool:
        nonlocal size
        more = sum(len(line.encode()) + 1 for line in lines)
        if size + more > limit - reserve:
            return False
        body.extend(lines)
        size += more
        return True

    left_out: list[str] = []
    if not shown:
        fits(["No cost changed against the baseline.", ""])
    else:
        metrics = _metric_names(shown, order=order)
        fits(["| test | " + " | ".join(metrics) + " | status |", "|---|" + "---:|" * len(metrics) + "---|"])
        for r in shown:
            by_name = {m.metric: m for m in r.metrics}
            cells = [_markdown_cell(by_name.get(name)) for name in metrics]
            if not fits([f"| {table_code(r.nodeid)} | " + " | ".join(cells) + f" | {_status(r, outcomes)} |"]):
                left_out.append(r.nodeid)
        fits([""])
    for r in failed:
        if r.nodeid in left_out or not fits(_markdown_failure(r)):
            left_out.append(r.nodeid)
    problems = [(r.nodeid, p) for r in results for p in r.region_problems]
    if problems and not fits(["Unbalanced region markers:", "", *(f"- {code_span(n)}: {p}" for n, p in problems), ""]):
        left_out.append("unbalanced region markers")
    missing = unavailable_lines(results)
    if missing and not fits(["Unavailable metrics:", "", "```text", *missing, "```", ""]):
        left_out.append("unavailable metrics")
    if left_out:
        body.append(
            f"*{len(set(left_out))} more item(s) not shown: the summary stays under GitHub's "
            f"{limit // 1024} KiB limit; --instrbudget-json or --instrbudget-html has everything.*"
        )
    return "\n".join(head + body) + "\n"


def _markdown_cell(m: MetricResult | None) -> str:
    if m is None or m.status == UNAVAILABLE or m.no_value:
        return _cell(m)
    change = "" if m.change in (None, 0.0) else f" ({_fmt_change(m.change)})"
    return f"{m.value:,}{change}"


def _markdown_failure(r: TestResult) -> list[str]:
    """A failed test's details: its message, the functions that grew, its costliest lines."""
    out = [f"<details><summary>{html.escape(r.nodeid)}</summary>", "", "```text", r.failure or "", "```", ""]
    for m in r.metrics:
        if m.status not in (REGRESSED, OVER_LIMIT):
            continue
        grown = m.function_deltas(5)
        if grown:
            out += [
                f"Functions that grew ({m.metric}):",
                "",
                "| function | baseline | now | change |",
                "|---|---:|---:|---:|",
            ]
            shown = readable_names([*(f for f, _, _ in grown), *m.functions, *m.baseline_functions])
            out += [f"| `{shown[f]}` | {old:,} | {new:,} | {new - old:+,} |" for f, old, new in grown]
            out.append("")
        if m.lines:
            out += [f"Costliest lines ({m.metric}):", "", "| line | function | cost |", "|---|---|---:|"]
            shown = readable_names(f for f, _, _ in m.lines[:5])
            out += [f"| {line_label(where)} | `{shown[f]}` | {v:,} |" for f, where, v in m.lines[:5]]
            out.append("")
    return [*out, "</details>", ""]


#: The HTML report's fields of a test that measured nothing (skipped before its body ran).
_UNMEASURED: dict[str, Any] = {
    "notable": False,
    "failure": None,
    "has_baseline": False,
    **{key: {} for key in ("metrics", "unavailable", "regions", "region_limits", "functions", "flames")},
}


def _no_flames(result: TestResult) -> str | None:
    """Why the report has no flame graph of ``result`` (None when it has one)."""
    if any(m.stacks for m in result.metrics):
        return None
    if not result.measured:
        return "none of its metrics was measured (see the unavailable metrics)"
    if not any(m.functions for m in result.measured):
        return "its models report no costs per function"
    return "its models report costs per function but no call paths"


def _function_rows(
    metric: str,
    total: int,
    exclusive: dict[str, int],
    inclusive: dict[str, int],
    calls: dict[str, int],
    top: int,
    width: int | None,
) -> list[str]:
    """Functions by exclusive cost, with inclusive cost and calls where the build reported calls.
    A metric with no exclusive costs (one a model measures per region and call, such as the
    heap model's allocations) shows ``-`` there, not zeros."""
    names = sorted(set(exclusive) | set(inclusive), key=lambda f: (-exclusive.get(f, 0), -inclusive.get(f, 0), f))
    names = names[:top]
    if not names:
        return []
    shown = readable_names(names)  # as failure messages name them: a libc++ name is 2,000 characters
    rows = [
        [
            shown[f],
            f"{exclusive.get(f, 0):,}" if exclusive else "-",
            f"{inclusive[f]:,}" if f in inclusive else "-",
            f"{calls[f]:,}" if f in calls else "-",
        ]
        for f in names
    ]
    header = ["function", "exclusive", "inclusive", "calls"]
    table = texttable.render(header, rows, right={1, 2, 3}, width=width, indent="    ", rule=False)
    return [f"  {metric}  (total {total:,})", *table]


def html_report(session: BudgetSession) -> str:
    """The ``--instrbudget-html`` page (see :mod:`cbuild.report.html.page`)."""
    title = f"instrbudget report: {disabled_line(session)}" if session.run.disable else "instrbudget report"
    return html_page(
        list(session.results.values()),
        session.fingerprint,
        str(session.baseline.path),
        outcomes=session.outcomes,
        title=title,
        order=session.metric_order,
    )


def html_page(
    results: list[TestResult],
    fingerprint: dict[str, str],
    baseline: str,
    top: int = 15,
    outcomes: Mapping[str, tuple[str, str]] | None = None,
    title: str = "instrbudget report",
    order: Sequence[str] = (),
) -> str:
    """The HTML report of ``results``: every test in the table with pytest's outcome, and for
    each its metrics, regions, costliest functions and the flame graph of its call paths
    (against the baseline where it has one). Tests that build or have a budget but measured
    nothing (skipped before their body ran) get a row that says so."""
    outcomes = outcomes or {}
    results = in_display_order(results)
    tests: list[dict[str, Any]] = []
    for r in results:
        changed = notable(r)
        has_baseline = any(m.baseline is not None for m in r.metrics)
        outcome, reason = outcomes.get(r.nodeid, (None, ""))
        tests.append(
            {
                "nodeid": r.nodeid,
                "status": _status(r, outcomes),
                # pytest's verdict where known: an unbudgeted test that regressed passed, an xfail did not fail.
                "failing": outcome in FAILED if outcome is not None else r.failure is not None,
                "outcome": outcome,
                "reason": reason,
                "notable": changed,
                "failure": r.failure,
                "has_baseline": has_baseline,
                "metrics": {
                    m.metric: {
                        "value": None if m.no_value else m.value,  # shown as "-"
                        "limit": m.limit,
                        "baseline": m.baseline,
                        "change": m.change,  # rounded once, by the page, to the terminal's two places
                        "status": m.status,
                    }
                    for m in r.measured
                },
                "unavailable": {m.metric: m.unavailable_json() for m in r.unavailable},
                "regions": {m.metric: m.regions for m in r.metrics if m.regions},
                "region_limits": {m.metric: m.region_limits for m in r.metrics if m.region_limits},
                "functions": {
                    m.metric: [
                        [demangle(f), v, m.baseline_functions.get(f) if m.baseline is not None else None]
                        for f, v in sorted(m.functions.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
                    ]
                    for m in r.metrics
                    if m.functions
                },
                "flames": {
                    m.metric: flame_tree(m.stacks, m.functions, None if m.baseline is None else m.baseline_functions)
                    for m in r.metrics
                    if m.stacks
                },
                "no_flames": _no_flames(r),
            }
        )
    measured = {r.nodeid for r in results}
    for nodeid, (outcome, reason) in sorted(outcomes.items()):
        if nodeid in measured:
            continue
        why = f"{outcome}: {reason}" if reason else outcome
        tests.append(
            {
                **_UNMEASURED,
                "nodeid": nodeid,
                "status": outcome if outcome in EXPECTED_OUTCOMES else f"{outcome}, nothing measured",
                "failing": outcome in FAILED,
                "outcome": outcome,
                "reason": reason,
                "no_flames": f"it measured nothing: no library or program of it ran ({why})",
            }
        )
    tests.sort(key=lambda t: display_order(str(t["nodeid"])))
    fingerprint_text = ", ".join(f"{k} {v}" for k, v in sorted(fingerprint.items()) if k != "models")
    data = {
        "tests": tests,
        "metrics": _metric_names(results, measured=True, order=order),  # the session's, as the terminal's
        "baseline": baseline,
        "fingerprint": fingerprint,
        "fingerprint_text": fingerprint_text,
    }
    return render("results", title, data)
