// SPDX-License-Identifier: GPL-2.0
/*
 * A second GET_CONTEXT on a uverbs file that has its context is refused
 * (EINVAL), by the write() command and by the ioctl method alike, and a
 * refused GET_CONTEXT must give back all it took.  ib_core takes a
 * reference to the calling task for the new context's resource tracking
 * (rdma_restrack_set_name) before it knows whether the context can be
 * made; the ioctl method's error path freed the context without dropping
 * that reference, so every refused call pinned its caller's task_struct
 * for good: any user who may open the device file could fill kernel
 * memory with dead tasks, one per process that asks twice (fixed by
 * patches/0008; the same error path runs when a driver's alloc_ucontext
 * fails).
 *
 * Children each become nobody, open the device file, get a context and ask
 * again, by the write() command or by the ioctl method; once they are
 * reaped, the
 * task_struct objects of /proc/slabinfo must come back to their count
 * before them.
 *
 *   get-context-again DEVICE DRIVER_ID [CHILDREN [nocount]]
 *
 * "nocount" checks the refusals only: under KASAN freed objects wait in its
 * quarantine, still counted in use (kmemleak finds a kept task there).
 *
 * DRIVER_ID is the device's enum rdma_driver_id (a number, or "rxe"): the
 * ioctl interface refuses a header naming another driver.
 */
#include <fcntl.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

#include "uverbs-raw.h"

static char path[300];
static uint32_t driver_id;
static int count = 1;

/* GET_CONTEXT by the write() command; returns 0 or -errno. */
static int get_context_write(int fd)
{
	struct ib_uverbs_get_context_resp resp;
	struct ib_uverbs_get_context cmd = { .response = (uintptr_t)&resp };
	int ret;

	ret = uverbs_cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd, sizeof(cmd),
			 sizeof(resp));
	if (!ret)
		close(resp.async_fd);
	return ret;
}

/* GET_CONTEXT by the ioctl method, without attributes; 0 or -errno. */
static int get_context_ioctl(int fd)
{
	struct ib_uverbs_ioctl_hdr hdr = {
		.length = sizeof(hdr),
		.object_id = UVERBS_OBJECT_DEVICE,
		.method_id = UVERBS_METHOD_GET_CONTEXT,
		.driver_id = driver_id,
	};

	return ioctl(fd, RDMA_VERBS_IOCTL, &hdr) ? -errno : 0;
}

/*
 * One child: a context, then a second GET_CONTEXT that must be refused.
 * Exit status 0, or 1 after saying what went wrong.
 */
static void child(int (*get_context)(int fd), const char *how)
{
	int fd, ret;

	/* As an unprivileged user (nobody), if started as root. */
	CHECK(getuid() != 0 || (setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
				setuid(65534) == 0),
	      "cannot become nobody: %s", strerror(errno));
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	ret = get_context(fd);
	CHECK(ret == 0, "GET_CONTEXT by %s on a new file: %s", how, strerror(-ret));
	ret = get_context(fd);
	CHECK(ret == -EINVAL, "a second GET_CONTEXT by %s: %d (%s), expected EINVAL",
	      how, ret, strerror(-ret));
	close(fd);
	exit(0);
}

/* The task_struct objects in use, by /proc/slabinfo. */
static long tasks_in_use(void)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512], name[64];
	long active = -1;

	CHECK(f, "open /proc/slabinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", name, &active) == 2 &&
		    !strcmp(name, "task_struct"))
			break;
	fclose(f);
	CHECK(active >= 0, "no task_struct line in /proc/slabinfo");
	return active;
}

/* Fork n children running fn (NULL: exit at once) and reap them all. */
static void run_children(int n, int (*fn)(int fd), const char *how)
{
	for (int i = 0; i < n; i++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();

		CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (!pid) {
			if (fn)
				child(fn, how);
			exit(0);
		}
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %d (GET_CONTEXT by %s) failed", i, how);
	}
}

/*
 * Run n children asking twice by `how`, and wait (up to 30 s: a reaped
 * task is freed after an RCU grace period) until no more than slack of
 * them are still counted as task_structs in use.
 */
static void check_no_task_kept(int n, int (*fn)(int fd), const char *how)
{
	long before, now = 0;
	int waited;

	if (!count) {
		run_children(n, fn, how);
		printf("%d processes refused a second GET_CONTEXT by %s (task_structs not counted)\n",
		       n, how);
		return;
	}
	/* Children that do nothing first: they fill the cache's slabs. */
	run_children(n, NULL, "nothing");
	before = tasks_in_use();
	run_children(n, fn, how);
	for (waited = 0; waited < 300; waited++) {
		now = tasks_in_use();
		if (now - before <= n / 3)
			break;
		usleep(100000);
	}
	printf("%d processes refused a second GET_CONTEXT by %s: task_struct in use %ld before, %ld after\n",
	       n, how, before, now);
	CHECK(now - before <= n / 3,
	      "%ld task_structs kept after %d processes were refused a second GET_CONTEXT by %s: a refused GET_CONTEXT keeps its caller's task",
	      now - before, n, how);
}

int main(int argc, char **argv)
{
	int n = argc > 3 ? atoi(argv[3]) : 300;

	CHECK(argc >= 3 && argc <= 5 && (argc < 5 || !strcmp(argv[4], "nocount")),
	      "usage: get-context-again DEVICE DRIVER_ID [CHILDREN [nocount]]");
	count = argc < 5;
	driver_id = strcmp(argv[2], "rxe") ? strtoul(argv[2], NULL, 0) : RDMA_DRIVER_RXE;
	CHECK(n >= 30, "CHILDREN must be at least 30");
	uverbs_dev_path(argv[1], path, sizeof(path));
	check_no_task_kept(n, get_context_write, "write()");
	check_no_task_kept(n, get_context_ioctl, "ioctl");
	return 0;
}
