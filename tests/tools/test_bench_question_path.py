"""tools/bench/bench_question_path.py on a small synthetic store: the running counts' window count equals
the full scan's, and their ranking equals the whole-store GROUP BY's."""

from __future__ import annotations

from gateway.pipeline.query import QuerySurface
from gateway.pipeline.query_vocab import known_values, template_lines
from tools.bench import bench_question_path as b


def test_the_bench_compares_equal_results(tmp_path):
    path = tmp_path / "logs.db"
    b.synthesize(path, 3000)
    q = QuerySurface(path)
    while q.counts().newest() is None:
        q._counted = -1e9
    for minutes in (1.0, 7.5, 60.0):
        assert b.new_window(q, minutes) == b.old_window(q, minutes) > 0
        assert b.new_top(q, minutes) == b.old_top(q, minutes) != []
    assert b.new_host(q, "line3") == b.old_host(q, "line3") == 75
    rows, _ = q.execute(b.OLD_VALUES.format(expr="l.host"))
    assert set(known_values(q, "host")) == {r[0] for r in rows}
    rows, _ = q.execute(b.OLD_TEMPLATES)
    assert [(t, n) for t, _, n in template_lines(q, 5000)] == sorted(((int(r[0]), r[2]) for r in rows),
                                                                    key=lambda x: (-x[1], x[0]))
