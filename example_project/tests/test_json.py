"""JSON budgets: token counting and nesting depth on valid, invalid and deep documents."""

from __future__ import annotations

import json

import pytest

MAX_DEPTH = 64  # MK_JSON_MAX_DEPTH in include/minikit.h


def _expected_tokens(value: object) -> int:
    """Reference token count of a parsed JSON value (punctuators + scalars)."""
    if isinstance(value, dict):
        # braces + per member (key, ':', value) + commas between members
        return 2 + sum(2 + _expected_tokens(v) for v in value.values()) + max(len(value) - 1, 0)
    if isinstance(value, list):
        return 2 + sum(_expected_tokens(v) for v in value) + max(len(value) - 1, 0)
    return 1


def _expected_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_expected_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_expected_depth(v) for v in value), default=0)
    return 0


def _tokens(minikit, doc: bytes) -> int:
    return minikit.mk_json_count_tokens(doc, len(doc))


def _depth(minikit, doc: bytes) -> int:
    return minikit.mk_json_max_depth(doc, len(doc))


def _case(*values: object, id: str, max_instr: int):
    """A parametrize case with its own budget."""
    return pytest.param(*values, id=id, marks=pytest.mark.budget(max_instr=max_instr))


SMALL_DOCUMENTS = [
    _case(b'{"a":[1,2]}', 9, 2, id="header-example", max_instr=1_200),
    _case(b"42", 1, 0, id="number", max_instr=300),
    _case(b"  true\n", 1, 0, id="literal-with-whitespace", max_instr=300),
    _case(b"[]", 2, 1, id="empty-array", max_instr=300),
    _case(b"{ }", 2, 1, id="empty-object", max_instr=300),
    _case(b'"he said \\"hi\\" \\u00e9\\n"', 1, 0, id="string-escapes", max_instr=1_000),
    _case(b"[-0.5e+10, 0, 1E3, null, false]", 11, 1, id="scalars", max_instr=1_700),
]


@pytest.mark.parametrize(("doc", "tokens", "depth"), SMALL_DOCUMENTS)
def test_json_small_documents(minikit, doc, tokens, depth):
    assert _tokens(minikit, doc) == tokens
    assert _depth(minikit, doc) == depth


CONFIG_DOCUMENT = json.dumps(
    {
        "name": "minikit",
        "version": [0, 1, 0],
        "features": {"json": True, "hashmap": True, "ringbuf": {"capacity": 4096, "overwrite": False}},
        "ratios": [0.75, -1.5e-3, 2e10],
        "authors": [{"name": "Ada", "email": None}, {"name": "Grace \u00e9\u4e2d", "tags": ["a/b", "c\\d"]}],
        "empty": {"list": [], "object": {}},
    },
    indent=2,
).encode()


# The config file is also tokenized by the zkVM guest at start-up: its user cycles are budgeted too.
@pytest.mark.budget(max_instr=20_000, max_cycles=20_000, max_zkuser_cycles=18_000)
def test_json_config_document(minikit):
    parsed = json.loads(CONFIG_DOCUMENT)
    assert _tokens(minikit, CONFIG_DOCUMENT) == _expected_tokens(parsed)
    assert _depth(minikit, CONFIG_DOCUMENT) == _expected_depth(parsed) == 4


INVALID_DOCUMENTS = [
    _case(b"", id="empty", max_instr=100),
    _case(b"   ", id="only-whitespace", max_instr=150),
    _case(b"[1,2", id="unclosed-array", max_instr=600),
    _case(b"[1,]", id="trailing-comma", max_instr=500),
    _case(b'{"a" 1}', id="missing-colon", max_instr=400),
    _case(b"{1:2}", id="non-string-key", max_instr=250),
    _case(b"01", id="leading-zero", max_instr=250),
    _case(b"1.", id="bare-decimal-point", max_instr=200),
    _case(b"-", id="lone-minus", max_instr=150),
    _case(b'"abc', id="unterminated-string", max_instr=250),
    _case(b'"a\\x"', id="bad-escape", max_instr=250),
    _case(b'"\\u12g4"', id="bad-unicode-escape", max_instr=300),
    _case(b'"tab\there"', id="raw-control-char", max_instr=300),
    _case(b"[1]\x00", id="embedded-nul", max_instr=500),
    _case(b"[1] [2]", id="trailing-garbage", max_instr=500),
    _case(b"tru", id="truncated-literal", max_instr=150),
    _case(b"nul", id="truncated-null", max_instr=150),
]


@pytest.mark.parametrize("doc", INVALID_DOCUMENTS)
def test_json_invalid_rejected(minikit, doc):
    assert _tokens(minikit, doc) == -1
    assert _depth(minikit, doc) == -1


def test_json_null_text_rejected(minikit):
    # No budget: a NULL document is rejected immediately; measured only.
    assert minikit.mk_json_count_tokens(None, 0) == -1
    assert minikit.mk_json_max_depth(None, 5) == -1


@pytest.mark.budget(max_instr=35_000)
def test_json_deep_nesting_at_limit(minikit):
    arrays = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert _tokens(minikit, arrays) == 2 * MAX_DEPTH
    assert _depth(minikit, arrays) == MAX_DEPTH

    # Alternating objects and arrays: {"k":[{"k":[ ... 1 ... ]}]}
    doc = b'{"k":[' * (MAX_DEPTH // 2) + b"1" + b"]}" * (MAX_DEPTH // 2)
    parsed = json.loads(doc)
    assert _tokens(minikit, doc) == _expected_tokens(parsed)
    assert _depth(minikit, doc) == MAX_DEPTH


@pytest.mark.budget(max_instr=15_000)
def test_json_deep_nesting_over_limit(minikit):
    too_deep = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    assert _tokens(minikit, too_deep) == -1
    assert _depth(minikit, too_deep) == -1
    # The limit is checked on entry, so even a huge unbalanced prefix stops early.
    assert _tokens(minikit, b"[" * 100_000) == -1


def _records_document(n: int) -> bytes:
    """An array of n small objects, deterministic and without randomness."""
    records = [{"id": i, "name": f"item-{i}", "tags": ["x", "y"][: i % 3], "ok": i % 2 == 0} for i in range(n)]
    return json.dumps(records).encode()


@pytest.mark.parametrize(
    "n",
    [
        _case(1, id="1", max_instr=3_000),
        _case(10, id="10", max_instr=30_000),
        _case(100, id="100", max_instr=300_000),
        _case(1_000, id="1000", max_instr=3_000_000),
    ],
)
def test_json_records_growing(minikit, n):
    doc = _records_document(n)
    parsed = json.loads(doc)
    assert _tokens(minikit, doc) == _expected_tokens(parsed)
    assert _depth(minikit, doc) == _expected_depth(parsed) == 3
