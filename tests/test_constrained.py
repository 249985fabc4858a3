"""Grammar-constrained decoding (gateway/llm/constrained.py) and the query call grammar
(gateway/serve/query_call.py): every decode under the mask yields a parseable call, whatever the logits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.fakes import ScratchLM
from gateway.llm.constrained import Chars, Constraint, Grammar, LogitsMask, Vocabulary, one_of, opt, seq
from gateway.llm.sampling import SamplingParams, next_token, probs_from_logits, sample
from gateway.llm.speculative import speculative_generate
from gateway.llm.tokenizer import Tokenizer
from gateway.serve.answer.call import CALL_PREFIX, MAX_CALL_TOKENS, call_grammar, parse_call
from gateway.serve.answer.render import render_result



class TinyLM(ScratchLM):
    """A small 'language model' (tests/fakes.py), 4 tokens unless told."""

    def __init__(self, salt: int, scale: float, vocab: int = 4):
        super().__init__(salt, scale, vocab)


class TinyDrafter:
    """Samples drafts from another TinyLM, blind to the grammar (so the rule must reject some)."""

    def __init__(self, lm: TinyLM, seed: int):
        self.lm, self.rng = lm, np.random.default_rng(seed)

    def begin_job(self, prompt, sampling, seed):
        self.sampling = sampling

    def propose(self, context, k):
        ctx, toks, qs = list(context), [], []
        for _ in range(k):
            q = probs_from_logits(self.lm.logits(ctx), SamplingParams(temperature=1.0))
            t = sample(q, self.rng)
            toks.append(t)
            qs.append(q)
            ctx.append(t)
        return toks, (np.stack(qs) if self.sampling.temperature > 0 else None)

    def observe(self, n_accepted, n_drafted):
        pass

    def end_job(self):
        pass


def test_grammar_matches_and_distances():
    g = Grammar(seq("{", one_of(["ab", "abc", "x"]), opt(seq(",", Chars(1, 3, deny=b'"'))), "}"))
    for ok in ("{ab}", "{abc}", "{x,1}", "{x,a b}"):
        assert g.matches(ok), ok
    for bad in ("{a}", "{x,}", "{x,abcd}", '{x,"}', "{ab}}", ""):
        assert not g.matches(bad), bad
    assert g.dist(g.start()) == 3                      # "{x}"
    assert g.dist(g.step(g.start(), b"{a")) == 2       # "b}"


def _vocab_small() -> Vocabulary:
    return Vocabulary([b"a", b"b", b"ab", None, b"}", b'"', b"ba"], stop_ids=[3])


def test_mask_allows_exactly_the_continuations():
    c = Constraint(Grammar(seq(one_of(["ab", "ba"]), "}")), _vocab_small())
    s0 = c.grammar.start()
    assert list(np.flatnonzero(c.mask(s0))) == [0, 1, 2, 6]
    s1 = c.advance(s0, 2)
    assert list(np.flatnonzero(c.mask(s1))) == [4]
    s2 = c.advance(s1, 4)
    assert list(np.flatnonzero(c.mask(s2))) == [3]     # complete: only the stop token


@pytest.fixture(scope="module")
def smol_tokenizer(smollm_path):
    return Tokenizer.from_gguf(smollm_path, use_native=False)


WORDS = ["E-STOP", "pressed", "temperature", "zone", "jk2_init", "Can't"]
PHRASES: list[str] = []
TIMES = ["Jun 30 22:16:32", "2026-12-01 08:05"]


@pytest.fixture(scope="module")
def call_constraint(smol_tokenizer):
    grammar = Grammar(call_grammar(["press-1", "press-2", "node-7/plc"], ["plc", "heater", "sshd(pam_unix)"],
                                   ["info", "warning", "error"], WORDS, PHRASES, TIMES))
    return Constraint(grammar, Vocabulary.of(smol_tokenizer))


def _decode(constraint, logits_fn, sampling, seed):
    mask = LogitsMask(constraint, MAX_CALL_TOKENS)
    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < MAX_CALL_TOKENS and not mask.complete(out):
        row = mask(out, logits_fn(len(out)), sampling.greedy)
        t = next_token(row, sampling, rng)
        if t in constraint.stop_ids:
            break
        out.append(t)
    return mask.text_bytes(out).decode("utf-8", errors="replace")


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_random_logits_always_give_a_parseable_call(call_constraint, smol_tokenizer, temperature):
    V = smol_tokenizer.n_vocab
    sampling = SamplingParams(temperature=temperature)
    for seed in range(12 if temperature == 0 else 2):
        rng = np.random.default_rng(seed)
        scale = [0.5, 3.0, 10.0][seed % 3]
        table = rng.normal(0.0, scale, (MAX_CALL_TOKENS + 1, V))
        text = _decode(call_constraint, lambda i: table[i], sampling, seed)
        call = parse_call(text)
        assert call["op"] in ("count", "top_k", "stats", "first_last", "buckets", "lines"), text
        assert set(call) <= {"op", "by", "k", "text", "of", "host", "component", "level", "since", "until",
                             "last_minutes"}, text
        if "host" in call:
            assert call["host"] in ("press-1", "press-2", "node-7/plc")
        # a text filter is log words or the question's quoted phrase; times only those it names
        if "text" in call:
            assert call["text"] in PHRASES or set(call["text"].split(" ")) <= set(WORDS), text
        assert call.get("of", WORDS[0]) in WORDS and call["op"] == "stats" or "of" not in call, text
        lv = call.get("level", [])
        assert set(lv if isinstance(lv, list) else [lv]) <= {"info", "warning", "error"}, text
        assert {call.get("since", TIMES[0]), call.get("until", TIMES[0])} <= set(TIMES), text
        assert "k" not in call or 1 <= call["k"] <= 20 and call["op"] == "top_k", text


def test_biased_logits_still_parse(call_constraint, smol_tokenizer):
    """Logits that push hard for quotes, newlines and control tokens (an adversarial model)."""
    V = smol_tokenizer.n_vocab
    bad = [t for t in range(V) if (b := smol_tokenizer.token_bytes(t)) and (b'"' in b or b"\n" in b)]
    rng = np.random.default_rng(7)
    row = rng.normal(0.0, 1.0, V)
    row[bad] += 50.0
    row[list(smol_tokenizer.special_ids)] += 100.0
    text = _decode(call_constraint, lambda i: row, SamplingParams(), 0)
    parse_call(text)


def test_call_prefix_and_render():
    assert json.loads(CALL_PREFIX + 'count", "text": "E-STOP"}') == {"op": "count", "text": "E-STOP"}
    r = render_result({"call": {"op": "first_last"}, "count": 2, "first": {"id": 1, "time": 0.0, "text": "x"},
                       "last": {"id": 2, "time": 60.0, "time_text": "Jun 9 06:06:21", "text": "y", "component": "kernel"}})
    assert r == "2 lines match. The first at 1970-01-01 00:00:00: x. The last at Jun 9 06:06:21 (component kernel): y."
    r = render_result({"call": {"op": "stats"}, "by": None, "count": 3, "n": 2, "min": 2191.0, "max": 65454.0,
                       "avg": 1.23456, "min_line": {"time": 0.0, "text": "a"}, "max_line": {"time": 0.0, "text": "b"}})
    assert r.startswith("2 numbers in 3 matching lines: maximum (the largest, highest) 65454, minimum (the smallest, "
                        "lowest) 2191, average (the mean) 1.2. ")  # 1 place
    assert "The maximum at 1970-01-01 00:00:00: b. The minimum at" in r       # no sum given: no total said
    r_in = {"call": {"op": "stats"}, "count": 3, "n": 2, "min": 1.0, "max": 2.5, "avg": 1.75, "sum": 3.5,
            "min_line": {"time": 0.0, "text": "a"}, "max_line": {"time": 0.0, "text": "b"}}
    r = render_result(r_in)
    assert r.startswith("2 numbers in 3 matching lines: maximum (the largest, highest) 2.5, minimum (the smallest, "
                        "lowest) 1, average (the mean) 1.8; they add up to 3.5 "
                        "in all. The maximum at")
    assert "average (the mean) 0.42;" in render_result({**r_in, "min": 0.25, "max": 0.5, "avg": 0.41666})  # its places
    assert "最小值、最低、最少" in render_result(r_in, zh=True)
    r = render_result({"call": {"op": "top_k", "by": "ip"}, "count": 9, "top": [{"value": "10.0.0.1", "lines": 5}]})
    assert r == "9 lines match. The most frequent IP address is 10.0.0.1 (5 lines)."
    r = render_result({"call": {"op": "top_k", "by": "template"}, "count": 9,
                       "top": [{"value": "a", "count": 6}, {"value": "b", "count": 3}]})
    assert r == "9 lines match. The most frequent kind of message is a (6 lines). The next ones: 2. b (3 lines)."
    r = render_result({"call": {"op": "lines"}, "count": 1, "lines": [{"id": 1, "time": 0.0, "text": "to spark://d@h:1",
                       "captured": {"X": "d@h:1"}}]})
    assert r.startswith("X is d@h:1. 1 lines match")
    assert render_result({"call": {"op": "count"}, "count": 0, "no_match": True}).startswith("No line matches")
    assert "failed" in render_result({"call": {}, "error": "unknown op"})


def test_masked_speculative_greedy_is_masked_target_greedy():
    """A drafter proposing tokens the grammar rules out: they are rejected, and the output is the
    masked target's own greedy output."""
    vocab = Vocabulary([b"a", b"b", b"ab", b"}", None], stop_ids=[4])
    constraint = Constraint(Grammar(seq(Chars(1, 6, allow=b"ab"), "}")), vocab)
    target = TinyLM(salt=5, scale=2.0, vocab=5)
    prompt = [0, 1]
    ref_mask, ref = LogitsMask(constraint, 8), []
    while not ref_mask.complete(ref) and len(ref) < 8:
        ref.append(int(np.argmax(ref_mask(ref, target.logits(prompt + ref), True))))
    res = speculative_generate(target, TinyDrafter(TinyLM(salt=6, scale=2.0, vocab=5), 0), prompt, 8,
                               SamplingParams(), logits_processor=LogitsMask(constraint, 8), stop_tokens=[4])
    assert res.tokens == ref + [4]
    assert res.stats.n_drafted > 0
    assert target.scratch_len == 0


def test_masked_speculative_sampling_stays_in_grammar():
    vocab = Vocabulary([b"a", b"b", b"ab", b"}", None], stop_ids=[4])
    constraint = Constraint(Grammar(seq(Chars(1, 4, allow=b"a"), "}")), vocab)
    for seed in range(20):
        target = TinyLM(salt=5, scale=1.0, vocab=5)
        mask = LogitsMask(constraint, 6)
        res = speculative_generate(target, TinyDrafter(TinyLM(salt=6, scale=1.0, vocab=5), seed), [0], 7,
                                   SamplingParams(temperature=1.0), seed=seed, logits_processor=mask,
                                   stop_tokens=[4])
        text = mask.text_bytes(res.tokens)
        assert constraint.grammar.matches(text), text


def test_question_phrases_and_times():
    from gateway.serve.answer.question import question_phrases, question_times
    assert question_phrases('How many lines contain "No more user authentication methods available"?') == \
        ["No more user authentication methods available"]
    assert question_phrases("日志中形如\u201cFailed password for <*> port <N> ssh2\u201d的行里") == \
        ["Failed password for <*> port <N> ssh2"]
    assert question_phrases('a "quote \\ with backslash" and "x"') == []          # not JSON-safe / too short
    assert question_phrases("what's the most any 'Failed to renew lease' line said?") == ["Failed to renew lease"]
    assert question_phrases("the operators' shift and the workers' lines") == []    # apostrophes
    assert question_times("between Jun 30 22:16:32 and Jun 30 22:16:34 (inclusive)?") == \
        ["Jun 30 22:16:32", "Jun 30 22:16:34"]
    assert question_times("在 2005-07-07 07:57:00 到 2005-07-07 19:57:00 之间") == \
        ["2005-07-07 07:57:00", "2005-07-07 19:57:00"]
    assert question_times("between 08:05 and 08:10 UTC on 2026-12-01?") == ["2026-12-01 08:05", "2026-12-01 08:10"]
    assert question_times("what happened at 10:05?") == ["10:05"]
    assert question_times("How many times was the E-STOP pressed?") == []
    # a day written alone is that whole day (the store reads a date as since its start, until its end)
    assert question_times("How many times workerEnv.init ok on Dec 05?") == ["12-05", "12-05"]
    assert question_times("12月5号那天 jk2_init 找到 child 的有几行") == ["12-05", "12-05"]
    assert question_times("2015-10-18 这天有多少行") == ["2015-10-18", "2015-10-18"]
    assert question_times("from December 4th to Dec 5, how many?") == ["12-04", "12-05"]
    assert question_times("May I ask how many? Decommission 5 nodes?") == []      # no month there
    # an hour written without minutes is that hour, on the day written (else the newest line's)
    assert question_times("12月4号晚上8点那个钟头 error state 加起来多少") == ["12-04 20:00:00", "12-04 20:59:59"]
    assert question_times("how many at 3 pm on Dec 5?") == ["12-05 15:00:00", "12-05 15:59:59"]
    assert question_times("凌晨4点 有几条") == ["04:00:00", "04:59:59"]
    assert question_times("8点半的时候 / version 2.5 pm") == []
    assert question_times("18点10分那一分钟 失败了几次") == ["18:10"]          # a clock in words
    assert question_times("晚上8点05分20秒那条") == ["20:05:20"]


def test_a_quoted_phrase_is_the_text_filter(smol_tokenizer):
    """When the question quotes a phrase, every call filters on it (a <N> pattern needs no "of")."""
    phrase = "Failed password for invalid user <*> from <*> port <N> ssh2 " + "x" * 60   # a long quote fits too
    c = Constraint(Grammar(call_grammar(["h"], [], ["info"], WORDS, [phrase], [])), Vocabulary.of(smol_tokenizer))
    rng = np.random.default_rng(3)
    for seed in range(6):
        table = rng.normal(0.0, 3.0, (MAX_CALL_TOKENS + 1, smol_tokenizer.n_vocab))
        call = parse_call(_decode(c, lambda i: table[i], SamplingParams(), seed))
        assert call["text"] == phrase and "of" not in call
    g = Grammar(call_grammar([], [], [], [], [], [], recent=False))
    assert g.matches('top_k", "by": "template"}') and not g.matches('count", "text": "x"}')
    assert not g.matches('count", "last_minutes": 5}')


def test_first_last_renders_the_end_the_question_asks_for():
    from gateway.serve.answer.question import which_end
    r = {"call": {"op": "first_last"}, "count": 2, "first": {"id": 1, "time": 0.0, "time_text": "Jun 15 04:06:19",
         "text": "a"}, "last": {"id": 2, "time": 9.0, "time_text": "Jul 27 04:21:40", "text": "b"}}
    first = render_result(r, which_end('When did "session closed" appear for the first time?'))
    assert "Jun 15 04:06:19" in first and "Jul 27" not in first
    last = render_result(r, which_end("“session closed”最后一次出现是在什么时候？"))
    assert "Jul 27 04:21:40" in last and "Jun 15" not in last
    both = render_result(r, which_end("When did it first and last appear?"))
    assert "Jun 15" in both and "Jul 27" in both


def test_a_later_ask_is_grounded_with_the_asks_before_it(smol_tokenizer, tmp_path):
    """"How many "E-STOP pressed" lines? Which host had the most?": the second ask names no subject; it
    is grounded with the first (its quoted phrase filters the call), and its own words stay the question."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.fields import LineFields
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    from gateway.serve.answer.tool import QueryTool
    store = Store(tmp_path / "s.db")
    recs = [LogRecord(ts=1.7e9 + i, source="t", host=h, severity=6, text=f"E-STOP pressed on {h}")
            for i, h in enumerate(["press-1", "press-2", "press-2"])]
    store.append(recs, [None] * 3, [LineFields(component="plc", level="info") for _ in recs])
    tool = QueryTool(QuerySurface(store.path), smol_tokenizer)
    q = "Which host had the most?"
    plan = tool.plan([{"role": "user", "content": q}], before='How many "E-STOP pressed" lines?')
    assert plan.question == q and plan.turns[-1]["content"].startswith(q)
    assert plan.mask.c.grammar.matches('top_k", "by": "host", "text": "E-STOP pressed"}')
    alone = tool.plan([{"role": "user", "content": q}])
    assert not alone.mask.c.grammar.matches('top_k", "by": "host", "text": "E-STOP pressed"}')
    store.close()


def test_a_quoted_phrase_picks_the_kinds_listed(smol_tokenizer, tmp_path):
    """"所有“Payment request”记录的耗时（毫秒）合计": the Chinese words give no kind; the quoted phrase,
    the lines' own words, does."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.fields import LineFields, named_params
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    from gateway.serve.answer.tool import QueryTool
    store = Store(tmp_path / "s.db")
    rows = [(f"Payment request r{i} timed out after {10 * i} ms", "Payment request <*> timed out after <*> ms")
            for i in range(45)] + [(f"Order {i} shipped", "Order <*> shipped") for i in range(3)]   # not rare:
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, (t, _) in enumerate(rows)]  # no
    store.append(recs, [1] * 45 + [2] * 3, [LineFields(template=m, params=named_params(m, t)) for t, m in rows])  # evidence
    tool = QueryTool(QuerySurface(store.path), smol_tokenizer)
    plan = tool.plan([{"role": "user", "content": "所有“Payment request”记录的耗时（毫秒）合计是多少？"}])
    assert [k.id for k in plan.kinds] == [1] and "Payment request <request> timed out" in plan.turns[-1]["content"]
    store.close()


def test_the_log_s_own_name_is_no_text_filter(smol_tokenizer, tmp_path):
    """"spark日志里 ...": a Chinese question's Latin word is a condition when the store holds it ("root ..."),
    but not the word the question names the log by: "spark" of spark.CacheManager is no text the call may
    filter on (it matched the lines of that one component)."""
    from gateway.ingest.record import LogRecord
    from gateway.pipeline.fields import LineFields
    from gateway.pipeline.query import QuerySurface
    from gateway.pipeline.store import Store
    from gateway.serve.answer.tool import QueryTool
    store = Store(tmp_path / "s.db")
    texts = [f"INFO spark.CacheManager: Partition rdd_42_{i} not found, computing it" for i in range(20)]
    recs = [LogRecord(ts=1.7e9 + i, source="t", host="h", severity=6, text=t) for i, t in enumerate(texts)]
    store.append(recs, [None] * 20, [LineFields(level="info") for _ in recs])
    tool = QueryTool(QuerySurface(store.path), smol_tokenizer)
    plain = tool.plan([{"role": "user", "content": "Partition 最多的是哪个？"}])
    assert plain.mask.c.grammar.matches('count", "text": "Partition"}')
    plan = tool.plan([{"role": "user", "content": "spark日志里 Partition 最多的是哪个？"}])
    assert plan.mask.c.grammar.matches('count", "text": "Partition"}')
    assert not plan.mask.c.grammar.matches('count", "text": "spark"}')
    assert tool.plan([{"role": "user", "content": "spark 最多的是哪个？"}]).mask.c.grammar.matches(
        'count", "text": "spark"}')          # named as a word of the lines, it is one
    store.close()


def test_top_k_may_count_by_day_or_hour():
    """The calendar groups are offered with the fields; a grammar limited to the question's fields is not."""
    g = Grammar(call_grammar(["h"], [], ["error"], ["valve"], [], []))
    for by in ("day", "hour"):
        text = f'top_k", "by": "{by}", "level": "error"}}'
        assert g.matches(text) and parse_call(text)["by"] == by
    assert not Grammar(call_grammar(["h"], [], [], ["valve"], [], [], by=["host"])).matches('top_k", "by": "day"}')
