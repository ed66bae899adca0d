/*
 * Every cu* entry point the fake driver exports, in one X-macro list.
 *
 * X(symbol, base, version, per_thread)
 *   symbol      the exported (versioned) name, e.g. cuMemAlloc_v2
 *   base        the name cuGetProcAddress is asked for, e.g. cuMemAlloc
 *   version     the CUDA version that introduced this variant, taken from the
 *               PFN_<base>_v<version>[_ptsz|_ptds] typedefs of cudaTypedefs.h
 *               (cudaProfilerTypedefs.h for cuProfilerStart/Stop)
 *   per_thread  1 for the _ptsz/_ptds (per-thread default stream) variants
 *
 * The call counters (fakecuda_calls) and the cuGetProcAddress table are both
 * generated from this list, so they cannot drift apart.  When a base name is
 * listed, every variant of it that cudaTypedefs.h knows is listed too:
 * otherwise cuGetProcAddress would hand out an older variant whose prototype
 * differs from what the caller asked for.  check_entrypoints.py verifies the
 * list against those headers, the toolkit's stub libcuda.so and the symbols
 * the built library exports.
 */
#ifndef GG_TESTS_FAKECUDA_ENTRYPOINTS_H
#define GG_TESTS_FAKECUDA_ENTRYPOINTS_H

#define FAKECUDA_ENTRY_POINTS(X)                                                                \
    /* initialisation, version, errors, entry points */                                         \
    X(cuInit, cuInit, 2000, 0)                                                                  \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, 0)                                          \
    X(cuGetErrorName, cuGetErrorName, 6000, 0)                                                  \
    X(cuGetErrorString, cuGetErrorString, 6000, 0)                                              \
    X(cuGetProcAddress, cuGetProcAddress, 11030, 0)                                             \
    X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)                                          \
    X(cuGetExportTable, cuGetExportTable, 3000, 0)                                              \
    /* devices */                                                                               \
    X(cuDeviceGet, cuDeviceGet, 2000, 0)                                                        \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, 0)                                              \
    X(cuDeviceGetName, cuDeviceGetName, 2000, 0)                                                \
    X(cuDeviceTotalMem, cuDeviceTotalMem, 2000, 0)                                              \
    X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020, 0)                                           \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, 0)                                      \
    X(cuDeviceComputeCapability, cuDeviceComputeCapability, 2000, 0)                            \
    X(cuDeviceGetUuid, cuDeviceGetUuid, 9020, 0)                                                \
    X(cuDeviceGetUuid_v2, cuDeviceGetUuid, 11040, 0)                                            \
    X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000, 0)                                    \
    /* primary contexts */                                                                      \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)                              \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0)                            \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0)                        \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0)                                \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)                            \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, 0)                          \
    X(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags, 7000, 0)                          \
    X(cuDevicePrimaryCtxSetFlags_v2, cuDevicePrimaryCtxSetFlags, 11000, 0)                      \
    /* contexts */                                                                              \
    X(cuCtxCreate, cuCtxCreate, 2000, 0)                                                        \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, 0)                                                     \
    X(cuCtxCreate_v3, cuCtxCreate, 11040, 0)                                                    \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, 0)                                                    \
    X(cuCtxDestroy, cuCtxDestroy, 2000, 0)                                                      \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                                                   \
    X(cuCtxAttach, cuCtxAttach, 2000, 0)                                                        \
    X(cuCtxDetach, cuCtxDetach, 2000, 0)                                                        \
    X(cuCtxGetApiVersion, cuCtxGetApiVersion, 3020, 0)                                          \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 2000, 0)                                              \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, 0)                                           \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 2000, 0)                                                \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, 0)                                             \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, 0)                                                \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, 0)                                                \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, 0)                                                  \
    X(cuCtxGetDevice_v2, cuCtxGetDevice, 13000, 0)                                              \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)                                              \
    X(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, 0)                                          \
    X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 5050, 0)                        \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, 0)                                    \
    X(cuProfilerStart, cuProfilerStart, 4000, 0)                                                \
    X(cuProfilerStop, cuProfilerStop, 4000, 0)                                                  \
    /* memory */                                                                                \
    X(cuMemAlloc, cuMemAlloc, 2000, 0)                                                          \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                                                       \
    X(cuMemAllocPitch, cuMemAllocPitch, 2000, 0)                                                \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                                             \
    X(cuMemFree, cuMemFree, 2000, 0)                                                            \
    X(cuMemFree_v2, cuMemFree, 3020, 0)                                                         \
    X(cuMemGetInfo, cuMemGetInfo, 2000, 0)                                                      \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0)                                                   \
    X(cuMemGetAddressRange, cuMemGetAddressRange, 2000, 0)                                      \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, 0)                                   \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, 0)                                               \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 1)                                          \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, 0)                                                 \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 1)                                            \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 0)                               \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 1)                          \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, 0)                           \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool, 11020, 0)                                         \
    X(cuDeviceSetMemPool, cuDeviceSetMemPool, 11020, 0)                                         \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, 0)                                   \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020, 0)                                   \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, 0)                                               \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, 0)                                               \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, 0)                                             \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020, 0)                   \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, 0)                                       \
    X(cuMemAddressFree, cuMemAddressFree, 10020, 0)                                             \
    X(cuMemCreate, cuMemCreate, 10020, 0)                                                       \
    X(cuMemRelease, cuMemRelease, 10020, 0)                                                     \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, 11000, 0)                       \
    X(cuMemMap, cuMemMap, 10020, 0)                                                             \
    X(cuMemUnmap, cuMemUnmap, 10020, 0)                                                         \
    X(cuMemSetAccess, cuMemSetAccess, 10020, 0)                                                 \
    X(cuMemGetAccess, cuMemGetAccess, 10020, 0)                                                 \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, 0)                                    \
    X(cuPointerGetAttributes, cuPointerGetAttributes, 7000, 0)                                  \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, 0)                                            \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, 0)                                                  \
    X(cuMemFreeHost, cuMemFreeHost, 2000, 0)                                                    \
    X(cuMemHostGetFlags, cuMemHostGetFlags, 2030, 0)                                            \
    X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer, 2020, 0)                            \
    X(cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer, 3020, 0)                         \
    X(cuMemHostRegister, cuMemHostRegister, 4000, 0)                                            \
    X(cuMemHostRegister_v2, cuMemHostRegister, 6050, 0)                                         \
    X(cuMemHostUnregister, cuMemHostUnregister, 4000, 0)                                        \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, 0)                                            \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, 0)                                          \
    X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, 0)                                      \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, 0)                                        \
    /* memset */                                                                                \
    X(cuMemsetD8, cuMemsetD8, 2000, 0)                                                          \
    X(cuMemsetD8_v2, cuMemsetD8, 3020, 0)                                                       \
    X(cuMemsetD8_v2_ptds, cuMemsetD8, 7000, 1)                                                  \
    X(cuMemsetD16, cuMemsetD16, 2000, 0)                                                        \
    X(cuMemsetD16_v2, cuMemsetD16, 3020, 0)                                                     \
    X(cuMemsetD16_v2_ptds, cuMemsetD16, 7000, 1)                                                \
    X(cuMemsetD32, cuMemsetD32, 2000, 0)                                                        \
    X(cuMemsetD32_v2, cuMemsetD32, 3020, 0)                                                     \
    X(cuMemsetD32_v2_ptds, cuMemsetD32, 7000, 1)                                                \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020, 0)                                                \
    X(cuMemsetD8Async_ptsz, cuMemsetD8Async, 7000, 1)                                           \
    X(cuMemsetD16Async, cuMemsetD16Async, 3020, 0)                                              \
    X(cuMemsetD16Async_ptsz, cuMemsetD16Async, 7000, 1)                                         \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020, 0)                                              \
    X(cuMemsetD32Async_ptsz, cuMemsetD32Async, 7000, 1)                                         \
    /* memcpy */                                                                                \
    X(cuMemcpy, cuMemcpy, 4000, 0)                                                              \
    X(cuMemcpy_ptds, cuMemcpy, 7000, 1)                                                         \
    X(cuMemcpyAsync, cuMemcpyAsync, 4000, 0)                                                    \
    X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, 1)                                               \
    X(cuMemcpyHtoD, cuMemcpyHtoD, 2000, 0)                                                      \
    X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, 0)                                                   \
    X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 7000, 1)                                              \
    X(cuMemcpyDtoH, cuMemcpyDtoH, 2000, 0)                                                      \
    X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 0)                                                   \
    X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, 1)                                              \
    X(cuMemcpyDtoD, cuMemcpyDtoD, 2000, 0)                                                      \
    X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, 0)                                                   \
    X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 7000, 1)                                              \
    X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, 2000, 0)                                            \
    X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, 0)                                         \
    X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 7000, 1)                                    \
    X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, 2000, 0)                                            \
    X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, 0)                                         \
    X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, 1)                                    \
    X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, 3000, 0)                                            \
    X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, 0)                                         \
    X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 7000, 1)                                    \
    X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, 0)                                         \
    X(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync, 12080, 1)                                    \
    X(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync, 13000, 0)                                      \
    X(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync, 13000, 1)                                 \
    /* 2D sets (fc_copy3d.c) */                                                                 \
    X(cuMemsetD2D8, cuMemsetD2D8, 2000, 0)                                                      \
    X(cuMemsetD2D8_v2, cuMemsetD2D8, 3020, 0)                                                   \
    X(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 7000, 1)                                              \
    X(cuMemsetD2D16, cuMemsetD2D16, 2000, 0)                                                    \
    X(cuMemsetD2D16_v2, cuMemsetD2D16, 3020, 0)                                                 \
    X(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 7000, 1)                                            \
    X(cuMemsetD2D32, cuMemsetD2D32, 2000, 0)                                                    \
    X(cuMemsetD2D32_v2, cuMemsetD2D32, 3020, 0)                                                 \
    X(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 7000, 1)                                            \
    X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, 0)                                            \
    X(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 7000, 1)                                       \
    X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, 0)                                          \
    X(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 7000, 1)                                     \
    X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, 0)                                          \
    X(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 7000, 1)                                     \
    /* peer, array, 2D, 3D and batched 3D copies (fc_copy3d.c) */                               \
    X(cuMemcpyPeer, cuMemcpyPeer, 4000, 0)                                                      \
    X(cuMemcpyPeer_ptds, cuMemcpyPeer, 7000, 1)                                                 \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, 0)                                            \
    X(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 7000, 1)                                       \
    X(cuMemcpyDtoA, cuMemcpyDtoA, 2000, 0)                                                      \
    X(cuMemcpyDtoA_v2, cuMemcpyDtoA, 3020, 0)                                                   \
    X(cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA, 7000, 1)                                              \
    X(cuMemcpyAtoD, cuMemcpyAtoD, 2000, 0)                                                      \
    X(cuMemcpyAtoD_v2, cuMemcpyAtoD, 3020, 0)                                                   \
    X(cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD, 7000, 1)                                              \
    X(cuMemcpy2D, cuMemcpy2D, 2000, 0)                                                          \
    X(cuMemcpy2D_v2, cuMemcpy2D, 3020, 0)                                                       \
    X(cuMemcpy2D_v2_ptds, cuMemcpy2D, 7000, 1)                                                  \
    X(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned, 2000, 0)                                        \
    X(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, 0)                                     \
    X(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 7000, 1)                                \
    X(cuMemcpy3D, cuMemcpy3D, 2000, 0)                                                          \
    X(cuMemcpy3D_v2, cuMemcpy3D, 3020, 0)                                                       \
    X(cuMemcpy3D_v2_ptds, cuMemcpy3D, 7000, 1)                                                  \
    X(cuMemcpy2DAsync, cuMemcpy2DAsync, 2000, 0)                                                \
    X(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, 0)                                             \
    X(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 7000, 1)                                        \
    X(cuMemcpy3DAsync, cuMemcpy3DAsync, 2000, 0)                                                \
    X(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, 0)                                             \
    X(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 7000, 1)                                        \
    X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, 0)                                                  \
    X(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer, 7000, 1)                                             \
    X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, 0)                                        \
    X(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync, 7000, 1)                                   \
    X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, 0)                                     \
    X(cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync, 12080, 1)                                \
    X(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync, 13000, 0)                                  \
    X(cuMemcpy3DBatchAsync_v2_ptsz, cuMemcpy3DBatchAsync, 13000, 1)                             \
    /* arrays (fc_array.c) */                                                                   \
    X(cuArrayCreate, cuArrayCreate, 2000, 0)                                                    \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, 0)                                                 \
    X(cuArray3DCreate, cuArray3DCreate, 2000, 0)                                                \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, 0)                                             \
    X(cuArrayGetDescriptor, cuArrayGetDescriptor, 2000, 0)                                      \
    X(cuArrayGetDescriptor_v2, cuArrayGetDescriptor, 3020, 0)                                   \
    X(cuArray3DGetDescriptor, cuArray3DGetDescriptor, 2000, 0)                                  \
    X(cuArray3DGetDescriptor_v2, cuArray3DGetDescriptor, 3020, 0)                               \
    X(cuArrayDestroy, cuArrayDestroy, 2000, 0)                                                  \
    /* streams */                                                                               \
    X(cuStreamCreate, cuStreamCreate, 2000, 0)                                                  \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, 5050, 0)                          \
    X(cuStreamDestroy, cuStreamDestroy, 2000, 0)                                                \
    X(cuStreamDestroy_v2, cuStreamDestroy, 4000, 0)                                             \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, 0)                                        \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1)                                   \
    X(cuStreamQuery, cuStreamQuery, 2000, 0)                                                    \
    X(cuStreamQuery_ptsz, cuStreamQuery, 7000, 1)                                               \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, 0)                                            \
    X(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 7000, 1)                                       \
    X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, 0)                                       \
    X(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 10000, 1)                                  \
    X(cuStreamGetFlags, cuStreamGetFlags, 5050, 0)                                              \
    X(cuStreamGetFlags_ptsz, cuStreamGetFlags, 7000, 1)                                         \
    X(cuStreamGetPriority, cuStreamGetPriority, 5050, 0)                                        \
    X(cuStreamGetPriority_ptsz, cuStreamGetPriority, 7000, 1)                                   \
    X(cuStreamGetCtx, cuStreamGetCtx, 9020, 0)                                                  \
    X(cuStreamGetCtx_ptsz, cuStreamGetCtx, 9020, 1)                                             \
    X(cuStreamGetCtx_v2, cuStreamGetCtx, 12050, 0)                                              \
    X(cuStreamGetCtx_v2_ptsz, cuStreamGetCtx, 12050, 1)                                         \
    X(cuStreamAddCallback, cuStreamAddCallback, 5000, 0)                                        \
    X(cuStreamAddCallback_ptsz, cuStreamAddCallback, 7000, 1)                                   \
    /* stream capture */                                                                        \
    X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0)                                     \
    X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, 1)                                \
    X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0)                                  \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 1)                             \
    X(cuStreamEndCapture, cuStreamEndCapture, 10000, 0)                                         \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, 1)                                    \
    X(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo, 10010, 0)                                 \
    X(cuStreamGetCaptureInfo_ptsz, cuStreamGetCaptureInfo, 10010, 1)                            \
    X(cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo, 11030, 0)                              \
    X(cuStreamGetCaptureInfo_v2_ptsz, cuStreamGetCaptureInfo, 11030, 1)                         \
    X(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo, 12030, 0)                              \
    X(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo, 12030, 1)                         \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010, 0)           \
    /* graphs */                                                                                \
    X(cuGraphInstantiate, cuGraphInstantiate, 10000, 0)                                         \
    X(cuGraphInstantiate_v2, cuGraphInstantiate, 11000, 0)                                      \
    X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, 0)                       \
    X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000, 0)                     \
    X(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 12000, 1)                \
    X(cuGraphLaunch, cuGraphLaunch, 10000, 0)                                                   \
    X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 1)                                              \
    X(cuGraphUpload, cuGraphUpload, 11010, 0)                                                   \
    X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 11040, 0)                                 \
    X(cuGraphUpload_ptsz, cuGraphUpload, 11010, 1)                                              \
    X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, 0)                                         \
    X(cuGraphDestroy, cuGraphDestroy, 10000, 0)                                                 \
    X(cuGraphCreate, cuGraphCreate, 10000, 0)                                                   \
    X(cuGraphAddKernelNode, cuGraphAddKernelNode, 10000, 0)                                     \
    X(cuGraphAddKernelNode_v2, cuGraphAddKernelNode, 12000, 0)                                  \
    X(cuGraphKernelNodeGetParams, cuGraphKernelNodeGetParams, 10000, 0)                         \
    X(cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeGetParams, 12000, 0)                      \
    X(cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams, 10000, 0)                         \
    X(cuGraphKernelNodeSetParams_v2, cuGraphKernelNodeSetParams, 12000, 0)                      \
    X(cuGraphAddChildGraphNode, cuGraphAddChildGraphNode, 10000, 0)                             \
    X(cuGraphChildGraphNodeGetGraph, cuGraphChildGraphNodeGetGraph, 10000, 0)                   \
    X(cuGraphNodeGetType, cuGraphNodeGetType, 10000, 0)                                         \
    X(cuGraphGetNodes, cuGraphGetNodes, 10000, 0)                                               \
    X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams, 10010, 0)                 \
    X(cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams, 12000, 0)              \
    X(cuGraphExecUpdate, cuGraphExecUpdate, 10020, 0)                                           \
    X(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000, 0)                                        \
    X(cuGraphAddNode, cuGraphAddNode, 12020, 0)                                                 \
    X(cuGraphAddNode_v2, cuGraphAddNode, 12030, 0)                                              \
    X(cuGraphNodeSetParams, cuGraphNodeSetParams, 12020, 0)                                     \
    X(cuGraphExecNodeSetParams, cuGraphExecNodeSetParams, 12020, 0)                             \
    /* events */                                                                                \
    X(cuEventCreate, cuEventCreate, 2000, 0)                                                    \
    X(cuEventRecord, cuEventRecord, 2000, 0)                                                    \
    X(cuEventRecord_ptsz, cuEventRecord, 7000, 1)                                               \
    X(cuEventQuery, cuEventQuery, 2000, 0)                                                      \
    X(cuEventSynchronize, cuEventSynchronize, 2000, 0)                                          \
    X(cuEventDestroy, cuEventDestroy, 2000, 0)                                                  \
    X(cuEventDestroy_v2, cuEventDestroy, 4000, 0)                                               \
    X(cuEventElapsedTime, cuEventElapsedTime, 2000, 0)                                          \
    X(cuEventElapsedTime_v2, cuEventElapsedTime, 12080, 0)                                      \
    /* modules */                                                                               \
    X(cuModuleLoad, cuModuleLoad, 2000, 0)                                                      \
    X(cuModuleLoadData, cuModuleLoadData, 2000, 0)                                              \
    X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010, 0)                                          \
    X(cuModuleLoadFatBinary, cuModuleLoadFatBinary, 2000, 0)                                    \
    X(cuModuleUnload, cuModuleUnload, 2000, 0)                                                  \
    X(cuModuleGetLoadingMode, cuModuleGetLoadingMode, 11070, 0)                                 \
    X(cuModuleGetFunction, cuModuleGetFunction, 2000, 0)                                        \
    X(cuModuleGetGlobal, cuModuleGetGlobal, 2000, 0)                                            \
    X(cuModuleGetGlobal_v2, cuModuleGetGlobal, 3020, 0)                                         \
    X(cuFuncGetAttribute, cuFuncGetAttribute, 2020, 0)                                          \
    X(cuFuncSetCacheConfig, cuFuncSetCacheConfig, 3000, 0)                                      \
    /* names and parameter layouts of functions and library kernels */                          \
    X(cuFuncGetName, cuFuncGetName, 12030, 0)                                                   \
    X(cuKernelGetName, cuKernelGetName, 12030, 0)                                               \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, 0)                                         \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, 0)                                     \
    /* libraries */                                                                             \
    X(cuLibraryLoadData, cuLibraryLoadData, 12000, 0)                                           \
    X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000, 0)                                   \
    X(cuLibraryUnload, cuLibraryUnload, 12000, 0)                                               \
    X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, 0)                                         \
    X(cuLibraryGetKernelCount, cuLibraryGetKernelCount, 12040, 0)                               \
    X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels, 12040, 0)                           \
    X(cuKernelGetLibrary, cuKernelGetLibrary, 12050, 0)                                         \
    X(cuLibraryGetModule, cuLibraryGetModule, 12000, 0)                                         \
    X(cuLibraryGetGlobal, cuLibraryGetGlobal, 12000, 0)                                         \
    X(cuKernelGetFunction, cuKernelGetFunction, 12000, 0)                                       \
    X(cuKernelGetAttribute, cuKernelGetAttribute, 12000, 0)                                     \
    X(cuKernelSetAttribute, cuKernelSetAttribute, 12000, 0)                                     \
    X(cuKernelSetCacheConfig, cuKernelSetCacheConfig, 12000, 0)                                 \
    /* the JIT linker */                                                                        \
    X(cuLinkCreate, cuLinkCreate, 5050, 0)                                                      \
    X(cuLinkCreate_v2, cuLinkCreate, 6050, 0)                                                   \
    X(cuLinkAddData, cuLinkAddData, 5050, 0)                                                    \
    X(cuLinkAddData_v2, cuLinkAddData, 6050, 0)                                                 \
    X(cuLinkAddFile, cuLinkAddFile, 5050, 0)                                                    \
    X(cuLinkAddFile_v2, cuLinkAddFile, 6050, 0)                                                 \
    X(cuLinkComplete, cuLinkComplete, 5050, 0)                                                  \
    X(cuLinkDestroy, cuLinkDestroy, 5050, 0)                                                    \
    /* launches */                                                                              \
    X(cuLaunchKernel, cuLaunchKernel, 4000, 0)                                                  \
    X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1)                                             \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0)                                             \
    X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1)                                        \
    X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 0)                            \
    X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 1)                       \
    /* occupancy */                                                                             \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, \
      6050, 0)                                                                                  \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                                     \
      cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000, 0)                            \
    X(cuOccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize, 6050, 0)              \
    X(cuOccupancyMaxPotentialBlockSizeWithFlags, cuOccupancyMaxPotentialBlockSizeWithFlags, 7000, 0)

#endif /* GG_TESTS_FAKECUDA_ENTRYPOINTS_H */
