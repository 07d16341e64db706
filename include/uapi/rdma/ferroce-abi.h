/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * ferroce: the uverbs ABI between the ferroce kernel driver and its
 * rdma-core provider.
 *
 * The driver identifies itself to libibverbs as RDMA_DRIVER_FERROCE
 * (<rdma/ib_user_ioctl_verbs.h>); the provider binds devices by that id
 * only, so neither rdma-core's rxe provider binds ferroce nor ferroce's
 * provider binds rxe.  FERROCE_UVERBS_ABI_VERSION changes whenever a
 * structure below changes incompatibly; the provider accepts exactly one.
 */
#ifndef FERROCE_ABI_USER_H
#define FERROCE_ABI_USER_H

#include <linux/types.h>

#define FERROCE_UVERBS_ABI_VERSION 1

/* The node description prefix; the netdev's name follows it. */
#define FERROCE_NODE_DESC "ferroce"

#endif /* FERROCE_ABI_USER_H */
