"""The tree the scripts here measure: TREE (default "."), a `git archive` of a commit with the native
module copied in. The venv's editable install maps `gateway` to the checkout ahead of sys.path; its
finder is dropped so that TREE's gateway/ is the one imported (write-up, section 1)."""
import os
import sys

sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
sys.path.insert(0, os.path.abspath(os.environ.get("TREE", ".")))
