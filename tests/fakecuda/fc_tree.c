/*
 * A treap (randomised balanced binary search tree) keyed by 64-bit address.
 *
 * The fake driver needs three ordered maps with O(log n) operations:
 * live allocations (interior-pointer lookups = "floor"), free address-space
 * extents (first-fit by size, coalescing with neighbours = floor/ceil) and
 * live handles (exact lookups).  glibc's tsearch has no floor search, so this
 * is a small intrusive treap.  Priorities come from the caller (the driver's
 * PRNG, under its lock), which keeps this file free of global state.
 */
#include "fc_internal.h"

static inline uint64_t sub_max(const fc_tnode *t)
{
    return t ? t->maxval : 0;
}

static inline void refresh(fc_tnode *t)
{
    uint64_t m = t->val;
    if (sub_max(t->l) > m)
        m = sub_max(t->l);
    if (sub_max(t->r) > m)
        m = sub_max(t->r);
    t->maxval = m;
}

/* Split t into keys < key (*lo) and keys >= key (*hi). */
static void split(fc_tnode *t, uint64_t key, fc_tnode **lo, fc_tnode **hi)
{
    if (!t) {
        *lo = *hi = NULL;
        return;
    }
    if (t->key < key) {
        split(t->r, key, &t->r, hi);
        *lo = t;
    } else {
        split(t->l, key, lo, &t->l);
        *hi = t;
    }
    refresh(t);
}

/* Join two treaps where every key of a is below every key of b. */
static fc_tnode *merge(fc_tnode *a, fc_tnode *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (a->prio > b->prio) {
        a->r = merge(a->r, b);
        refresh(a);
        return a;
    }
    b->l = merge(a, b->l);
    refresh(b);
    return b;
}

void fc_tree_insert(fc_tnode **root, fc_tnode *n, uint32_t prio)
{
    fc_tnode *lo, *hi;

    n->l = n->r = NULL;
    n->prio = prio;
    n->maxval = n->val;
    split(*root, n->key, &lo, &hi);
    *root = merge(merge(lo, n), hi);
}

static fc_tnode *erase_rec(fc_tnode *t, uint64_t key)
{
    if (!t)
        return NULL;
    if (key == t->key) {
        fc_tnode *joined = merge(t->l, t->r);
        t->l = t->r = NULL;
        return joined;
    }
    if (key < t->key)
        t->l = erase_rec(t->l, key);
    else
        t->r = erase_rec(t->r, key);
    refresh(t);
    return t;
}

void fc_tree_erase(fc_tnode **root, uint64_t key)
{
    *root = erase_rec(*root, key);
}

fc_tnode *fc_tree_find(fc_tnode *t, uint64_t key)
{
    while (t && t->key != key)
        t = key < t->key ? t->l : t->r;
    return t;
}

fc_tnode *fc_tree_floor(fc_tnode *t, uint64_t key)
{
    /* One compare a level, no early exit on an equal key: right of a node
     * whose key equals `key` lie only larger keys, so the walk goes left
     * from there on and `best` stays.  Every band of a batched copy is an
     * interior address (no key equals it), and this loop runs the ~25 levels
     * of 10^5 allocations with half the instructions of one that tests for
     * equality first. */
    fc_tnode *best = NULL;
    while (t) {
        if (t->key <= key) {
            best = t;
            t = t->r;
        } else {
            t = t->l;
        }
    }
    return best;
}

fc_tnode *fc_tree_ceil(fc_tnode *t, uint64_t key)
{
    fc_tnode *best = NULL;
    while (t) {
        if (t->key == key)
            return t;
        if (t->key > key) {
            best = t;
            t = t->l;
        } else {
            t = t->r;
        }
    }
    return best;
}

fc_tnode *fc_tree_first_fit(fc_tnode *t, uint64_t len)
{
    if (sub_max(t) < len)
        return NULL;
    for (;;) {
        /* Invariant: some node of t's subtree has val >= len. */
        if (sub_max(t->l) >= len)
            t = t->l;
        else if (t->val >= len)
            return t;
        else
            t = t->r;
    }
}

void fc_tree_fix_path(fc_tnode *t, uint64_t key)
{
    if (!t)
        return;
    if (key < t->key)
        fc_tree_fix_path(t->l, key);
    else if (key > t->key)
        fc_tree_fix_path(t->r, key);
    refresh(t);
}
