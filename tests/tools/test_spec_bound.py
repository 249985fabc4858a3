"""tools/bench/spec_bound.py: the replay of greedy speculative steps, on token sequences with known answers."""

from __future__ import annotations


import pytest

from tools.bench import spec_bound

STEEP = {1: 1.0, 2: 1.3, 3: 1.55, 5: 2.37, 9: 4.14, 13: 5.74}


def test_perfect_bound_picks_the_cheapest_tokens():
    assert spec_bound.perfect_bound({1: 1.0, 2: 1.0, 3: 1.0}) == (3.0, 3)
    bound, t = spec_bound.perfect_bound(STEEP)
    assert t == 13 and bound == pytest.approx(13 / 5.74)


def test_nothing_recurs_costs_one_forward_per_token():
    context = list(range(100, 140))
    out = list(range(200, 230))                        # never seen: no draft ever
    assert spec_bound.simulate_oracle(context, out, STEEP) == pytest.approx(len(out))
    assert spec_bound.simulate_adaptive(context, out, STEEP) == pytest.approx(len(out))


def test_a_verbatim_repeat_is_drafted_in_blocks():
    line = list(range(1000, 1060))
    context = line + [7, 8]                            # the output repeats the line after its first two tokens
    out = line[2:50]
    flat = {1: 1.0, 13: 1.0}                           # verification free up to 13 tokens
    oracle = spec_bound.simulate_oracle(context, out, flat, k_max=12)
    # first step: the suffix [7, 8] is not followed by the line; afterwards each step takes 13 tokens
    assert oracle < len(out) / 4
    adaptive = spec_bound.simulate_adaptive(context, out, flat)
    assert adaptive < len(out) / 2
    assert spec_bound.simulate_oracle(context, out, STEEP) < len(out)


def test_oracle_pays_only_for_accepted_drafts():
    # a look-up that proposes the wrong continuation: the oracle drafts nothing, so cost = one per token
    context = [1, 2, 3, 9, 9, 9, 1, 2]
    out = [5, 6]
    assert spec_bound.simulate_oracle(context, out, STEEP) == pytest.approx(2.0)
    assert spec_bound.simulate_adaptive(context, out, STEEP) > 2.0   # adaptive drafts [3, 9, ...] and pays
