/*
 * Internal interfaces shared by the fake driver's source files.
 *
 * Nothing here is exported from libcuda.so.1: every declaration carries
 * FC_HIDDEN, so the library's dynamic symbol table holds only the cu* entry
 * points and the fakecuda_* test controls (check_entrypoints.py verifies it).
 */
#ifndef GG_TESTS_FAKECUDA_FC_INTERNAL_H
#define GG_TESTS_FAKECUDA_FC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <cuda.h>
#include <cudaProfiler.h>

#include "entrypoints.h"

/*
 * cuda.h declares cuIpcOpenMemHandle only under its CUDA 11 name (the macro
 * maps it to cuIpcOpenMemHandle_v2); the CUDA 4.1 export has the same
 * prototype (PFN_cuIpcOpenMemHandle_v4010 in cudaTypedefs.h).
 */
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);

#define FC_HIDDEN __attribute__((visibility("hidden")))

/* ------------------------------------------------------------------------ */
/* Ordered map (treap) keyed by a 64-bit address.                            */
/* ------------------------------------------------------------------------ */

/*
 * An intrusive node: embed it in the record to be indexed.  `key` orders the
 * tree (an address), `val` is a length used by fc_tree_first_fit (each node
 * keeps the largest `val` of its subtree in `maxval`).  A treap keeps the
 * expected depth logarithmic, so insert, erase, floor and first-fit are all
 * O(log n) expected.  Not thread-safe: callers hold the driver lock.
 */
typedef struct fc_tnode {
    struct fc_tnode *l, *r;
    uint64_t key;
    uint64_t val;
    uint64_t maxval;
    uint32_t prio;
} fc_tnode;

/* Insert n (key unique; n->key and n->val set by the caller). */
FC_HIDDEN void fc_tree_insert(fc_tnode **root, fc_tnode *n, uint32_t prio);
/* Remove the node whose key is `key`; it must be present. */
FC_HIDDEN void fc_tree_erase(fc_tnode **root, uint64_t key);
/* Exact lookup; NULL when absent. */
FC_HIDDEN fc_tnode *fc_tree_find(fc_tnode *root, uint64_t key);
/* The node with the largest key <= key, or NULL. */
FC_HIDDEN fc_tnode *fc_tree_floor(fc_tnode *root, uint64_t key);
/* The node with the smallest key >= key, or NULL. */
FC_HIDDEN fc_tnode *fc_tree_ceil(fc_tnode *root, uint64_t key);
/* The lowest-keyed node with val >= len, or NULL. */
FC_HIDDEN fc_tnode *fc_tree_first_fit(fc_tnode *root, uint64_t len);
/*
 * After changing the key or val of the node now keyed `key` in place (only
 * allowed when its order among the other keys does not change), recompute
 * the subtree maxima on the path to it.
 */
FC_HIDDEN void fc_tree_fix_path(fc_tnode *root, uint64_t key);

/* ------------------------------------------------------------------------ */
/* Module images: PTX text, cubin (ELF) and fatbin containers.              */
/* ------------------------------------------------------------------------ */

/*
 * Where one kernel parameter lies in the parameter buffer (what
 * cuFuncGetParamInfo reports and what a launch's `extra` buffer holds).
 */
typedef struct fc_kparam {
    uint32_t offset;
    uint32_t size;
} fc_kparam;

/* A kernel's parameters, in declaration order. */
typedef struct fc_kparams {
    const fc_kparam *v;
    unsigned int count;
    /* The image states them: always for PTX (the .entry's .param list), for
     * a cubin when it has the entry's .nv.info section, as ptxas writes. */
    bool declared;
} fc_kparams;

/* The bytes of the parameter buffer: the end of the last parameter, with no
 * padding after it (0 for a kernel without parameters). */
FC_HIDDEN size_t fc_kparams_size(const fc_kparams *p);
FC_HIDDEN bool fc_kparams_equal(const fc_kparams *a, const fc_kparams *b);

/* The kernel entries found in an image: names[i] takes params[i]. */
typedef struct fc_image {
    char **names;
    fc_kparams *params; /* each one's array owned by the image */
    size_t count;
    /* PTX ISA of a PTX image, major * 10 + minor (`.version 8.0`: 80); 0 for
     * code that was not PTX (a cubin does not say in a way the fake reads). */
    unsigned int ptx_version;
    /* No code in it runs on the device (fc_image_parse_deferred only): the
     * entries are those of code for another GPU. */
    bool no_binary;
} fc_image;

/*
 * Parse a module image as cuModuleLoadData receives it: a NUL-terminated PTX
 * text, an ELF cubin, a fatbin container (magic 0xBA55ED50) or a
 * __fatBinC_Wrapper_t (magic 0x466243b1) pointing to one.  `size` is the
 * number of readable bytes when the caller knows it (a file), or 0 when it
 * does not (a pointer from the application).  On success fills *out (release
 * with fc_image_free) and returns CUDA_SUCCESS; otherwise the CUresult the
 * real driver documents for that kind of bad image.
 */
FC_HIDDEN CUresult fc_image_parse(const void *image, size_t size, fc_image *out);
/*
 * The same, for a library loaded lazily: an image whose only code is for
 * another GPU is read all the same, its entries those of that code, and
 * marked no_binary (instead of CUDA_ERROR_NO_BINARY_FOR_GPU); the failure
 * is left to whatever needs the code in a context.
 */
FC_HIDDEN CUresult fc_image_parse_deferred(const void *image, size_t size, fc_image *out);
FC_HIDDEN void fc_image_free(fc_image *img);
/* Add src's entries to dst (each name once). */
FC_HIDDEN CUresult fc_image_merge(fc_image *dst, const fc_image *src);
/* A cubin holding img's entries, malloc'd (what cuLinkComplete returns). */
FC_HIDDEN CUresult fc_image_write_cubin(const fc_image *img, unsigned char **out, size_t *size);

/* The sm version the fake device reports (compute capability 9.0). */
#define FC_SM_VERSION 90
/* The newest PTX ISA the fake "JIT" accepts (CUDA 13.0 ships PTX ISA 9.0). */
#define FC_PTX_ISA_MAJOR_MAX 9

/* ------------------------------------------------------------------------ */
/* Identity and limits of the fake driver.                                   */
/* ------------------------------------------------------------------------ */

/* The driver reports the version of the toolkit it was built against, or
 * the older one it is built as (cuda-12.3/). */
#ifndef FC_DRIVER_VERSION
#define FC_DRIVER_VERSION CUDA_VERSION
#endif
#define FC_MAX_DEVICES 8
#define FC_DEVICE_NAME "gpuguard fake device"
/* Allocation granularity: an allocation's extent is its size rounded up. */
#define FC_GRANULE 256u
/*
 * Granularity of the virtual memory management API (fc_vmm.c), minimum and
 * recommended alike, as NVIDIA's GPUs report for device memory: 2 MiB.
 */
#define FC_VMM_GRANULE ((uint64_t)2 << 20)
/* Memory of one fake device, and the device address space of all of them. */
#define FC_DEVICE_MEM ((uint64_t)8 << 30)
#define FC_VA_SIZE ((uint64_t)FC_MAX_DEVICES * FC_DEVICE_MEM)
/* Stream priorities of a compute capability 9.0 device: [greatest, least]. */
#define FC_PRIO_GREATEST (-5)
#define FC_PRIO_LEAST 0
/* Shared memory a block may opt in to (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). */
#define FC_SMEM_OPTIN (227 * 1024)
/* Streaming multiprocessors of the fake device (an H100 SXM has 132). */
#define FC_SM_COUNT 132

/* ------------------------------------------------------------------------ */
/* Exported entry points: call counters and exact self addresses.            */
/* ------------------------------------------------------------------------ */

#define FC_PUBLIC __attribute__((visibility("default")))

enum fc_ep {
#define FC_EP_ENUM(sym, base, ver, pt) FC_EP_##sym,
    FAKECUDA_ENTRY_POINTS(FC_EP_ENUM)
#undef FC_EP_ENUM
    FC_EP_COUNT
};

/* Calls of each exported entry point (fc_proc.c); relaxed atomics. */
FC_HIDDEN extern atomic_ulong fc_calls[FC_EP_COUNT];
/* Async calls that waited for their stream (fc_proc.c: the census). */
FC_HIDDEN extern atomic_ulong fc_async_waits;

/* fakecuda_raise_in (fc_proc.c): the entry point whose next call raises a
 * signal, FC_EP_COUNT when none; taken by the one call that raises it. */
FC_HIDDEN extern atomic_uint fc_raise_ep;
FC_HIDDEN void fc_raise_now(void);

/*
 * fc_self_<sym> is a hidden alias of the exported function <sym>: the same
 * address, reached without the GOT.  cuGetProcAddress hands these out, so an
 * LD_PRELOADed library that exports its own cuMemAlloc_v2 cannot interpose on
 * what the driver returns (the real driver returns its own functions), and
 * the pointer equals dlsym(<libcuda handle>, "<sym>").
 */
#define FC_SELF_DECL(sym, base, ver, pt) FC_HIDDEN extern __typeof__(sym) fc_self_##sym;
FAKECUDA_ENTRY_POINTS(FC_SELF_DECL)
#undef FC_SELF_DECL

/*
 * Define an exported entry point.  The exported function counts the call and
 * forwards to the static implementation whose body follows the macro:
 *
 *     FC_EXPORT(cuMemFree_v2, (CUdeviceptr dptr), (dptr))
 *     {
 *         ...
 *     }
 *
 * Every export goes through here, so no entry point can miss its counter,
 * and a name missing from entrypoints.h does not compile (FC_EP_<name>).
 */
#define FC_EXPORT(name, params, args)                                                 \
    static CUresult fc_impl_##name params;                                            \
    FC_PUBLIC CUresult CUDAAPI name params                                            \
    {                                                                                 \
        atomic_fetch_add_explicit(&fc_calls[FC_EP_##name], 1, memory_order_relaxed);  \
        if (atomic_load_explicit(&fc_raise_ep, memory_order_relaxed) == FC_EP_##name) \
            fc_raise_now();                                                           \
        return fc_impl_##name args;                                                   \
    }                                                                                 \
    extern __typeof__(name) fc_self_##name __attribute__((alias(#name)));             \
    static CUresult fc_impl_##name params

/* ------------------------------------------------------------------------ */
/* Driver objects.                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Every handle given to the application (CUcontext, CUstream, CUevent,
 * CUmodule, CUfunction, CUlibrary, CUkernel) points to an object that starts
 * with an fc_handle registered in fc_st.handles while it is valid, so a
 * handle is checked by lookup before it is ever dereferenced.
 */
enum fc_kind {
    FC_K_CTX = 1,
    FC_K_STREAM,
    FC_K_EVENT,
    FC_K_MODULE,
    FC_K_FUNCTION,
    FC_K_LIBRARY,
    FC_K_KERNEL,
    FC_K_LINK,
    FC_K_POOL,
    FC_K_PHYS,  /* a cuMemCreate allocation (CUmemGenericAllocationHandle) */
    FC_K_GRAPH, /* a CUgraph (fc_graph.c) */
    FC_K_GEXEC, /* a CUgraphExec */
    FC_K_GNODE, /* a CUgraphNode, valid until its graph is destroyed */
    FC_K_ARRAY, /* a CUarray (fc_array.c) */
};

typedef struct fc_handle {
    fc_tnode node; /* key = the object's address */
    int kind;
} fc_handle;

typedef struct fc_ctx fc_ctx;
typedef struct fc_stream fc_stream;
typedef struct fc_event fc_event;
typedef struct fc_op fc_op;
typedef struct fc_module fc_module;
typedef struct fc_function fc_function;
typedef struct fc_library fc_library;
typedef struct fc_kernel fc_kernel;
typedef struct fc_kimpl fc_kimpl;
typedef struct fc_capture fc_capture;
typedef struct fc_gnode fc_gnode;
typedef struct fc_galloc fc_galloc;
typedef struct fc_alloc fc_alloc;

/*
 * A context.  Created contexts are never freed: after cuCtxDestroy the
 * object stays registered as a "zombie" (alive == false), so a thread that
 * still has it current gets CUDA_ERROR_CONTEXT_IS_DESTROYED, as documented,
 * instead of a dangling pointer.  Primary contexts live in fc_st for good and
 * are alive while retained.  All fields are guarded by fc_st.lock.
 */
struct fc_ctx {
    fc_handle h;
    int dev;
    bool primary;
    bool alive;
    unsigned int flags;
    unsigned int refcount; /* primary contexts: retain count; created: usage count */
    /* CUDA_SUCCESS, or the sticky error of a faulted kernel (context lost). */
    CUresult sticky;
    fc_stream *legacy;              /* the NULL stream (CU_STREAM_LEGACY) */
    LIST_HEAD(, fc_stream) streams; /* every stream, legacy and per-thread included */
    LIST_HEAD(, fc_event) events;
    LIST_HEAD(, fc_module) modules;
};

enum fc_stream_kind {
    FC_S_USER,
    FC_S_LEGACY,
    FC_S_PER_THREAD
};

/* A prerequisite of an operation: stream `stream_id` has run every op <= seq. */
typedef struct fc_dep {
    uint64_t stream_id;
    uint64_t seq;
} fc_dep;

/* Work queued on a stream; runs when something forces the stream. */
enum fc_op_kind {
    FC_OP_MARKER, /* event record, stream wait: only its dependencies */
    FC_OP_MEMSET,
    FC_OP_HTOD,
    FC_OP_DTOH,
    FC_OP_DTOD,
    FC_OP_KERNEL,
    FC_OP_FREE,     /* cuMemFreeAsync */
    FC_OP_CALLBACK, /* cuStreamAddCallback */
    FC_OP_HTOH,     /* a graph's host-to-host copy node */
    FC_OP_GALLOC,   /* a graph's allocation node: its memory becomes accessible */
};

#define FC_MAX_KPARAMS 5

struct fc_op {
    fc_op *next;
    uint64_t seq;     /* global enqueue order */
    uint64_t done_ns; /* the timeline: when the device completes it (CLOCK_MONOTONIC) */
    int kind;
    unsigned int ndeps;
    fc_dep *deps;
    union {
        struct {
            CUdeviceptr dst;
            uint32_t value;
            unsigned int elem; /* 1, 2 or 4 bytes */
            size_t count;
        } memset;
        struct {
            CUdeviceptr dev;     /* HTOD dst, DTOH src, DTOD dst */
            CUdeviceptr dev_src; /* DTOD src */
            /* HTOD: the staged copy when `staged` (owned), else the
             * application's buffer, read when the op runs (a graph's copy
             * node); DTOH and HTOH: the application's destination */
            void *host;
            const void *host_src; /* HTOH: the application's source */
            size_t n;
            bool staged;
        } copy;
        struct {
            const fc_kimpl *impl;
            uint64_t args[FC_MAX_KPARAMS];
            /* FAKECUDA_STICKY: the error the context gets once it has run. */
            CUresult sticky;
        } kernel;
        struct {
            CUdeviceptr ptr;
            uint64_t buffer_id; /* so a reused address is never freed */
            fc_galloc *ga;      /* a graph's free node: the graph allocation */
        } free;
        struct {
            uint64_t record; /* the fc_event record this marker completes; 0 none */
            CUevent wait;    /* a graph's external event wait node: the event */
        } marker;
        struct {
            fc_galloc *ga; /* the graph allocation the node makes accessible */
            fc_alloc *a;   /* a launch's instance of it, charged, not yet mapped */
        } galloc;
        struct {
            CUstreamCallback fn;
            CUstream stream; /* the handle the application passed */
            void *user;
        } callback;
    } u;
};

struct fc_stream {
    fc_handle h;      /* registered for user streams only */
    fc_tnode id_node; /* key = id, in fc_st.streams_by_id */
    uint64_t id;      /* never reused, so a stale fc_dep cannot alias */
    fc_ctx *ctx;
    int kind;
    unsigned int flags;
    int priority;
    uint64_t owner; /* per-thread streams: fc_thread_id() of the owner */
    fc_op *head, *tail;
    uint64_t busy_ns; /* the timeline: when its last queued op completes */
    bool destroyed;   /* by cuStreamDestroy: freed once its work has run */
    /* Stream capture (fc_graph.c): the capture sequence the stream takes
     * part in, and the nodes the next captured node will depend on. */
    fc_capture *cap;
    fc_gnode **deps;
    size_t ndeps;
    CUgraphEdgeData *edges; /* cuStreamGetCaptureInfo_v3's edge data (all zero) */
    LIST_ENTRY(fc_stream) link;
    LIST_ENTRY(fc_stream) zombie_link;
};

struct fc_event {
    fc_handle h;
    fc_ctx *ctx;
    unsigned int flags;
    bool recorded;
    fc_dep at;        /* the marker op of the latest record */
    uint64_t record;  /* id of the latest record (process-unique, never 0) */
    bool done;        /* the latest record's marker has run */
    uint64_t done_ns; /* when it ran (CLOCK_MONOTONIC) */
    /* Last recorded in a capturing stream: that capture's id (0: not) and the
     * nodes the record captured (fc_graph.c). */
    uint64_t cap_id;
    fc_gnode **cap_deps;
    size_t cap_ndeps;
    LIST_ENTRY(fc_event) link;
};

/*
 * A host implementation of a kernel, chosen by entry name when the image
 * declares the same parameters (fc_kimpl_find).  Its parameters are
 * integers or pointers of at most 8 bytes, FC_MAX_KPARAMS at most, passed
 * to run() zero-extended in args[i].
 */
struct fc_kimpl {
    const char *name;
    fc_kparams params;
    /* Run over the whole problem; false on an illegal address. */
    bool (*run)(const uint64_t *args);
    /* Registers per thread the kernel needs on sm_90 (`ptxas -v`). */
    unsigned int nregs;
};

struct fc_function {
    fc_handle h;
    fc_module *mod;
    const fc_kimpl *impl;
    const char *name;         /* owned by the module's image */
    const fc_kparams *params; /* the image's, or impl's when it declares none */
};

struct fc_module {
    fc_handle h;
    fc_ctx *ctx;
    fc_library *lib; /* non-NULL: made by a library for ctx; not unloadable */
    fc_image img;    /* owned unless lib != NULL (then the library's) */
    size_t nfuncs;
    fc_function *funcs;
    LIST_ENTRY(fc_module) ctx_link;
    LIST_ENTRY(fc_module) lib_link;
};

/* The function attributes cuKernelSetAttribute may set (fc_module.c). */
#define FC_KATTR_COUNT 7

struct fc_kernel {
    fc_handle h;
    fc_library *lib;
    const fc_kimpl *impl;
    const char *name;
    const fc_kparams *params; /* as fc_function's */
    /* Values set by cuKernelSetAttribute on each device: bit i of
     * attr_set[dev] says slot i of attr[dev] holds one. */
    int attr[FC_MAX_DEVICES][FC_KATTR_COUNT];
    unsigned char attr_set[FC_MAX_DEVICES];
};

struct fc_library {
    fc_handle h;
    fc_image img;
    size_t nkernels;
    fc_kernel *kernels;
    LIST_HEAD(, fc_module) modules; /* one per context that asked */
    LIST_ENTRY(fc_library) link;
};

/* ------------------------------------------------------------------------ */
/* Driver state.                                                             */
/* ------------------------------------------------------------------------ */

/*
 * One driver lock guards everything below except `initialized` (an atomic,
 * set once under the lock) and the call counters.  Work queued on streams
 * runs on whichever API thread forces it, with the lock held, so the fake
 * never needs condition variables.
 */
/*
 * A memory pool (fc_pool.c): a device's default pool, or one made by
 * cuMemPoolCreate; what cuMemAllocAsync (from the device's current pool) and
 * cuMemAllocFromPoolAsync allocate from.  Its memory goes back to the device
 * as soon as it is freed, so a pool holds exactly what is in use
 * (RESERVED_MEM == USED_MEM).
 */
typedef struct fc_pool {
    fc_handle h; /* registered while the handle is valid (until cuMemPoolDestroy) */
    int dev;
    bool destroyed;    /* by cuMemPoolDestroy: freed with its last allocation */
    uint64_t max_size; /* CUmemPoolProps::maxSize; 0: no cap but the device's */
    uint64_t live;     /* its live allocations */
    uint64_t release_threshold;
    int reuse_follow_event_deps, reuse_opportunistic, reuse_internal_deps;
    uint64_t used;      /* extents of its live allocations */
    uint64_t used_high; /* since the last reset to 0 */
    uint64_t reserved_high;
} fc_pool;

typedef struct fc_state {
    pthread_mutex_t lock;
    atomic_bool initialized;

    int ndevices;
    fc_ctx primary[FC_MAX_DEVICES];

    /* memory */
    uint64_t va_base, va_end; /* reserved PROT_NONE device address space */
    fc_tnode *allocs;         /* live allocations by base address */
    fc_alloc *alloc_first;    /* the same, listed in address order */
    fc_alloc *alloc_finger;   /* the one the last lookup found, or NULL */
    fc_tnode *free_va;        /* free address ranges: key start, val length */
    fc_tnode *reserved;       /* cuMemAddressReserve ranges: key start, val length */
    size_t mem_limit;         /* 0: none */
    bool managed;             /* FAKECUDA_MANAGED=1: the device has managed memory */
    bool reuse_handles;       /* FAKECUDA_REUSE_HANDLES=1 */
    bool lazy_loading;        /* CUDA_MODULE_LOADING=LAZY */
    size_t mem_used;          /* requested bytes of live allocations */
    size_t live_allocs;
    uint64_t dev_used[FC_MAX_DEVICES];     /* extents per device */
    fc_pool pools[FC_MAX_DEVICES];         /* each device's default pool */
    fc_pool *current_pool[FC_MAX_DEVICES]; /* cuDeviceSetMemPool's, else the default */
    uint64_t next_buffer_id;
    fc_tnode *gallocs; /* graph allocations by base address (fc_galloc) */

    /* handles and streams */
    fc_tnode *handles;
    fc_tnode *streams_by_id;
    uint64_t next_stream_id;
    uint64_t next_seq;
    uint64_t ops_run;                      /* queued ops executed so far: a copy that ran
                                      none while it waited re-checks nothing */
    LIST_HEAD(, fc_stream) zombie_streams; /* destroyed, work still queued */
    LIST_HEAD(, fc_library) libraries;
    LIST_HEAD(, fc_capture) captures; /* ongoing stream captures (fc_graph.c) */
    uint64_t next_capture_id;

    /* launches (fc_launch.c): how many passed their checks so far, and the
     * FAKECUDA_FAIL_LAUNCH / FAKECUDA_STICKY knobs (nth 0: off) */
    uint64_t launches;
    struct {
        uint64_t nth;
        CUresult code;
    } fail_launch, sticky_launch;

    /* The device timeline (fc_stream.c; FAKECUDA_TIMELINE=1, read at
     * cuInit): each queued op's modelled duration, in ns. */
    struct {
        bool on;
        uint64_t op_ns;           /* every op: FAKECUDA_OP_NS */
        uint64_t kernel_ns;       /* a kernel: FAKECUDA_KERNEL_NS */
        uint64_t copy_ns_per_kib; /* a copy, per KiB: FAKECUDA_COPY_NS_PER_KIB */
        uint64_t set_ns_per_kib;  /* a memset, per KiB: FAKECUDA_MEMSET_NS_PER_KIB */
    } timeline;

    uint32_t prng; /* treap priorities */
} fc_state;

FC_HIDDEN extern fc_state fc_st;

/* Whether addr lies in the device address space (else: host memory). */
static inline bool fc_mem_is_device(uint64_t addr)
{
    return addr >= fc_st.va_base && addr < fc_st.va_end;
}

static inline void fc_lock(void)
{
    pthread_mutex_lock(&fc_st.lock);
}

static inline void fc_unlock(void)
{
    pthread_mutex_unlock(&fc_st.lock);
}

/* ---- fc_state.c --------------------------------------------------------- */

/* CUDA_ERROR_NOT_INITIALIZED before cuInit; else takes the lock. */
FC_HIDDEN CUresult fc_enter(void);
FC_HIDDEN uint32_t fc_rand(void);
FC_HIDDEN void fc_handle_add(fc_handle *h, int kind);
FC_HIDDEN void fc_handle_del(fc_handle *h);
/* The object behind `p` when it is a live handle of `kind`, else NULL. */
FC_HIDDEN void *fc_handle_get(const void *p, int kind);
/* A small process-unique id of the calling thread (never reused). */
FC_HIDDEN uint64_t fc_thread_id(void);
/*
 * The calling thread's current context, usable: CUDA_ERROR_INVALID_CONTEXT
 * when there is none, CUDA_ERROR_CONTEXT_IS_DESTROYED when it was destroyed,
 * its sticky error when a kernel fault killed it.  Lock held.
 */
FC_HIDDEN CUresult fc_ctx_current(fc_ctx **out);
FC_HIDDEN bool fc_dev_valid(CUdevice dev);

/* ---- fc_mem.c ----------------------------------------------------------- */

struct fc_alloc {
    fc_tnode node;         /* key = base address */
    fc_alloc *prev, *next; /* the live allocations in address order (fc_mem_link) */
    uint64_t size;         /* requested */
    uint64_t extent;       /* size rounded up to FC_GRANULE */
    unsigned char *host;
    fc_ctx *ctx; /* NULL: a stream-ordered allocation whose context died */
    int dev;
    uint64_t buffer_id;
    fc_pool *pool;     /* stream-ordered memory: the pool it came from; else NULL */
    bool free_pending; /* a cuMemFreeAsync is queued */
    bool mapped;       /* host backing is an mmap */
    bool managed;      /* from cuMemAllocManaged */
    /* A cuMemMap mapping (fc_vmm.c): the cuMemCreate allocation it maps (its
     * backing is that allocation's), and what cuMemSetAccess allows its
     * device (a CUmemAccess_flags).  NULL for every other allocation. */
    struct fc_phys *phys;
    unsigned int access;
    /* An instance of a graph allocation (its address is the graph's, kept
     * when this memory goes); NULL for every other allocation. */
    fc_galloc *galloc;
};

/*
 * A graph allocation (fc_graph.c): what a cuMemAllocAsync captured into a
 * graph made.  Its address range is reserved from capture on and stays the
 * graph's; memory backs it only while a launch has allocated it (an
 * fc_alloc whose `galloc` points here sits in fc_st.allocs from the moment
 * the allocation node runs until a free runs).
 */
struct fc_galloc {
    fc_tnode node;   /* key = base address, in fc_st.gallocs */
    uint64_t size;   /* requested */
    uint64_t extent; /* reserved: size rounded up to FC_GRANULE */
    int dev;
    uint64_t graph_id; /* the graph whose allocation node made it */
    unsigned int refs; /* graph and executable-graph nodes naming it */
    /* Allocated in stream order: a launch queued its allocation node and no
     * free has been queued since.  buffer_id names that instance. */
    bool out;
    uint64_t buffer_id;
    unsigned int instances; /* fc_alloc instances made and not yet released */
    /* Where a free node for it was captured: none, its own graph, another. */
    enum {
        FC_GA_FREE_NONE,
        FC_GA_FREE_OWNER,
        FC_GA_FREE_OTHER
    } freed_in;
    bool sim; /* scratch of cuGraphLaunch's checks */
};

FC_HIDDEN CUresult fc_mem_init(void);
/*
 * Device memory accounting (FAKECUDA_MEM_LIMIT, cuMemGetInfo and the test
 * controls): charge `size` requested bytes taking `extent` bytes of device
 * `dev` (CUDA_ERROR_OUT_OF_MEMORY when they do not fit), or give them back.
 */
FC_HIDDEN CUresult fc_mem_charge(int dev, uint64_t size, uint64_t extent);
FC_HIDDEN void fc_mem_uncharge(int dev, uint64_t size, uint64_t extent);
/* n bytes (a multiple of FC_GRANULE) of host backing, holding garbage as
 * fresh device memory does; NULL when out of memory. */
FC_HIDDEN unsigned char *fc_mem_backing_new(uint64_t n);
FC_HIDDEN void fc_mem_backing_free(unsigned char *p, uint64_t n);
/*
 * Take `len` bytes of device address space aligned to `align` (a power of
 * two), at `hint` when that range is free and aligned; false when none is
 * left.  fc_va_release gives a range back.
 */
FC_HIDDEN bool fc_va_reserve(uint64_t len, uint64_t align, uint64_t hint, uint64_t *out);
FC_HIDDEN void fc_va_release(uint64_t start, uint64_t len);
/*
 * Allocate device memory: with pool NULL, cuMemAlloc memory of context c's
 * device, owned by c; else stream-ordered memory of the pool's device, made
 * in context c (NULL when c is not of that device).
 */
FC_HIDDEN CUresult fc_mem_alloc(fc_ctx *c, size_t size, fc_pool *pool, CUdeviceptr *out);
FC_HIDDEN void fc_mem_release(fc_alloc *a);
/* The live allocation whose base is exactly addr, or NULL. */
FC_HIDDEN fc_alloc *fc_mem_find_base(uint64_t addr);
/* Make a (its node.key set, no other allocation at that base) live, or
 * no longer live: in fc_st.allocs and in address order. */
FC_HIDDEN void fc_mem_link(fc_alloc *a);
FC_HIDDEN void fc_mem_unlink(fc_alloc *a);
/* Queue a stream-ordered free of the instance buffer_id at ptr on s. */
FC_HIDDEN CUresult fc_mem_queue_free(fc_stream *s, CUdeviceptr ptr, uint64_t buffer_id);
/* Execute a queued cuMemFreeAsync. */
FC_HIDDEN void fc_mem_free_queued(uint64_t ptr, uint64_t buffer_id);
/* The allocation that holds addr within its requested size, or NULL. */
FC_HIDDEN fc_alloc *fc_mem_find(uint64_t addr);
/*
 * CUDA_SUCCESS when [addr, addr+n) lies inside one allocation's requested
 * size, or runs through adjacent cuMemMap mappings, each of which allows
 * the access (reading; writing too when `write`); else
 * CUDA_ERROR_INVALID_VALUE.
 */
FC_HIDDEN CUresult fc_mem_check(uint64_t addr, size_t n, bool write);
/*
 * fc_mem_check, and, when the range lies in one allocation's own backing
 * (no cuMemMap mapping), *host = its bytes, to be read or written while
 * nothing frees it (else NULL): one lookup where a check and an access would
 * take two.
 */
FC_HIDDEN CUresult fc_mem_check_at(uint64_t addr, size_t n, bool write, unsigned char **host);
/*
 * Access device memory as a kernel does: every byte must be inside the
 * extent of some live allocation (ranges may span adjacent allocations),
 * and a mapping's only as cuMemSetAccess allows.  Bytes before the first
 * bad one are transferred; false on a bad byte.
 */
FC_HIDDEN bool fc_dev_read(uint64_t addr, void *dst, size_t n);
FC_HIDDEN bool fc_dev_write(uint64_t addr, const void *src, size_t n);
FC_HIDDEN bool fc_dev_fill(uint64_t addr, uint32_t value, unsigned int elem, size_t count);
/* Device-to-device copy with memmove semantics, same rules. */
FC_HIDDEN bool fc_dev_copy(uint64_t dst, uint64_t src, size_t n);
/* Free a context's memory (device_reset: the device's pool too). */
FC_HIDDEN void fc_mem_ctx_teardown(fc_ctx *c, bool device_reset);
/*
 * fc_mem_check, or, for a range inside a graph allocation's requested size,
 * success when the caller is capturing (a node ordered after its allocation
 * node) or when the allocation is allocated in stream order.
 */
FC_HIDDEN CUresult fc_mem_check_ordered(uint64_t addr, size_t n, bool write, bool capturing);
/* A discarded cuMemFreeAsync never happened: the allocation is live again. */
FC_HIDDEN void fc_mem_free_dropped(uint64_t ptr, uint64_t buffer_id);
/* Reserve the address range of a new graph allocation (refs 0). */
FC_HIDDEN CUresult fc_galloc_new(uint64_t size, int dev, uint64_t graph_id, fc_galloc **out);
/* The graph allocation whose base is exactly addr, or NULL. */
FC_HIDDEN fc_galloc *fc_galloc_at(uint64_t addr);
/* Drop a node's reference; the range goes back once nothing uses it. */
FC_HIDDEN void fc_galloc_unref(fc_galloc *ga);
/* A launch's instance of ga: charged and backed, not yet accessible. */
FC_HIDDEN CUresult fc_galloc_instance(fc_galloc *ga, fc_alloc **out);
/* The allocation node ran: the instance becomes accessible. */
FC_HIDDEN void fc_galloc_map(fc_alloc *a);
/* An instance whose allocation node never ran (its work was dropped). */
FC_HIDDEN void fc_galloc_discard(fc_alloc *a);

/* ---- fc_copy.c ---------------------------------------------------------- */

/* CU_DEVICE_ATTRIBUTE_MAX_PITCH: what NVIDIA's GPUs report. */
#define FC_MAX_PITCH 2147483647u

/* A linear copy: what the plain memcpy entry points do, and each row of a
 * 2D or 3D copy (fc_copy3d.c). */
enum fc_xfer_kind {
    FC_X_HTOD,
    FC_X_DTOH,
    FC_X_DTOD,
    FC_X_HTOH
};

typedef struct fc_xfer {
    int kind;
    CUdeviceptr ddst, dsrc;
    void *hdst;
    const void *hsrc;
    size_t n;
} fc_xfer;

/*
 * [p, p+n) of device memory for a copy: fc_mem_check_at, or with `ordered`
 * also a graph allocation allocated in stream order (any when `capturing`).
 */
FC_HIDDEN CUresult fc_range_check(CUdeviceptr p, size_t n, bool write, bool ordered, bool capturing,
                                  unsigned char **host);
/* The device ranges of x (and a device-to-host source's bytes in *src). */
FC_HIDDEN CUresult fc_xfer_check(const fc_xfer *x, bool ordered, bool capturing,
                                 unsigned char **src);
/* Perform x now (its ranges validated, the lock held). */
FC_HIDDEN void fc_xfer_now(const fc_xfer *x);
/* Queue x on s (or run it, where the driver is synchronous); *synced: s has
 * nothing queued and its earlier work has run, kept up to date. */
FC_HIDDEN CUresult fc_xfer_queue(const fc_xfer *x, fc_stream *s, bool *synced);
/* A synchronous call on stream s while a capture goes on: refused when s
 * cannot be waited for or the thread's capture mode prohibits it. */
FC_HIDDEN CUresult fc_sync_call_allowed(fc_stream *s);

/* ---- fc_array.c --------------------------------------------------------- */

/* A CUDA array: its elements, row after row, layer after layer, in a device
 * allocation of its own the application never sees. */
typedef struct fc_array {
    fc_handle h;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t elem;        /* bytes of one element: format times channels */
    CUdeviceptr ptr;    /* its storage */
    uint64_t buffer_id; /* that allocation's, so a reused address is never freed */
} fc_array;

/* The live array behind h, or NULL. Lock held. */
FC_HIDDEN fc_array *fc_array_get(CUarray h);
/* Its rows' bytes, rows per layer, and layers (1 for a dimension of 0). */
FC_HIDDEN size_t fc_array_row_bytes(const fc_array *a);
FC_HIDDEN size_t fc_array_rows(const fc_array *a);
FC_HIDDEN size_t fc_array_layers(const fc_array *a);

/* ---- fc_stream.c -------------------------------------------------------- */

/*
 * Resolve a stream argument: NULL is the legacy stream, or the per-thread
 * stream when `per_thread` (the _ptsz/_ptds entry points); CU_STREAM_LEGACY
 * and CU_STREAM_PER_THREAD are accepted.  Checks the context (current one for
 * the special handles, the stream's own otherwise).  Lock held.
 */
FC_HIDDEN CUresult fc_stream_resolve(CUstream h, bool per_thread, fc_stream **out);
FC_HIDDEN fc_op *fc_op_new(int kind);
FC_HIDDEN void fc_op_free(fc_op *op);
/* A copy of op's parameters, queued nowhere and owning nothing (a graph
 * node's template or a launch's op); NULL when out of memory. */
FC_HIDDEN fc_op *fc_op_clone(const fc_op *op);
/*
 * Queue op on s (taking ownership), adding the implicit legacy-stream deps;
 * on a capturing stream the op becomes a node of the graph instead
 * (fc_capture_add; `extra` must then be NULL).
 */
FC_HIDDEN CUresult fc_enqueue(fc_stream *s, fc_op *op, const fc_dep *extra);
/* Synchronises with the legacy stream (blocking streams, per-thread ones). */
FC_HIDDEN bool fc_stream_blocking(const fc_stream *s);
/* Call fn on every stream of every context. */
FC_HIDDEN void fc_streams_foreach(void (*fn)(fc_stream *s, void *arg), void *arg);
/*
 * Before a synchronous API acts on stream s: run what it must wait for (the
 * legacy stream waits for every blocking stream of its context, a blocking
 * stream for the legacy stream).  Returns the context's sticky error.
 */
FC_HIDDEN CUresult fc_sync_for_api(fc_stream *s);
/* Run all queued work of a context; returns its sticky error. */
FC_HIDDEN CUresult fc_ctx_sync(fc_ctx *c);
FC_HIDDEN CUresult fc_stream_ctx_activate(fc_ctx *c);
FC_HIDDEN fc_stream *fc_stream_new_user(fc_ctx *c, unsigned int flags, int priority);
/* cuStreamDestroy: the handle dies now, the queue once it has run. */
FC_HIDDEN void fc_stream_destroy(fc_stream *s);
/* The timeline: a callback was queued; the worker will run it (fc_stream.c). */
FC_HIDDEN void fc_timeline_callback(void);
/* The timeline: whether the work a query asks about has completed (fc_stream.c). */
FC_HIDDEN bool fc_stream_ready(fc_stream *s, const fc_dep *d);
FC_HIDDEN bool fc_dep_pending(const fc_dep *d);
/* Run the named stream up to (and including) the op the dep names. */
FC_HIDDEN void fc_run_dep(const fc_dep *d);
FC_HIDDEN void fc_stream_ctx_teardown(fc_ctx *c);
/* Run all queued work of every stream (a device-wide synchronisation). */
FC_HIDDEN void fc_sync_all(void);

/* ---- fc_graph.c: stream capture ----------------------------------------- */

/*
 * Before stream-ordered work goes to s: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * when s is the legacy stream and a blocking stream of its context captures
 * (those captures are invalidated), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 * when s takes part in an invalidated capture.  Lock held.
 */
FC_HIDDEN CUresult fc_capture_use(fc_stream *s);
/* fc_stream_resolve for stream-ordered work, then fc_capture_use. */
FC_HIDDEN CUresult fc_stream_for_work(CUstream h, bool per_thread, fc_stream **out);
/* Add op (owned) to the graph s captures into, after s's dependencies. */
FC_HIDDEN CUresult fc_capture_add(fc_stream *s, fc_op *op);
/*
 * Before a call waits for stream s (synchronize, query, a synchronous
 * copy): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when s captures, IMPLICIT
 * when s is the legacy stream and a blocking stream captures; either way the
 * capture is invalidated.
 */
FC_HIDDEN CUresult fc_capture_sync(fc_stream *s);
/*
 * A potentially unsafe call (one that allocates or synchronises outside
 * stream order): CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when the calling
 * thread's capture mode prohibits it, invalidating the captures that do.
 */
FC_HIDDEN CUresult fc_capture_unsafe(void);
/* A context-wide synchronisation of c: UNSUPPORTED when one of its streams
 * captures (invalidated). */
FC_HIDDEN CUresult fc_capture_ctx_sync(fc_ctx *c);
/* Before a query or synchronisation of event e: CUDA_ERROR_CAPTURED_EVENT
 * when it was last recorded in a capture (invalidated when still going). */
FC_HIDDEN CUresult fc_capture_event_check(fc_event *e);
/* cuEventRecord of e on the capturing stream s. */
FC_HIDDEN CUresult fc_capture_record(fc_stream *s, fc_event *e);
/* e is recorded outside capture, or destroyed: forget its captured state. */
FC_HIDDEN void fc_capture_event_clear(fc_event *e);
/* cuStreamWaitEvent where s captures or e was recorded in a capture;
 * *done false when neither (the ordinary wait applies). */
FC_HIDDEN CUresult fc_capture_wait(fc_stream *s, fc_event *e, unsigned int flags, bool *done);
/* cuMemAllocAsync / cuMemFreeAsync on the capturing stream s. */
FC_HIDDEN CUresult fc_capture_alloc(fc_stream *s, size_t size, int dev, CUdeviceptr *out);
FC_HIDDEN CUresult fc_capture_free(fc_stream *s, CUdeviceptr ptr);
/* cuStreamDestroy of a capturing stream: UNSUPPORTED (invalidated). */
FC_HIDDEN CUresult fc_capture_stream_destroy(fc_stream *s);
/* The captures with a stream in context c end with it. */
FC_HIDDEN void fc_capture_ctx_teardown(fc_ctx *c);

/* ---- fc_module.c -------------------------------------------------------- */

/*
 * Resolve a CUfunction (or a CUkernel passed as one) for a launch in
 * context c: CUDA_ERROR_INVALID_HANDLE for NULL, unknown or foreign handles.
 * *params (when params is not NULL): its parameter layout.
 */
FC_HIDDEN CUresult fc_function_resolve(CUfunction f, fc_ctx *c, const fc_kimpl **out,
                                       const fc_kparams **params);
FC_HIDDEN void fc_module_ctx_teardown(fc_ctx *c);

/* ---- fc_launch.c -------------------------------------------------------- */

/*
 * The host implementation of entry `name` with the parameters the image
 * declares: a no-op for unknown names, and for a known name whose declared
 * parameters are not the fake kernel's (another kernel of the same name).
 */
FC_HIDDEN const fc_kimpl *fc_kimpl_find(const char *name, const fc_kparams *declared);
/* The layout of an image's entry: the declared one, else impl's. */
FC_HIDDEN const fc_kparams *fc_kimpl_params(const fc_kimpl *impl, const fc_kparams *declared);
/*
 * What a kernel's resources allow on the fake device (compute capability
 * 9.0 limits): the most threads a block may have, and the default cap on its
 * dynamic shared memory (the function attributes of the same names).
 */
FC_HIDDEN int fc_kimpl_max_threads(const fc_kimpl *k);
FC_HIDDEN int fc_kimpl_max_dynamic_smem(const fc_kimpl *k);

/*
 * A kernel node's parameters as the driver keeps them (fc_graph.c): copied
 * when the node is made or set (cuGraphAddKernelNode, a captured launch,
 * cuGraphKernelNodeSetParams), "owned by the node" when
 * cuGraphKernelNodeGetParams hands them back.
 */
typedef struct fc_knode {
    CUfunction func; /* as given: a CUfunction, or NULL with kern */
    CUkernel kern;
    CUcontext ctx;
    unsigned int grid[3], block[3], shmem;
    unsigned char *buf; /* the parameter values, at the image's offsets */
    size_t size;
    void **ptrs; /* kernelParams: one per parameter, into buf */
    unsigned int count;
    bool by_extra;     /* most recently set through extra */
    size_t extra_size; /* what extra[3] points to */
    void *extra[5];    /* BUFFER_POINTER, buf, BUFFER_SIZE, &extra_size, END */
} fc_knode;

/*
 * Check a kernel node's parameters as a launch in context c (the current
 * one) would be checked, and make the op its launches run (*op) and the
 * node's copy of them (*kn).  CUDA_ERROR_INVALID_VALUE for what a launch
 * would refuse.
 */
FC_HIDDEN CUresult fc_kernel_node(const CUDA_KERNEL_NODE_PARAMS_v2 *p, fc_ctx *c, fc_op **op,
                                  fc_knode **kn);
/* The copy a captured launch keeps (lay: the kernel's parameters). */
FC_HIDDEN fc_knode *fc_knode_new(CUfunction f, const unsigned int grid[3],
                                 const unsigned int block[3], unsigned int shmem,
                                 const fc_kparams *lay, void **params, void **extra);
FC_HIDDEN void fc_knode_free(fc_knode *kn);
FC_HIDDEN fc_knode *fc_knode_dup(const fc_knode *kn);
/* A captured kernel launch: op (owned) and its parameters kn (owned). */
FC_HIDDEN CUresult fc_capture_kernel(fc_stream *s, fc_op *op, fc_knode *kn);

/* ---- fc_pool.c ---------------------------------------------------------- */

/* Set up each device's default pool (cuInit, lock held). */
FC_HIDDEN void fc_pool_init(void);
/* Whether pool p may hand out `extent` more bytes (its maxSize). */
FC_HIDDEN bool fc_pool_fits(const fc_pool *p, uint64_t extent);
/* Account an allocation of pool p made (+) or released (-); a destroyed
 * pool is freed with its last allocation. */
FC_HIDDEN void fc_pool_account(fc_pool *p, uint64_t extent, bool made);
/*
 * Check the location of a pool or of a cuMemCreate allocation: a device of
 * the fake (else bad_device); host locations are CUDA_ERROR_NOT_SUPPORTED
 * (the device reports no host pools or host VMM); others invalid.
 */
FC_HIDDEN CUresult fc_mem_location_check(const CUmemLocation *loc, CUresult bad_device);
/* Check requested shareable handle types: the fake's devices export none. */
FC_HIDDEN CUresult fc_mem_handle_types_check(CUmemAllocationHandleType types);

/* ---- fc_hostmem.c ------------------------------------------------------- */

/* Whether [p, p+n) lies in one page-locked allocation (cuMemHostAlloc). Lock held. */
FC_HIDDEN bool fc_host_is_page_locked(const void *p, size_t n);
/* Free the page-locked host memory a context allocated (its teardown). */
FC_HIDDEN void fc_host_ctx_teardown(fc_ctx *c);

/* ---- fc_state.c: stream callbacks --------------------------------------- */

/*
 * Run a stream callback with status; while it runs, every entry point that
 * goes through fc_enter on this thread returns CUDA_ERROR_NOT_PERMITTED, as
 * documented ("Callbacks must not make any CUDA API calls").  Lock held.
 */
FC_HIDDEN void fc_run_callback(const fc_op *op, CUresult status);

#endif /* GG_TESTS_FAKECUDA_FC_INTERNAL_H */
