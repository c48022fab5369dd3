"""Query 2's instance state and its compiled kernel: communities kept as likes and
friendships arrive (the query's present-state store; no history is kept).

State, in column tables (:mod:`cep.tables`) that only this module reads and writes:

* persons: dense index per user id; each with its friend edges (a list, never shortened)
  and its live likes (a doubly linked list of like nodes, unlinked when a comment leaves);
* friendships: a set of pairs (``min << 31 | max`` of dense indexes);
* comments: dense index in arrival order (so the live ones are the indexes from
  ``head`` on, and leave in index order), id, time, range, their like nodes;
* like nodes: one per (comment, person), ``comment << 31 | person`` -> node, and a
  union-find over them (component sizes per comment).

Per like of comment ``c`` by ``u``: ``c``'s likers who are ``u``'s friends are found by
walking the shorter of ``u``'s friend list and ``c``'s liker list (the other side is a hash
lookup), so the cost is the smaller degree, not the stream's length. Component: unions
with them. Clique: the largest clique among them (a bounded search for one larger than
the current range), plus ``u``. Per friendship ``{u, v}``: the comments both like, by
walking the shorter live-like list; component: one union; clique: a search among the
comment's likers who are friends of both. Ranges only grow while a comment lives, so a
new maximum contains the new liker or both new friends.

The local top-k: the k best live comments (range >= 1) by range, then text bytes, then
id. A comment whose range grows enters or moves up (k comparisons); when one of the k
leaves, the live comments are scanned once for the best replacement. A report is written
at every step after which the k (indexes and ranges) differ from the last report.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from cep.tables import IntMap, StringPool, map_delete, map_get, map_put, reserve_rows, write_step

__all__ = ["FriendRouter", "Q2State", "route", "run_batch"]

_jit = numba.njit(cache=True, nogil=True)

# column indexes of the tables
U_LIKES, U_FRIENDS, U_DEG, U_LIVE = 0, 1, 2, 3  # persons
E_TO, E_NEXT = 0, 1  # friend edges
C_ID, C_TS, C_RANGE, C_LIKERS, C_NLIKERS = 0, 1, 2, 3, 4  # comments
N_PERSON, N_COMMENT, N_NEXT, N_UNEXT, N_UPREV, N_PARENT, N_SIZE = 0, 1, 2, 3, 4, 5, 6  # likes
# counters in ``meta``
M_PERSONS, M_EDGES, M_COMMENTS, M_NODES, M_HEAD, M_TOP, M_REPORTED = 0, 1, 2, 3, 4, 5, 6

_COMMENT, _LIKE, _FRIEND = 1, 2, 3
R_MASK, R_HEAD, R_ID = 0, 1, 2  # the router's persons: instances that know them, edges, id
_SHIFT = 31


@_jit
def _person(pk, pv, pm, persons, meta, uid):
    u = map_get(pk, pv, uid)
    if u < 0:
        u = meta[M_PERSONS]
        meta[M_PERSONS] += 1
        map_put(pk, pv, pm, uid, u)
        persons[u, U_LIKES] = -1
        persons[u, U_FRIENDS] = -1
        persons[u, U_DEG] = 0
        persons[u, U_LIVE] = 0
    return u


@_jit
def _pair(u, v):
    return (min(u, v) << _SHIFT) | max(u, v)


@_jit
def _root(nodes, x):
    while nodes[x, N_PARENT] != x:
        nodes[x, N_PARENT] = nodes[nodes[x, N_PARENT], N_PARENT]
        x = nodes[x, N_PARENT]
    return x


@_jit
def _union(nodes, a, b):
    """Join the components of like nodes ``a`` and ``b``; the joined size."""
    ra, rb = _root(nodes, a), _root(nodes, b)
    if ra == rb:
        return nodes[ra, N_SIZE]
    if nodes[ra, N_SIZE] < nodes[rb, N_SIZE]:
        ra, rb = rb, ra
    nodes[rb, N_PARENT] = ra
    nodes[ra, N_SIZE] += nodes[rb, N_SIZE]
    return nodes[ra, N_SIZE]


@_jit
def _text_cmp(text, start, i, j):
    """-1, 0, 1 as comment ``i``'s text bytes are before, equal to, after ``j``'s."""
    a, ae, b, be = start[i], start[i + 1], start[j], start[j + 1]
    while a < ae and b < be:
        if text[a] != text[b]:
            return -1 if text[a] < text[b] else 1
        a += 1
        b += 1
    if a < ae:
        return 1
    if b < be:
        return -1
    return 0


@_jit
def _better(comments, text, start, i, j):
    """Whether comment ``i`` ranks before ``j``: range, then text, then id."""
    ri, rj = comments[i, C_RANGE], comments[j, C_RANGE]
    if ri != rj:
        return ri > rj
    c = _text_cmp(text, start, i, j)
    if c != 0:
        return c < 0
    return comments[i, C_ID] < comments[j, C_ID]


@_jit
def _rank_up(comments, text, start, top, meta, k, idx):
    """``idx``'s range grew: let it enter or move up the top-k."""
    n = meta[M_TOP]
    pos = -1
    for j in range(n):
        if top[j] == idx:
            pos = j
            break
    if pos < 0:
        if n < k:
            pos = n
            meta[M_TOP] = n + 1
        elif _better(comments, text, start, idx, top[k - 1]):
            pos = k - 1
        else:
            return
        top[pos] = idx
    while pos > 0 and _better(comments, text, start, idx, top[pos - 1]):
        top[pos] = top[pos - 1]
        top[pos - 1] = idx
        pos -= 1


@_jit
def _refill(comments, text, start, top, meta, k):
    """Fill the top-k from the live ranked comments not in it (after some left)."""
    while meta[M_TOP] < k:
        best = -1
        for idx in range(meta[M_HEAD], meta[M_COMMENTS]):
            if comments[idx, C_RANGE] < 1:
                continue
            inside = False
            for j in range(meta[M_TOP]):
                if top[j] == idx:
                    inside = True
                    break
            if not inside and (best < 0 or _better(comments, text, start, idx, best)):
                best = idx
        if best < 0:
            return
        top[meta[M_TOP]] = best
        meta[M_TOP] += 1


@_jit
def _report(comments, top, meta, last_idx, last_range, t, phase, seq, out_key, out_idx,
            out_range, nrep):  # fmt: skip
    """Write a report row if the top-k (indexes, ranges) changed since the last one."""
    n = meta[M_TOP]
    same = n == meta[M_REPORTED]
    if same:
        for j in range(n):
            if last_idx[j] != top[j] or last_range[j] != comments[top[j], C_RANGE]:
                same = False
                break
    if same:
        return nrep
    write_step(out_key, nrep, t, phase, seq, n)
    for j in range(n):
        last_idx[j] = top[j]
        last_range[j] = comments[top[j], C_RANGE]
        out_idx[nrep, j] = top[j]
        out_range[nrep, j] = last_range[j]
    meta[M_REPORTED] = n
    return nrep + 1


@_jit
def _max_clique(adj, count, size, best):
    """``max(best, size + the largest clique among candidates 0..count-1)``, all of them
    adjacent to the current clique of ``size``: depth-first with an explicit stack (no
    recursion: numba's cache does not load recursive functions safely), cutting branches
    that cannot beat ``best``."""
    best = max(best, size)
    if count == 0:
        return best
    levels = np.empty((count + 1, count), np.int64)  # candidates at each depth
    lens = np.zeros(count + 1, np.int64)
    pos = np.zeros(count + 1, np.int64)
    for i in range(count):
        levels[0, i] = i
    lens[0] = count
    depth = 0
    while depth >= 0:
        m, i = lens[depth], pos[depth]
        here = size + depth  # the clique chosen so far
        if i >= m or here + m - i <= best:
            depth -= 1
            continue
        pos[depth] = i + 1
        v = levels[depth, i]
        best = max(best, here + 1)
        c = 0
        for j in range(i + 1, m):
            w = levels[depth, j]
            if adj[v, w]:
                levels[depth + 1, c] = w
                c += 1
        if c:
            depth += 1
            lens[depth] = c
            pos[depth] = 0
    return best


@_jit
def _clique_among(fk, fv, members, count, size, best):
    """Largest clique of ``size`` fixed persons plus some of ``members[:count]``."""
    adj = np.zeros((count, count), np.bool_)
    for i in range(count):
        for j in range(i + 1, count):
            if map_get(fk, fv, _pair(members[i], members[j])) >= 0:
                adj[i, j] = True
                adj[j, i] = True
    return _max_clique(adj, count, size, best)


@_jit
def _likers_befriending(fk, fv, lk, lv, persons, edges, comments, nodes, idx, u, v):
    """Like nodes of comment ``idx``'s likers (other than ``u``, ``v``) who are friends of
    ``u`` (and of ``v`` if ``v >= 0``): an array and how many of it are filled."""
    found = np.empty(min(persons[u, U_DEG], comments[idx, C_NLIKERS]), np.int64)
    count = 0
    if persons[u, U_DEG] <= comments[idx, C_NLIKERS]:
        e = persons[u, U_FRIENDS]
        while e >= 0:
            f = edges[e, E_TO]
            e = edges[e, E_NEXT]
            if f == v:
                continue
            node = map_get(lk, lv, (idx << _SHIFT) | f)
            if node >= 0 and (v < 0 or map_get(fk, fv, _pair(f, v)) >= 0):
                found[count] = node
                count += 1
    else:
        node = comments[idx, C_LIKERS]
        while node >= 0:
            f = nodes[node, N_PERSON]
            if f != u and f != v and map_get(fk, fv, _pair(u, f)) >= 0:
                if v < 0 or map_get(fk, fv, _pair(f, v)) >= 0:
                    found[count] = node
                    count += 1
            node = nodes[node, N_NEXT]
    return found, count


@_jit
def _expire(ck, cv, cm, lk, lv, lm, persons, comments, nodes, text, start, top, meta, k,
            window, t, last_idx, last_range, out_key, out_idx, out_range, nrep):  # fmt: skip
    """Comments whose window ended at or before ``t`` leave, a step per end time."""
    while meta[M_HEAD] < meta[M_COMMENTS]:
        head = meta[M_HEAD]
        end = comments[head, C_TS] + window
        if end > t:
            break
        left = False
        while meta[M_HEAD] < meta[M_COMMENTS] and comments[meta[M_HEAD], C_TS] + window == end:
            idx = meta[M_HEAD]
            meta[M_HEAD] += 1
            map_delete(ck, cv, cm, comments[idx, C_ID])
            node = comments[idx, C_LIKERS]
            while node >= 0:
                u = nodes[node, N_PERSON]
                map_delete(lk, lv, lm, (idx << _SHIFT) | u)
                prev, nxt = nodes[node, N_UPREV], nodes[node, N_UNEXT]
                if prev >= 0:
                    nodes[prev, N_UNEXT] = nxt
                else:
                    persons[u, U_LIKES] = nxt
                if nxt >= 0:
                    nodes[nxt, N_UPREV] = prev
                persons[u, U_LIVE] -= 1
                node = nodes[node, N_NEXT]
            n = meta[M_TOP]
            for j in range(n):
                if top[j] == idx:
                    for m in range(j, n - 1):
                        top[m] = top[m + 1]
                    meta[M_TOP] = n - 1
                    left = True
                    break
        if left:
            _refill(comments, text, start, top, meta, k)
        nrep = _report(comments, top, meta, last_idx, last_range, end, 0, 0, out_key, out_idx,
                       out_range, nrep)  # fmt: skip
    return nrep


@_jit
def run_batch(ts, kind, a, b, seq, until, window, k, clique,
              pk, pv, pm, fk, fv, fm, ck, cv, cm, lk, lv, lm,
              persons, edges, comments, nodes, text, start, top, meta, last_idx, last_range,
              out_key, out_idx, out_range):  # fmt: skip
    """One batch of Query 2 events (see the module doc); the number of report rows."""
    nrep = 0
    for i in range(ts.shape[0]):
        t = ts[i]
        nrep = _expire(ck, cv, cm, lk, lv, lm, persons, comments, nodes, text, start, top,
                       meta, k, window, t, last_idx, last_range, out_key, out_idx, out_range,
                       nrep)  # fmt: skip
        kd = kind[i]
        if kd == _COMMENT:
            idx = meta[M_COMMENTS]
            meta[M_COMMENTS] += 1
            comments[idx, C_ID] = a[i]
            comments[idx, C_TS] = t
            comments[idx, C_RANGE] = 0
            comments[idx, C_LIKERS] = -1
            comments[idx, C_NLIKERS] = 0
            map_put(ck, cv, cm, a[i], idx)
            continue
        if kd == _LIKE:
            idx = map_get(ck, cv, b[i])
            if idx < 0:
                continue  # a comment never seen, or gone
            u = _person(pk, pv, pm, persons, meta, a[i])
            key = (idx << _SHIFT) | u
            if map_get(lk, lv, key) >= 0:
                continue  # liked before: counts once
            node = meta[M_NODES]
            meta[M_NODES] += 1
            map_put(lk, lv, lm, key, node)
            nodes[node, N_PERSON] = u
            nodes[node, N_COMMENT] = idx
            nodes[node, N_NEXT] = comments[idx, C_LIKERS]
            comments[idx, C_LIKERS] = node
            comments[idx, C_NLIKERS] += 1
            first = persons[u, U_LIKES]
            nodes[node, N_UNEXT] = first
            nodes[node, N_UPREV] = -1
            if first >= 0:
                nodes[first, N_UPREV] = node
            persons[u, U_LIKES] = node
            persons[u, U_LIVE] += 1
            nodes[node, N_PARENT] = node
            nodes[node, N_SIZE] = 1
            found, count = _likers_befriending(fk, fv, lk, lv, persons, edges, comments, nodes,
                                               idx, u, -1)  # fmt: skip
            now = comments[idx, C_RANGE]
            if clique:
                for j in range(count):
                    found[j] = nodes[found[j], N_PERSON]
                size = _clique_among(fk, fv, found, count, 1, max(now, 1))
            else:
                size = 1
                for j in range(count):
                    size = _union(nodes, node, found[j])
            if size > now:
                comments[idx, C_RANGE] = size
                _rank_up(comments, text, start, top, meta, k, idx)
        elif kd == _FRIEND:
            if a[i] == b[i]:
                continue
            u = _person(pk, pv, pm, persons, meta, a[i])
            v = _person(pk, pv, pm, persons, meta, b[i])
            pair = _pair(u, v)
            if map_get(fk, fv, pair) >= 0:
                continue  # friends already
            map_put(fk, fv, fm, pair, 1)
            for x, y in ((u, v), (v, u)):
                e = meta[M_EDGES]
                meta[M_EDGES] += 1
                edges[e, E_TO] = y
                edges[e, E_NEXT] = persons[x, U_FRIENDS]
                persons[x, U_FRIENDS] = e
                persons[x, U_DEG] += 1
            if persons[u, U_LIVE] > persons[v, U_LIVE]:
                u, v = v, u
            node = persons[u, U_LIKES]
            while node >= 0:
                idx = nodes[node, N_COMMENT]
                other = map_get(lk, lv, (idx << _SHIFT) | v)
                if other >= 0:
                    now = comments[idx, C_RANGE]
                    if clique:
                        found, count = _likers_befriending(fk, fv, lk, lv, persons, edges,
                                                           comments, nodes, idx, u, v)  # fmt: skip
                        for j in range(count):
                            found[j] = nodes[found[j], N_PERSON]
                        size = _clique_among(fk, fv, found, count, 2, now)
                    else:
                        size = _union(nodes, node, other)
                    if size > now:
                        comments[idx, C_RANGE] = size
                        _rank_up(comments, text, start, top, meta, k, idx)
                node = nodes[node, N_UNEXT]
        else:
            continue
        nrep = _report(comments, top, meta, last_idx, last_range, t, 1, seq[i], out_key,
                       out_idx, out_range, nrep)  # fmt: skip
    return _expire(
        ck,
        cv,
        cm,
        lk,
        lv,
        lm,
        persons,
        comments,
        nodes,
        text,
        start,
        top,
        meta,
        k,
        window,
        until,
        last_idx,
        last_range,
        out_key,
        out_idx,
        out_range,
        nrep,
    )


class Q2State:
    """One instance's Query 2 state (see the module doc) and the batch step around
    :func:`run_batch`: room reserved, texts pooled, report rows turned into entries."""

    def __init__(self, k: int, window_ms: int, clique: bool) -> None:
        self.k = k
        self.window = window_ms
        self.clique = clique
        self.person_ids, self.friends = IntMap(), IntMap()
        self.comment_ids, self.likes = IntMap(), IntMap()
        self.persons = np.full((1024, 4), -1, np.int64)
        self.edges = np.full((1024, 2), -1, np.int64)
        self.comments = np.full((1024, 5), -1, np.int64)
        self.nodes = np.full((1024, 7), -1, np.int64)
        self.texts = StringPool()
        self.top = np.full(k, -1, np.int64)
        self.last_idx = np.full(k, -1, np.int64)
        self.last_range = np.zeros(k, np.int64)
        self.meta = np.zeros(7, np.int64)

    def run(
        self, batch: pa.RecordBatch, until: int
    ) -> list[tuple[tuple[int, int, int], list[tuple[int, int, str]]]]:
        """Process ``batch`` and time up to ``until``; the reports: ``(step key,
        [(range, comment id, text), ...])`` in step order."""
        kind = batch.column("kind").to_numpy()
        n = len(kind)
        is_comment = kind == _COMMENT
        new_comments = int(np.count_nonzero(is_comment))
        new_likes = int(np.count_nonzero(kind == _LIKE))
        new_friends = int(np.count_nonzero(kind == _FRIEND))
        meta = self.meta
        self.person_ids.reserve(new_likes + 2 * new_friends)
        self.friends.reserve(new_friends)
        self.comment_ids.reserve(new_comments)
        self.likes.reserve(new_likes)
        self.persons = reserve_rows(
            self.persons, int(meta[M_PERSONS]) + new_likes + 2 * new_friends
        )
        self.edges = reserve_rows(self.edges, int(meta[M_EDGES]) + 2 * new_friends)
        self.comments = reserve_rows(self.comments, int(meta[M_COMMENTS]) + new_comments)
        self.nodes = reserve_rows(self.nodes, int(meta[M_NODES]) + new_likes)
        if new_comments:
            self.texts.extend(batch.column("text").filter(pa.array(is_comment)))
        rows = n + int(meta[M_COMMENTS] - meta[M_HEAD]) + new_comments + 1
        out_key = np.empty((rows, 4), np.int64)
        out_idx = np.empty((rows, self.k), np.int64)
        out_range = np.empty((rows, self.k), np.int64)
        p, f, c, lk = self.person_ids, self.friends, self.comment_ids, self.likes
        count = run_batch(
            batch.column("ts").to_numpy(), kind, batch.column("a").to_numpy(),
            batch.column("b").to_numpy(), batch.column("seq").to_numpy(), until, self.window,
            self.k, self.clique, p.keys, p.vals, p.meta, f.keys, f.vals, f.meta, c.keys, c.vals,
            c.meta, lk.keys, lk.vals, lk.meta, self.persons, self.edges, self.comments,
            self.nodes, self.texts.data, self.texts.start, self.top, meta, self.last_idx,
            self.last_range, out_key, out_idx, out_range,
        )  # fmt: skip
        reports = []
        get, ids = self.texts.get, self.comments[:, C_ID]
        for row in range(count):
            t, phase, seq, size = out_key[row].tolist()
            idx = out_idx[row, :size].tolist()
            ranges = out_range[row, :size].tolist()
            entries = [(r, int(ids[i]), get(i)) for r, i in zip(ranges, idx, strict=True)]
            reports.append(((t, phase, seq), entries))
        return reports


@_jit
def route(kind, a, b, n, pk, pv, pm, fk, fv, fm, persons, edges, meta, out_row, out_inst,
          syn_row, syn_a, syn_b):  # fmt: skip
    """Query 2's routing of one batch over ``n`` instances (see :class:`FriendRouter`):
    ``(out_row[i], out_inst[i])`` pairs in stream order, ``out_row >= rows`` naming
    ``syn_*[out_row - rows]``, a friendship replayed to an instance before a like; the
    counts of both."""
    rows = kind.shape[0]
    nout = 0
    nsyn = 0
    for i in range(rows):
        kd = kind[i]
        if kd == _COMMENT:
            out_row[nout] = i
            out_inst[nout] = a[i] % n
            nout += 1
        elif kd == _LIKE:
            inst = b[i] % n
            bit = np.int64(1) << inst
            u = _router_person(pk, pv, pm, persons, meta, a[i])
            if not persons[u, R_MASK] & bit:
                persons[u, R_MASK] |= bit
                e = persons[u, R_HEAD]
                while e >= 0:
                    f = edges[e, E_TO]
                    if persons[f, R_MASK] & bit:
                        syn_row[nsyn] = i
                        syn_a[nsyn] = a[i]
                        syn_b[nsyn] = persons[f, R_ID]
                        out_row[nout] = rows + nsyn
                        out_inst[nout] = inst
                        nout += 1
                        nsyn += 1
                    e = edges[e, E_NEXT]
            out_row[nout] = i
            out_inst[nout] = inst
            nout += 1
        elif kd == _FRIEND and a[i] != b[i]:
            u = _router_person(pk, pv, pm, persons, meta, a[i])
            v = _router_person(pk, pv, pm, persons, meta, b[i])
            pair = _pair(u, v)
            if map_get(fk, fv, pair) >= 0:
                continue  # friends already: no instance needs it
            map_put(fk, fv, fm, pair, 1)
            for x, y in ((u, v), (v, u)):
                e = meta[1]
                meta[1] += 1
                edges[e, E_TO] = y
                edges[e, E_NEXT] = persons[x, R_HEAD]
                persons[x, R_HEAD] = e
            both = persons[u, R_MASK] & persons[v, R_MASK]
            for inst in range(n):
                if both & (np.int64(1) << inst):
                    out_row[nout] = i
                    out_inst[nout] = inst
                    nout += 1
    return nout, nsyn


@_jit
def _router_person(pk, pv, pm, persons, meta, uid):
    u = map_get(pk, pv, uid)
    if u < 0:
        u = meta[0]
        meta[0] += 1
        map_put(pk, pv, pm, uid, u)
        persons[u, R_MASK] = 0
        persons[u, R_HEAD] = -1
        persons[u, R_ID] = uid
    return u


class FriendRouter:
    """Query 2's splitter state: GraphCEP's shared graph store of all friendships, and per
    person the instances that know the person (a like of theirs was routed there).

    A comment and its likes go to instance ``comment id mod n``. A friendship goes only to
    the instances that know both friends: an instance needs a friendship only between
    likers of its comments. When a like makes a person known to an instance, the person's
    earlier friendships with persons that instance knows are replayed to it just before
    the like (as friendship rows with the like's time and sequence number, which change
    no range: the person likes nothing there yet). At most 63 instances.
    """

    def __init__(self, instances: int) -> None:
        if not 1 <= instances <= 63:
            raise ValueError(f"Query 2 routes to 1..63 instances, got {instances}")
        self.instances = instances
        self.person_ids, self.friends = IntMap(), IntMap()
        self.persons = np.full((1024, 3), -1, np.int64)
        self.edges = np.full((1024, 2), -1, np.int64)
        self.meta = np.zeros(2, np.int64)  # persons, edges

    def split(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """Each instance's rows of ``batch`` (and replayed friendships), stream order."""
        kind, a, b = (batch.column(name).to_numpy() for name in ("kind", "a", "b"))
        rows = len(kind)
        new_friends = int(np.count_nonzero(kind == _FRIEND))
        new_persons = rows + new_friends
        self.person_ids.reserve(new_persons)
        self.friends.reserve(new_friends)
        self.persons = reserve_rows(self.persons, int(self.meta[0]) + new_persons)
        self.edges = reserve_rows(self.edges, int(self.meta[1]) + 2 * new_friends)
        # a replay sends each edge at most once per instance
        replay = self.instances * int(self.meta[1] + 2 * new_friends)
        out_row = np.empty(rows * self.instances + replay, np.int64)
        out_inst = np.empty_like(out_row)
        syn_row, syn_a, syn_b = (np.empty(replay, np.int64) for _ in range(3))
        p, f = self.person_ids, self.friends
        nout, nsyn = route(kind, a, b, self.instances, p.keys, p.vals, p.meta, f.keys, f.vals,
                           f.meta, self.persons, self.edges, self.meta, out_row, out_inst,
                           syn_row, syn_a, syn_b)  # fmt: skip
        rows_all = batch
        if nsyn:
            at = syn_row[:nsyn]
            replayed = pa.RecordBatch.from_pydict(
                {
                    "seq": batch.column("seq").take(pa.array(at)),
                    "ts": batch.column("ts").take(pa.array(at)),
                    "kind": pa.array(np.full(nsyn, _FRIEND, np.int8)),
                    "a": pa.array(syn_a[:nsyn]),
                    "b": pa.array(syn_b[:nsyn]),
                    "c": pa.array(np.full(nsyn, -1, np.int64)),
                    "d": pa.array(np.full(nsyn, -1, np.int64)),
                    "text": pa.array([""] * nsyn, pa.large_string()),
                    "name": pa.array([""] * nsyn, pa.large_string()),
                },
                schema=batch.schema,
            )
            rows_all = pa.concat_batches([batch, replayed])
        out_row, out_inst = out_row[:nout], out_inst[:nout]
        return [rows_all.take(pa.array(out_row[out_inst == i])) for i in range(self.instances)]
