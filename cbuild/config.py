"""The ``[tool.instrbudget]`` table of pyproject.toml, validated key by key.

The pytest plugin and ``python -m cbuild`` (``warm``, ``cache``) read a project's settings here,
so both build what the project configured.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cbuild.build.cpu import CPU_LEVELS
from cbuild.build.eviction import DEFAULT_MAX_SIZE, parse_size
from cbuild.build.options import OPT_LEVELS, BuildOptions
from cbuild.errors import CBuildError, did_you_mean
from cbuild.report.snapshot import DEFAULT_PATH


class ConfigError(CBuildError):
    """A configuration value is wrong; the message names the key and what is accepted."""


def parse_percent(value: object, *, where: str) -> float:
    """A tolerance: a number of percent (``5``, ``2.5``) or a string ``"5%"``."""
    if isinstance(value, bool):
        raise ConfigError(f'{where}: expected a percentage such as 5 or "5%", got {value!r}')
    if isinstance(value, str):
        text = value.strip()
        number = text[:-1] if text.endswith("%") else text
        try:
            value = float(number)
        except ValueError:
            raise ConfigError(f'{where}: expected a percentage such as 5 or "5%", got {text!r}') from None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ConfigError(f'{where}: expected a non-negative percentage such as 5 or "5%", got {value!r}')
    return float(value)


def _strings(value: object, key: str, expected: str = "a list of strings") -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.instrbudget] {key}: expected {expected}, got {value!r}")
    return tuple(value)


def _defines(value: object) -> tuple[str, ...]:
    if isinstance(value, dict):
        out = []
        for name, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ConfigError(f"[tool.instrbudget] defines.{name}: expected a string or number, got {v!r}")
            out.append(f"{name}={v}")
        return tuple(out)
    return _strings(value, "defines", 'a list of NAME or NAME=VALUE strings, or a table such as { NAME = "VALUE" }')


@dataclass(frozen=True)
class Settings:
    """Everything the plugin reads from pyproject.toml, with defaults."""

    root: Path
    #: opt_level, cflags, cxxflags, include_dirs, defines, ldflags.
    build: BuildOptions = field(default_factory=BuildOptions)
    baseline: Path = DEFAULT_PATH
    tolerance: float = 0.0
    cache_dir: Path | None = None
    #: Bytes the build cache is kept within at the end of each session.
    cache_max_size: int = DEFAULT_MAX_SIZE
    models: tuple[str, ...] = ("ir-count",)
    clang: str | None = None
    timeout: float = 60.0
    #: Stop a budgeted test's code at this many times its headline limit (else its baseline); None: off.
    cutoff: float | None = None
    #: Per-model parameter tables, ``[tool.instrbudget.<model>]``.
    model_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: A limit on a metric that could not be measured: ``fail`` the test, or ``skip`` the check.
    unavailable: str = "fail"

    def build_options(
        self,
        *,
        instrument: bool,
        model_params: tuple[tuple[str, str], ...] = (),
        calls: bool = False,
        cutoff: bool = False,
    ) -> BuildOptions:
        """Project-wide build options (a fixture call may add to them)."""
        return replace(self.build, instrument=instrument, model_params=model_params, calls=calls, cutoff=cutoff)


_KEYS = {
    "opt_level": "one of " + ", ".join(OPT_LEVELS),
    "cflags": "list of strings",
    "cxxflags": "list of strings",
    "include_dirs": "list of paths (relative to pyproject.toml)",
    "defines": "list of NAME or NAME=VALUE strings, or a table",
    "ldflags": "list of strings",
    "baseline": "path of the baseline JSON file",
    "tolerance": 'percentage such as 5 or "5%"',
    "cache_dir": "path of the build cache",
    "cache_max_size": 'size the build cache is kept within, such as "5GiB" or "500MB" (least recently used '
    "entries go first)",
    "models": "list of cost model names",
    "clang": "path or command of a clang driver",
    "timeout": "seconds a program run or a library call may take",
    "unavailable": '"fail" (a limit on a metric that could not be measured fails the test) or "skip" (not checked)',
    "cutoff": "factor (at least 1) of a budgeted test's limit, else its baseline, at which its code is stopped",
    "cpu": "the x86-64 level programs see: one of " + ", ".join(CPU_LEVELS),
    "count_libraries": "true (the default: count the C library's and libc++'s string, memory, allocation, sorting "
    "and conversion work) or false (count only your own code)",
    "assertions": "false (the default: NDEBUG is defined, as in release builds) or true (assert checks run and are "
    "counted)",
}


def settings_from_table(table: Mapping[str, Any], root: Path, *, known_models: list[str]) -> Settings:
    """Validate a ``[tool.instrbudget]`` table; ``root`` is the directory of pyproject.toml."""
    kwargs: dict[str, Any] = {"root": root}
    build: dict[str, Any] = {}
    params: dict[str, Mapping[str, Any]] = {}
    for key, value in table.items():
        if key in known_models and (isinstance(value, dict) or key not in _KEYS):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"[tool.instrbudget] {key}: the parameters of cost model {key!r} are a table of their own, "
                    f"[tool.instrbudget.{key}], got {value!r}"
                )
            params[key] = value
            continue
        if key not in _KEYS:
            accepted = ", ".join([*sorted(_KEYS), *(f"[tool.instrbudget.{m}]" for m in known_models)])
            raise ConfigError(
                f"[tool.instrbudget] has an unknown key {key!r}{did_you_mean(key, [*_KEYS, *known_models])}; "
                f"accepted keys: {accepted}"
            )
        where = f"[tool.instrbudget] {key}"
        if key == "opt_level":
            text = str(value)
            if isinstance(value, bool) or text not in OPT_LEVELS:
                raise ConfigError(f"{where}: expected one of {', '.join(OPT_LEVELS)}, got {value!r}")
            build[key] = text
        elif key in ("cflags", "cxxflags", "ldflags"):
            build[key] = _strings(value, key)
        elif key == "include_dirs":
            build[key] = tuple((root / p).resolve() for p in _strings(value, key))
        elif key == "defines":
            build[key] = _defines(value)
        elif key in ("baseline", "cache_dir"):
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: expected a path string, got {value!r}")
            kwargs[key] = root / Path(value).expanduser()  # "~/..." is the user's home, as in a shell
        elif key == "tolerance":
            kwargs[key] = parse_percent(value, where=where)
        elif key == "cache_max_size":
            try:
                kwargs[key] = parse_size(value, where=where)
            except CBuildError as exc:
                raise ConfigError(str(exc)) from None
        elif key == "models":
            names = _strings(value, key)
            for name in names:
                if name not in known_models:
                    raise ConfigError(
                        f"{where}: unknown cost model {name!r}{did_you_mean(name, known_models)}; "
                        f"known models: {', '.join(known_models)}"
                    )
            if not names:
                raise ConfigError(f"{where}: at least one cost model is needed")
            if len(set(names)) != len(names):
                raise ConfigError(f"{where}: a cost model is listed twice in {list(names)}")
            kwargs[key] = names
        elif key == "cpu":
            if not isinstance(value, str) or value not in CPU_LEVELS:
                raise ConfigError(f"{where}: expected one of {', '.join(CPU_LEVELS)}, got {value!r}")
            build[key] = value
        elif key in ("count_libraries", "assertions"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
            build[key] = value
        elif key == "clang":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where}: expected a path or command, got {value!r}")
            kwargs[key] = value
        elif key == "cutoff":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value < math.inf:
                raise ConfigError(f"{where}: expected a factor of at least 1 (such as 10), got {value!r}")
            kwargs[key] = float(value)
        elif key == "timeout":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ConfigError(f"{where}: expected a positive number of seconds, got {value!r}")
            kwargs[key] = float(value)
        elif key == "unavailable":
            kwargs[key] = unavailable_policy(value, where)
    kwargs["model_params"] = params
    try:
        kwargs["build"] = BuildOptions(**build, root=root)
    except CBuildError as e:  # settings valid on their own that do not go together
        raise ConfigError(f"[tool.instrbudget] {e}") from None
    if "baseline" not in kwargs:
        kwargs["baseline"] = root / Settings.baseline
    return Settings(**kwargs)


#: What a limit on a metric that could not be measured does.
UNAVAILABLE_POLICIES = ("fail", "skip")


def unavailable_policy(value: object, where: str) -> str:
    """``"fail"`` or ``"skip"``; anything else is an error naming ``where``."""
    if value not in UNAVAILABLE_POLICIES:
        raise ConfigError(f'{where}: expected "fail" or "skip", got {value!r}')
    return str(value)


def load_settings(rootdir: Path, *, known_models: list[str]) -> Settings:
    """Read ``rootdir/pyproject.toml``; no file or no table gives the defaults, except that where
    ``rootdir`` has no pyproject.toml and one above it has the table, its settings, include
    directories and baseline would be left out without a word: an error."""
    path = rootdir / "pyproject.toml"
    table = _table(path)
    if not path.is_file():  # a pyproject.toml of its own makes the rootdir a project: what is above is not read
        above = _table_above(rootdir)
        if above is not None:
            raise ConfigError(
                f"[tool.instrbudget] is in {above}, but the project's directory is {rootdir} (pytest's "
                f"rootdir), whose pyproject.toml the settings are read from, and whose baseline and test "
                f"ids the costs are compared by; run pytest with --rootdir={above.parent}, or move the "
                f"configuration file that makes {rootdir} the rootdir (pytest.ini, tox.ini, setup.cfg)"
            )
    try:
        return settings_from_table(table or {}, rootdir, known_models=known_models)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def table_elsewhere(inipath: Path | None, rootdir: Path) -> str | None:
    """Where pytest's configuration file (``-c other.toml``) is not the rootdir's pyproject.toml and
    has a ``[tool.instrbudget]`` table: why that table is not read (the settings, and the baseline
    they name, come from the rootdir's pyproject.toml, as the cbuild commands read them); else None."""
    if inipath is None or inipath.suffix != ".toml":
        return None
    own = rootdir / "pyproject.toml"
    if inipath.resolve() == own.resolve() or _table(inipath) is None:
        return None
    return (
        f"[tool.instrbudget] is in {inipath} (pytest's configuration file), but the settings are read from "
        f"the pyproject.toml of the rootdir {rootdir}, as the cbuild commands read them: the table in "
        f"{inipath.name} would not be read, nor the baseline it names; move it to {own}"
    )


def unread_table(rootdir: Path) -> str | None:
    """Where ``rootdir`` has a pyproject.toml without ``[tool.instrbudget]`` and one above it has
    the table: what to say if a test of this run builds C code or has a budget (then the settings
    and the baseline above would be left out without a word); else None. A project of its own
    beneath another, with no such tests, runs as it is."""
    path = rootdir / "pyproject.toml"
    if not path.is_file() or _table(path) is not None:
        return None
    above = _table_above(rootdir)
    if above is None:
        return None
    return (
        f"[tool.instrbudget] is in {above}, but pytest's rootdir is {rootdir}, whose pyproject.toml has "
        f"no [tool.instrbudget]: this run would read neither those settings nor the baseline they name, "
        f"and would report every test new. Run pytest with --rootdir={above.parent}, or, if {rootdir.name} "
        f"is a project of its own, give {path} a [tool.instrbudget] table (an empty one takes the defaults)"
    )


def table_below(rootdir: Path, directory: Path) -> str | None:
    """Where a pyproject.toml with ``[tool.instrbudget]`` lies between ``directory`` (a test's) and
    ``rootdir``, below the rootdir: what to say if a test there builds C code or has a budget (this
    run reads the rootdir's settings and baseline, not those); else None."""
    if directory == rootdir or not directory.is_relative_to(rootdir):
        return None
    for candidate in (directory, *directory.parents):
        if candidate == rootdir:
            return None
        path = candidate / "pyproject.toml"
        try:
            if _table(path) is None:
                continue
        except (ConfigError, OSError, UnicodeDecodeError):
            continue
        return (
            f"[tool.instrbudget] is in {path}, below pytest's rootdir {rootdir}, whose settings and "
            f"baseline this run reads instead: that table, and the baseline it names, would be left out. "
            f"Run pytest with --rootdir={candidate}, or move the table into {rootdir}'s configuration"
        )
    return None


def _table_above(rootdir: Path) -> Path | None:
    """The nearest pyproject.toml above ``rootdir`` with ``[tool.instrbudget]`` (one that cannot be
    read belongs to no run of this project's, and is left alone)."""
    for directory in rootdir.parents:
        path = directory / "pyproject.toml"
        try:
            if _table(path) is not None:
                return path
        except (ConfigError, OSError, UnicodeDecodeError):
            continue
    return None


def _table(path: Path) -> Mapping[str, Any] | None:
    """The ``[tool.instrbudget]`` table of the pyproject.toml at ``path``, if it has one; a
    misspelt table name (``[tool.instrbudgets]``) is an error."""
    if not path.is_file():
        return None
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    tool = doc.get("tool", {})
    if not isinstance(tool, dict):
        return None
    if "instrbudget" not in tool:
        names = [k for k in tool if isinstance(k, str)]
        # The distribution's name (pytest-instrbudget) as the table's, or a near miss of the table's.
        close = [k for k in names if k.lower().replace("_", "-") == "pytest-instrbudget"]
        close = close or difflib.get_close_matches("instrbudget", names, n=1, cutoff=0.8)
        if close:
            raise ConfigError(
                f"{path}: [tool.{close[0]}] is not read by pytest-instrbudget (did you mean [tool.instrbudget]?)"
            )
        return None
    table = tool["instrbudget"]
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.instrbudget] must be a table")
    return table
