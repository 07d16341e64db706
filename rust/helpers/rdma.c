// SPDX-License-Identifier: GPL-2.0

#if IS_ENABLED(CONFIG_INFINIBAND)

#include <linux/mm.h>
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

/* kernel::rdma::IrqSpinLock: spin_lock_irqsave is a macro. */
unsigned long rust_helper_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rust_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}
#endif /* CONFIG_INFINIBAND */
