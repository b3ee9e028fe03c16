"""Rendering results: the terminal summary table and the ``--instrbudget-json`` document.

JSON schema (``version`` 1)::

    {
      "version": 1,
      "fingerprint": {"clang": str, "llvm": str, "target": str, "pipeline": str, "models": str},
      "models": [str, ...],
      "baseline": str,                      # path of the baseline file
      "tests": {
        "<node id>": {
          "nodeid": str,
          "budgeted": bool,                 # has a @pytest.mark.budget marker
          "status": str,                    # worst metric status (see below)
          "failure": str | null,            # the failure message, when the test failed on cost
          "metrics": {
            "<metric>": {
              "value": int, "limit": int | null, "baseline": int | null,
              "change_percent": float | null, "tolerance_percent": float,
              "status": "ok" | "new" | "improved" | "regressed" | "over limit" | "not comparable"
                        | "error",          # the test raised or a library's process died: partial counts
              "functions": {"<function>": int},  # exclusive cost per function
              "regions": {"<region path>": int}, # inclusive cost between the markers
              "region_limits": {"<region path>": int},
              "lines": [["<function>", "<file>:<line>", int], ...],  # costliest source lines
              "inclusive": {"<function>": int}, "calls": {"<function>": int}  # with call tracking
            }
          },
          "region_problems": [str, ...]     # unbalanced markers, "file:line: ..."
        }
      }
    }
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cbuild.costs import line_label
from cbuild.demangle import demangle
from pytest_instrbudget.results import ERROR, IMPROVED, NEW, NOT_COMPARABLE, OVER_LIMIT, REGRESSED, TestResult
from pytest_instrbudget.session import BudgetSession, Outcome

#: Breakdowns ``--instrbudget-report`` prints.
REPORTS = ("functions", "lines", "regions")


def _fmt_change(change: float | None) -> str:
    return "" if change is None else f"{change:+.2f}%"


def table_lines(results: Iterable[TestResult]) -> list[str]:
    """The summary table: test, metric, value, limit, baseline, change, status."""
    header = ("test", "metric", "value", "limit", "baseline", "change", "status")
    rows: list[tuple[str, ...]] = []
    for result in sorted(results, key=lambda r: r.nodeid):
        for m in result.metrics:
            status = m.status
            if not result.budgeted and status in (REGRESSED, OVER_LIMIT):
                status += " (no budget)"
            if not result.completed and status != ERROR:  # over its limit even with partial counts
                status += " (partial)"
            rows.append(
                (
                    result.nodeid,
                    m.metric,
                    "-" if status == ERROR and not m.value else str(m.value),
                    "" if m.limit is None else str(m.limit),
                    "" if m.baseline is None else str(m.baseline),
                    _fmt_change(m.change),
                    status,
                )
            )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = {2, 3, 4, 5}

    def fmt(row: tuple[str, ...]) -> str:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "  ".join(cells).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)]


def summary_lines(session: BudgetSession, outcome: Outcome) -> list[str]:
    """Everything the terminal summary prints after the table."""
    lines: list[str] = []
    results = list(session.results.values())
    problems = [(r.nodeid, p) for r in sorted(results, key=lambda r: r.nodeid) for p in r.region_problems]
    if problems:
        lines.append(f"{len(problems)} unbalanced region marker(s); their regions were not measured:")
        lines.extend(f"  {nodeid}: {p}" for nodeid, p in problems)
    if session.baseline.exists and not session.comparable:
        old, new = session.baseline.fingerprint, session.fingerprint
        differs = ", ".join(k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k))
        lines.append(
            f"baseline {session.baseline.path} was made with another toolchain or other models "
            f"(differs in: {differs}); costs are not comparable (rewrite it with --instrbudget-update)"
        )
    improved = [r.nodeid for r in results if r.improved]
    if improved and not session.run.update:
        lines.append(
            f"{len(improved)} test(s) improved on the baseline; record it with --instrbudget-update: "
            + ", ".join(improved[:5])
            + (" ..." if len(improved) > 5 else "")
        )
    if outcome.refused:
        lines.append(f"baseline not written: {outcome.refused}")
    lines.extend(f"error: {error}" for error in outcome.errors)
    if outcome.written:
        lines.append(
            f"baseline {session.baseline.path} written: {len(outcome.added)} added, "
            f"{len(outcome.changed)} changed, {len(outcome.pruned)} pruned"
        )
    if outcome.not_written:
        lines.append(
            f"{len(outcome.not_written)} failing test(s) not written to the baseline: "
            + ", ".join(outcome.not_written[:5])
            + (" ..." if len(outcome.not_written) > 5 else "")
        )
    if session.baseline_note:
        lines.append(session.baseline_note)
    unpruned = [n for n in outcome.stale if n not in outcome.pruned]
    if unpruned:
        lines.append(
            f"{len(unpruned)} baseline entr{'y' if len(unpruned) == 1 else 'ies'} for tests that no longer "
            f"exist (remove with --instrbudget-prune):"
        )
        lines.extend(f"  {n}" for n in unpruned)
    return lines


def json_document(session: BudgetSession) -> dict[str, Any]:
    """The ``--instrbudget-json`` document."""
    fingerprint = session.fingerprint
    return {
        "version": 1,
        "fingerprint": fingerprint,
        "models": [m.name for m in session.models],
        "baseline": str(session.baseline.path),
        "tests": {n: r.to_json() for n, r in sorted(session.results.items())},
    }


def breakdown_lines(results: Iterable[TestResult], kind: str, top: int = 10) -> list[str]:
    """Per measured test and metric, its costliest functions, source lines or its regions."""
    out: list[str] = []
    for result in sorted(results, key=lambda r: r.nodeid):
        block: list[str] = []
        for m in result.metrics:
            if kind == "functions":
                block.extend(_function_rows(m.metric, m.value, m.functions, m.inclusive, m.calls, top))
                continue
            elif kind == "lines":
                rows = [(f"{line_label(where)}  ({demangle(f)})", v) for f, where, v in m.lines]
            else:
                rows = sorted(m.regions.items())
            rows = rows[:top]
            if not rows:
                continue
            block.append(f"  {m.metric}  (total {m.value})")
            width = max(len(name) for name, _ in rows)
            for name, value in rows:
                share = 100.0 * value / m.value if m.value else 0.0
                block.append(f"    {name:<{width}}  {value:>12}  {share:5.1f}%")
        if block:
            out.append(result.nodeid)
            out.extend(block)
    if not out:
        out.append(f"no {kind} to show" + (" (no test passed a region marker)" if kind == "regions" else ""))
    return out


def markdown(session: BudgetSession) -> str:
    """A markdown summary for a CI job page: what changed against the baseline, and failures."""
    results = sorted(session.results.values(), key=lambda r: r.nodeid)
    rows = [
        (r, m)
        for r in results
        for m in r.metrics
        if m.status in (REGRESSED, OVER_LIMIT, IMPROVED, NEW, NOT_COMPARABLE, ERROR) or m.change not in (None, 0.0)
    ]
    failed = [r for r in results if r.failure]
    lines = ["## instrbudget", ""]
    lines.append(
        f"{len(results)} test(s) measured, {len(failed)} over budget, "
        f"{sum(1 for r, m in rows if m.status == IMPROVED and r.improved)} metric(s) improved."
    )
    lines.append("")
    if rows:
        lines += ["| test | metric | baseline | value | change | status |", "|---|---|---:|---:|---:|---|"]
        for r, m in rows:
            base = "" if m.baseline is None else f"{m.baseline:,}"
            lines.append(f"| `{r.nodeid}` | {m.metric} | {base} | {m.value:,} | {_fmt_change(m.change)} | {m.status} |")
        lines.append("")
    else:
        lines += ["No cost changed against the baseline.", ""]
    for r in failed:
        lines += [f"<details><summary>{r.nodeid}</summary>", "", "```text", r.failure or "", "```", "</details>", ""]
    problems = [(r.nodeid, p) for r in results for p in r.region_problems]
    if problems:
        lines += ["Unbalanced region markers:", ""]
        lines += [f"- `{nodeid}`: {p}" for nodeid, p in problems]
        lines.append("")
    return "\n".join(lines)


def _function_rows(
    metric: str, total: int, exclusive: dict[str, int], inclusive: dict[str, int], calls: dict[str, int], top: int
) -> list[str]:
    """Functions by exclusive cost, with inclusive cost and calls where the build reported calls."""
    names = sorted(set(exclusive) | set(inclusive), key=lambda f: (-exclusive.get(f, 0), -inclusive.get(f, 0), f))
    names = names[:top]
    if not names:
        return []
    shown = {f: demangle(f) for f in names}
    width = max(len(s) for s in shown.values())
    out = [
        f"  {metric}  (total {total})",
        f"    {'function':<{width}}  {'exclusive':>12}  {'inclusive':>12}  {'calls':>9}",
    ]
    for f in names:
        incl = str(inclusive[f]) if f in inclusive else "-"
        count = str(calls[f]) if f in calls else "-"
        out.append(f"    {shown[f]:<{width}}  {exclusive.get(f, 0):>12}  {incl:>12}  {count:>9}")
    return out
