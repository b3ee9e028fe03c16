"""The README and docs/*.md: relative links point at files that exist, anchors at headings that exist.

Anchors follow GitHub's heading slugs: lowercase, punctuation other than hyphens, underscores and
spaces removed, spaces turned into hyphens, and a repeated slug numbered ``-1``, ``-2``, ...
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 300

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")
#: ``[text](target)`` and ``![alt](target)``; the target may carry an optional "title".
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target><[^>]*>|[^)\s]*)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
SCHEMES = ("http://", "https://", "mailto:")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with their line numbers."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def _slug(title: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = LINK.sub(lambda m: m.group("text"), title)  # a link in a heading counts by its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for _, line in _prose_lines(path):
        match = HEADING.match(line)
        if not match:
            continue
        slug = _slug(match.group("title"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(path: Path) -> list[tuple[int, str]]:
    """Every link target in the page's prose (not in code), with its line number."""
    found: list[tuple[int, str]] = []
    for number, line in _prose_lines(path):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            found.append((number, match.group("target").strip("<>")))
    return found


def _broken(path: Path) -> list[str]:
    broken: list[str] = []
    for number, target in _links(path):
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not target or target.startswith(SCHEMES):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in _anchors(linked):
            broken.append(f"{where} (no heading with this anchor in {linked.relative_to(ROOT)})")
    return broken


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_links_point_at_files_and_headings(page: Path) -> None:
    assert _broken(page) == []


def test_docs_readme_is_short() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move details to docs/"


def test_docs_index_links_every_page() -> None:
    index = DOCS / "index.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for _, target in _links(index)}
    pages = {page.resolve() for page in DOCS.glob("*.md") if page != index}
    assert sorted(p.name for p in pages - linked) == []


def test_docs_readme_links_the_index() -> None:
    assert any(target == "docs/index.md" for _, target in _links(README))


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("The `cbuild` fixture", "the-cbuild-fixture"),
        ("JSON results (`--instrbudget-json`)", "json-results---instrbudget-json"),
        ("Cut-off: code that runs past its budget stops at an exact count",
         "cut-off-code-that-runs-past-its-budget-stops-at-an-exact-count"),
        ("The estimate from IR (`execute = false`)", "the-estimate-from-ir-execute--false"),
        ("`--instrbudget-report=functions|lines|regions`", "--instrbudget-reportfunctionslinesregions"),
        ("Where [the docs](index.md) are", "where-the-docs-are"),
    ],
)  # fmt: skip
def test_docs_slugs_follow_github(heading: str, slug: str) -> None:
    assert _slug(heading) == slug


def test_docs_links_in_code_are_not_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n```python\na[0](x)\n```\n\n`b[1](y)` and [ok](#title) and [bad](#nothing)\n")
    assert _links(page) == [(7, "#title"), (7, "#nothing")]
    assert "nothing" not in _anchors(page)
    assert "title" in _anchors(page)
