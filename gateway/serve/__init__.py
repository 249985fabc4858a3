"""Serving the model to the appliance: the engine thread (stream prefill + jobs), jobs and their
errors, the one place prompts are built, deadline admission. Knows nothing about HTTP."""
