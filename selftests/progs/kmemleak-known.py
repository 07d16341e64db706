# SPDX-License-Identifier: GPL-2.0
# Sorts a kmemleak report (/sys/kernel/debug/kmemleak, on stdin) into the
# leaks this project answers for and the known leaks of the kernel itself,
# each of those matched by its allocation stack and listed with its reason.
# Prints the records of the first kind whole, a line per record of the
# second; exits 1 if any record is of the first kind.
#
# Known kernel leaks (Linux 6.12, both seen and read in the source):
#
#   uapi-radix-nodes: ib_uverbs builds each device's uverbs API in a radix
#     tree (drivers/infiniband/core/uverbs_uapi.c).  When a node allocation
#     fails inside radix_tree_insert(), __radix_tree_create() leaves the
#     nodes it already linked in the tree with no entry under them, and the
#     teardown (uverbs_destroy_api -> uapi_remove_range) deletes entries
#     only: those nodes are lost with the tree.  It takes an allocation
#     failure inside `rdma link add` (test 52 injects them), happens for any
#     driver (rxe alike), and ib_core hides it (a client's error is
#     ignored).  Matched: radix_tree_node_alloc, radix_tree_insert and
#     uapi_add_elm in a row (__radix_tree_create may be between the first
#     two), with uverbs_alloc_api and ib_uverbs_add_one further down.
#     Nothing else with radix_tree_node_alloc is excused.
#
# usage: kmemleak-known.py < /sys/kernel/debug/kmemleak
import re
import sys


def frames(record):
    """The function names of a record's backtrace, innermost first (without the compiler's
    suffixes: radix_tree_node_alloc.constprop.0 is radix_tree_node_alloc)."""
    trace = record.split("backtrace", 1)[1] if "backtrace" in record else ""
    return [m.group(1).split(".")[0]
            for m in re.finditer(r"^\s+(?:\[<[0-9a-f]+>\]\s+)?([A-Za-z_][\w.]*)\+0x", trace, re.M)]


def uapi_radix_nodes(names):
    names = [n for n in names if n != "__radix_tree_create"]
    for i in range(len(names) - 2):
        if names[i:i + 3] == ["radix_tree_node_alloc", "radix_tree_insert", "uapi_add_elm"]:
            rest = names[i + 3:]
            if "uverbs_alloc_api" in rest and "ib_uverbs_add_one" in rest[rest.index("uverbs_alloc_api"):]:
                return True
    return False


KNOWN = [
    ("uapi-radix-nodes", uapi_radix_nodes,
     "ib_core (uverbs_uapi.c) loses empty radix tree nodes after a failed insert"),
]

text = sys.stdin.read()
records = [r for r in re.split(r"^(?=unreferenced object )", text, flags=re.M) if r.strip()]
ours = []
for r in records:
    head = r.splitlines()[0]
    names = frames(r)
    for name, match, reason in KNOWN:
        if match(names):
            print(f"known kernel leak ({name}): {head.strip().rstrip(':')}: {reason}")
            break
    else:
        ours.append(r)
for r in ours:
    print(r.rstrip())
print(f"kmemleak: {len(records)} unreferenced objects, {len(records) - len(ours)} of them known "
      f"leaks of the kernel, {len(ours)} to answer for")
sys.exit(1 if ours else 0)
