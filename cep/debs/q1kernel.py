"""Query 1's instance state and its compiled kernel: scores, a timetable of decays, the
local top-3.

State, in column tables (:mod:`cep.tables`) that only this module reads and writes:

* posts: dense index per post, id, time, author, score, last comment time, commenters;
  live posts are also in a bucket list per score (a doubly linked list), the ranking;
* commenters: ``post << 31 | person`` -> live comments of that person on the post;
* the timetable: a FIFO of ``(due time, post, decays left, commenter)``. New entries are
  due 24 h after their event, and an entry re-queued at its due time is due 24 h later,
  so appending keeps the FIFO in time order (GraphCEP's time-of-day list). It is a ring
  (a power-of-two table; counters ``head``/``tail`` only grow).

A due step (all entries due at one time) takes one point from each entry's post (moving it
one bucket down), re-queues the entry until its 10 decays are done, then drops a finished
comment's commenter and a post whose score reached 0. Per comment: 10 points and an entry.

The local top-3 is recomputed only when a step touched a post in it or a post that now
reaches its third score: by walking the buckets from the highest score down until three
posts are found (ties inside a bucket by post time, last comment time, then id). A report
is written at every step after which the three (post, score, last comment time,
commenters) differ from the last report.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from cep.events import DAY_MS
from cep.tables import IntMap, StringPool, map_delete, map_get, map_put, reserve_rows, write_step

__all__ = ["Q1State", "comment_roots", "run_batch"]

_jit = numba.njit(cache=True, nogil=True)

K = 3
P_ID, P_TS, P_USER, P_SCORE, P_LAST, P_COMMENTERS, P_NEXT, P_PREV = range(8)  # posts
Q_DUE, Q_POST, Q_LEFT, Q_USER = range(4)  # timetable
M_POSTS, M_QHEAD, M_QTAIL, M_MAX, M_TOP, M_REPORTED, M_LIVE = range(7)  # counters
_POST, _COMMENT = 0, 1
_SHIFT = 31


@_jit
def _unlink(posts, heads, p):
    prev, nxt = posts[p, P_PREV], posts[p, P_NEXT]
    if prev >= 0:
        posts[prev, P_NEXT] = nxt
    else:
        heads[posts[p, P_SCORE]] = nxt
    if nxt >= 0:
        posts[nxt, P_PREV] = prev


@_jit
def _link(posts, heads, meta, p):
    s = posts[p, P_SCORE]
    first = heads[s]
    posts[p, P_NEXT] = first
    posts[p, P_PREV] = -1
    if first >= 0:
        posts[first, P_PREV] = p
    heads[s] = p
    if s > meta[M_MAX]:
        meta[M_MAX] = s


@_jit
def _before(posts, p, q):
    """Whether post ``p`` ranks before ``q`` (equal scores): newer post, newer last
    comment, smaller id."""
    if posts[p, P_TS] != posts[q, P_TS]:
        return posts[p, P_TS] > posts[q, P_TS]
    if posts[p, P_LAST] != posts[q, P_LAST]:
        return posts[p, P_LAST] > posts[q, P_LAST]
    return posts[p, P_ID] < posts[q, P_ID]


@_jit
def _recompute(posts, heads, meta, top):
    """The top-3 from the buckets, highest score first."""
    s = meta[M_MAX]
    while s > 0 and heads[s] < 0:
        s -= 1
    meta[M_MAX] = s
    n = 0
    while s > 0 and n < K:
        start = n
        p = heads[s]
        while p >= 0:
            # insertion into top[start:] ordered by _before, keeping at most K
            pos = n
            while pos > start and _before(posts, p, top[pos - 1]):
                pos -= 1
            if pos < K:
                last = min(n, K - 1)
                for j in range(last, pos, -1):
                    top[j] = top[j - 1]
                top[pos] = p
                if n < K:
                    n += 1
            p = posts[p, P_NEXT]
        s -= 1
    meta[M_TOP] = n


@_jit
def _matters(posts, meta, top, p):
    """Whether a change of post ``p`` can change the top-3."""
    n = meta[M_TOP]
    if n < K:
        return True
    for j in range(n):
        if top[j] == p:
            return True
    return posts[p, P_SCORE] >= posts[top[K - 1], P_SCORE]


@_jit
def _report(posts, meta, top, last, t, phase, seq, out_key, out_rows, nrep):
    """Write a report row if the top-3 changed since the last one."""
    n = meta[M_TOP]
    same = n == meta[M_REPORTED]
    if same:
        for j in range(n):
            p = top[j]
            if (
                last[j, 0] != p
                or last[j, 1] != posts[p, P_SCORE]
                or last[j, 2] != posts[p, P_LAST]
                or last[j, 3] != posts[p, P_COMMENTERS]
            ):
                same = False
                break
    if same:
        return nrep
    write_step(out_key, nrep, t, phase, seq, n)
    for j in range(n):
        p = top[j]
        last[j, 0] = p
        last[j, 1] = posts[p, P_SCORE]
        last[j, 2] = posts[p, P_LAST]
        last[j, 3] = posts[p, P_COMMENTERS]
        for c in range(4):
            out_rows[nrep, j, c] = last[j, c]
    meta[M_REPORTED] = n
    return nrep + 1


@_jit
def _enqueue(queue, meta, due, p, left, user):
    tail = meta[M_QTAIL] & (queue.shape[0] - 1)
    queue[tail, Q_DUE] = due
    queue[tail, Q_POST] = p
    queue[tail, Q_LEFT] = left
    queue[tail, Q_USER] = user
    meta[M_QTAIL] += 1


@_jit
def _decay(pk, pv, pm, ck, cv, cm, posts, heads, queue, meta, top, last, t, out_key, out_rows,
           nrep):  # fmt: skip
    """Every due step at or before ``t``, a report check after each."""
    mask = queue.shape[0] - 1
    while meta[M_QHEAD] < meta[M_QTAIL] and queue[meta[M_QHEAD] & mask, Q_DUE] <= t:
        due = queue[meta[M_QHEAD] & mask, Q_DUE]
        dirty = False
        while meta[M_QHEAD] < meta[M_QTAIL] and queue[meta[M_QHEAD] & mask, Q_DUE] == due:
            h = meta[M_QHEAD] & mask
            meta[M_QHEAD] += 1
            p, left, user = queue[h, Q_POST], queue[h, Q_LEFT], queue[h, Q_USER]
            dirty = dirty or _matters(posts, meta, top, p)
            _unlink(posts, heads, p)
            posts[p, P_SCORE] -= 1
            if left > 1:
                _enqueue(queue, meta, due + DAY_MS, p, left - 1, user)
            elif user >= 0:
                key = (p << _SHIFT) | user
                count = map_get(ck, cv, key) - 1
                if count:
                    map_put(ck, cv, cm, key, count)
                else:
                    map_delete(ck, cv, cm, key)
                    posts[p, P_COMMENTERS] -= 1
            if posts[p, P_SCORE] == 0:
                map_delete(pk, pv, pm, posts[p, P_ID])  # dead for good
                meta[M_LIVE] -= 1
            else:
                _link(posts, heads, meta, p)
        if dirty:
            _recompute(posts, heads, meta, top)
        nrep = _report(posts, meta, top, last, due, 0, 0, out_key, out_rows, nrep)
    return nrep


@_jit
def run_batch(ts, kind, a, b, key, seq, until, pk, pv, pm, uk, uv, um, ck, cv, cm, posts,
              heads, queue, meta, top, last, users, out_key, out_rows):  # fmt: skip
    """One batch of Query 1 events (see the module doc); the number of report rows.

    ``key``: a comment's root post (from the splitter), ``users``: a counter of persons.
    """
    nrep = 0
    for i in range(ts.shape[0]):
        t = ts[i]
        nrep = _decay(pk, pv, pm, ck, cv, cm, posts, heads, queue, meta, top, last, t, out_key,
                      out_rows, nrep)  # fmt: skip
        if kind[i] == _POST:
            p = meta[M_POSTS]
            meta[M_POSTS] += 1
            old = map_get(pk, pv, a[i])
            if old >= 0:  # an id seen again replaces the live post
                _unlink(posts, heads, old)
                meta[M_LIVE] -= 1
            map_put(pk, pv, pm, a[i], p)
            posts[p, P_ID] = a[i]
            posts[p, P_TS] = t
            posts[p, P_USER] = b[i]
            posts[p, P_SCORE] = 10
            posts[p, P_LAST] = t
            posts[p, P_COMMENTERS] = 0
            meta[M_LIVE] += 1
            _link(posts, heads, meta, p)
            _enqueue(queue, meta, t + DAY_MS, p, 10, -1)
        else:
            p = map_get(pk, pv, key[i])
            if p < 0:
                continue  # dead, or never seen
            _unlink(posts, heads, p)
            posts[p, P_SCORE] += 10
            posts[p, P_LAST] = t
            _link(posts, heads, meta, p)
            user = -1
            if b[i] != posts[p, P_USER]:
                user = map_get(uk, uv, b[i])
                if user < 0:
                    user = users[0]
                    users[0] += 1
                    map_put(uk, uv, um, b[i], user)
                ckey = (p << _SHIFT) | user
                count = map_get(ck, cv, ckey)
                if count < 0:
                    map_put(ck, cv, cm, ckey, 1)
                    posts[p, P_COMMENTERS] += 1
                else:
                    map_put(ck, cv, cm, ckey, count + 1)
            _enqueue(queue, meta, t + DAY_MS, p, 10, user)
        if _matters(posts, meta, top, p):
            _recompute(posts, heads, meta, top)
        nrep = _report(posts, meta, top, last, t, 1, seq[i], out_key, out_rows, nrep)
    return _decay(
        pk, pv, pm, ck, cv, cm, posts, heads, queue, meta, top, last, until, out_key, out_rows, nrep
    )


class Q1State:
    """One instance's Query 1 state (see the module doc) and the batch step around
    :func:`run_batch`: room reserved, names pooled, report rows turned into entries."""

    def __init__(self) -> None:
        self.post_ids, self.person_ids, self.commenters = IntMap(), IntMap(), IntMap()
        self.posts = np.full((1024, 8), -1, np.int64)
        self.heads = np.full(1024, -1, np.int64)
        self.queue = np.full((4096, 4), -1, np.int64)  # a ring: 2**n rows
        self.names = StringPool()
        self.top = np.full(K, -1, np.int64)
        self.last = np.full((K, 4), -1, np.int64)
        self.users = np.zeros(1, np.int64)
        self.meta = np.zeros(7, np.int64)
        self.clock: int | None = None  # the time processed up to

    def run(
        self, batch: pa.RecordBatch, until: int
    ) -> list[tuple[tuple[int, int, int], list[tuple[int, ...]]]]:
        """Process ``batch`` (with the splitter's ``key`` column) and time up to ``until``;
        the reports: ``(step key, [(score, post time, last time, post id, user name,
        commenters), ...])`` in step order.

        The kernel runs on stretches of less than 24 h, so no timetable entry comes due
        twice in one call and the report rows it can write are bounded in advance."""
        kind = batch.column("kind").to_numpy()
        is_post = kind == _POST
        new_posts = int(np.count_nonzero(is_post))
        new_comments = len(kind) - new_posts
        meta = self.meta
        self._reserve_queue(new_posts + new_comments)
        self.post_ids.reserve(new_posts)
        self.person_ids.reserve(new_comments)
        self.commenters.reserve(new_comments)
        self.posts = reserve_rows(self.posts, int(meta[M_POSTS]) + new_posts)
        self.heads = reserve_rows(self.heads, int(meta[M_MAX]) + 10 * new_comments + 11)
        if new_posts:
            self.names.extend(batch.column("name").filter(pa.array(is_post)))
        columns = [batch.column(c).to_numpy() for c in ("ts", "kind", "a", "b", "key", "seq")]
        ts = columns[0]
        reports: list[tuple[tuple[int, int, int], list[tuple[int, ...]]]] = []
        at, clock = 0, self.clock
        if clock is None:  # nothing is due before the first event
            clock = (int(ts[0]) if len(ts) else until) - 1
        while clock < until or at < len(ts):  # events at the time reached: still to do
            end_time = min(until, clock + DAY_MS - 1)
            end = int(np.searchsorted(ts, end_time, "right"))
            reports += self._run([c[at:end] for c in columns], end_time)
            at, clock = end, end_time
        self.clock = until
        return reports

    def _run(
        self, columns: list[np.ndarray], until: int
    ) -> list[tuple[tuple[int, int, int], list[tuple[int, ...]]]]:
        meta = self.meta
        rows = len(columns[0]) + int(meta[M_QTAIL] - meta[M_QHEAD]) + 1
        out_key = np.empty((rows, 4), np.int64)
        out_rows = np.empty((rows, K, 4), np.int64)
        p, u, c = self.post_ids, self.person_ids, self.commenters
        count = run_batch(
            *columns, until, p.keys, p.vals, p.meta, u.keys, u.vals, u.meta, c.keys, c.vals,
            c.meta, self.posts, self.heads, self.queue, meta, self.top, self.last, self.users,
            out_key, out_rows,
        )  # fmt: skip
        posts, name = self.posts, self.names.get
        reports = []
        for row in range(count):
            t, phase, seq, size = out_key[row].tolist()
            entries = [
                (score, int(posts[q, P_TS]), last, int(posts[q, P_ID]), name(q), commenters)
                for q, score, last, commenters in out_rows[row, :size].tolist()
            ]
            reports.append(((t, phase, seq), entries))
        return reports

    def _reserve_queue(self, more: int) -> None:
        """Room in the ring for ``more`` new entries (a due entry is re-queued only after
        it left, so the live entries never exceed the live ones now plus ``more``)."""
        meta = self.meta
        head, tail = int(meta[M_QHEAD]), int(meta[M_QTAIL])
        size = self.queue.shape[0]
        if tail - head + more <= size:
            return
        while tail - head + more > size:
            size *= 2
        grown = np.full((size, 4), -1, np.int64)
        old = self.queue.shape[0]
        live = np.arange(head, tail) & (old - 1)
        grown[np.arange(head, tail) & (size - 1)] = self.queue[live]
        self.queue = grown


@_jit
def comment_roots(kind, a, c, d, sk, sv, sm, rk, rv, rm, out):
    """The post each event counts for (``out``; -1: none): a post its own id; a comment
    the post its chain of replies leads to, if that post was seen before it (``sk``: seen
    post ids, ``rk``: comment id -> root)."""
    for i in range(kind.shape[0]):
        if kind[i] == _POST:
            map_put(sk, sv, sm, a[i], 1)
            out[i] = a[i]
            continue
        root = -1
        if d[i] >= 0:
            if map_get(sk, sv, d[i]) >= 0:
                root = d[i]
        elif c[i] >= 0:
            root = map_get(rk, rv, c[i])
        if root >= 0:
            map_put(rk, rv, rm, a[i], root)
        out[i] = root
