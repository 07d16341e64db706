/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the selftest programs need below libibverbs: uverbs commands written
 * straight to the device file (as a hostile or buggy process can), and the
 * queue mappings of the uverbs file found in /proc/self/maps, so that a test
 * can look at (or scribble over) a ring's control block.
 */
#ifndef FERROCE_SELFTEST_UVERBS_RAW_H
#define FERROCE_SELFTEST_UVERBS_RAW_H

#include <dirent.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ferroce-abi.h>

#include "verbs-util.h"

/*
 * A write()-interface uverbs command: the header, then `len` bytes of body
 * (the command, then whatever follows it: work requests, SGEs, driver data).
 * resp_len is the size of the buffer the command's "response" member points
 * to.  Returns 0 or -errno.
 */
static inline int uverbs_cmd(int fd, uint32_t command, const void *body,
			     size_t len, size_t resp_len)
{
	struct ib_uverbs_cmd_hdr hdr = {
		.command = command,
		.in_words = (sizeof(hdr) + len) / 4,
		.out_words = resp_len / 4,
	};
	size_t total = sizeof(hdr) + len;
	char *buf = malloc(total);
	ssize_t n;

	CHECK(buf, "out of memory");
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), body, len);
	n = write(fd, buf, total);
	free(buf);
	if (n == (ssize_t)total)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* The uverbs device file (/dev/infiniband/uverbsN) of RDMA device dev. */
static inline void uverbs_dev_path(const char *dev, char *path, size_t len)
{
	DIR *d = opendir("/sys/class/infiniband_verbs");
	struct dirent *e;
	char f[300], name[64];

	CHECK(d, "no /sys/class/infiniband_verbs");
	path[0] = 0;
	while ((e = readdir(d))) {
		FILE *ibdev;

		if (strncmp(e->d_name, "uverbs", 6))
			continue;
		snprintf(f, sizeof(f), "/sys/class/infiniband_verbs/%s/ibdev", e->d_name);
		ibdev = fopen(f, "r");
		if (!ibdev)
			continue;
		if (fgets(name, sizeof(name), ibdev) && !strcmp(strtok(name, "\n"), dev))
			snprintf(path, len, "/dev/infiniband/%s", e->d_name);
		fclose(ibdev);
	}
	closedir(d);
	CHECK(path[0], "no uverbs device for %s", dev);
}

/* The empty POST_SEND write(): the provider's send doorbell. */
static inline int sq_doorbell(struct ibv_qp *qp)
{
	struct ib_uverbs_post_send_resp resp;
	struct ib_uverbs_post_send cmd = {
		.response = (uintptr_t)&resp,
		.qp_handle = qp->handle,
		.wqe_size = sizeof(struct ib_uverbs_send_wr),
	};

	return uverbs_cmd(qp->context->cmd_fd, IB_USER_VERBS_CMD_POST_SEND,
			  &cmd, sizeof(cmd), sizeof(resp));
}

/* A mapping of the uverbs file: one queue (control block, then entries). */
struct ring_map {
	unsigned long lo, hi;
};

/* The uverbs file's mappings in /proc/self/maps; returns how many (<= max). */
static inline int uverbs_maps(struct ring_map *out, int max)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	CHECK(maps, "open /proc/self/maps: %s", strerror(errno));
	while (n < max && fgets(line, sizeof(line), maps))
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &out[n].lo, &out[n].hi) == 2)
			n++;
	fclose(maps);
	return n;
}

/*
 * The one mapping that appeared between two uverbs_maps() snapshots (the
 * mappings of a QP on an SRQ: only its send queue).
 */
static inline struct ferroce_queue_ctrl *
new_ring(const struct ring_map *before, int nb, const struct ring_map *after,
	 int na)
{
	struct ferroce_queue_ctrl *found = NULL;
	int i, j, fresh = 0;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb; j++)
			if (after[i].lo == before[j].lo)
				break;
		if (j == nb) {
			found = (void *)after[i].lo;
			fresh++;
		}
	}
	CHECK(fresh == 1, "%d new queue mappings, expected 1 (the send queue)",
	      fresh);
	return found;
}

static inline uint32_t ring_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

#endif /* FERROCE_SELFTEST_UVERBS_RAW_H */
