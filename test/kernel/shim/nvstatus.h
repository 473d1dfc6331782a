/* Host stand-in for the driver's nvstatus.h: the codes bar1_p2p_window.h
 * returns, with the values of nvstatuscodes.h. */
#ifndef NVSTATUS_H
#define NVSTATUS_H
typedef unsigned int NV_STATUS;
#define NV_OK                          0x00000000u
#define NV_ERR_IN_USE                  0x00000017u
#define NV_ERR_INSUFFICIENT_RESOURCES  0x0000001Au
#define NV_ERR_INVALID_ADDRESS         0x0000001Eu
#define NV_ERR_INVALID_ARGUMENT        0x0000001Fu
#define NV_ERR_INVALID_STATE           0x00000040u
#define NV_ERR_NOT_SUPPORTED           0x00000056u
#endif
