"""The index of a large compilation database, kept in the build cache: parsed once per content."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cbuild.build import compiledb
from cbuild.build.cache import Cache
from cbuild.build.progress import progress_lines
from cbuild.errors import BuildDescriptionError, BuildDescriptionWarning


@pytest.fixture(autouse=True)
def cache_every_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """Databases of any size keep their index in the cache (in these tests only)."""
    monkeypatch.setattr(compiledb, "CACHE_BYTES", 0)


def entries(root: Path, n: int, tag: str = "") -> list[dict[str, Any]]:
    """``n`` entries of a CMake-like database, two of them (``src/a.c``, ``src/é b.c``) the ones selected."""
    items: list[dict[str, Any]] = [
        {"directory": str(root / "build"), "file": f"../gen/f{i}.c", "output": f"CMakeFiles/t{i % 7}.dir/f{i}.c.o",
         "command": f"cc -DN={i}{tag} -O2 -c ../gen/f{i}.c"}
        for i in range(n)
    ]  # fmt: skip
    items[n // 3] = {"directory": str(root), "file": "src/a.c", "command": f"cc -DA=1{tag} -I inc -march=native -c a.c"}
    items[n - 2] = {"directory": str(root), "file": "src/é b.c", "arguments": ["cc", f'-DNAME="ü{tag}"', "-c"]}
    return items


def write_db(path: Path, items: object) -> Path:
    path.write_text(json.dumps(items, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def picked(db: compiledb.CompilationDatabase, base: Path) -> list[tuple[Path, tuple[str, ...]]]:
    with pytest.warns(BuildDescriptionWarning, match="target flags .*: -march=native"):
        return [(s.path, s.flags) for s in db.select(["src/a.c", "src/é b.c"], base=base)]


def not_parsed(*args: object, **kwargs: object) -> Any:
    raise AssertionError("the database was parsed, not read from the cache")


def test_the_index_is_kept_and_read_without_parsing_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 3000))
    said: list[str] = []
    cold = compiledb.read(path, cache=Cache(tmp_path / "cache"), progress=said.append)
    cold_picked = picked(cold, tmp_path)
    assert cold_picked == [
        (tmp_path / "src" / "a.c", ("-DA=1", f"-I{tmp_path}/inc")),
        (tmp_path / "src" / "é b.c", ('-DNAME="ü"',)),
    ]
    assert said == []  # a small database is parsed without a word
    # Another process: a fresh cache object; the database is not parsed, and only the selected entries decoded.
    decoded: list[int] = []
    loads = json.loads

    def counting_loads(text: str | bytes, **kwargs: Any) -> Any:
        decoded.append(len(text))
        return loads(text, **kwargs)

    monkeypatch.setattr(compiledb, "_parse", not_parsed)
    monkeypatch.setattr(json, "loads", counting_loads)
    warm = compiledb.read(path, cache=Cache(tmp_path / "cache"))
    assert picked(warm, tmp_path) == cold_picked
    assert max(decoded) < 1000 < path.stat().st_size  # two entries (and the cache's seal), never the database
    monkeypatch.setattr(json, "loads", loads)
    monkeypatch.undo()
    assert path.stat().st_size < compiledb.CACHE_BYTES
    plain = compiledb.read(path)  # parsed whole, without the cache
    assert plain.entries == warm.entries == cold.entries
    assert plain.dropped == warm.dropped == cold.dropped
    with pytest.raises(BuildDescriptionError) as cold_error:
        cold.select(["src/nope.c"], base=tmp_path)
    with pytest.raises(BuildDescriptionError) as warm_error:
        warm.select(["src/nope.c"], base=tmp_path)
    assert str(warm_error.value) == str(cold_error.value)
    assert [s.path for s in warm.select(["src/*.c"], base=tmp_path)] == [
        s.path for s in cold.select(["src/*.c"], base=tmp_path)
    ]


def test_a_database_edited_in_place_is_parsed_again(tmp_path: Path) -> None:
    """Same size, same modification time, other content: the content hash tells."""
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 500, tag="0"))
    before = path.stat()
    assert picked(compiledb.read(path, cache=Cache(tmp_path / "cache")), tmp_path)[0][1][0] == "-DA=10"
    write_db(path, entries(tmp_path, 500, tag="1"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    edited = picked(compiledb.read(path, cache=Cache(tmp_path / "cache")), tmp_path)
    assert edited == [
        (tmp_path / "src" / "a.c", ("-DA=11", f"-I{tmp_path}/inc")),
        (tmp_path / "src" / "é b.c", ('-DNAME="ü1"',)),
    ]
    assert len(list((tmp_path / "cache").rglob("*.seal"))) == 2


def index_files(cache: Path) -> dict[str, Path]:
    return {p.suffix: p for p in cache.rglob("*") if p.is_file() and p.suffix in (".spans", ".keys", ".seal")}


@pytest.mark.parametrize("damage", ["truncated", "no seal", "sealed but not an index"])
def test_a_damaged_index_is_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 800))
    cold = picked(compiledb.read(path, cache=Cache(tmp_path / "cache")), tmp_path)
    files = index_files(tmp_path / "cache")
    if damage == "truncated":
        data = files[".spans"].read_bytes()
        files[".spans"].write_bytes(data[: len(data) // 2])
    elif damage == "no seal":  # its writer was killed before sealing it
        files[".seal"].unlink()
    else:
        files[".spans"].write_bytes(b"\0" * 16)
        cache = Cache(tmp_path / "cache")
        key = files[".seal"].stem
        cache.seal("compiledb", key, [files[".spans"], files[".keys"]])
    parsed: list[bool] = []
    parse = compiledb._parse

    def spy(*args: Any, **kwargs: Any) -> Any:
        parsed.append(True)
        return parse(*args, **kwargs)

    monkeypatch.setattr(compiledb, "_parse", spy)
    said: list[str] = []
    again = compiledb.read(path, cache=Cache(tmp_path / "cache", notify=said.append))
    assert picked(again, tmp_path) == cold
    assert parsed == [True]
    if damage != "sealed but not an index":
        assert len(said) == 1
        assert re.fullmatch(r"the cache entry for the index of .* was damaged \(.*\); rebuilding it", said[0])
    # Rebuilt whole: the next reader uses it.
    monkeypatch.setattr(compiledb, "_parse", not_parsed)
    assert picked(compiledb.read(path, cache=Cache(tmp_path / "cache")), tmp_path) == cold


def test_a_cache_that_cannot_be_written_is_done_without(tmp_path: Path) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 300))
    (tmp_path / "file").write_text("")
    db = compiledb.read(path, cache=Cache(tmp_path / "file" / "cache"))  # its root cannot be made
    assert picked(db, tmp_path)[0][0] == tmp_path / "src" / "a.c"


def test_unusable_databases_are_named_and_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "compile_commands.json"
    for content, message in [
        ("[{}, ", "is not a compilation database: it is not JSON (Expecting value"),
        ('{"file": "x.c"}', "expected a JSON list of compile commands, found a JSON object"),
        ('[{"directory": "/"}]', "entry 0: has no 'file' string"),
    ]:
        path.write_text(content)
        with pytest.raises(BuildDescriptionError, match=re.escape(message)):
            compiledb.read(path, cache=Cache(tmp_path / "cache"))
    path.write_bytes(b'[{"directory": "/", "file": "\xff"}]')
    with pytest.raises(BuildDescriptionError, match=r"cannot read the compilation database .*: not UTF-8"):
        compiledb.read(path, cache=Cache(tmp_path / "cache"))
    assert not list((tmp_path / "cache").rglob("*.seal"))


def test_a_database_changed_after_it_was_read_is_not_misread(tmp_path: Path) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 300))
    compiledb.read(path, cache=Cache(tmp_path / "cache"))
    db = compiledb.read(path, cache=Cache(tmp_path / "cache"))  # from the cache
    write_db(path, entries(tmp_path, 301))
    with pytest.raises(BuildDescriptionError, match="changed while it was in use; read it again"):
        db.select(["src/a.c"], base=tmp_path)


def test_parsing_a_large_database_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 300))
    compiledb.read(path, cache=Cache(tmp_path / "small"))
    assert capsys.readouterr().err == ""  # below PROGRESS_BYTES: nothing
    monkeypatch.setattr(compiledb, "PROGRESS_BYTES", 1000)
    compiledb.read(path, cache=Cache(tmp_path / "cache"))  # the cache's notify (silent) hears it
    said: list[str] = []
    compiledb.read(path, cache=Cache(tmp_path / "other"), progress=said.append)
    compiledb.read(path, cache=Cache(tmp_path / "other"), progress=said.append)  # warm: nothing to say
    assert said == [f"reading the compilation database {path} (0 MB)..."]
    monkeypatch.setenv("INSTRBUDGET_CACHE_DIR", str(tmp_path / "default"))
    monkeypatch.setenv("COLUMNS", "80")
    compiledb.read(path)
    message = f"reading the compilation database {path} (0 MB)..."
    assert capsys.readouterr().err == "\n".join(progress_lines(message, 80)) + "\n"  # wrapped as the builder's


def test_workers_reading_one_database_at_once_parse_it_once(tmp_path: Path) -> None:
    path = write_db(tmp_path / "compile_commands.json", entries(tmp_path, 20_000))
    script = (
        "import sys; from pathlib import Path; from cbuild.build import compiledb\n"
        "compiledb.PROGRESS_BYTES = 0\n"
        "db = compiledb.read(Path(sys.argv[1]))\n"
        "print(db.select(['src/a.c'], base=Path(sys.argv[2]))[0].flags)\n"
    )
    env = {**os.environ, "INSTRBUDGET_CACHE_DIR": str(tmp_path / "cache"), "PYTHONWARNINGS": "ignore"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), str(tmp_path)], env=env, cwd=Path(__file__).parent.parent,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(3)
    ]  # fmt: skip
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0], outputs
    assert {out for out, _ in outputs} == {f"('-DA=1', '-I{tmp_path}/inc')\n"}
    assert sum(err.count("reading the compilation database") for _, err in outputs) == 1, outputs
