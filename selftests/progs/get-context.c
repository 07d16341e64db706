// SPDX-License-Identifier: GPL-2.0
/*
 * GET_CONTEXT negotiates features (struct ferroce_alloc_ucontext_cmd and
 * _resp in <rdma/ferroce-abi.h>), written raw to a freshly opened uverbs
 * file of the device:
 *  - a command asking for every feature, known or not, is accepted and
 *    answered with the features the kernel enables, only known ones (none
 *    is defined yet: comp_mask 0);
 *  - a command without driver data (an older provider) is accepted;
 *  - non-zero bytes beyond the known command are refused (EOPNOTSUPP, as
 *    for any extension a driver does not know): the kernel must not
 *    silently ignore an extension it does not understand.
 *
 *   get-context DEVICE
 */
#include <fcntl.h>

#include "uverbs-raw.h"

/* Features this test knows the kernel may enable (none yet). */
#define KNOWN_FEATURES 0ULL

static char path[300];

struct resp {
	struct ib_uverbs_get_context_resp core;
	struct ferroce_alloc_ucontext_resp drv;
};

/*
 * GET_CONTEXT on a new file with drv_len bytes of driver data; returns 0 or
 * -errno, the response in *r.
 */
static int get_context(const void *drv, size_t drv_len, struct resp *r)
{
	struct {
		struct ib_uverbs_get_context cmd;
		uint64_t drv[2];
	} req = { .cmd.response = (uintptr_t)r };
	int fd = open(path, O_RDWR | O_CLOEXEC), ret;

	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	if (drv_len)
		memcpy(req.drv, drv, drv_len);
	memset(r, 0xa5, sizeof(*r));
	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req,
			 sizeof(req.cmd) + drv_len, sizeof(*r));
	if (!ret)
		close(r->core.async_fd);
	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	struct ferroce_alloc_ucontext_cmd all = { .comp_mask = ~0ULL };
	uint64_t trailing[2] = { 0, 1 };
	struct resp r;
	int ret;

	CHECK(argc == 2, "usage: get-context DEVICE");
	uverbs_dev_path(argv[1], path, sizeof(path));

	ret = get_context(&all, sizeof(all), &r);
	CHECK(ret == 0, "GET_CONTEXT asking for every feature (comp_mask %#llx): %s; unknown bits must be ignored",
	      (unsigned long long)all.comp_mask, strerror(-ret));
	CHECK((r.drv.comp_mask & ~KNOWN_FEATURES) == 0,
	      "GET_CONTEXT answered comp_mask %#llx: unknown features (or no driver response written)",
	      (unsigned long long)r.drv.comp_mask);
	printf("GET_CONTEXT with comp_mask ~0: accepted, features %#llx\n",
	       (unsigned long long)r.drv.comp_mask);

	ret = get_context(NULL, 0, &r);
	CHECK(ret == 0, "GET_CONTEXT without driver data: %s", strerror(-ret));
	printf("GET_CONTEXT without driver data: accepted\n");

	ret = get_context(trailing, sizeof(trailing), &r);
	CHECK(ret == -EOPNOTSUPP, "GET_CONTEXT with a non-zero byte beyond the command: %d (%s), expected EOPNOTSUPP",
	      ret, strerror(-ret));
	printf("GET_CONTEXT with non-zero bytes beyond the command: EOPNOTSUPP\n");
	return 0;
}
