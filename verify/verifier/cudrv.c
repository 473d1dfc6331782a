/* cudrv.c - CUDA driver API entry points through the runtime (see cudrv.h). */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudrv.h"

static void *entry(const char *sym)
{
    void *fn = NULL;
#if CUDART_VERSION >= 12000
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    /* the ABI of CUDA 12.0: every function below has had it since 11.x */
    cudaError_t e = cudaGetDriverEntryPointByVersion(sym, &fn, 12000, cudaEnableDefault, &q);
#else
    cudaError_t e = cudaGetDriverEntryPoint(sym, &fn, cudaEnableDefault, &q);
#endif
    int found = q == cudaDriverEntryPointSuccess;
#else
    cudaError_t e = cudaGetDriverEntryPoint(sym, &fn, cudaEnableDefault);
    int found = 1;
#endif
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return found ? fn : NULL;
}

void pv_cudrv_load(pv_cudrv *d)
{
    memset(d, 0, sizeof(*d));
    d->ok = 1;
#define GET(field, sym)                                                              \
    do {                                                                             \
        *(void **)(&d->field) = entry(sym);                                          \
        if (!d->field && d->ok) {                                                    \
            d->ok = 0;                                                               \
            snprintf(d->err, sizeof d->err, "driver entry point %s not found", sym); \
        }                                                                            \
    } while (0)
    GET(GetErrorName, "cuGetErrorName");
    GET(DeviceGet, "cuDeviceGet");
    GET(DeviceGetAttribute, "cuDeviceGetAttribute");
    GET(MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
    GET(MemCreate, "cuMemCreate");
    GET(MemRelease, "cuMemRelease");
    GET(MemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle");
    GET(MemAddressReserve, "cuMemAddressReserve");
    GET(MemAddressFree, "cuMemAddressFree");
    GET(MemMap, "cuMemMap");
    GET(MemUnmap, "cuMemUnmap");
    GET(MemSetAccess, "cuMemSetAccess");
#undef GET
}

const char *pv_cudrv_errname(const pv_cudrv *d, CUresult e, char *buf, size_t len)
{
    const char *s = NULL;
    if (d->GetErrorName && d->GetErrorName(e, &s) == CUDA_SUCCESS && s)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "CUresult %d", (int)e);
    return buf;
}

int pv_cudrv_attr(const pv_cudrv *d, int dev, CUdevice_attribute a)
{
    CUdevice cd;
    int v = -1;
    if (!d->DeviceGet || !d->DeviceGetAttribute || d->DeviceGet(&cd, dev) != CUDA_SUCCESS)
        return -1;
    if (d->DeviceGetAttribute(&v, a, cd) != CUDA_SUCCESS)
        return -1;
    return v;
}
