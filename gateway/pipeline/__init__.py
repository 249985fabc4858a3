"""The log pipeline: durable store, triage (templates, rules), alerts, and the token queue the engine
thread drains. Knows nothing about the model: nothing here imports gateway.llm or gateway.serve."""
