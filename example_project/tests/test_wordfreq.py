"""wordfreq program budgets: word counting on generated text, ordering, and argument errors."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

# wordfreq.c only uses the hash map API (it sorts with its own merge sort).
WORDFREQ_SOURCES = ("../src/wordfreq.c", "../src/hashmap.c")

WORDS = (
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it",
    "as", "was", "with", "be", "by", "on", "not", "he", "this", "are",
    "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
    "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "budget",
)  # fmt: skip
SEPARATORS = (" ", " ", " ", "\n", ", ", ". ", "; ", " -- ", "\t", "'", "42 ")


@pytest.fixture
def wordfreq(cbuild):
    return cbuild.program(*WORDFREQ_SOURCES)


def _case(args: list[str], *, id: str, max_instr: int):
    return pytest.param(args, id=id, marks=pytest.mark.budget(max_instr=max_instr))


def _generate_text(n_words: int, seed: int = 1234) -> str:
    """Deterministic text: Zipf-like word choice, random capitalisation and separators."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    parts = []
    for word in rng.choices(WORDS, weights=weights, k=n_words):
        style = rng.random()
        if style < 0.1:
            word = word.upper()
        elif style < 0.25:
            word = word.capitalize()
        parts.append(word)
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


def _expected_top(text: str, n: int) -> str:
    # A word is a maximal run of ASCII letters, folded to lowercase (see wordfreq.c).
    counts = Counter(re.findall(r"[a-z]+", text.lower()))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{word} {count}\n" for word, count in ranked[:n])


# The word counter also runs as a RISC Zero guest: its proof must fit in eight 2^20-cycle segments
# (its riscv32 build, libc included, as the prover would run it).
# Its phases are regions in wordfreq.c; counting the words is the one that must stay cheap.
@pytest.mark.budget(
    max_instr=9_000_000,
    max_cycles=8_000_000,
    max_zkcycles=8 * 2**20,
    regions={"count": 6_500_000, "rank/sort": {"max_instr": 16_000, "max_cycles": 32_000}},
)
def test_wordfreq_default_top10(wordfreq):
    text = _generate_text(20_000)
    run = wordfreq.run(input=text)
    assert run.returncode == 0, run.stderr
    assert run.stderr == b""
    assert run.text == _expected_top(text, 10)
    assert run.text.splitlines()[0].split()[0] == "the"


@pytest.mark.budget(max_instr=9_000_000)
def test_wordfreq_top_n_larger_than_vocabulary(wordfreq):
    text = _generate_text(20_000, seed=99)
    run = wordfreq.run(["1000"], input=text)
    assert run.returncode == 0, run.stderr
    lines = run.text.splitlines()
    assert len(lines) == len(WORDS)  # every word appears, each printed once
    assert run.text == _expected_top(text, 1000)
    assert sum(int(line.split()[1]) for line in lines) == 20_000


@pytest.mark.budget(max_instr=12_000)
def test_wordfreq_case_folding_and_ties(wordfreq):
    run = wordfreq.run(["3"], input=b"The cat, the DOG; the-dog! Cat? zebra ant")
    assert run.returncode == 0
    assert run.text == "the 3\ncat 2\ndog 2\n"


@pytest.mark.budget(max_instr=1_200)
def test_wordfreq_empty_input(wordfreq):
    run = wordfreq.run(input=b"  123 ... \n")
    assert run.returncode == 0
    assert run.stdout == b""


# The message is formatted by the counted fprintf: about 1,200 of each budget.
@pytest.mark.parametrize(
    "args",
    [
        _case(["0"], id="zero", max_instr=2_000),
        _case(["-3"], id="negative", max_instr=2_000),
        _case(["ten"], id="not-a-number", max_instr=2_000),
        _case(["5x"], id="trailing-junk", max_instr=2_000),
        _case([""], id="empty", max_instr=2_000),
        _case(["99999999999999999999999"], id="overflow", max_instr=2_800),
        _case(["1", "2"], id="too-many-arguments", max_instr=1_600),
    ],
)
def test_wordfreq_bad_argument_exit_2(wordfreq, args):
    run = wordfreq.run(args, input=b"never read")
    assert run.returncode == 2
    assert run.stdout == b""
    expected = "usage:" if len(args) > 1 else f"N must be a positive integer, got '{args[0]}'"
    assert expected in run.stderr.decode()
