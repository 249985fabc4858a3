"""Template mining with a bounded cost per line: Drain3's prefix tree (token count, first token) with at
most MAX_LEAF_TEMPLATES templates under one leaf and MAX_SOURCE_TEMPLATES per source. A line that would
need a new template past either cap joins its source's overflow template (counted). Not thread-safe
(Triage holds its lock around one mine() call); knows nothing about headers, alerts or the store.

Why the caps: Drain compares a line with every template under its leaf (here: every template of its token
count), so unbounded, one source logging a fresh id per line makes every line cost O(templates) (issue 30).
A line is compared with at most MAX_COMPARED templates, those sharing the most (position, token) pairs
with it, and a leaf holds at most MAX_LEAF_TEMPLATES.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from operator import eq, ne
from pathlib import Path

from drain3 import TemplateMiner
from drain3.drain import Drain, LogCluster, Node
from drain3.persistence_handler import PersistenceHandler
from drain3.template_miner_config import TemplateMinerConfig

from gateway.pipeline.masking import GatedMasker

MAX_LEAF_TEMPLATES = 1_024      # templates under one leaf (one token count)
MAX_COMPARED = 64               # templates compared with one line: those sharing the most tokens with it
MAX_SOURCE_TEMPLATES = 2_000    # templates one source may create; then its lines join its overflow
MAX_SOURCES = 256               # sources counted by name; further ones share OTHER_SOURCES
OTHER_SOURCES = "*"
OVERFLOW_TEMPLATE = "<overflow>"   # the template text of every source's overflow template
ID_BLOCK = 1_024                # template ids reserved on disk at a time (never reused after a crash)
PROVEN_SIZE = 10                # lines after which a template's plain words are its own (fast_match)

CREATED, CHANGED, NONE, OVERFLOW = "cluster_created", "cluster_template_changed", "none", "overflow"


@dataclass(slots=True)
class Mined:
    cluster_id: int
    template: str
    kind: str                   # CREATED | CHANGED | NONE | OVERFLOW
    overflow_new: bool = False  # this line opened its source's overflow template


_TIME_WORDS = frozenset("mon tue wed thu fri sat sun monday tuesday wednesday thursday friday saturday sunday jan feb "
                        "mar apr may jun jul aug sep oct nov dec".split())   # a time written in a message: values


def _plain_conflict(template: Sequence[str], tokens: Sequence[str]) -> bool:
    """Some position holds a plain word in the template and another plain word in the line (names
    of days and months are pieces of a time, not words)."""
    for t, w in compress(zip(template, tokens), map(ne, template, tokens)):   # the differing positions
        if t.isalpha() and w.isalpha() and t.lower() not in _TIME_WORDS and w.lower() not in _TIME_WORDS:
            return True
    return False


def _widens(t: str, w: str) -> bool:
    """A template token `t` that a line token `w` turns into "<*>" (Drain's create_template); where
    none does, the merge would return the template as it is, so mine() skips it."""
    return t != w and t != "<*>"


class _BoundedDrain(Drain):
    """Drain whose leaves hold at most MAX_LEAF_TEMPLATES clusters, plus the per-source counts and
    overflow clusters (persisted with the tree)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.source_templates: dict[str, int] = {}     # source -> templates it created
        self.overflow_ids: dict[str, int] = {}         # source -> its overflow cluster id
        self.overflow_lines: dict[str, int] = {}       # source -> lines that joined it
        self._index: dict[int, tuple[int, dict]] = {}   # id(leaf) -> (its size when built, postings)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_index", None)                      # derived; rebuilt on use
        return state

    def tree_search(self, root_node: Node, tokens: list, sim_th: float, include_params: bool):
        """Drain's walk to the leaf, then the best template there. Without include_params (mining),
        only templates sharing a token at the same position with the line are compared: the leaf's
        postings (position, token) -> ids find them. A template with no shared token has
        similarity 0, under any threshold, so the result is Drain's own."""
        node = root_node.key_to_child_node.get(str(len(tokens)))
        if node is None:
            return None
        if not tokens:
            return self.id_to_cluster.get(node.cluster_ids[0])
        depth = 1
        for token in tokens:
            if depth >= self.max_node_depth or depth == len(tokens):
                break
            node = node.key_to_child_node.get(token) or node.key_to_child_node.get(self.param_str)
            if node is None:
                return None
            depth += 1
        if include_params or sim_th <= 0:
            return self.fast_match(node.cluster_ids, tokens, sim_th, include_params)
        built = self._index.get(id(node))
        if built is None or built[0] != len(node.cluster_ids):
            built = self._index[id(node)] = (len(node.cluster_ids), self._postings(node))
        get = built[1].get
        shared: dict[int, int] = {}
        for key in enumerate(tokens):               # (position, token)
            ids = get(key)
            if ids:
                for cid in ids:
                    shared[cid] = shared.get(cid, 0) + 1
        if not shared:
            return None
        if len(shared) > MAX_COMPARED:      # the templates sharing the most tokens: a bounded cost per line
            shared = dict(sorted(shared.items(), key=lambda kv: -kv[1])[:MAX_COMPARED])
        return self.fast_match([c for c in node.cluster_ids if c in shared], tokens, sim_th, False)

    def fast_match(self, cluster_ids, tokens: list, sim_th: float, include_params: bool):
        """Drain's best match, except that a template whose plain word has held in PROVEN_SIZE lines
        does not take a line with another plain word there: that word names the event ("Failed" /
        "Accepted" password, stored as "bytes" / "values"), while a value ("admin", "alice") differs
        before its template has grown."""
        if include_params:
            return super().fast_match(cluster_ids, tokens, sim_th, include_params)
        best, best_sim, best_params = None, -1.0, -1
        n = len(tokens)
        if not n or self.param_str in tokens:        # (a line token "<*>": Drain's own count)
            return self._match_loop(cluster_ids, tokens, sim_th)
        param = self.param_str
        for cid in cluster_ids:
            c = self.id_to_cluster.get(cid)
            if c is None:
                continue
            tpl = c.log_template_tokens
            # Drain's similarity: equal positions that are not "<*>" (a line token never is, here)
            sim, n_params = list(map(eq, tpl, tokens)).count(True) / n, tpl.count(param)
            if (sim > best_sim or (sim == best_sim and n_params > best_params)) and not (
                    c.size >= PROVEN_SIZE and _plain_conflict(tpl, tokens)):
                best, best_sim, best_params = c, sim, n_params     # (the conflict test only where it decides)
        return best if best_sim >= sim_th else None

    def _match_loop(self, cluster_ids, tokens: list, sim_th: float):
        """fast_match as a plain loop over Drain's get_seq_distance."""
        best, best_sim, best_params = None, -1.0, -1
        for cid in cluster_ids:
            c = self.id_to_cluster.get(cid)
            if c is None:
                continue
            if c.size >= PROVEN_SIZE and _plain_conflict(c.log_template_tokens, tokens):
                continue
            sim, n_params = self.get_seq_distance(c.log_template_tokens, tokens, False)
            if sim > best_sim or (sim == best_sim and n_params > best_params):
                best, best_sim, best_params = c, sim, n_params
        return best if best_sim >= sim_th else None

    def _postings(self, leaf: Node) -> dict:
        """(position, token) -> ids of the leaf's templates holding it. A template only ever turns
        tokens into wildcards, so postings built earlier are a superset: never a missed match."""
        post: dict[tuple[int, str], list[int]] = {}
        for cid in leaf.cluster_ids:
            c = self.id_to_cluster.get(cid)
            if c is not None:
                for i, token in enumerate(c.log_template_tokens):
                    if token != self.param_str:
                        post.setdefault((i, token), []).append(cid)
        return post

    def insert_leaf(self, tokens: tuple) -> Node:
        """The leaf a new cluster of `tokens` goes under (Drain's insertion walk, nodes created as it does)."""
        node = self.root_node.key_to_child_node.setdefault(str(len(tokens)), Node())
        depth = 1
        for token in tokens:
            if depth >= self.max_node_depth or depth >= len(tokens):
                break
            children = node.key_to_child_node
            if token in children:
                node = children[token]
            elif self.parametrize_numeric_tokens and self.has_numbers(token):
                node = children.setdefault(self.param_str, Node())
            elif self.param_str in children:
                node = children[self.param_str] if len(children) >= self.max_children else \
                    children.setdefault(token, Node())
            elif len(children) + 1 < self.max_children:
                node = children.setdefault(token, Node())
            else:
                node = children.setdefault(self.param_str, Node())
            depth += 1
        return node

    def leaf_room(self, leaf: Node) -> bool:
        if len(leaf.cluster_ids) < MAX_LEAF_TEMPLATES:
            return True
        if self.max_clusters is None or len(self.id_to_cluster) < self.max_clusters:
            return False                                   # nothing was evicted
        leaf.cluster_ids = [c for c in leaf.cluster_ids if c in self.id_to_cluster]   # drop LRU-evicted ids
        return len(leaf.cluster_ids) < MAX_LEAF_TEMPLATES

    def create(self, tokens: list, leaf: Node) -> LogCluster:
        self.clusters_counter += 1
        cluster = LogCluster(tokens, self.clusters_counter)
        self.id_to_cluster[cluster.cluster_id] = cluster
        leaf.cluster_ids.append(cluster.cluster_id)
        return cluster

    def overflow(self, source: str) -> tuple[LogCluster, bool]:
        """The source's overflow cluster (outside the tree: no line matches it by similarity)."""
        cid = self.overflow_ids.get(source)
        cluster = self.id_to_cluster.get(cid) if cid is not None else None
        if cluster is not None:
            cluster.size += 1
            self.id_to_cluster[cid]                        # noqa: B018 (touch: LRU keeps it)
            return cluster, False
        self.clusters_counter += 1
        cluster = LogCluster([OVERFLOW_TEMPLATE], self.clusters_counter)
        self.id_to_cluster[cluster.cluster_id] = cluster
        self.overflow_ids[source] = cluster.cluster_id
        return cluster, cid is None


class BoundedMiner(TemplateMiner):
    """mine(masked_message, source) -> Mined. Masking is the caller's (mask(), thread-safe), so that
    only the tree update needs the caller's lock. Saving is the caller's too (save())."""

    def __init__(self, persist: PersistenceHandler | None, config: TemplateMinerConfig) -> None:
        super().__init__(None, config)
        c = self.config
        self.drain = _BoundedDrain(sim_th=c.drain_sim_th, depth=c.drain_depth, max_children=c.drain_max_children,
                                   max_clusters=c.drain_max_clusters, extra_delimiters=c.drain_extra_delimiters,
                                   param_str=self.drain.param_str,
                                   parametrize_numeric_tokens=c.parametrize_numeric_tokens)
        self.masker = GatedMasker(c.masking_instructions, c.mask_prefix, c.mask_suffix)   # the same masks, gated
        self.persistence_handler = persist
        self._ids_path = Path(str(persist.path) + ".ids") if persist is not None and hasattr(persist, "path") else None
        self._reserved = 0
        if persist is not None:
            self.load_state()

    def load_state(self) -> None:
        state = self.persistence_handler.load_state()
        super().load_state()
        if state is not None:   # the extra fields of _BoundedDrain ride in the same snapshot
            import base64, zlib, jsonpickle   # noqa: E401 (as TemplateMiner.load_state decodes it)
            if self.config.snapshot_compress_state:
                state = zlib.decompress(base64.b64decode(state))
            loaded = jsonpickle.loads(state, keys=True)
            for name in ("source_templates", "overflow_ids", "overflow_lines"):
                setattr(self.drain, name, dict(getattr(loaded, name, {}) or {}))
        self.drain._index = {}
        if self._ids_path is not None and self._ids_path.exists():
            self._reserved = int(self._ids_path.read_text() or 0)
            self.drain.clusters_counter = max(self.drain.clusters_counter, self._reserved)

    def mask(self, message: str) -> list[str]:
        return self.drain.get_content_as_tokens(self.masker.mask(message))

    def mine(self, tokens: list[str], source: str) -> Mined:
        d = self.drain
        cluster = d.tree_search(d.root_node, tokens, d.sim_th, False)
        if cluster is not None:
            tpl, kind = cluster.log_template_tokens, NONE
            if type(tpl) is not tuple or d.param_str != "<*>" or any(map(_widens, tpl, tokens)):
                new = tuple(d.create_template(tokens, tpl))
                if new != tpl:
                    cluster.log_template_tokens, kind = new, CHANGED
            cluster.size += 1
            d.id_to_cluster[cluster.cluster_id]            # noqa: B018 (touch: LRU keeps it)
            return Mined(cluster.cluster_id, cluster.get_template(), kind)
        key = self._key(source)
        leaf = d.insert_leaf(tuple(tokens)) if d.source_templates.get(key, 0) < MAX_SOURCE_TEMPLATES else None
        if leaf is None or not d.leaf_room(leaf):
            return self.unmined(source)
        cluster = d.create(tokens, leaf)
        d.source_templates[key] = d.source_templates.get(key, 0) + 1
        self._reserve(cluster.cluster_id)
        return Mined(cluster.cluster_id, cluster.get_template(), CREATED)

    def unmined(self, source: str) -> Mined:
        """The line joins its source's overflow template (past a cap, or past triage's work budget)."""
        d = self.drain
        key = self._key(source)
        cluster, first = d.overflow(key)
        d.overflow_lines[key] = d.overflow_lines.get(key, 0) + 1
        self._reserve(cluster.cluster_id)
        return Mined(cluster.cluster_id, OVERFLOW_TEMPLATE, OVERFLOW, overflow_new=first)

    def _key(self, source: str) -> str:
        d = self.drain
        return source if source in d.source_templates or source in d.overflow_ids or \
            (len(d.source_templates) < MAX_SOURCES and len(d.overflow_ids) < MAX_SOURCES) else OTHER_SOURCES

    def _reserve(self, cluster_id: int) -> None:
        """Ids are durable before any row names them: a block of ids is written (fsynced) ahead, so a
        restart from an older snapshot never hands out an id the store already holds."""
        if self._ids_path is None or cluster_id <= self._reserved:
            return
        self._reserved = cluster_id + ID_BLOCK
        tmp = self._ids_path.with_suffix(".ids.tmp")
        with open(tmp, "w") as f:
            f.write(str(self._reserved))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._ids_path)

    def overflow_figures(self) -> dict:
        d = self.drain
        return {"template_cap_per_source": MAX_SOURCE_TEMPLATES, "leaf_cap": MAX_LEAF_TEMPLATES,
                "templates_by_source": dict(d.source_templates), "overflow_lines": dict(d.overflow_lines),
                "overflow_template_ids": dict(d.overflow_ids)}
