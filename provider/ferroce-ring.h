/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * ferroce: the provider's fast path, written in Rust (provider/ring).
 */
#ifndef FERROCE_RING_H
#define FERROCE_RING_H

#include <stdint.h>
#include <rdma/ferroce-abi.h>

/* The consumer side of a CQ ring (struct CqState in provider/ring). */
struct ferroce_cq_state {
	void *base;
	uint32_t num_entries;
	uint32_t consumer;
};

void ferroce_cq_init(struct ferroce_cq_state *state, void *base,
		     uint32_t num_entries);
/* Up to max completions into out; -1 if the kernel put the queue in error. */
int ferroce_cq_poll(struct ferroce_cq_state *state, struct ferroce_cqe *out,
		    int max);
void ferroce_cq_arm(const struct ferroce_cq_state *state, int solicited_only);
void ferroce_cq_remap(struct ferroce_cq_state *state, void *base,
		      uint32_t num_entries);

#endif /* FERROCE_RING_H */
