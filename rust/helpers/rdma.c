// SPDX-License-Identifier: GPL-2.0

#if IS_ENABLED(CONFIG_INFINIBAND)

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

struct page *rust_helper_sg_page_iter_page(struct sg_page_iter *piter)
{
	return sg_page_iter_page(piter);
}

void *rust_helper_page_address(const struct page *page)
{
	return page_address(page);
}

int rust_helper_ib_copy_to_udata(struct ib_udata *udata, void *src, size_t len)
{
	return ib_copy_to_udata(udata, src, len);
}

int rust_helper_ib_copy_from_udata(void *dest, struct ib_udata *udata, size_t len)
{
	return ib_copy_from_udata(dest, udata, len);
}

bool rust_helper_ib_is_udata_cleared(struct ib_udata *udata, size_t offset, size_t len)
{
	return ib_is_udata_cleared(udata, offset, len);
}

/* kernel::rdma's mmap op: queue mappings are not inherited by fork(). */
void rust_helper_vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vm_flags_set(vma, flags);
}

/*
 * kernel::rdma::link: ib_core runs `rdma link add` callbacks concurrently
 * (under a read lock); a driver's "is this netdev taken?" check and its
 * registration must not interleave with another's, so the Rust link types'
 * callbacks run one at a time.
 */
static DEFINE_MUTEX(rust_rdma_newlink_mutex);

void rust_helper_rdma_newlink_lock(void)
{
	mutex_lock(&rust_rdma_newlink_mutex);
}

void rust_helper_rdma_newlink_unlock(void)
{
	mutex_unlock(&rust_rdma_newlink_mutex);
}
/*
 * kernel::rdma::registry: a destroy op waits for the data path's short-lived
 * references to an object it has unpublished.
 */
void rust_helper_rdma_registry_wait(void)
{
	usleep_range(10, 100);
}

/*
 * kernel::rdma::context: the data path executes work in the system call that
 * rang a doorbell, and yields the CPU between work requests.
 */
void rust_helper_rdma_cond_resched(void)
{
	cond_resched();
}

bool rust_helper_rdma_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}
#endif /* CONFIG_INFINIBAND */
