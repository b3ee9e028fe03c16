"""A bounded build cache: least recently used entries go first, entries in use stay, and
`python -m cbuild cache info|prune|clear` show and trim it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions
from cbuild.build import eviction
from cbuild.build.cache import LAYOUT, Cache, atomic_write
from cbuild.cli import main
from cbuild.errors import CBuildError

DAY = 24 * 3600.0


def fake_entry(root: Path, kind: str, key: str, size: int, age: float) -> list[Path]:
    """An entry of ``size`` bytes, sealed, last used ``age`` seconds ago."""
    cache = Cache(root)
    paths = cache.entry(kind, key, [".bin"], lambda ps: atomic_write(ps[0], b"x" * size), name=key)
    when = time.time() - age
    for path in [*paths, cache.path(kind, key, ".seal")]:
        os.utime(path, (when, when))
    return paths


def test_prune_removes_least_recently_used_first_down_to_eighty_percent(tmp_path: Path) -> None:
    for i, age in enumerate([5 * DAY, 1 * DAY, 3 * DAY, 2 * DAY, 4 * DAY]):
        fake_entry(tmp_path, "ir", f"{i:02d}" * 16, 1000, age)
    size = eviction.entries(tmp_path)[0].size  # its file, seal and lock
    assert eviction.prune(tmp_path, 5 * size).removed == 0  # within the limit: nothing goes
    done = eviction.prune(tmp_path, int(4.5 * size))  # over: down to 80% of the limit, 3.6 entries
    assert (done.removed, done.in_use) == (2, 0)
    left = sorted(e.key[:2] for e in eviction.entries(tmp_path))
    assert left == ["01", "02", "03"]  # the two oldest (5 and 4 days) went
    assert done.size_before > done.size_after


def test_prune_keeps_entries_in_use(tmp_path: Path) -> None:
    fake_entry(tmp_path, "ir", "aa" * 16, 1000, 2 * DAY)
    fake_entry(tmp_path, "bin", "bb" * 16, 1000, 60)  # used a minute ago: a session may read it
    old = fake_entry(tmp_path, "rt", "cc" * 16, 1000, 3 * DAY)
    # Another process builds the oldest entry again: its lock is held.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"fh = open({str(old[0].with_suffix('.lock'))!r}, 'a+b')\n"
            "fcntl.flock(fh.fileno(), fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        done = eviction.prune(tmp_path, 1000)
    finally:
        holder.kill()
        holder.wait()
    assert (done.removed, done.recent, done.building) == (1, 1, 1)
    assert done.kept() == "kept 1 used in the last 10 minutes and 1 being built"
    assert sorted(e.kind for e in eviction.entries(tmp_path)) == ["bin", "rt"]


def test_using_an_entry_makes_it_recent(tmp_path: Path) -> None:
    first = fake_entry(tmp_path, "ir", "aa" * 16, 1000, 3 * DAY)
    fake_entry(tmp_path, "ir", "bb" * 16, 1000, 2 * DAY)
    again = Cache(tmp_path).entry("ir", "aa" * 16, [".bin"], lambda ps: pytest.fail("rebuilt"), name="a")
    assert again == first
    eviction.prune(tmp_path, 1500, grace=0)
    assert [e.key for e in eviction.entries(tmp_path)] == ["aa" * 16]  # the other one is now the older


def test_sizes_parse_and_bad_ones_name_the_key() -> None:
    assert eviction.parse_size("5GiB", where="x") == 5 * 1024**3
    assert eviction.parse_size("500 MB", where="x") == 500 * 1000**2
    assert eviction.parse_size(4096, where="x") == 4096
    for bad in ("five gigs", True, "5 parsecs"):
        with pytest.raises(CBuildError, match=r'cache_max_size: expected a size such as "5GiB"'):
            eviction.parse_size(bad, where="[tool.instrbudget] cache_max_size")
    for zero in ("0", "0 GiB", 0, -1, "0.5"):  # a size, but none: said so, with the way to empty the cache
        with pytest.raises(
            CBuildError, match=r"cache_max_size: expected a size above 0 such as .* \(python -m cbuild cache clear"
        ):
            eviction.parse_size(zero, where="[tool.instrbudget] cache_max_size")


def test_cli_info_prune_clear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    zig = tmp_path / "zig-cache"  # an empty one: walking this machine's would take seconds
    zig.mkdir()
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(zig))
    fake_entry(tmp_path, "ir", "aa" * 16, 3000, 2 * DAY)
    fake_entry(tmp_path, "bin", "bb" * 16, 2000, DAY)
    eviction.record_session(tmp_path, {"ir": 3, "tu": 1}, {"bin": 1})
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"build cache {tmp_path}: ")
    assert out[0].endswith(" in 2 entries")
    assert out[1].split()[:3] == ["bin", "1", "entry"]
    assert out[2].split()[:3] == ["ir", "1", "entry"]
    assert out[3] == "  no toolchain recorded (older or unfinished builds): 2 entries, " + out[3].rsplit(", ", 1)[1]
    assert "last pytest session (" in out[4]
    assert out[4].endswith("4 hits, 1 build, hit rate 80%")
    assert all(len(line) <= 80 for line in out if str(tmp_path) not in line)  # a CI log's width
    assert main(["cache", "prune", "--cache-dir", str(tmp_path), "--max-size", "4KB"]) == 0
    assert "removed 1 least recently used entry" in capsys.readouterr().out
    assert [e.kind for e in eviction.entries(tmp_path)] == ["bin"]
    fake_entry(tmp_path, "rt", "cc" * 16, 3000, 60)  # used a minute ago: kept, and said why
    assert main(["cache", "prune", "--cache-dir", str(tmp_path), "--max-size", "1KB"]) == 0
    said = capsys.readouterr().out
    assert "removed 1 least recently used entry" in said
    assert "; kept 1 used in the last 10 minutes; " in said
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 1 entry (" in capsys.readouterr().out  # used recently or not
    assert eviction.entries(tmp_path) == []
    assert not (tmp_path / LAYOUT / eviction.SESSION_FILE).exists()
    assert main(["cache", "prune", "--cache-dir", str(tmp_path), "--max-size", "lots"]) == 2
    assert "--max-size: expected a size" in capsys.readouterr().err


def test_cli_a_cache_that_does_not_exist_is_not_an_empty_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A misspelt --cache-dir read "0 B in 0 entries", like a cache just cleared.
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path / "none"))
    missing = tmp_path / "cahce"
    assert main(["cache", "info", "--cache-dir", str(missing)]) == 0
    assert capsys.readouterr().out == f"build cache {missing}: no such directory (nothing was built there yet)\n"
    for command in (["prune", "--max-size", "1GB"], ["clear"]):
        assert main(["cache", *command, "--cache-dir", str(missing)]) == 0
        assert "no such directory (nothing was built there yet), nothing removed" in capsys.readouterr().out
    assert not missing.exists()
    (tmp_path / "file").write_text("")
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "file")]) == 2
    assert f"build cache {tmp_path / 'file'} is not a directory" in capsys.readouterr().err


def test_info_counts_entries_per_toolchain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = Builder(cache_dir=tmp_path, progress=lambda message: None)
    source = tmp_path / "twice.c"
    source.write_text("int twice(int x) { return 2 * x; }\n")
    builder.build([source], kind="library", options=BuildOptions(count_libraries=False))
    (tmp_path / "zig-cache").mkdir()
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path / "zig-cache"))  # walking this machine's takes seconds
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    clang = builder.toolchain.fingerprint["clang"]
    made = [line for line in out.splitlines() if line.startswith("  built ")]
    assert len(made) == 1, out  # every entry of this cache has the same toolchain
    assert made[0].startswith(f"  built with clang {clang} (the ziglang wheel ")


def test_session_keeps_the_cache_within_cache_max_size(pytester: pytest.Pytester) -> None:
    cache = pytester.path / "cache"
    for i in range(4):
        fake_entry(cache, "ir", f"{i:02d}" * 16, 40_000, DAY + i)
    pytester.makefile(".c", lib="int twice(int x) { return 2 * x; }\n")
    pytester.makepyfile(test_a="def test_a(cbuild):\n    assert cbuild.library('lib.c').twice(21) == 42\n")
    pytester.makefile(".toml", pyproject='[tool.instrbudget]\ncache_dir = "cache"\ncache_max_size = "100KB"\n')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["instrbudget: build cache * was over its cache_max_size of 98 KiB (*): removed * least recently used entries*"]
    )
    kinds = {e.kind for e in eviction.entries(cache)}
    assert {"tu", "bin"} <= kinds  # what the session built and used stays
    assert sum(1 for e in eviction.entries(cache) if e.kind == "ir" and e.key[2:4] == e.key[:2]) < 4
    last = (cache / LAYOUT / eviction.SESSION_FILE).read_text()
    assert '"builds"' in last


def test_the_default_hosts_guard_records_its_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Libraries loaded without a pool build their host's guard in the default cache, with the
    toolchain in its seal like every other entry (cache info counts it there)."""
    from cbuild.build.eviction import entries, toolchain_of
    from cbuild.build.toolchain import find_toolchain
    from cbuild.run.hosts import _default_guard

    monkeypatch.setenv("INSTRBUDGET_CACHE_DIR", str(tmp_path))
    toolchain = find_toolchain(None)
    assert _default_guard(toolchain).is_file()
    assert [toolchain_of(entry) for entry in entries(tmp_path)] == [toolchain.label]


def test_prune_removes_zig_caches_of_installations_since_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each ziglang installation gets a zig cache of its own, which names it: `cache info` counts
    those of installations that are gone (a deleted virtual environment, a Python release CI no
    longer installs), and `cache prune` removes them, not the others, nor those naming nothing."""
    from cbuild.build import toolchain, zig_caches

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(toolchain.ZIG_CACHE_VARIABLE, raising=False)
    toolchain.find_toolchain()  # this installation's cache, named as its own
    own = Path(os.environ[toolchain.ZIG_CACHE_VARIABLE])
    assert own.parent == tmp_path / "xdg" / "zig"
    assert Path((own / zig_caches.MARKER).read_text().strip()) == Path(toolchain.zig_binary()).resolve().parent
    monkeypatch.delenv(toolchain.ZIG_CACHE_VARIABLE)  # as a new process of this installation finds it

    def zig_cache(name: str, installation: Path | None, days: float = 8) -> Path:
        path = own.parent / f"instrbudget-{name}"
        (path / "o").mkdir(parents=True)
        (path / "o" / "libc.a").write_bytes(b"x" * 3000)
        if installation is not None:
            (path / zig_caches.MARKER).write_text(f"{installation}\n")
            used = time.time() - days * 24 * 3600
            os.utime(path / zig_caches.MARKER, (used, used))
        return path

    removed = zig_cache("aaaaaaaaaaaa", tmp_path / "deleted-venv" / "ziglang")
    alive = zig_cache("bbbbbbbbbbbb", tmp_path)  # its installation exists
    unnamed = zig_cache("cccccccccccc", None)  # from before caches named their installation
    # Another machine's, sharing this home directory: its installation is not here, but used lately.
    elsewhere = zig_cache("eeeeeeeeeeee", tmp_path / "other-machine" / "ziglang", days=1)
    cache = tmp_path / "build-cache"
    cache.mkdir()
    assert main(["cache", "info", "--cache-dir", str(cache)]) == 0
    said = capsys.readouterr().out
    assert "zig caches of 1 removed installation(s): 3.0 KiB (cache prune removes them)" in said
    assert main(["cache", "prune", "--cache-dir", str(cache), "--max-size", "1GB"]) == 0
    assert "zig caches of 1 removed installation(s): removed (3.0 KiB)" in capsys.readouterr().out
    assert not removed.exists()
    assert alive.exists()
    assert unnamed.exists()
    assert elsewhere.exists()
    assert own.exists()
    # A zig cache the user chose: its neighbours are theirs, whatever they name.
    chosen = tmp_path / "mine" / "zig"
    chosen.mkdir(parents=True)
    (chosen.parent / "instrbudget-dddddddddddd").mkdir()
    (chosen.parent / "instrbudget-dddddddddddd" / zig_caches.MARKER).write_text(f"{tmp_path / 'gone'}\n")
    assert zig_caches.gone(chosen) == []
