// SPDX-License-Identifier: GPL-2.0
/*
 * MPI moves data between two ranks and every byte is checked: blocking
 * send/receive of sizes from empty to past the rendezvous threshold (both
 * ways), MPI_Allreduce of several lengths, and one-sided communication in a
 * window: MPI_Put and MPI_Get between fences, MPI_Put under a passive-target
 * lock, MPI_Fetch_and_op from both ranks on one counter (every old value
 * seen once: the adds were atomic) and MPI_Compare_and_swap (one winner).
 * Rank 0 prints one summary line, naming the network namespace of each rank;
 * any wrong byte or value is told on stderr and the program exits 1.
 *
 *   mpirun -np 2 ... mpi-check
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WIN_HALF (256 * 1024)
#define LOCKED_AT 13
#define LOCKED_LEN 1000
#define COUNTER_AT (2 * WIN_HALF)
#define CAS_AT (COUNTER_AT + 8)
#define WIN_BYTES (CAS_AT + 8)
#define FETCH_ADDS 64

static int rank, peer, errors;

#define BAD(...)                                                          \
	do {                                                              \
		fprintf(stderr, "mpi-check: rank %d: ", rank);            \
		fprintf(stderr, __VA_ARGS__);                             \
		fprintf(stderr, "\n");                                    \
		errors++;                                                 \
	} while (0)

/* The byte at index i of the data `who` makes for `what`: each (sender, use,
 * size) has its own sequence, so a misplaced or stale chunk shows. */
static uint8_t pattern_byte(int who, int what, size_t len, size_t i)
{
	uint64_t x = ((uint64_t)who << 56) ^ ((uint64_t)what << 48) ^
		     ((uint64_t)len << 24) ^ i;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (uint8_t)x;
}

static void fill(uint8_t *buf, int who, int what, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern_byte(who, what, len, i);
}

/* Whether buf holds what `who` made for `what`; tells the first wrong byte. */
static int check(const uint8_t *buf, int who, int what, size_t len,
		 const char *where)
{
	size_t i, wrong = 0, first = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] != pattern_byte(who, what, len, i)) {
			if (!wrong++)
				first = i;
		}
	}
	if (wrong)
		BAD("%s (%zu bytes): %zu wrong bytes, the first at %zu: 0x%02x, not 0x%02x",
		    where, len, wrong, first, buf[first],
		    pattern_byte(who, what, len, first));
	return !wrong;
}

static void *alloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p) {
		fprintf(stderr, "mpi-check: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* Rank 0 sends to rank 1, then rank 1 to rank 0, each size in turn. */
static int send_recv(void)
{
	static const size_t sizes[] = { 0, 1, 7, 4096, 8195, 65536, 1 << 20 };
	int n = sizeof(sizes) / sizeof(sizes[0]), i, dir, got;
	MPI_Status st;
	char where[64];

	for (i = 0; i < n; i++) {
		size_t len = sizes[i];
		uint8_t *buf = alloc(len);

		for (dir = 0; dir < 2; dir++) {
			if (rank == dir) {
				fill(buf, rank, 1, len);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, i, MPI_COMM_WORLD);
				continue;
			}
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, i, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &got);
			if ((size_t)got != len || st.MPI_SOURCE != peer || st.MPI_TAG != i)
				BAD("recv of %zu bytes: count %d, source %d, tag %d", len,
				    got, st.MPI_SOURCE, st.MPI_TAG);
			snprintf(where, sizeof(where), "recv from rank %d", peer);
			check(buf, peer, 1, len, where);
		}
		free(buf);
	}
	return n;
}

/* Each rank gives v[i] = (rank + 1) * (i + 1) - i % 7; the sums are known. */
static int allreduce(void)
{
	static const int lens[] = { 1, 1000, 131072 };
	int n = sizeof(lens) / sizeof(lens[0]), k, i, size;

	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (k = 0; k < n; k++) {
		long *in = alloc(lens[k] * sizeof(long));
		long *out = alloc(lens[k] * sizeof(long));
		long wrong = 0, first = -1;

		for (i = 0; i < lens[k]; i++) {
			in[i] = (long)(rank + 1) * (i + 1) - i % 7;
			out[i] = -1;
		}
		MPI_Allreduce(in, out, lens[k], MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		for (i = 0; i < lens[k]; i++) {
			/* sum over r of (r + 1) * (i + 1) - i % 7 */
			long want = (long)size * (size + 1) / 2 * (i + 1) - (long)size * (i % 7);

			if (out[i] != want && !wrong++)
				first = i;
		}
		if (wrong)
			BAD("allreduce of %d longs: %ld wrong, the first [%ld] = %ld", lens[k],
			    wrong, first, out[first]);
		free(in);
		free(out);
	}
	return n;
}

/* One-sided: the window's first half takes the peer's MPI_Put, its second
 * half is what the peer reads with MPI_Get; then a put under a lock and the
 * atomics on rank 0's counter and compare-and-swap slot. */
static void one_sided(void)
{
	uint8_t *base, *src = alloc(WIN_HALF), *got = alloc(WIN_HALF);
	long one = 1, old[FETCH_ADDS], all[2 * FETCH_ADDS], counter, cas_old, mine, fin;
	int i, seen[2 * FETCH_ADDS] = { 0 };
	MPI_Win win;

	MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);

	/* Active target: fences around a put into the peer and a get from it. */
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	memset(base, 0, WIN_BYTES);
	fill(base + WIN_HALF, rank, 2, WIN_HALF);
	*(long *)(base + CAS_AT) = -1;
	MPI_Win_unlock(rank, win);
	fill(src, rank, 3, WIN_HALF);
	memset(got, 0, WIN_HALF);
	MPI_Win_fence(0, win);
	MPI_Put(src, WIN_HALF, MPI_BYTE, peer, 0, WIN_HALF, MPI_BYTE, win);
	MPI_Get(got, WIN_HALF, MPI_BYTE, peer, WIN_HALF, WIN_HALF, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	check(base, peer, 3, WIN_HALF, "MPI_Put by the peer");
	check(got, peer, 2, WIN_HALF, "MPI_Get from the peer");
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

	/* Passive target: a put at an odd offset under the peer's lock. */
	fill(src, rank, 4, LOCKED_LEN);
	MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
	MPI_Put(src, LOCKED_LEN, MPI_BYTE, peer, LOCKED_AT, LOCKED_LEN, MPI_BYTE, win);
	MPI_Win_unlock(peer, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	check(base + LOCKED_AT, peer, 4, LOCKED_LEN, "MPI_Put under a lock");
	if (base[LOCKED_AT - 1] != pattern_byte(peer, 3, WIN_HALF, LOCKED_AT - 1) ||
	    base[LOCKED_AT + LOCKED_LEN] !=
		    pattern_byte(peer, 3, WIN_HALF, LOCKED_AT + LOCKED_LEN))
		BAD("MPI_Put under a lock wrote outside its %d bytes", LOCKED_LEN);
	MPI_Win_unlock(rank, win);
	MPI_Barrier(MPI_COMM_WORLD);

	/* Atomics: both ranks add 1 to rank 0's counter, FETCH_ADDS times each. */
	MPI_Win_lock_all(0, win);
	for (i = 0; i < FETCH_ADDS; i++) {
		MPI_Fetch_and_op(&one, &old[i], MPI_LONG, 0, COUNTER_AT, MPI_SUM, win);
		MPI_Win_flush(0, win);
	}
	mine = rank;
	cas_old = 0;
	fin = -1;
	MPI_Compare_and_swap(&mine, &fin, &cas_old, MPI_LONG, 0, CAS_AT, win);
	MPI_Win_flush(0, win);
	MPI_Win_unlock_all(win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Gather(old, FETCH_ADDS, MPI_LONG, all, FETCH_ADDS, MPI_LONG, 0, MPI_COMM_WORLD);
	/* Which rank won the compare-and-swap (its old value was -1). */
	mine = cas_old == -1 ? 1 : 0;
	MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (mine != 1)
		BAD("MPI_Compare_and_swap: %ld ranks found the slot unset, not 1", mine);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
		counter = *(long *)(base + COUNTER_AT);
		fin = *(long *)(base + CAS_AT);
		MPI_Win_unlock(0, win);
		if (counter != 2 * FETCH_ADDS)
			BAD("MPI_Fetch_and_op: the counter is %ld, not %d", counter,
			    2 * FETCH_ADDS);
		for (i = 0; i < 2 * FETCH_ADDS; i++) {
			if (all[i] < 0 || all[i] >= 2 * FETCH_ADDS || seen[all[i]]++) {
				BAD("MPI_Fetch_and_op: old value %ld (add %d of rank %d) out of range or seen twice",
				    all[i], i % FETCH_ADDS, i / FETCH_ADDS);
				break;
			}
		}
		/* The slot holds the winner's rank. */
		if (fin != (cas_old == -1 ? 0 : 1))
			BAD("MPI_Compare_and_swap: rank %d won but the slot holds %ld",
			    cas_old == -1 ? 0 : 1, fin);
	}
	MPI_Win_free(&win);
	free(src);
	free(got);
}

int main(int argc, char **argv)
{
	int size, sizes, lens, total;
	char net[64] = "net:?", peer_net[64];
	MPI_Status st;
	ssize_t n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi-check: needs 2 ranks, has %d\n", size);
		MPI_Finalize();
		return 2;
	}
	peer = 1 - rank;
	/* Which network namespace each rank runs in ("net:[INODE]"). */
	n = readlink("/proc/self/ns/net", net, sizeof(net) - 1);
	if (n > 0)
		net[n] = 0;
	MPI_Sendrecv(net, sizeof(net), MPI_CHAR, peer, 99, peer_net, sizeof(peer_net),
		     MPI_CHAR, peer, 99, MPI_COMM_WORLD, &st);

	sizes = send_recv();
	lens = allreduce();
	one_sided();

	MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi-check: ranks in %s and %s: send/recv of %d sizes, allreduce of %d lengths, "
		       "put/get in fences, put under a lock, %d fetch_and_op, compare_and_swap: %s\n",
		       net, peer_net, sizes, lens, 2 * FETCH_ADDS,
		       total ? "WRONG DATA" : "all data right");
	MPI_Finalize();
	return total ? 1 : 0;
}
