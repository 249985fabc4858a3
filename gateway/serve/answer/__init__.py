"""An operator's question answered from the store, in typed stages (issue 41):

  question   (question.py)   what the question itself writes: its asks, quoted phrases, times and
                             windows, the hosts/components/levels and log words it names (Grounding);
  grounding  (grounding.py,  the kinds of line its words and identifiers point at, with named
              evidence.py)   parameters; the lines that hold its identifiers;
  call       (call.py)       the grammar the model writes one store query under, its prompt texts;
  tool       (tool.py)       QueryTool.plan -> QueryPlan: the call's prompt and mask;
  plan       (plan.py,       QueryPlan.finish runs the call (identifiers ANDed, ids bound to
              detail.py)     parameters) -> the answer's prompt, with what the result adds (a
                             count's total, a listing's extremes and the lines that hold them);
  render     (render.py)     the result in words: for the answer's prompt and the plain fallback;
  check      (check.py)      the model's answer against its query: figures, the asked value, the
                             line a lookup must quote, a count of every line noted.

The engine thread runs the stages (gateway.serve.engine_thread), one call per ask of the question.
"""
