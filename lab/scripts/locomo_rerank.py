"""Re-rankings of `lab/scripts/locomo-replay` that read more than the
candidates: each turn's stored vector (`--vectors`), another model's
candidates (`--second`), the turns' words. Each one was measured and left
out (docs/evaluation.md, "What bounds multi-hop"); they are kept here so its rows can be
run again.

A `post(qid, cands, scores, rescore)` re-scores the list `fused_cut` cut;
`rescore(cands)` scores candidates whose columns it changed, by the same
rule.
"""
import collections
import json
import math
import re
import sqlite3

import numpy as np


def speakers_of(turns):
    """Each conversation's speakers (the label a turn's text starts with)."""
    out = collections.defaultdict(set)
    for (sid, _), (text, _, _) in turns.items():
        out[sid].add(text.split(":", 1)[0])
    return out


def stored_vectors(db):
    """Each turn's stored vector by (sample id, dia id), read from a kept
    eval store (`--keep-db`): sqlite-vec's chunks, through Python's sqlite3."""
    con = sqlite3.connect(db)
    dim = int(re.search(r"float\[(\d+)\]", con.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_episodes'").fetchone()[0]).group(1))
    chunks = {cid: np.frombuffer(b, dtype=np.float32).reshape(-1, dim)
              for cid, b in con.execute("SELECT rowid, vectors FROM vec_episodes_vector_chunks00")}
    at = {rid: (cid, off) for rid, cid, off in con.execute("SELECT rowid, chunk_id, chunk_offset FROM vec_episodes_rowids") if cid}
    out = {}
    for rid, ns, attrs in con.execute("SELECT rowid, namespace, attributes FROM episodes"):
        dia = json.loads(attrs).get("dia_id")
        if rid in at and dia:
            v = chunks[at[rid][0]][at[rid][1]]
            out[(ns.removeprefix("locomo-"), dia)] = v / np.linalg.norm(v)
    return out


def content_diverse(path, questions, vectors, penalty, depth=40):
    """Maximal marginal relevance over the engine's own first `depth`: each
    pick is the best score less `penalty` × its highest cosine to a turn
    already picked."""
    out = {}
    for line in open(path):
        r = json.loads(line)
        qid, sid = r["qid"], r["qid"].split("#")[0]
        if qid not in questions:
            continue
        top, s = r["ranked"][:depth], np.array(r["scores"][:depth])
        m = np.array([vectors[(sid, d)] for d in top])
        sim, near, picked = m @ m.T, np.full(len(top), -np.inf), []
        pool = list(range(len(top)))
        while pool:
            best = max(pool, key=lambda i: (s[i] - penalty * max(near[i], 0.0), -i))
            picked.append(best)
            pool.remove(best)
            near = np.maximum(near, sim[best])
        out[qid] = [top[i] for i in picked] + r["ranked"][depth:]
    return out


def feedback(vectors, beta, k):
    """Pseudo-relevance feedback on the stored vectors: the query vector
    moved by `beta` × the mean of the first `k` hits' vectors, each
    candidate's cosine taken again (exactly: q·v is the raw cosine, and
    q·c the mean of the first k's)."""
    def post(qid, sub, s, rescore):
        sid = qid.split("#")[0]
        m = np.array([vectors[(sid, d)] for d in sub[0]])
        top = np.lexsort((np.arange(len(s)), -s))[:k]
        c = m[top].mean(0)
        norm = np.sqrt(1 + 2 * beta * sub[2][top].mean() + beta * beta * (c @ c))
        return rescore((sub[0], sub[1], (sub[2] + beta * (m @ c)) / norm) + tuple(sub[3:]))
    return post


def support(vectors, weight, k):
    """The opposite of diversity: a turn gains `weight` × the mean of its
    `k` highest (cosine to another candidate × that candidate's score)."""
    def post(qid, sub, s, rescore):
        if len(s) < 2:
            return s
        sid = qid.split("#")[0]
        m = np.array([vectors[(sid, d)] for d in sub[0]])
        sim = m @ m.T
        np.fill_diagonal(sim, -1)
        return s + weight * np.sort(sim * s[None, :], axis=1)[:, -min(k, len(s) - 1):].mean(1)
    return post


def second_model(other, weight):
    """Each candidate's cosine blended with another model's (`other`: the
    candidates of an eval with that model, `--second`; a turn outside its
    200 takes its lowest cosine there)."""

    def post(qid, sub, s, rescore):
        o = other.get(qid)
        if o is None:
            return s
        cos = dict(zip(o[0], o[2]))
        theirs = np.array([cos.get(d, o[2].min()) for d in sub[0]])
        return rescore((sub[0], sub[1], (1 - weight) * sub[2] + weight * theirs) + tuple(sub[3:]))
    return post


def names_something(turns, questions, boost):
    """× (1 + boost) for a turn that names something (a quoted title, or a
    capitalised word inside a sentence that is not a speaker's name) when
    the question asks what, which, where or who: answer-type matching for
    names, as `when` is for times."""
    speakers = speakers_of(turns)

    def names(sid, text):
        body = re.sub(r"\[shares.*?\]", "", text.split(":", 1)[1])
        return bool(re.search(r'"[^"]{2,}"', body)) or any(
            w not in speakers[sid] and not w.startswith("I'") and w != "I"
            for w in re.findall(r"(?<=[a-z,;] )([A-Z][a-zA-Z']+)", body))

    def post(qid, sub, s, rescore):
        q = questions[qid][2].lower()
        if not re.match(r"(what|which|where|who)\b", q) or q.startswith("what time"):
            return s
        sid = qid.split("#")[0]
        return s * np.array([1 + boost if names(sid, turns[(sid, d)][0]) else 1.0 for d in sub[0]])
    return post


def lexical_feedback(turns, questions, weight, top=3, terms=10):
    """Pseudo-relevance feedback on the words (RM3's shape): the `terms`
    words of the first `top` hits that weigh most (their share of each
    hit's words × its score × their rarity in the conversation), not in
    the question, searched with BM25 (k1 1.2, b 0.75, Porter stems as in
    FTS5's tokenizer; needs `pip install nltk`) over the cut list, and
    `weight` × that BM25, as a share of the best, added."""
    from nltk.stem import PorterStemmer
    stem = PorterStemmer().stem

    def words(text):
        return [stem(w) for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2]
    docs = collections.defaultdict(dict)
    for (sid, dia), (text, _, _) in turns.items():
        docs[sid][dia] = collections.Counter(words(text.split(":", 1)[1]))
    stats = {}
    for sid, d in docs.items():
        df = collections.Counter(t for c in d.values() for t in c)
        stats[sid] = (df, sum(sum(c.values()) for c in d.values()) / len(d), len(d))

    def bm25(sid, query, dia):
        df, avg, n = stats[sid]
        c = docs[sid][dia]
        norm = 1.2 * (0.25 + 0.75 * sum(c.values()) / avg)
        return sum(w * math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * c[t] * 2.2 / (c[t] + norm)
                   for t, w in query.items() if t in c)

    def post(qid, sub, s, rescore):
        sid = qid.split("#")[0]
        df, _, n = stats[sid]
        asked, weigh = set(words(questions[qid][2])), collections.Counter()
        for i in np.lexsort((np.arange(len(s)), -s))[:top]:
            c = docs[sid][sub[0][i]]
            for t, k in c.items():
                if t not in asked:
                    weigh[t] += s[i] * k / sum(c.values()) * math.log(1 + n / df[t])
        query = dict(weigh.most_common(terms))
        if not query:
            return s
        e = np.array([bm25(sid, query, d) for d in sub[0]])
        return s + weight * (e / e.max() if e.max() > 0 else e)
    return post


def entity_links(db, turns):
    """Each turn's entities by (sample id, dia id), from a kept eval store
    after `mnemo --db F enrich` (the `names` provider; the eval's own
    writes run `fast`, which finds dates only). Dates, and the speakers'
    names (every turn is someone's), are left out."""
    speakers = speakers_of(turns)
    out = collections.defaultdict(set)
    for ns, attrs, name, kind in sqlite3.connect(db).execute(
            "SELECT ep.namespace, ep.attributes, en.canonical_name, en.entity_type FROM episode_entities l "
            "JOIN episodes ep ON ep.id = l.episode_id JOIN entities en ON en.id = l.entity_id"):
        sid, name = ns.removeprefix("locomo-"), name.lower()
        if kind != "date" and not any(name == s.lower() or name.endswith(" " + s.lower()) for s in speakers[sid]):
            out[(sid, json.loads(attrs)["dia_id"])].add(name)
    return out


def entity_seeded(links, weight, top):
    """A second pass seeded by the first hits' entities: a candidate linked
    to an entity of one of the first `top` gains `weight` × the best score."""
    def post(qid, sub, s, rescore):
        sid = qid.split("#")[0]
        seed = set().union(*[links.get((sid, sub[0][i]), set()) for i in np.lexsort((np.arange(len(s)), -s))[:top]])
        if not seed:
            return s
        return s + weight * s.max() * np.array([bool(links.get((sid, d), set()) & seed) for d in sub[0]], float)
    return post
