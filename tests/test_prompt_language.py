"""Languages in the built prompts (not model output): alert explanations in [ui] language, chat answers
in the question's language on the plain (quoted-lines) path and the store-query path."""

from __future__ import annotations

import pytest

from gateway import settings as settings_mod
from gateway.serve.prompts import (ANSWER_IN_CHINESE, EXPLAIN_INSTRUCTION, EXPLAIN_INSTRUCTION_ZH, Prompts,
                                   is_chinese, with_sources)

pytestmark = pytest.mark.models

ALERT = {"severity": "error", "kind": "severity", "host": "line3/plc", "template": "E-STOP pressed at <*>",
         "count": 1, "lines": ["ERROR E-STOP pressed at station 4"]}


@pytest.fixture(scope="module")
def tokenizer(smollm_path):
    return Prompts.for_model(smollm_path).tokenizer


def text(p: Prompts, ids) -> str:
    return p.tokenizer.decode(ids)


def test_explanation_follows_ui_language(tokenizer):
    en, zh = Prompts(tokenizer, "en"), Prompts(tokenizer, "zh-CN")
    t_en, t_zh = text(en, en.explain_tokens(ALERT)), text(zh, zh.explain_tokens(ALERT))
    assert EXPLAIN_INSTRUCTION in t_en and not is_chinese(t_en)
    assert EXPLAIN_INSTRUCTION_ZH in t_zh and "E-STOP pressed at station 4" in t_zh
    assert en.sink_tokens == zh.sink_tokens      # the sink (and the stream in the ring) do not change
    with pytest.raises(ValueError):
        Prompts(tokenizer, "fr")


def test_plain_chat_answers_in_the_question_language(tokenizer):
    p = Prompts(tokenizer)
    zh = text(p, p.chat_tokens([{"role": "user", "content": "最近几分钟产线上发生了什么？"}]))
    assert "最近几分钟产线上发生了什么？" + ANSWER_IN_CHINESE in zh
    en = text(p, p.chat_tokens([{"role": "user", "content": "What happened on the line?"}]))
    assert ANSWER_IN_CHINESE.strip() not in en
    # only the last question decides; earlier Chinese turns do not
    mixed = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "hi"},
             {"role": "user", "content": "What happened?"}]
    assert ANSWER_IN_CHINESE.strip() not in text(p, p.chat_tokens(mixed))
    assert ANSWER_IN_CHINESE.strip() not in text(p, p.chat_tokens(mixed[:1], language_hint=False))
    # quoted store lines in Chinese do not make an English question Chinese (and the other way round)
    row = {"id": 7, "ts": 1_796_000_000, "host": "line3/plc", "severity": "warning", "text": "加热区2温度过高"}
    assert ANSWER_IN_CHINESE.strip() not in text(p, p.chat_tokens(
        [{"role": "user", "content": with_sources("Why the warning?", [row])}]))
    assert ANSWER_IN_CHINESE.strip() in text(p, p.chat_tokens(
        [{"role": "user", "content": with_sources("为什么报警？", [dict(row, text="zone 2 over temp")])}]))


def test_query_answer_turn_asks_once_for_chinese(tokenizer):
    from gateway.serve.answer.plan import QueryPlan
    plan = QueryPlan(tool=None, turns=[{"role": "user", "content": "急停按了几次？"}], question="急停按了几次？",
                     mask=None, prefix_tokens=[])
    plan.tool = type("T", (), {"surface": type("S", (), {"run": staticmethod(lambda c: {"count": 1})})()})()
    msgs = plan.finish('count", "text": "E-STOP"}')
    p = Prompts(tokenizer)
    assert text(p, p.chat_tokens(msgs, language_hint=False)).count(ANSWER_IN_CHINESE.strip()) == 1


def test_settings_ui_language_and_guard(tmp_path):
    s = settings_mod.load(None, data_dir=tmp_path)
    assert s.ui.language == "en" and s.engine.no_repeat_ngram == 12
    cfg = tmp_path / "c.toml"
    cfg.write_text('[ui]\nlanguage = "zh-CN"\n[engine]\nno_repeat_ngram = 0\n')
    s = settings_mod.load(cfg, data_dir=tmp_path)
    assert s.ui.language == "zh-CN" and s.engine.no_repeat_ngram == 0
    for bad in ('[ui]\nlanguage = "de"\n', '[engine]\nno_repeat_ngram = 1\n'):
        cfg.write_text(bad)
        with pytest.raises(settings_mod.SettingsError):
            settings_mod.load(cfg, data_dir=tmp_path)


def test_the_question_s_language_is_outside_its_quotes_and_names():
    assert not is_chinese('What is the lowest current in "过载, 已降速" entries on station 总装线?')
    assert not is_chinese("How many log entries did station 工位3 produce?")
    assert is_chinese("组件 org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator 一共输出了多少行日志？")
    assert is_chinese("所有“Failed to renew lease for”日志中，“seconds”前面的数最大是多少？")
    assert not is_chinese("How many lines say “Failed to renew lease”?")
