// SPDX-License-Identifier: GPL-2.0

#if IS_ENABLED(CONFIG_INFINIBAND)

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <rdma/ib_cache.h>
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
 * kernel::rdma::registry: a destroy op waits for the data path's short-lived
 * references to an object it has unpublished.
 */
void rust_helper_rdma_registry_wait(void)
{
	usleep_range(10, 100);
}

/*
 * kernel::rdma::memory: kernel users of a virtual-DMA device name memory by
 * kernel virtual address; only RAM in the direct map is accessed
 * (virt_addr_valid alone also takes the kernel image's own mapping).
 */
bool rust_helper_rdma_kernel_addr_ok(unsigned long addr)
{
	return addr >= PAGE_OFFSET && addr < (unsigned long)high_memory &&
	       virt_addr_valid(addr);
}

/*
 * The 802.1Q VLAN id of a GID table entry's netdev (a GID ib_core made for
 * an address of a VLAN device, the device's own or an upper one of it),
 * 0xffff if it is no VLAN device, -ENODEV if the entry lost its netdev (it
 * is being deleted).
 */
int rust_helper_rdma_gid_attr_vlan_id(const struct ib_gid_attr *attr)
{
	u16 vlan_id = 0xffff;
	int err = rdma_read_gid_l2_fields(attr, &vlan_id, NULL);

	return err ? err : vlan_id;
}

#endif /* CONFIG_INFINIBAND */
