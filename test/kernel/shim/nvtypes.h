/* Host stand-in for the driver's nvtypes.h: only what bar1_p2p_window.h uses. */
#ifndef NVTYPES_H
#define NVTYPES_H
#include <stddef.h>
typedef unsigned long long NvU64;
typedef unsigned int       NvU32;
typedef unsigned char      NvBool;
#define NV_TRUE  ((NvBool)1)
#define NV_FALSE ((NvBool)0)
#endif
