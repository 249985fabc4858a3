"""Prompt lookup: finds the longest recurring suffix, prefers the most recent match, mirrors the ring."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.llm.drafters.ngram import NgramDrafter, lookup


def test_lookup_proposes_what_followed_the_most_recent_match():
    toks = np.array([5, 6, 7, 1, 2, 9, 9, 5, 6, 8, 3, 4, 5, 6])
    assert lookup(toks, 3, max_ngram=2, min_ngram=1) == [8, 3, 4]        # most recent "5 6"
    assert lookup(toks, 10, max_ngram=2, min_ngram=1) == [8, 3, 4, 5, 6]  # stops at the end


def test_lookup_prefers_longer_suffix():
    toks = np.array([1, 2, 3, 40, 7, 2, 3, 50, 1, 2, 3])
    # "2 3" recurs most recently before 50, but "1 2 3" (longer) before 40
    assert lookup(toks, 1, max_ngram=3, min_ngram=2) == [40]
    assert lookup(toks, 1, max_ngram=2, min_ngram=2) == [50]


def test_lookup_grows_the_match_past_a_shared_prefix():
    # Log lines share long prefixes: "2 3 4 5" last recurs before 8, but the whole suffix "1 2 3 4 5"
    # (the line being quoted) only before 9, and the longest match wins.
    toks = np.array([1, 2, 3, 4, 5, 9, 7, 7, 2, 3, 4, 5, 8, 6, 1, 2, 3, 4, 5])
    assert lookup(toks, 2) == [9, 7]
    assert lookup(toks, 1, max_ngram=4) == [8]
    # A single recurring token is below min_ngram: nothing.
    assert lookup(np.array([4, 9, 5, 4]), 2) == []


def test_lookup_nothing_to_propose():
    assert lookup(np.array([1, 2, 3, 4]), 4) == []
    assert lookup(np.array([1, 2, 1, 2]), 0) == []
    assert lookup(np.array([1]), 3) == []


def test_lookup_overlapping_period():
    # "a b a b a b": the suffix "a b" last occurred one period back
    assert lookup(np.array([1, 2, 1, 2, 1, 2]), 4, max_ngram=2, min_ngram=2) == [1, 2]


def test_stream_mirror_keeps_sink_and_evicts_ring():
    d = NgramDrafter(n_sink=2, n_ring=3)
    d.push_stream([10, 11, 12, 13])
    d.push_stream([14, 15])
    assert d.stream_tokens == [10, 11, 13, 14, 15]


def test_propose_uses_stream_and_job_context():
    d = NgramDrafter(n_sink=0, n_ring=100, max_ngram=3, min_ngram=2)
    line = [101, 7, 8, 9, 102]
    d.push_stream(line * 3)
    tokens, q = d.propose([55, 101, 7], 3)
    assert tokens == [8, 9, 102] and q is None


def test_bad_ngram_bounds_rejected():
    with pytest.raises(ValueError, match="min_ngram"):
        NgramDrafter(min_ngram=3, max_ngram=2)
