/* cudrv.h - the few CUDA driver API functions the hazard tests need
 * (virtual memory management: cuMemCreate, cuMemMap, cuMemSetAccess ...),
 * taken from the driver through the runtime (cudaGetDriverEntryPoint*), so
 * p2p-verify links no -lcuda and runs where it ran before. */
#ifndef P2PV_CUDRV_H
#define P2PV_CUDRV_H

#include <cuda.h>
#include <stddef.h>

typedef struct {
    int ok;          /* every entry point found */
    char err[160];   /* else: which one was missing */
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*MemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    CUresult (*MemGetAllocationPropertiesFromHandle)(CUmemAllocationProp *, CUmemGenericAllocationHandle);
    CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*MemAddressFree)(CUdeviceptr, size_t);
    CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*MemUnmap)(CUdeviceptr, size_t);
    CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
} pv_cudrv;

/* Fill d (d->ok = 0 with d->err when an entry point is missing). */
void pv_cudrv_load(pv_cudrv *d);
/* "CUDA_ERROR_INVALID_VALUE", or "CUresult N". */
const char *pv_cudrv_errname(const pv_cudrv *d, CUresult e, char *buf, size_t len);
/* An attribute of CUDA device dev, -1 when it cannot be read. */
int pv_cudrv_attr(const pv_cudrv *d, int dev, CUdevice_attribute a);

#endif
