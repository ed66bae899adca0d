/*
 * Device memory: the device address space, allocations, and the checked
 * accesses that memcpy, memset and kernels go through.
 *
 * Device addresses are handed out inside a large PROT_NONE reservation, so a
 * host dereference of a device pointer faults exactly as it would with a real
 * GPU.  The bytes live in separate host backing memory; every access
 * translates an address through the allocation tree (a treap keyed by base
 * address, O(log n) for allocation, free and interior-pointer lookups).
 * Free address ranges are kept in a second treap searched first-fit.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Backing up to this extent lives in the same malloc block as the record. */
#define INLINE_MAX ((uint64_t)64 * 1024)

/* Fresh device memory is not zeroed on a real GPU: fill it with this. */
static const unsigned char garbage[8] = { 0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xba, 0xbe };

static uint64_t round_up(uint64_t n, uint64_t to)
{
    return (n + to - 1) / to * to;
}

static fc_alloc *as_alloc(fc_tnode *n)
{
    return (fc_alloc *)n; /* the node is the first member */
}

/*
 * The live allocations are a treap by base address (fc_st.allocs) and, the
 * same ones, a list in address order with a finger: the allocation the last
 * lookup found.  A lookup at or just after it (the same allocation again, or
 * the next one: the bands of a batched copy in address order) costs a few
 * compares instead of a walk down the ~30 levels of 10^5 allocations.
 */
void fc_mem_link(fc_alloc *a)
{
    fc_alloc *prev = as_alloc(fc_tree_floor(fc_st.allocs, a->node.key));
    fc_tree_insert(&fc_st.allocs, &a->node, fc_rand());
    a->prev = prev;
    a->next = prev ? prev->next : fc_st.alloc_first;
    if (a->next)
        a->next->prev = a;
    if (prev)
        prev->next = a;
    else
        fc_st.alloc_first = a;
}

void fc_mem_unlink(fc_alloc *a)
{
    fc_tree_erase(&fc_st.allocs, a->node.key);
    if (a->prev)
        a->prev->next = a->next;
    else
        fc_st.alloc_first = a->next;
    if (a->next)
        a->next->prev = a->prev;
    a->prev = a->next = NULL;
    if (fc_st.alloc_finger == a)
        fc_st.alloc_finger = NULL;
}

/* The live allocation with the largest base <= addr, or NULL. */
static fc_alloc *alloc_floor(uint64_t addr)
{
    fc_alloc *f = fc_st.alloc_finger;
    /* f is the floor when addr lies in [f's base, the next one's). */
    for (int step = 0; step < 2 && f && f->node.key <= addr; step++, f = f->next)
        if (!f->next || addr < f->next->node.key)
            return fc_st.alloc_finger = f;
    f = as_alloc(fc_tree_floor(fc_st.allocs, addr));
    if (f)
        fc_st.alloc_finger = f;
    return f;
}

CUresult fc_mem_init(void)
{
    /* The whole device address space, or less where the process may not map
     * that much (valgrind, a ulimit -v): down to 1 GiB. */
    uint64_t size = FC_VA_SIZE;
    void *p = MAP_FAILED;

    for (; size >= ((uint64_t)1 << 30) && p == MAP_FAILED; size /= 4)
        p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size *= 4; /* the loop divided once more after the mapping that worked */
    fc_tnode *all = calloc(1, sizeof *all);
    if (!all) {
        munmap(p, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fc_st.va_base = (uint64_t)(uintptr_t)p;
    fc_st.va_end = fc_st.va_base + size;
    all->key = fc_st.va_base;
    all->val = size;
    fc_tree_insert(&fc_st.free_va, all, fc_rand());
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Address space                                                             */
/* ------------------------------------------------------------------------ */

/* Take [start, start+len) out of the free range f, which holds it. */
static void va_carve(fc_tnode *f, uint64_t start, uint64_t len)
{
    uint64_t end = start + len, f_end = f->key + f->val;
    if (start > f->key) {
        /* Keep the head; shrinking from the back keeps the node's place. */
        f->val = start - f->key;
        fc_tree_fix_path(fc_st.free_va, f->key);
        if (end < f_end) {
            fc_tnode *tail = calloc(1, sizeof *tail);
            if (!tail)
                return; /* the tail is lost to the fake; never reused */
            tail->key = end;
            tail->val = f_end - end;
            fc_tree_insert(&fc_st.free_va, tail, fc_rand());
        }
    } else if (end == f_end) {
        fc_tree_erase(&fc_st.free_va, f->key);
        free(f);
    } else {
        /* Shrinking from the front keeps the node's place among its neighbours. */
        f->key = end;
        f->val = f_end - end;
        fc_tree_fix_path(fc_st.free_va, f->key);
    }
}

/* Take `len` bytes from the lowest free range that holds them. */
static bool va_take(uint64_t len, uint64_t *out)
{
    fc_tnode *f = fc_tree_first_fit(fc_st.free_va, len);
    if (!f)
        return false;
    *out = f->key;
    va_carve(f, f->key, len);
    return true;
}

bool fc_va_reserve(uint64_t len, uint64_t align, uint64_t hint, uint64_t *out)
{
    fc_tnode *f = hint % align == 0 ? fc_tree_floor(fc_st.free_va, hint) : NULL;
    if (!f || hint - f->key >= f->val || len > f->val - (hint - f->key)) {
        /* Not at the hint: the lowest free range that holds an aligned run. */
        if (len > UINT64_MAX - align)
            return false;
        f = fc_tree_first_fit(fc_st.free_va, len + align - 1);
        if (!f)
            return false;
        hint = round_up(f->key, align);
    }
    va_carve(f, hint, len);
    *out = hint;
    return true;
}

void fc_va_release(uint64_t start, uint64_t len)
{
    /* Return a range, coalescing with free neighbours. */
    fc_tnode *prev = fc_tree_floor(fc_st.free_va, start);
    fc_tnode *next = fc_tree_ceil(fc_st.free_va, start);
    bool join_prev = prev && prev->key + prev->val == start;
    bool join_next = next && start + len == next->key;

    if (join_prev && join_next) {
        uint64_t next_key = next->key;
        prev->val += len + next->val;
        fc_tree_erase(&fc_st.free_va, next_key);
        free(next);
        fc_tree_fix_path(fc_st.free_va, prev->key);
    } else if (join_prev) {
        prev->val += len;
        fc_tree_fix_path(fc_st.free_va, prev->key);
    } else if (join_next) {
        next->key = start;
        next->val += len;
        fc_tree_fix_path(fc_st.free_va, start);
    } else {
        fc_tnode *n = calloc(1, sizeof *n);
        if (!n)
            return; /* the range is lost to the fake; never reused */
        n->key = start;
        n->val = len;
        fc_tree_insert(&fc_st.free_va, n, fc_rand());
    }
}

/* ------------------------------------------------------------------------ */
/* Allocations                                                               */
/* ------------------------------------------------------------------------ */

static void fill_garbage(unsigned char *p, uint64_t n)
{
    /* n is a multiple of FC_GRANULE; the pattern follows the device address. */
    for (uint64_t i = 0; i < n; i += sizeof garbage)
        memcpy(p + i, garbage, sizeof garbage);
}

unsigned char *fc_mem_backing_new(uint64_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    fill_garbage(p, n);
    return p;
}

void fc_mem_backing_free(unsigned char *p, uint64_t n)
{
    munmap(p, n);
}

CUresult fc_mem_charge(int dev, uint64_t size, uint64_t extent)
{
    if (fc_st.mem_limit &&
        (fc_st.mem_used > fc_st.mem_limit || size > fc_st.mem_limit - fc_st.mem_used))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (extent > FC_DEVICE_MEM - fc_st.dev_used[dev])
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_st.mem_used += size;
    fc_st.live_allocs++;
    fc_st.dev_used[dev] += extent;
    return CUDA_SUCCESS;
}

void fc_mem_uncharge(int dev, uint64_t size, uint64_t extent)
{
    fc_st.mem_used -= size;
    fc_st.live_allocs--;
    fc_st.dev_used[dev] -= extent;
}

/* A record with `extent` bytes of fresh backing; NULL when out of memory. */
static fc_alloc *record_new(uint64_t extent)
{
    fc_alloc *a;
    if (extent <= INLINE_MAX) {
        a = malloc(sizeof *a + extent);
        if (a) {
            memset(a, 0, sizeof *a);
            a->host = (unsigned char *)(a + 1);
            fill_garbage(a->host, extent);
        }
    } else {
        a = calloc(1, sizeof *a);
        if (a && !(a->host = fc_mem_backing_new(extent))) {
            free(a);
            a = NULL;
        }
        if (a)
            a->mapped = true;
    }
    if (a)
        a->extent = extent;
    return a;
}

static void record_free(fc_alloc *a)
{
    if (a->mapped)
        fc_mem_backing_free(a->host, a->extent);
    free(a);
}

/* A charged record of `size` bytes of device dev; the caller places it. */
static CUresult record_charged(int dev, uint64_t size, fc_alloc **out)
{
    uint64_t extent = round_up(size, FC_GRANULE);
    CUresult rc = fc_mem_charge(dev, size, extent);
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_alloc *a = record_new(extent);
    if (!a) {
        fc_mem_uncharge(dev, size, extent);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->size = size;
    a->dev = dev;
    a->buffer_id = fc_st.next_buffer_id++;
    *out = a;
    return CUDA_SUCCESS;
}

CUresult fc_mem_alloc(fc_ctx *c, size_t size, fc_pool *pool, CUdeviceptr *out)
{
    int dev = pool ? pool->dev : c->dev;
    if ((uint64_t)size > FC_DEVICE_MEM)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (pool && !fc_pool_fits(pool, round_up(size, FC_GRANULE)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_alloc *a = NULL;
    CUresult rc = record_charged(dev, size, &a);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t base, extent = a->extent;
    if (!va_take(extent, &base)) {
        fc_mem_uncharge(dev, size, extent);
        record_free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->ctx = c;
    a->pool = pool;
    a->node.key = base;
    fc_mem_link(a);
    if (pool)
        fc_pool_account(pool, extent, true);
    *out = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

void fc_mem_release(fc_alloc *a)
{
    uint64_t base = a->node.key;
    fc_mem_unlink(a);
    if (a->galloc) {
        fc_galloc_discard(a); /* the address range stays the graph's */
        return;
    }
    fc_va_release(base, a->extent);
    fc_mem_uncharge(a->dev, a->size, a->extent);
    if (a->pool)
        fc_pool_account(a->pool, a->extent, false);
    record_free(a);
}

fc_alloc *fc_mem_find_base(uint64_t addr)
{
    return as_alloc(fc_tree_find(fc_st.allocs, addr));
}

fc_alloc *fc_mem_find(uint64_t addr)
{
    fc_alloc *a = alloc_floor(addr);
    return a && addr - a->node.key < a->size ? a : NULL;
}

/* Whether allocation a allows an access: a mapping as cuMemSetAccess set it. */
static bool allows(const fc_alloc *a, bool write)
{
    if (!a->phys)
        return true;
    return write ? a->access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : a->access != CU_MEM_ACCESS_FLAGS_PROT_NONE;
}

CUresult fc_mem_check_at(uint64_t addr, size_t n, bool write, unsigned char **host)
{
    fc_alloc *a = fc_mem_find(addr);
    if (host)
        *host = NULL;
    if (a && !a->phys) {
        if (n > a->size - (addr - a->node.key))
            return CUDA_ERROR_INVALID_VALUE;
        if (host)
            *host = a->host + (addr - a->node.key);
        return CUDA_SUCCESS;
    }
    /* Mapped memory: on through the mappings that follow, as one range. */
    for (; a && a->phys && allows(a, write); a = fc_mem_find_base(addr)) {
        uint64_t left = a->node.key + a->size - addr;
        if (n <= left)
            return CUDA_SUCCESS;
        n -= (size_t)left;
        addr += left;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult fc_mem_check(uint64_t addr, size_t n, bool write)
{
    return fc_mem_check_at(addr, n, write, NULL);
}

void fc_mem_free_queued(uint64_t ptr, uint64_t buffer_id)
{
    fc_alloc *a = fc_mem_find_base(ptr);
    if (a && a->buffer_id == buffer_id)
        fc_mem_release(a);
}

void fc_mem_free_dropped(uint64_t ptr, uint64_t buffer_id)
{
    fc_galloc *ga = fc_galloc_at(ptr);
    fc_alloc *a = fc_mem_find_base(ptr);
    if (ga && ga->buffer_id == buffer_id)
        ga->out = true;
    else if (a && a->buffer_id == buffer_id)
        a->free_pending = false;
}

/* ------------------------------------------------------------------------ */
/* Graph allocations                                                         */
/* ------------------------------------------------------------------------ */

static fc_galloc *as_galloc(fc_tnode *n)
{
    return (fc_galloc *)n; /* the node is the first member */
}

CUresult fc_galloc_new(uint64_t size, int dev, uint64_t graph_id, fc_galloc **out)
{
    if (size > FC_DEVICE_MEM)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_galloc *ga = calloc(1, sizeof *ga);
    if (!ga)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ga->size = size;
    ga->extent = round_up(size, FC_GRANULE);
    ga->dev = dev;
    ga->graph_id = graph_id;
    if (!va_take(ga->extent, &ga->node.key)) {
        free(ga);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    fc_tree_insert(&fc_st.gallocs, &ga->node, fc_rand());
    *out = ga;
    return CUDA_SUCCESS;
}

fc_galloc *fc_galloc_at(uint64_t addr)
{
    return as_galloc(fc_tree_find(fc_st.gallocs, addr));
}

/* Nothing names it, nothing holds its memory, no launch owes it a free. */
static void galloc_maybe_free(fc_galloc *ga)
{
    if (ga->refs || ga->instances || ga->out)
        return;
    fc_tree_erase(&fc_st.gallocs, ga->node.key);
    fc_va_release(ga->node.key, ga->extent);
    free(ga);
}

void fc_galloc_unref(fc_galloc *ga)
{
    ga->refs--;
    galloc_maybe_free(ga);
}

CUresult fc_galloc_instance(fc_galloc *ga, fc_alloc **out)
{
    fc_alloc *a = NULL;
    CUresult rc = record_charged(ga->dev, ga->size, &a);
    if (rc != CUDA_SUCCESS)
        return rc;
    a->node.key = ga->node.key;
    a->galloc = ga;
    ga->instances++;
    *out = a;
    return CUDA_SUCCESS;
}

void fc_galloc_map(fc_alloc *a)
{
    /* An earlier instance still there was freed out of stream order (a free
     * on another stream that ran first): it goes now. */
    fc_alloc *old = fc_mem_find_base(a->node.key);
    if (old)
        fc_mem_release(old);
    fc_mem_link(a);
}

void fc_galloc_discard(fc_alloc *a)
{
    fc_galloc *ga = a->galloc;
    fc_mem_uncharge(a->dev, a->size, a->extent);
    record_free(a);
    ga->instances--;
    galloc_maybe_free(ga);
}

CUresult fc_mem_check_ordered(uint64_t addr, size_t n, bool write, bool capturing)
{
    CUresult rc = fc_mem_check(addr, n, write);
    if (rc == CUDA_SUCCESS)
        return rc;
    fc_galloc *ga = as_galloc(fc_tree_floor(fc_st.gallocs, addr));
    if (ga && (capturing || ga->out) && addr - ga->node.key < ga->size &&
        n <= ga->size - (addr - ga->node.key))
        return CUDA_SUCCESS;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Kernel-style accesses                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Call fn on each piece of [addr, addr+n) as it lies in the allocations'
 * backing memory, in address order; false at the first byte that is not
 * inside a live allocation's extent (like a GPU, a kernel may run from one
 * allocation into the next one when they are adjacent).
 */
typedef void (*piece_fn)(unsigned char *p, size_t len, size_t done, void *arg);

static bool walk(uint64_t addr, size_t n, bool write, piece_fn fn, void *arg)
{
    size_t done = 0;
    while (done < n) {
        fc_alloc *a = alloc_floor(addr);
        if (!a || addr - a->node.key >= a->extent || !allows(a, write))
            return false;
        uint64_t off = addr - a->node.key;
        size_t len = n - done;
        if (len > a->extent - off)
            len = (size_t)(a->extent - off);
        fn(a->host + off, len, done, arg);
        done += len;
        addr += len;
        if (addr == 0 && done < n)
            return false; /* wrapped around the address space */
    }
    return true;
}

static void piece_read(unsigned char *p, size_t len, size_t done, void *arg)
{
    memcpy((unsigned char *)arg + done, p, len);
}

static void piece_write(unsigned char *p, size_t len, size_t done, void *arg)
{
    memcpy(p, (const unsigned char *)arg + done, len);
}

typedef struct fill_arg {
    unsigned char bytes[4];
    unsigned int elem;
} fill_arg;

static void piece_fill(unsigned char *p, size_t len, size_t done, void *arg)
{
    const fill_arg *f = arg;
    if (f->elem == 1) {
        memset(p, f->bytes[0], len);
        return;
    }
    /* Pieces start at the range start or at a 256-aligned base: on an element. */
    for (size_t i = 0; i < len; i++)
        p[i] = f->bytes[(done + i) % f->elem];
}

bool fc_dev_read(uint64_t addr, void *dst, size_t n)
{
    return walk(addr, n, false, piece_read, dst);
}

bool fc_dev_write(uint64_t addr, const void *src, size_t n)
{
    return walk(addr, n, true, piece_write, (void *)(uintptr_t)src);
}

bool fc_dev_fill(uint64_t addr, uint32_t value, unsigned int elem, size_t count)
{
    fill_arg f = { .elem = elem };
    memcpy(f.bytes, &value, sizeof f.bytes); /* little-endian, as on the device */
    if (elem > 1 && count > SIZE_MAX / elem)
        return false;
    return walk(addr, count * elem, true, piece_fill, &f);
}

/* ------------------------------------------------------------------------ */
/* Context teardown                                                          */
/* ------------------------------------------------------------------------ */

typedef struct alloc_list {
    fc_alloc **v;
    size_t n, cap;
} alloc_list;

static void collect(fc_tnode *t, fc_ctx *c, bool device_reset, alloc_list *out)
{
    if (!t)
        return;
    collect(t->l, c, device_reset, out);
    fc_alloc *a = as_alloc(t);
    /* Graph memory belongs to the device, as a pool's does. */
    bool dies = a->pool || a->galloc ? device_reset && a->dev == c->dev : a->ctx == c;
    if (dies && a->galloc && a->galloc->buffer_id == a->buffer_id)
        a->galloc->out = false;
    if (dies) {
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 64;
            fc_alloc **v = realloc(out->v, cap * sizeof *v);
            if (v) {
                out->v = v;
                out->cap = cap;
            }
        }
        if (out->n < out->cap)
            out->v[out->n++] = a;
    } else if (a->ctx == c) {
        /* A pool allocation outlives the context that made it (cuCtxDestroy docs). */
        a->ctx = NULL;
    }
    collect(t->r, c, device_reset, out);
}

void fc_mem_ctx_teardown(fc_ctx *c, bool device_reset)
{
    alloc_list l = { 0 };
    collect(fc_st.allocs, c, device_reset, &l);
    for (size_t i = 0; i < l.n; i++)
        fc_mem_release(l.v[i]);
    free(l.v);
}

/* ------------------------------------------------------------------------ */
/* Allocation entry points                                                   */
/* ------------------------------------------------------------------------ */

/* The 32-bit legacy forms cannot address this device. */
FC_EXPORT(cuMemAlloc, (CUdeviceptr_v1 * dptr, unsigned int bytesize), (dptr, bytesize))
{
    (void)dptr;
    (void)bytesize;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemFree, (CUdeviceptr_v1 dptr), (dptr))
{
    (void)dptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!dptr || bytesize == 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_unsafe(); /* not observed by a capture */
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(c, bytesize, NULL, dptr);
    fc_unlock();
    return rc;
}

/*
 * Pitched memory is ordinary device memory: Height rows of *pPitch bytes,
 * freed by cuMemFree.  The pitch is WidthInBytes rounded up to 512 bytes,
 * what cuMemAllocPitch gives on NVIDIA's GPUs (the device reports no
 * CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT to follow instead).
 * ElementSizeBytes "may be 4, 8 or 16"; any other value, a zero width or
 * height, or a NULL output is CUDA_ERROR_INVALID_VALUE.
 */
#define FC_PITCH_ALIGN 512u

FC_EXPORT(cuMemAllocPitch,
          (CUdeviceptr_v1 * dptr, unsigned int *pPitch, unsigned int WidthInBytes,
           unsigned int Height, unsigned int ElementSizeBytes),
          (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))
{
    (void)dptr;
    (void)pPitch;
    (void)WidthInBytes;
    (void)Height;
    (void)ElementSizeBytes;
    return CUDA_ERROR_NOT_SUPPORTED; /* 32-bit, as cuMemAlloc */
}

FC_EXPORT(cuMemAllocPitch_v2,
          (CUdeviceptr * dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
           unsigned int ElementSizeBytes),
          (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    bool elem_ok = ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16;
    if (rc == CUDA_SUCCESS && (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 || !elem_ok))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* More than a device holds (the checks keep pitch * Height from overflowing). */
    if (rc == CUDA_SUCCESS && (uint64_t)WidthInBytes > FC_DEVICE_MEM)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t pitch = round_up(rc == CUDA_SUCCESS ? WidthInBytes : 1, FC_PITCH_ALIGN);
    if (rc == CUDA_SUCCESS && (uint64_t)Height > FC_DEVICE_MEM / pitch)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_unsafe();
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(c, (size_t)(pitch * Height), NULL, dptr);
    if (rc == CUDA_SUCCESS)
        *pPitch = (size_t)pitch;
    fc_unlock();
    return rc;
}

/*
 * A graph allocation is freed by address too ("passing the allocation to
 * cuMemFreeAsync or cuMemFree"), when a launch has allocated it: all queued
 * work runs first, since its allocation node may be queued on any stream.
 */
static CUresult free_graph_allocation(fc_galloc *ga)
{
    if (!ga->out)
        return CUDA_ERROR_INVALID_VALUE;
    fc_sync_all();
    ga->out = false;
    fc_alloc *a = fc_mem_find_base(ga->node.key);
    if (a && a->buffer_id == ga->buffer_id)
        fc_mem_release(a); /* may free ga */
    return CUDA_SUCCESS;
}

/*
 * cuMemFree is synchronous: queued work that may still use the memory runs
 * first.  Memory from cuMemAllocAsync is the exception the documentation
 * names: no implicit synchronisation, so work still queued on it will fault.
 * A NULL pointer is not an allocation: CUDA_ERROR_INVALID_VALUE (unlike
 * cudaFree(NULL), cuMemFree has no documented no-op case).
 *
 * With no context current this answers CUDA_ERROR_INVALID_CONTEXT, as cuda.h
 * documents: cuMemFree's \return list holds it, and the error's own text says
 * it "most frequently indicates that there is no context bound to the current
 * thread".  NVIDIA's cuda-python maintainers report that the driver in fact
 * frees by address with no context current (12.9, 13.x): a client that frees
 * so (numba's cuda.close()) may fail here where a GPU would not.
 */
FC_EXPORT(cuMemFree_v2, (CUdeviceptr dptr), (dptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_unsafe();
    fc_galloc *ga = rc == CUDA_SUCCESS ? fc_galloc_at(dptr) : NULL;
    if (ga) {
        rc = free_graph_allocation(ga);
        fc_unlock();
        return rc;
    }
    fc_alloc *a = rc == CUDA_SUCCESS ? fc_mem_find_base(dptr) : NULL;
    if (rc == CUDA_SUCCESS && (!a || a->free_pending || a->phys)) /* a mapping: cuMemUnmap */
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !a->pool) {
        fc_ctx *owner = a->ctx;
        rc = fc_ctx_sync(c);
        if (rc == CUDA_SUCCESS && owner && owner != c && owner->alive)
            rc = fc_ctx_sync(owner);
        /* Running work never frees a non-pending allocation, but look again. */
        a = fc_mem_find_base(dptr);
        if (rc == CUDA_SUCCESS && !a)
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    if (rc == CUDA_SUCCESS)
        fc_mem_release(a);
    fc_unlock();
    return rc;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && (!dptr || bytesize == 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* From the device's current pool.  The address is handed out at once;
     * the stream only orders its use.  Captured, an allocation node. */
    if (rc == CUDA_SUCCESS && s->cap)
        rc = fc_capture_alloc(s, bytesize, s->ctx->dev, dptr);
    else if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(s->ctx, bytesize, fc_st.current_pool[s->ctx->dev], dptr);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
          (dptr, bytesize, hStream))
{
    return alloc_async(dptr, bytesize, hStream, false);
}

FC_EXPORT(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),
          (dptr, bytesize, hStream))
{
    return alloc_async(dptr, bytesize, hStream, true);
}

CUresult fc_mem_queue_free(fc_stream *s, CUdeviceptr dptr, uint64_t buffer_id)
{
    fc_op *op = fc_op_new(FC_OP_FREE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.free.ptr = dptr;
    op->u.free.buffer_id = buffer_id;
    return fc_enqueue(s, op, NULL);
}

/*
 * The free is queued: work queued before it on the stream still sees memory.
 * A graph allocation can be freed so once a launch has allocated it; while
 * capturing, the free becomes a free node (fc_capture_free).
 */
static CUresult free_async(CUdeviceptr dptr, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && s->cap) {
        rc = fc_capture_free(s, dptr);
        fc_unlock();
        return rc;
    }
    fc_galloc *ga = rc == CUDA_SUCCESS ? fc_galloc_at(dptr) : NULL;
    fc_alloc *a = rc == CUDA_SUCCESS && !ga ? fc_mem_find_base(dptr) : NULL;
    if (rc == CUDA_SUCCESS && (ga ? !ga->out : !a || a->free_pending || a->phys))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && ga) {
        rc = fc_mem_queue_free(s, dptr, ga->buffer_id);
        if (rc == CUDA_SUCCESS)
            ga->out = false;
    } else if (rc == CUDA_SUCCESS) {
        rc = fc_mem_queue_free(s, dptr, a->buffer_id);
        if (rc == CUDA_SUCCESS)
            a->free_pending = true;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))
{
    return free_async(dptr, hStream, false);
}

FC_EXPORT(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))
{
    return free_async(dptr, hStream, true);
}

/* In bounded chunks, backwards when dst overlaps the tail of src. */
bool fc_dev_copy(uint64_t dst, uint64_t src, size_t n)
{
    unsigned char buf[16384];
    bool backwards = dst > src && dst - src < n;
    size_t done = 0;
    while (done < n) {
        size_t len = n - done < sizeof buf ? n - done : sizeof buf;
        uint64_t off = backwards ? n - done - len : done;
        if (!fc_dev_read(src + off, buf, len) || !fc_dev_write(dst + off, buf, len))
            return false;
        done += len;
    }
    return true;
}
