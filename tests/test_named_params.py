"""Which parameter of a kind of line a question asks for (grounding.named_param), from the kind alone:
by name, by the unit the kind writes after it (or glued to its number), by the words before it."""
from gateway.serve.answer import grounding
from gateway.serve.answer.grounding import Kind, named_param

HEALTH = Kind(2, 'level=warning msg="Health check for container <container> failed: timeout after <duration> '
                 'SYSLOG_FACILITY=<syslog_facility>', 39, ["container", "duration", "syslog_facility"],
              {"container": "b3ee02e07902", "duration": '56s"', "syslog_facility": "3"})


def test_a_unit_glued_to_the_number_names_it():
    assert grounding._unit_after(HEALTH, "duration") == "s"
    phrase = ["failed: timeout after"]
    q = "在“failed: timeout after”记录中，时长（秒）的最高值是多少？"
    assert named_param(HEALTH, q, [], phrase, phrase[0]) == "duration"
    q = 'What is the longest timeout, in seconds, of "failed: timeout after" lines?'
    assert named_param(HEALTH, q, [], phrase, phrase[0]) == "duration"


def test_a_quantitys_unit_before_a_words():
    """"failed" follows <container> ("<container> failed: timeout after <duration>s"): a question naming
    seconds asks for the quantity, not the id."""
    assert grounding.a_quantity(HEALTH, "duration") and not grounding.a_quantity(HEALTH, "container")
    assert named_param(HEALTH, "How many seconds did the failed health checks wait in all?") == "duration"


def test_a_number_named_by_the_words_before_it():
    k = Kind(19, "Block <block> stored as <word> in memory (estimated size <size> <word_2> free <free> KB)", 149,
             ["block", "word", "size", "word_2", "free"],
             {"block": "broadcast_40", "word": "values", "size": "9.9", "word_2": "KB", "free": "1.2"})
    assert grounding._label_words(k, "size") == ["estimated", "size"] and grounding._label_words(k, "word_2") == []
    assert named_param(k, "What partition of rdd_42 has min memory estimated?") == "size"
    assert named_param(k, "What was kept in memory?") is None      # "memory" is not right before <size>
