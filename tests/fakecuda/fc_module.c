/*
 * Modules (per context) and libraries (context-independent, CUDA 12).
 *
 * A module image is parsed for its kernel entry names only (fc_image.c); a
 * CUfunction carries the host implementation chosen by that name
 * (fc_launch.c).  A library keeps its image and one CUkernel per entry; the
 * first cuLibraryGetModule / cuKernelGetFunction in a context makes that
 * context's module of the library, which the application may not unload.
 * Every handle is registered, so an unknown or unloaded one is reported,
 * never dereferenced.
 *
 * Loading mode (CUDA_MODULE_LOADING, read at cuInit; cuModuleGetLoadingMode).
 * Eager, the fake's default: an image without code for the device is
 * CUDA_ERROR_NO_BINARY_FOR_GPU from whatever loads it.  Lazy: cuda.h has a
 * library "only be loaded when a function is needed for that context, such
 * as a kernel launch", so cuLibraryLoadData/FromFile take such an image and
 * cuLibraryGetKernel finds its kernels, and what needs its code in a context
 * fails instead: cuLibraryGetModule, cuKernelGetFunction and a launch of one
 * of its CUkernels.  A module is loaded into the current context by the
 * cuModuleLoad* call itself in both modes (lazy loading defers only the
 * loading of its kernels, to cuModuleGetFunction, per the Programming
 * Guide's "Lazy Loading"), so those refuse the image at once either way.
 */
#include "fc_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Images from files and JIT options                                         */
/* ------------------------------------------------------------------------ */

/* Read a whole file, NUL-terminated (a PTX file is text). */
static CUresult read_file(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_FILE_NOT_FOUND;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap + 1);
    CUresult rc = buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    while (rc == CUDA_SUCCESS) {
        if (n == cap) {
            unsigned char *grown = realloc(buf, 2 * cap + 1);
            if (!grown) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = CUDA_ERROR_FILE_NOT_FOUND; /* e.g. a directory */
            break;
        }
    }
    fclose(f);
    if (rc != CUDA_SUCCESS) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return CUDA_SUCCESS;
}

/* A file image: parsed with its size known (deferred: as
 * fc_image_parse_deferred), then the buffer is dropped. */
static CUresult parse_file(const char *path, fc_image *img, bool deferred)
{
    unsigned char *data;
    size_t size;
    CUresult rc = read_file(path, &data, &size);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* An empty file would read as "size unknown": hand the parser the NUL. */
    rc = (deferred ? fc_image_parse_deferred : fc_image_parse)(data, size ? size : 1, img);
    free(data);
    return rc;
}

/*
 * The JIT options that are outputs: the logs come back empty (nothing to
 * say), their filled sizes 0, the wall time 0.  Values travel in the
 * pointer-sized option slots, as the driver API defines.
 */
static void jit_outputs(unsigned int n, const CUjit_option *opts, void **vals)
{
    size_t info_size = 0, error_size = 0;
    for (unsigned int i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            info_size = (size_t)(uintptr_t)vals[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            error_size = (size_t)(uintptr_t)vals[i];
    }
    for (unsigned int i = 0; i < n; i++) {
        switch (opts[i]) {
        case CU_JIT_INFO_LOG_BUFFER:
            if (info_size && vals[i])
                *(char *)vals[i] = '\0';
            break;
        case CU_JIT_ERROR_LOG_BUFFER:
            if (error_size && vals[i])
                *(char *)vals[i] = '\0';
            break;
        case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
            vals[i] = NULL;
            break;
        case CU_JIT_WALL_TIME: {
            float zero = 0.0f;
            memcpy(&vals[i], &zero, sizeof zero);
            break;
        }
        default:
            break;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Module objects                                                            */
/* ------------------------------------------------------------------------ */

/* FAKECUDA_REUSE_HANDLES: the functions of the last module unloaded, kept
 * for the next module with as many (their handles handed out again), and the
 * module itself for the next module (a real driver's allocator does as much). */
static struct {
    fc_function *funcs;
    size_t n;
} spare_funcs;
static fc_module *spare_module;

static fc_function *funcs_new(size_t n)
{
    fc_function *funcs = spare_funcs.funcs;

    if (fc_st.reuse_handles && funcs && spare_funcs.n == n) {
        spare_funcs.funcs = NULL;
        memset(funcs, 0, n * sizeof *funcs);
        return funcs;
    }
    return calloc(n, sizeof *funcs);
}

static void funcs_free(fc_function *funcs, size_t n)
{
    if (!fc_st.reuse_handles || !n) {
        free(funcs);
        return;
    }
    free(spare_funcs.funcs);
    spare_funcs.funcs = funcs;
    spare_funcs.n = n;
}

/* Functions for every entry of the image (borrowing its names). */
static CUresult module_new(fc_ctx *c, fc_library *lib, fc_image *img, fc_module **out)
{
    fc_module *m = spare_module ? spare_module : calloc(1, sizeof *m);

    if (spare_module) {
        spare_module = NULL;
        memset(m, 0, sizeof *m);
    }
    fc_function *funcs = funcs_new(img->count ? img->count : 1);
    if (!m || !funcs) {
        free(m);
        funcs_free(funcs, img->count ? img->count : 1);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = c;
    m->lib = lib;
    m->img = *img;
    m->funcs = funcs;
    m->nfuncs = img->count;
    for (size_t i = 0; i < m->nfuncs; i++) {
        funcs[i].mod = m;
        funcs[i].name = m->img.names[i];
        funcs[i].impl = fc_kimpl_find(funcs[i].name, &m->img.params[i]);
        funcs[i].params = fc_kimpl_params(funcs[i].impl, &m->img.params[i]);
        fc_handle_add(&funcs[i].h, FC_K_FUNCTION);
    }
    fc_handle_add(&m->h, FC_K_MODULE);
    LIST_INSERT_HEAD(&c->modules, m, ctx_link);
    if (lib)
        LIST_INSERT_HEAD(&lib->modules, m, lib_link);
    *out = m;
    return CUDA_SUCCESS;
}

static void module_free(fc_module *m)
{
    for (size_t i = 0; i < m->nfuncs; i++)
        fc_handle_del(&m->funcs[i].h);
    funcs_free(m->funcs, m->nfuncs ? m->nfuncs : 1);
    fc_handle_del(&m->h);
    LIST_REMOVE(m, ctx_link);
    if (m->lib)
        LIST_REMOVE(m, lib_link);
    else
        fc_image_free(&m->img);
    if (fc_st.reuse_handles) {
        free(spare_module);
        spare_module = m;
        return;
    }
    free(m);
}

void fc_module_ctx_teardown(fc_ctx *c)
{
    while (!LIST_EMPTY(&c->modules))
        module_free(LIST_FIRST(&c->modules));
}

/* Load a parsed image as a module of the current context (takes img). */
static CUresult module_load(CUmodule *module, fc_image *img)
{
    fc_ctx *c;
    CUresult rc = fc_ctx_current(&c);
    fc_module *m = NULL;
    if (rc == CUDA_SUCCESS)
        rc = module_new(c, NULL, img, &m);
    if (rc != CUDA_SUCCESS) {
        fc_image_free(img);
        return rc;
    }
    *module = (CUmodule)m;
    return CUDA_SUCCESS;
}

/* Shared by the module loaders: image in memory (size unknown). */
static CUresult load_data(CUmodule *module, const void *image)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!module || !image))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_image img = { 0 };
    if (rc == CUDA_SUCCESS)
        rc = fc_image_parse(image, 0, &img);
    if (rc == CUDA_SUCCESS)
        rc = module_load(module, &img);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuModuleLoad, (CUmodule * module, const char *fname), (module, fname))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!module || !fname))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_image img = { 0 };
    if (rc == CUDA_SUCCESS)
        rc = parse_file(fname, &img, false);
    if (rc == CUDA_SUCCESS)
        rc = module_load(module, &img);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuModuleLoadData, (CUmodule * module, const void *image), (module, image))
{
    return load_data(module, image);
}

FC_EXPORT(cuModuleLoadDataEx,
          (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,
           void **optionValues),
          (module, image, numOptions, options, optionValues))
{
    if (numOptions && (!options || !optionValues))
        return atomic_load(&fc_st.initialized) ? CUDA_ERROR_INVALID_VALUE
                                               : CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = load_data(module, image);
    if (rc == CUDA_SUCCESS)
        jit_outputs(numOptions, options, optionValues);
    return rc;
}

FC_EXPORT(cuModuleLoadFatBinary, (CUmodule * module, const void *fatCubin), (module, fatCubin))
{
    return load_data(module, fatCubin);
}

/* An unknown or already unloaded handle: CUDA_ERROR_INVALID_HANDLE. */
FC_EXPORT(cuModuleUnload, (CUmodule hmod), (hmod))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_module *m = fc_handle_get(hmod, FC_K_MODULE);
    if (!m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (m->lib)
        rc = CUDA_ERROR_NOT_PERMITTED; /* documented for library modules */
    else if (m->ctx->sticky != CUDA_SUCCESS)
        rc = m->ctx->sticky;
    else
        module_free(m);
    fc_unlock();
    return rc;
}

/* "Module loading mode is controlled by CUDA_MODULE_LOADING env variable". */
FC_EXPORT(cuModuleGetLoadingMode, (CUmoduleLoadingMode * mode), (mode))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!mode)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *mode = fc_st.lazy_loading ? CU_MODULE_LAZY_LOADING : CU_MODULE_EAGER_LOADING;
    fc_unlock();
    return rc;
}

static fc_function *module_function(fc_module *m, const char *name)
{
    for (size_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].name, name) == 0)
            return &m->funcs[i];
    return NULL;
}

FC_EXPORT(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name),
          (hfunc, hmod, name))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_module *m = fc_handle_get(hmod, FC_K_MODULE);
    fc_function *f = NULL;
    if (!hfunc || !name)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!(f = module_function(m, name)))
        rc = CUDA_ERROR_NOT_FOUND;
    else
        *hfunc = (CUfunction)f;
    fc_unlock();
    return rc;
}

/* The 32-bit legacy form cannot describe this device's addresses. */
FC_EXPORT(cuModuleGetGlobal,
          (CUdeviceptr_v1 * dptr, unsigned int *bytes, CUmodule hmod, const char *name),
          (dptr, bytes, hmod, name))
{
    (void)dptr;
    (void)bytes;
    (void)hmod;
    (void)name;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * The fake reads only kernel entries from an image, never variables: every
 * name is CUDA_ERROR_NOT_FOUND ("If no variable of that name exists").
 */
FC_EXPORT(cuModuleGetGlobal_v2,
          (CUdeviceptr * dptr, size_t *bytes, CUmodule hmod, const char *name),
          (dptr, bytes, hmod, name))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    fc_module *m = fc_handle_get(hmod, FC_K_MODULE);
    if (rc == CUDA_SUCCESS && ((!dptr && !bytes) || !name))
        rc = CUDA_ERROR_INVALID_VALUE; /* "One of ... dptr or bytes (not both) can be NULL" */
    else if (rc == CUDA_SUCCESS && !m)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_NOT_FOUND;
    fc_unlock();
    return rc;
}

/*
 * Attributes of a loaded function on the compute capability 9.0 device:
 * registers as ptxas reports them for the kernel, no static shared, constant
 * or local memory, the PTX ISA of its module, code for sm_90, and the
 * documented defaults of everything a program may set.
 */
static CUresult function_attribute(const fc_kimpl *k, unsigned int ptx_version,
                                   CUfunction_attribute a, int *out)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *out = fc_kimpl_max_threads(k);
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *out = (int)k->nregs;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        *out = (int)ptx_version;
        break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *out = FC_SM_VERSION;
        break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *out = fc_kimpl_max_dynamic_smem(k);
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *out = -1;
        break; /* no preference set */
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *out = 0;
        break; /* none compiled in */
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *out = 0;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *out = CU_CLUSTER_SCHEDULING_POLICY_DEFAULT;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

FC_EXPORT(cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc),
          (pi, attrib, hfunc))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    fc_function *f = fc_handle_get(hfunc, FC_K_FUNCTION);
    if (rc == CUDA_SUCCESS && !pi)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (rc == CUDA_SUCCESS && !f)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (rc == CUDA_SUCCESS)
        rc = function_attribute(f->impl, f->mod->img.ptx_version, attrib, pi);
    fc_unlock();
    return rc;
}

/*
 * "This is only a preference": the fake has no L1 to split, so a valid
 * request changes nothing.  Its documented results have
 * CUDA_ERROR_INVALID_VALUE for a bad argument, and no _INVALID_HANDLE.
 */
FC_EXPORT(cuFuncSetCacheConfig, (CUfunction hfunc, CUfunc_cache config), (hfunc, config))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS &&
        (!fc_handle_get(hfunc, FC_K_FUNCTION) ||
         (config != CU_FUNC_CACHE_PREFER_NONE && config != CU_FUNC_CACHE_PREFER_SHARED &&
          config != CU_FUNC_CACHE_PREFER_L1 && config != CU_FUNC_CACHE_PREFER_EQUAL)))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    return rc;
}

/*
 * cuFuncGetName / cuKernelGetName: the entry's name as the image has it
 * (mangled unless declared extern "C"), valid while the handle is.  The
 * documented results have CUDA_ERROR_INVALID_VALUE for a NULL argument and
 * no _INVALID_HANDLE, so an unknown or unloaded handle is an invalid value
 * too.  No current context is needed: the handle names its own.
 */
static CUresult get_name(const char **name, const void *handle, int kind)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    const void *obj = fc_handle_get(handle, kind);
    if (!name || !obj)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *name = kind == FC_K_FUNCTION ? ((const fc_function *)obj)->name
                                      : ((const fc_kernel *)obj)->name;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuFuncGetName, (const char **name, CUfunction hfunc), (name, hfunc))
{
    return get_name(name, hfunc, FC_K_FUNCTION);
}

FC_EXPORT(cuKernelGetName, (const char **name, CUkernel hfunc), (name, hfunc))
{
    return get_name(name, hfunc, FC_K_KERNEL);
}

/*
 * cuFuncGetParamInfo / cuKernelGetParamInfo: where parameter `index` lies in
 * the parameter buffer (fc_image.c; what a launch's `extra` buffer must
 * hold).  "paramIndex must be less than the number of parameters", and only
 * paramSize may be NULL: CUDA_ERROR_INVALID_VALUE otherwise, as for an
 * unknown or unloaded handle (the documented results have no
 * _INVALID_HANDLE).
 */
static CUresult get_param_info(const void *handle, int kind, size_t index, size_t *offset,
                               size_t *size)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    const void *obj = fc_handle_get(handle, kind);
    const fc_kparams *p = !obj                    ? NULL
                          : kind == FC_K_FUNCTION ? ((const fc_function *)obj)->params
                                                  : ((const fc_kernel *)obj)->params;
    if (!p || !offset || index >= p->count) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        *offset = p->v[index].offset;
        if (size)
            *size = p->v[index].size;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuFuncGetParamInfo,
          (CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize),
          (func, paramIndex, paramOffset, paramSize))
{
    return get_param_info(func, FC_K_FUNCTION, paramIndex, paramOffset, paramSize);
}

FC_EXPORT(cuKernelGetParamInfo,
          (CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize),
          (kernel, paramIndex, paramOffset, paramSize))
{
    return get_param_info(kernel, FC_K_KERNEL, paramIndex, paramOffset, paramSize);
}

CUresult fc_function_resolve(CUfunction f, fc_ctx *c, const fc_kimpl **out,
                             const fc_kparams **params)
{
    const fc_kparams *lay;
    fc_function *fn = fc_handle_get(f, FC_K_FUNCTION);
    fc_kernel *k = fn ? NULL : fc_handle_get(f, FC_K_KERNEL);
    if (fn) {
        if (fn->mod->ctx != c)
            return CUDA_ERROR_INVALID_HANDLE; /* a function of another context */
        *out = fn->impl;
        lay = fn->params;
    } else if (k) {
        /* "the API can also be used to launch context-less kernel CUkernel":
         * one of a lazily loaded library without code for the device is
         * refused as cuKernelGetFunction refuses it. */
        if (k->lib->img.no_binary)
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        *out = k->impl;
        lay = k->params;
    } else {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (params)
        *params = lay;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Libraries                                                                 */
/* ------------------------------------------------------------------------ */

static CUresult library_new(fc_image *img, CUlibrary *out)
{
    fc_library *lib = calloc(1, sizeof *lib);
    fc_kernel *ks = calloc(img->count ? img->count : 1, sizeof *ks);
    if (!lib || !ks) {
        free(lib);
        free(ks);
        fc_image_free(img);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    lib->img = *img;
    lib->kernels = ks;
    lib->nkernels = img->count;
    LIST_INIT(&lib->modules);
    for (size_t i = 0; i < lib->nkernels; i++) {
        ks[i].lib = lib;
        ks[i].name = lib->img.names[i];
        ks[i].impl = fc_kimpl_find(ks[i].name, &lib->img.params[i]);
        ks[i].params = fc_kimpl_params(ks[i].impl, &lib->img.params[i]);
        fc_handle_add(&ks[i].h, FC_K_KERNEL);
    }
    fc_handle_add(&lib->h, FC_K_LIBRARY);
    LIST_INSERT_HEAD(&fc_st.libraries, lib, link);
    *out = (CUlibrary)lib;
    return CUDA_SUCCESS;
}

static CUresult library_args(CUlibrary *library, const void *src, unsigned int numJit,
                             const CUjit_option *jit, void **jitValues, unsigned int numLib,
                             const CUlibraryOption *libOpts)
{
    if (!library || !src || (numJit && (!jit || !jitValues)) || (numLib && !libOpts))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

FC_EXPORT(cuLibraryLoadData,
          (CUlibrary * library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
           unsigned int numLibraryOptions),
          (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
           libraryOptionValues, numLibraryOptions))
{
    (void)libraryOptionValues;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = library_args(library, code, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
                      libraryOptions);
    fc_image img = { 0 };
    if (rc == CUDA_SUCCESS)
        rc = (fc_st.lazy_loading ? fc_image_parse_deferred : fc_image_parse)(code, 0, &img);
    if (rc == CUDA_SUCCESS)
        rc = library_new(&img, library);
    if (rc == CUDA_SUCCESS)
        jit_outputs(numJitOptions, jitOptions, jitOptionsValues);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLibraryLoadFromFile,
          (CUlibrary * library, const char *fileName, CUjit_option *jitOptions,
           void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
           void **libraryOptionValues, unsigned int numLibraryOptions),
          (library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
           libraryOptionValues, numLibraryOptions))
{
    (void)libraryOptionValues;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = library_args(library, fileName, numJitOptions, jitOptions, jitOptionsValues,
                      numLibraryOptions, libraryOptions);
    fc_image img = { 0 };
    if (rc == CUDA_SUCCESS)
        rc = parse_file(fileName, &img, fc_st.lazy_loading);
    if (rc == CUDA_SUCCESS)
        rc = library_new(&img, library);
    if (rc == CUDA_SUCCESS)
        jit_outputs(numJitOptions, jitOptions, jitOptionsValues);
    fc_unlock();
    return rc;
}

/* An unknown or already unloaded handle: CUDA_ERROR_INVALID_HANDLE. */
FC_EXPORT(cuLibraryUnload, (CUlibrary library), (library))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_library *lib = fc_handle_get(library, FC_K_LIBRARY);
    if (!lib) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else {
        while (!LIST_EMPTY(&lib->modules))
            module_free(LIST_FIRST(&lib->modules));
        for (size_t i = 0; i < lib->nkernels; i++)
            fc_handle_del(&lib->kernels[i].h);
        free(lib->kernels);
        fc_image_free(&lib->img);
        fc_handle_del(&lib->h);
        LIST_REMOVE(lib, link);
        free(lib);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLibraryGetKernel, (CUkernel * pKernel, CUlibrary library, const char *name),
          (pKernel, library, name))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_library *lib = fc_handle_get(library, FC_K_LIBRARY);
    if (!pKernel || !name) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!lib) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else {
        rc = CUDA_ERROR_NOT_FOUND;
        for (size_t i = 0; i < lib->nkernels; i++) {
            if (strcmp(lib->kernels[i].name, name) == 0) {
                *pKernel = (CUkernel)&lib->kernels[i];
                rc = CUDA_SUCCESS;
                break;
            }
        }
    }
    fc_unlock();
    return rc;
}

/*
 * A library's kernels without their names (cuda.h, CUDA 12.4/12.5): the
 * count, the handles (at most numKernels, in the image's order), and a
 * kernel's library. A NULL output is CUDA_ERROR_INVALID_VALUE, an unknown or
 * unloaded handle CUDA_ERROR_INVALID_HANDLE.
 */
FC_EXPORT(cuLibraryGetKernelCount, (unsigned int *count, CUlibrary lib), (count, lib))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_library *l = fc_handle_get(lib, FC_K_LIBRARY);
    if (!count)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!l)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        *count = (unsigned int)l->nkernels;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLibraryEnumerateKernels, (CUkernel * kernels, unsigned int numKernels, CUlibrary lib),
          (kernels, numKernels, lib))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_library *l = fc_handle_get(lib, FC_K_LIBRARY);
    if (!kernels)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!l)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        for (size_t i = 0; i < l->nkernels && i < numKernels; i++)
            kernels[i] = (CUkernel)&l->kernels[i];
    fc_unlock();
    return rc;
}

FC_EXPORT(cuKernelGetLibrary, (CUlibrary * pLib, CUkernel kernel), (pLib, kernel))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_kernel *k = fc_handle_get(kernel, FC_K_KERNEL);
    if (!pLib)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!k)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        *pLib = (CUlibrary)k->lib;
    fc_unlock();
    return rc;
}

/*
 * The library's module in context c, made on first use: where a lazily
 * loaded library has no code for the device, CUDA_ERROR_NO_BINARY_FOR_GPU
 * (what cuLibraryLoadData would have answered when loading eagerly).
 */
static CUresult library_module(fc_library *lib, fc_ctx *c, fc_module **out)
{
    fc_module *m;
    if (lib->img.no_binary)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    LIST_FOREACH(m, &lib->modules, lib_link) {
        if (m->ctx == c) {
            *out = m;
            return CUDA_SUCCESS;
        }
    }
    return module_new(c, lib, &lib->img, out);
}

FC_EXPORT(cuLibraryGetModule, (CUmodule * pMod, CUlibrary library), (pMod, library))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_library *lib = fc_handle_get(library, FC_K_LIBRARY);
    fc_ctx *c = NULL;
    fc_module *m = NULL;
    if (!pMod)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!lib)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = library_module(lib, c, &m);
    if (rc == CUDA_SUCCESS)
        *pMod = (CUmodule)m;
    fc_unlock();
    return rc;
}

/* The fake reads no variables from an image (as cuModuleGetGlobal_v2). */
FC_EXPORT(cuLibraryGetGlobal,
          (CUdeviceptr * dptr, size_t *bytes, CUlibrary library, const char *name),
          (dptr, bytes, library, name))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && ((!dptr && !bytes) || !name))
        rc =
            CUDA_ERROR_INVALID_VALUE; /* "One of the parameters dptr or bytes (not both) can be NULL" */
    else if (rc == CUDA_SUCCESS && !fc_handle_get(library, FC_K_LIBRARY))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_NOT_FOUND;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuKernelGetFunction, (CUfunction * pFunc, CUkernel kernel), (pFunc, kernel))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_kernel *k = fc_handle_get(kernel, FC_K_KERNEL);
    fc_ctx *c = NULL;
    fc_module *m = NULL;
    if (!pFunc)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!k)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = library_module(k->lib, c, &m);
    if (rc == CUDA_SUCCESS) {
        fc_function *f = module_function(m, k->name);
        if (f)
            *pFunc = (CUfunction)f;
        else
            rc = CUDA_ERROR_NOT_FOUND;
    }
    fc_unlock();
    return rc;
}

/*
 * A CUkernel's attributes are those of its function (function_attribute),
 * except where cuKernelSetAttribute set one for that device: "
 * cuKernelGetAttribute() will always return the attribute value set by this
 * API".  These are the attributes its documentation lists as settable.
 */
static const CUfunction_attribute kernel_settable[FC_KATTR_COUNT] = {
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
    CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
    CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
};

static int kernel_settable_slot(CUfunction_attribute a)
{
    for (int i = 0; i < FC_KATTR_COUNT; i++)
        if (kernel_settable[i] == a)
            return i;
    return -1;
}

/*
 * Whether the device takes `val` for settable attribute `a`: dynamic shared
 * memory up to MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ("The sum of this value and
 * ... SHARED_SIZE_BYTES cannot exceed", and no kernel of the fake has static
 * shared memory); a carveout in percent, or CU_SHAREDMEM_CARVEOUT_DEFAULT
 * (-1); cluster dimensions that are "checked at launch time", so any count;
 * a 0/1 flag; a CUclusterSchedulingPolicy.
 */
static bool kernel_value_ok(CUfunction_attribute a, int val)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        return val >= 0 && val <= FC_SMEM_OPTIN;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        return val >= CU_SHAREDMEM_CARVEOUT_DEFAULT && val <= CU_SHAREDMEM_CARVEOUT_MAX_SHARED;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        return val >= 0;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        return val == 0 || val == 1;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return val == CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
               val == CU_CLUSTER_SCHEDULING_POLICY_SPREAD ||
               val == CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
    default:
        return false;
    }
}

/* A library's kernel needs no context: only the kernel and the device are checked. */
FC_EXPORT(cuKernelGetAttribute,
          (int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev),
          (pi, attrib, kernel, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_kernel *k = fc_handle_get(kernel, FC_K_KERNEL);
    int v = 0;
    if (!pi)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!k)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        rc = function_attribute(k->impl, k->lib->img.ptx_version, attrib, &v);
    if (rc == CUDA_SUCCESS) {
        int slot = kernel_settable_slot(attrib);
        if (slot >= 0 && (k->attr_set[dev] & (1u << slot)))
            v = k->attr[dev][slot];
        *pi = v;
    }
    fc_unlock();
    return rc;
}

/* "Attempting to set a value on a read-only attribute will result in an
 * error (CUDA_ERROR_INVALID_VALUE)"; so does a value the device cannot take. */
FC_EXPORT(cuKernelSetAttribute,
          (CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev),
          (attrib, val, kernel, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_kernel *k = fc_handle_get(kernel, FC_K_KERNEL);
    int slot = kernel_settable_slot(attrib);
    if (!k)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (slot < 0 || !kernel_value_ok(attrib, val))
        rc = CUDA_ERROR_INVALID_VALUE;
    else {
        k->attr[dev][slot] = val;
        k->attr_set[dev] |= (unsigned char)(1u << slot);
    }
    fc_unlock();
    return rc;
}

/* "This is only a preference": the fake has no L1 to split, so a valid
 * request changes nothing. */
FC_EXPORT(cuKernelSetCacheConfig, (CUkernel kernel, CUfunc_cache config, CUdevice dev),
          (kernel, config, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fc_handle_get(kernel, FC_K_KERNEL))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (config != CU_FUNC_CACHE_PREFER_NONE && config != CU_FUNC_CACHE_PREFER_SHARED &&
             config != CU_FUNC_CACHE_PREFER_L1 && config != CU_FUNC_CACHE_PREFER_EQUAL)
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The JIT linker                                                            */
/* ------------------------------------------------------------------------ */

/*
 * A pending link: the entries of every input so far.  cuLinkComplete writes
 * them as an sm_90 cubin that cuModuleLoadData reads back (fc_image.c).  The
 * fake links kernels by name only, so it reads PTX, cubins and fatbins, and
 * not host objects, archives or LTO-IR (CUDA_ERROR_NOT_SUPPORTED: a limit of
 * the fake, which tells so on stderr).
 */
typedef struct fc_link {
    fc_handle h;
    fc_image img;
    unsigned char *cubin;
    size_t cubin_size;
} fc_link;

static CUresult link_create(unsigned int numOptions, CUjit_option *options, void **optionValues,
                            CUlinkState *stateOut)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!stateOut || (numOptions && (!options || !optionValues))))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_link *l = NULL;
    if (rc == CUDA_SUCCESS && !(l = calloc(1, sizeof *l)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        fc_handle_add(&l->h, FC_K_LINK);
        *stateOut = (CUlinkState)l;
        /* The logs stay empty and the wall time 0 for the state's life. */
        jit_outputs(numOptions, options, optionValues);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLinkCreate,
          (unsigned int numOptions, CUjit_option *options, void **optionValues,
           CUlinkState *stateOut),
          (numOptions, options, optionValues, stateOut))
{
    return link_create(numOptions, options, optionValues, stateOut);
}

FC_EXPORT(cuLinkCreate_v2,
          (unsigned int numOptions, CUjit_option *options, void **optionValues,
           CUlinkState *stateOut),
          (numOptions, options, optionValues, stateOut))
{
    return link_create(numOptions, options, optionValues, stateOut);
}

/* "does not accept any of" these output or target options. */
static bool input_options_valid(unsigned int n, const CUjit_option *opts, void **vals)
{
    if (n && (!opts || !vals))
        return false;
    for (unsigned int i = 0; i < n; i++) {
        switch (opts[i]) {
        case CU_JIT_WALL_TIME:
        case CU_JIT_INFO_LOG_BUFFER:
        case CU_JIT_ERROR_LOG_BUFFER:
        case CU_JIT_TARGET_FROM_CUCONTEXT:
        case CU_JIT_TARGET:
            return false;
        default:
            break;
        }
    }
    return true;
}

/* Add one input (size: its bytes, known).  Lock held. */
static CUresult link_add(fc_link *l, CUjitInputType type, const void *data, size_t size)
{
    static atomic_bool warned;
    switch (type) {
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_PTX:
    case CU_JIT_INPUT_FATBINARY:
        break;
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY:
    case CU_JIT_INPUT_NVVM:
        if (!atomic_exchange(&warned, true))
            fprintf(stderr, "fakecuda: the linker reads only PTX, cubins and fatbins\n");
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    fc_image img = { 0 };
    CUresult rc = fc_image_parse(data, size, &img);
    if (rc == CUDA_SUCCESS)
        rc = fc_image_merge(&l->img, &img);
    fc_image_free(&img);
    return rc;
}

static CUresult link_add_data(CUlinkState state, CUjitInputType type, void *data, size_t size,
                              unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_link *l = fc_handle_get(state, FC_K_LINK);
    if (!l)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!data || size == 0 || !input_options_valid(numOptions, options, optionValues))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = link_add(l, type, data, size);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLinkAddData,
          (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
           unsigned int numOptions, CUjit_option *options, void **optionValues),
          (state, type, data, size, name, numOptions, options, optionValues))
{
    (void)name;
    return link_add_data(state, type, data, size, numOptions, options, optionValues);
}

FC_EXPORT(cuLinkAddData_v2,
          (CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
           unsigned int numOptions, CUjit_option *options, void **optionValues),
          (state, type, data, size, name, numOptions, options, optionValues))
{
    (void)name; /* only for log messages, and the logs stay empty */
    return link_add_data(state, type, data, size, numOptions, options, optionValues);
}

/* "equivalent to invoking cuLinkAddData on the contents of the file" */
static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path,
                              unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_link *l = fc_handle_get(state, FC_K_LINK);
    unsigned char *data = NULL;
    size_t size = 0;
    if (!l)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!path || !input_options_valid(numOptions, options, optionValues))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = read_file(path, &data, &size);
    if (rc == CUDA_SUCCESS)
        rc = size ? link_add(l, type, data, size) : CUDA_ERROR_INVALID_IMAGE;
    free(data);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLinkAddFile,
          (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
           CUjit_option *options, void **optionValues),
          (state, type, path, numOptions, options, optionValues))
{
    return link_add_file(state, type, path, numOptions, options, optionValues);
}

FC_EXPORT(cuLinkAddFile_v2,
          (CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
           CUjit_option *options, void **optionValues),
          (state, type, path, numOptions, options, optionValues))
{
    return link_add_file(state, type, path, numOptions, options, optionValues);
}

/* "The cubin is owned by state": valid until cuLinkDestroy or the next call. */
FC_EXPORT(cuLinkComplete, (CUlinkState state, void **cubinOut, size_t *sizeOut),
          (state, cubinOut, sizeOut))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_link *l = fc_handle_get(state, FC_K_LINK);
    unsigned char *cubin = NULL;
    size_t size = 0;
    if (!l)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!cubinOut)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = fc_image_write_cubin(&l->img, &cubin, &size);
    if (rc == CUDA_SUCCESS) {
        free(l->cubin);
        l->cubin = cubin;
        l->cubin_size = size;
        *cubinOut = cubin;
        if (sizeOut)
            *sizeOut = size;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuLinkDestroy, (CUlinkState state), (state))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_link *l = fc_handle_get(state, FC_K_LINK);
    if (!l) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else {
        fc_handle_del(&l->h);
        fc_image_free(&l->img);
        free(l->cubin);
        free(l);
    }
    fc_unlock();
    return rc;
}
