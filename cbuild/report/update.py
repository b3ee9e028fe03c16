"""What a run writes into a baseline: the rules of ``--instrbudget-update`` and ``--instrbudget-prune``.

One function, :func:`apply`, decides the new entries and fingerprint from the baseline as it is
and a run's measured costs. The pytest plugin calls it at the end of a session;
``python -m cbuild baseline update`` calls it with the results of a run's merged shards
(:mod:`cbuild.report.shards`), so both write the same file from the same results.

* An updated test's entry is replaced by what it measured; a metric its models could not
  measure keeps its old entry; a test whose body failed is not written.
* A baseline made with another toolchain or other session models is replaced as a whole, and
  only by a run that measured every test it holds (or with prune).
* Models that tests chose beyond the session's are recorded as ``models.NAME`` with their
  parameters; entries measured with other parameters are dropped with prune, else the write
  is refused.
* Prune removes entries of tests that no longer exist (:func:`stale`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cbuild.build import cpu
from cbuild.errors import CBuildError
from cbuild.models.costs import Cost
from cbuild.report.order import display_order
from cbuild.report.snapshot import Snapshot, differing_keys

#: Fingerprint key prefix describing a model that tests chose (marker ``models=``) beyond the session's.
MODEL_KEY = "models."

#: The fingerprint's ``libraries``: whether the C library's work is in the counts (count_libraries).
LIBRARIES = {True: "counted C library with formatting and libc++", False: "host C library, uncounted"}


@dataclass(frozen=True)
class Measured:
    """One test's results as the baseline sees them."""

    #: False when the test body raised: its partial costs are not written.
    completed: bool
    #: Metric -> what was measured.
    costs: dict[str, Cost]
    #: Metrics its models could not measure.
    unavailable: tuple[str, ...] = ()


@dataclass
class Update:
    """What :func:`apply` decided."""

    tests: dict[str, dict[str, Cost]] = field(default_factory=dict)
    fingerprint: dict[str, str] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    not_written: list[str] = field(default_factory=list)
    #: Why nothing may be written (the baseline is left as it is), or None.
    refused: str | None = None
    #: Where the whole baseline is rewritten for another toolchain or other session models: what
    #: differs (``models: ... in the baseline, ... now``), else None.
    rewritten: str | None = None
    #: The cost models whose entries a rewrite drops (the session no longer measures them).
    dropped_models: list[str] = field(default_factory=list)
    #: The entries a rewrite leaves out, other than pruned ones (tests this run did not complete).
    dropped: list[str] = field(default_factory=list)
    #: Whether the file must be written.
    write: bool = False


def rewrite_note(done: Update) -> str | None:
    """What a rewrite of the whole baseline did beyond its counts (what differs, the models whose
    costs it dropped), said after them; None where the baseline was not rewritten so."""
    if done.rewritten is None:
        return None
    models = ", ".join(done.dropped_models)
    return (
        f"rewritten as a whole for another toolchain or other models ({done.rewritten})"
        + (f"; the costs of {models}, which this run did not measure, are no longer in it" if models else "")
        + (
            f"; {len(done.dropped)} entries of tests this run did not measure in full are no longer in it: "
            + ", ".join(done.dropped[:5])
            + (" ..." if len(done.dropped) > 5 else "")
            if done.dropped
            else ""
        )
    )


def session_part(fingerprint: Mapping[str, str]) -> dict[str, str]:
    """A fingerprint without the models tests chose beyond the session's."""
    return {k: v for k, v in fingerprint.items() if not k.startswith(MODEL_KEY)}


def recorded(fingerprint: Mapping[str, str], session: Mapping[str, str]) -> dict[str, str]:
    """A baseline's session fingerprint with the fields older baselines lack filled in as they
    were; ``session`` is the fingerprint it is compared with."""
    old = session_part(fingerprint)
    # Baselines from before cost models were configurable measured ir-count alone.
    old.setdefault("models", "ir-count version=1")
    # Baselines from before the canonical CPU: counts of code that asks no CPU questions.
    if "cpu" in session:
        old.setdefault("cpu", cpu.DEFAULT_CPU)
    # Baselines from before the counted C library counted the user's code alone.
    old.setdefault("libraries", LIBRARIES[False])
    # Baselines from before the key: zig's driver defined NDEBUG at the default -O2.
    old.setdefault("assertions", "off (NDEBUG)")
    return old


#: Where a model's description (``zkvm version=2 flags=['-O1', '-g'] ...``) begins its next ``key=``:
#: values are Python literals and may hold spaces.
_PARAMETER = re.compile(r" (?=[\w.-]+=)")
#: Between the session's models in the fingerprint's ``models``.
_MODELS_APART = re.compile("; ")


def _split_outside_quotes(text: str, separator: re.Pattern[str]) -> list[str]:
    """``text`` split where ``separator`` matches outside a quoted string (a parameter's value is a
    Python literal: ``label='a; b'`` holds both separators)."""
    parts, start, quote, i = [], 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif (m := separator.match(text, i)) is not None and m.end() > i:
            parts.append(text[start:i])
            start = i = m.end()
            continue
        i += 1
    parts.append(text[start:])
    return parts


def changed_parameters(old: str, new: str, *, was: str = "in the baseline", now: str = "now") -> str:
    """``po2: 20 in the baseline, 18 now``: the parameters that differ between two descriptions of
    a model (``zkvm version=2 po2=20 ...``), or both descriptions where no parameter tells them apart."""
    before, after = (
        dict(part.split("=", 1) for part in _split_outside_quotes(text, _PARAMETER)[1:] if "=" in part)
        for text in (old, new)
    )
    return _changes(before, after, was, now) or f"{old} {was}, {new} {now}"


def _changes(before: Mapping[str, str], after: Mapping[str, str], was: str, now: str) -> str:
    """``key: old in the baseline, new now`` for each key whose value differs, ``; ``-separated."""
    return "; ".join(
        f"{key}: {before.get(key, '(none)')} {was}, {after.get(key, '(none)')} {now}"
        for key in differing_keys(dict(before), dict(after))
    )


def matches(fingerprint: Mapping[str, str], session: Mapping[str, str]) -> bool:
    """Whether a baseline's fingerprint is the session's (models chosen beyond it compare per metric)."""
    return recorded(fingerprint, session) == dict(session)


def builds_match(fingerprint: Mapping[str, str], session: Mapping[str, str]) -> bool:
    """Whether a baseline was made with the session's toolchain and build settings (clang, target,
    C library, assertions, CPU): its costs then compare metric by metric, each where its model's
    parameters are the ones the baseline recorded (:func:`recorded_models`)."""
    return {k: v for k, v in recorded(fingerprint, session).items() if k != "models"} == {
        k: v for k, v in session.items() if k != "models"
    }


def recorded_models(fingerprint: Mapping[str, str]) -> dict[str, str]:
    """Each cost model a baseline's entries were measured with -> its description
    (``zkvm version=2 po2=20 ...``): the session's models (``models``) and those tests chose
    beyond them (``models.NAME``)."""
    out = {}
    for description in _split_outside_quotes(fingerprint.get("models", "ir-count version=1"), _MODELS_APART):
        if description:
            out[description.split(" ", 1)[0]] = description
    out.update({k.removeprefix(MODEL_KEY): v for k, v in fingerprint.items() if k.startswith(MODEL_KEY)})
    return out


def stale(
    entries: Iterable[str],
    *,
    collected: Collection[str],
    measured: Collection[str],
    partial: Collection[str],
    root: Path,
) -> list[str]:
    """Entries whose test no longer exists: its file (under ``root``) is gone, or was collected
    without it (files in ``partial`` were collected only in part)."""
    files = {n.split("::", 1)[0] for n in collected}
    out = []
    for nodeid in entries:
        if nodeid in collected or nodeid in measured:
            continue
        file_part = nodeid.split("::", 1)[0]
        if not (root / file_part).exists() or (file_part not in partial and file_part in files):
            out.append(nodeid)
    return sorted(out, key=display_order)


def apply(
    path: Path,
    base: Snapshot | None,
    results: Mapping[str, Measured],
    *,
    session: Mapping[str, str],
    update: bool,
    prune: bool,
    stale_entries: Collection[str],
    metric_models: Mapping[str, str],
    session_models: Collection[str],
    describe: Callable[[str], str],
) -> Update:
    """The baseline at ``path`` (``base``, None when it does not exist) after a run that measured
    ``results`` with the session fingerprint ``session``; ``describe(name)`` gives a model's
    ``models.NAME`` value (raising :class:`CBuildError` when it cannot be configured)."""
    out = Update()
    old_tests = base.tests if base is not None else {}
    tests = dict(old_tests)
    kept = {k: v for k, v in base.fingerprint.items() if k.startswith(MODEL_KEY)} if base is not None else {}
    if base is not None and not matches(base.fingerprint, session):
        if not update:
            # Pruning alone writes nothing this run measured: the entries stay with the configuration
            # they were measured with, less those of tests that no longer exist.
            for nodeid in stale_entries:
                if tests.pop(nodeid, None) is not None:
                    out.pruned.append(nodeid)
            out.tests, out.fingerprint = dict(sorted(tests.items())), dict(base.fingerprint)
            out.write = tests != old_tests
            return out
        kept = {}
        missing = sorted(set(tests) - set(results))
        if missing and not prune:
            differs = _changes(recorded(base.fingerprint, session), session, "in the baseline", "now")
            out.refused = (
                f"baseline {path} was made with another toolchain or other models ({differs}) and "
                f"{len(missing)} of its entries were not measured in this run; a configuration tried once "
                "(--instrbudget-model) keeps a baseline of its own with --instrbudget-baseline=PATH; to "
                f"rewrite this one, run the whole suite, or add --instrbudget-prune to drop the {len(missing)} entries "
                "not measured (tests that still exist then have no entry: their next run reads them as new)"
            )
            return out
        tests = {}
        out.rewritten = _changes(recorded(base.fingerprint, session), session, "in the baseline", "now")
    if update:
        for nodeid, result in sorted(results.items(), key=lambda item: display_order(item[0])):
            if not result.completed:
                out.not_written.append(nodeid)
                continue
            new = dict(result.costs)
            # An unavailable metric keeps its entry: it was not measured, so there is nothing to replace it.
            old = tests.get(nodeid, {})
            new.update({metric: old[metric] for metric in result.unavailable if metric in old})
            # Added or changed against the file as it was, a rewrite's too.
            if nodeid not in old_tests:
                out.added.append(nodeid)
            elif old_tests[nodeid] != new:
                out.changed.append(nodeid)
            tests[nodeid] = new
    if prune:
        for nodeid in stale_entries:
            # A rewrite started from nothing: an entry the file had is pruned all the same.
            if tests.pop(nodeid, None) is not None or nodeid in old_tests:
                out.pruned.append(nodeid)
    fingerprint = dict(session)
    written = {(n, metric) for n, r in results.items() if r.completed and update for metric in r.costs}
    refused = _other_models(path, tests, kept, fingerprint, written, prune, metric_models, session_models, describe)
    if refused is not None:
        out.refused = refused
        return out
    if out.rewritten is not None:
        # Entries of tests that ran but did not complete, or did not run: the rewrite leaves them out.
        out.dropped = sorted(set(old_tests) - set(tests) - set(out.pruned), key=display_order)
        models = [
            {metric_models.get(m, m) for entry in entries.values() for m in entry} for entries in (old_tests, tests)
        ]
        out.dropped_models = sorted(models[0] - models[1])
    out.tests, out.fingerprint = dict(sorted(tests.items())), fingerprint
    changed = tests != old_tests or fingerprint != (base.fingerprint if base is not None else {})
    out.write = changed if base is not None else bool(tests)
    return out


def _other_models(
    path: Path,
    tests: dict[str, dict[str, Cost]],
    kept: Mapping[str, str],
    fingerprint: dict[str, str],
    written: set[tuple[str, str]],
    prune: bool,
    metric_models: Mapping[str, str],
    session_models: Collection[str],
    describe: Callable[[str], str],
) -> str | None:
    """Add to ``fingerprint`` each model tests chose beyond the session's whose metrics ``tests``
    hold; a model whose parameters changed keeps no entry measured with the old ones: those
    entries are dropped with prune, else the write is refused (the reason is returned)."""

    def used() -> list[str]:
        names = {metric_models.get(metric) for entry in tests.values() for metric in entry}
        return sorted(n for n in names if n is not None and n not in session_models)

    described: dict[str, str] = {}
    for name in used():
        try:
            described[name] = current = describe(name)
        except CBuildError as exc:  # its [tool.instrbudget.<name>] table is invalid
            return f"baseline {path} holds costs of the cost model {name}, which cannot be configured: {exc}"
        old = kept.get(MODEL_KEY + name, current)
        left = [
            (nodeid, metric)
            for nodeid, entry in tests.items()
            for metric in entry
            if metric_models.get(metric) == name and (nodeid, metric) not in written
        ]
        if old != current and left:
            if not prune:
                return (
                    f"baseline {path} holds costs of the cost model {name} made with other parameters "
                    f"({changed_parameters(old, current)}) and {len(left)} of them were not measured in this run; "
                    "run those tests, or add --instrbudget-prune to drop them"
                )
            for nodeid, metric in left:
                tests[nodeid] = {k: v for k, v in tests[nodeid].items() if k != metric}
                if not tests[nodeid]:
                    del tests[nodeid]
    for name in used():
        fingerprint[MODEL_KEY + name] = described[name]
    return None
