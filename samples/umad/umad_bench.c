// SPDX-License-Identifier: GPL-2.0
/*
 * umad_bench: how fast MADs move through the loaded umad driver, through
 * libibumad, between port 1 of two devices. It measures, and prints one
 * "<name> <value> <unit>" line per figure; it judges nothing (the rig runs
 * it against both drivers in one boot and reports the ratios).
 *
 *   umad_bench <client-device> <server-device>
 *
 * MADs go by GID on RoCE (it needs a GRH) and by LID on InfiniBand.
 *
 *   round_trip  a GET and its GET_RESP, one at a time (us each)
 *   flood       unsolicited GETs written back to back and read by the
 *               server (MADs per second, first write to last read)
 *   flood_write the writing part of it alone (MADs per second)
 *   write_eio   a write for an agent id nobody has: the syscall and the
 *               driver's checks up to the agent lookup (us each)
 *   write_noah  a write whose address handle the port refuses (RoCE without
 *               a GRH): up to and including the AH attempt (us each; RoCE)
 *   outstanding_<n>
 *               a write with n requests outstanding, waiting for responses
 *               that do not come (us each): how the cost of the duplicate
 *               check grows with the send list
 *   queued_<n>  a read with n MADs queued on the file (us each)
 *   slab_per_outstanding_send, slab_per_queued_mad
 *               the slab bytes (/proc/slabinfo, all caches) each of 16384
 *               outstanding requests, and each of 100000 queued MADs, holds
 *   register    a register and unregister pair (us each)
 *   open        an open and close of the umad node (us each)
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/umad.h>

#include "umad_sample.h"

#define ROUND_TRIPS 2000
#define FLOOD 20000
/* Writes measured at each level of outstanding requests. */
#define OUTSTANDING_WRITES 256
/* Long enough that no request of a level times out during it. */
#define OUTSTANDING_TIMEOUT_MS 600000
#define REGISTERS 2000
/* Vendor classes of their own (range 1: no OUI): a port has one GET agent
 * of a class, and the main pair holds VENDOR_CLASS's. */
#define OUTSTANDING_CLASS (VENDOR_CLASS + 1)
#define REGISTER_CLASS (VENDOR_CLASS + 2)
#define QUEUED_CLASS (VENDOR_CLASS + 3)
#define MARKER_CLASS (VENDOR_CLASS + 4)
/* MADs sent between markers: fewer than a MAD layer's receive queue holds. */
#define BATCH 256
/* Reads measured at each level of MADs queued. */
#define QUEUED_READS 256
#define QUEUED_MAX 100000
#define OPENS 2000

static int fail(const char *what, int err)
{
	return sample_fail("umad_bench", what, err);
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * How port 1 of dev is reached: by its GID (to->grh_present) on RoCE, or
 * by its LID on InfiniBand. 0 or -errno.
 */
static int port_address(const char *dev, ib_mad_addr_t *to)
{
	char path[128], link[32] = "";
	unsigned int lid = 0;
	FILE *f;

	memset(to, 0, sizeof(*to));
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/link_layer", dev);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fscanf(f, "%31s", link) != 1)
		link[0] = 0;
	fclose(f);
	if (strcmp(link, "InfiniBand")) {
		to->grh_present = 1;
		to->hop_limit = 64;
		return port_gid(dev, to->gid);
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/lid", dev);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fscanf(f, "%x", &lid) != 1 || !lid)
		lid = 0;
	fclose(f);
	to->lid = htobe16(lid);
	return lid ? 0 : -EADDRNOTAVAIL;
}

/* Fills umad with a MAD of class and method to port to, with TID tid. */
static void address_class(void *umad, const ib_mad_addr_t *to, int class,
			  int method, uint64_t tid)
{
	uint8_t *mad = umad_get_mad(umad);

	memset(mad, 0, MAD_SIZE);
	mad[0] = 1;
	mad[1] = class;
	mad[2] = 1;
	mad[3] = method;
	*(uint64_t *)(mad + 8) = htobe64(tid);
	umad_set_addr(umad, be16toh(to->lid), 1, 0, QP1_QKEY);
	umad_set_grh(umad, to->grh_present ? (void *)to : NULL);
}

/* Fills umad with a VENDOR_CLASS MAD of method to port to, with TID tid. */
static void address(void *umad, const ib_mad_addr_t *to, int method, uint64_t tid)
{
	address_class(umad, to, VENDOR_CLASS, method, tid);
}

/*
 * A loaded pair: a client file on the client device, with an agent of
 * class and one of MARKER_CLASS; a server file on the server device with a
 * GET agent of class; and a marker file there, a GET agent of
 * MARKER_CLASS, which tells when what was sent before the marker arrived.
 */
struct pair {
	int client_fd, client, client_marker;
	int server_fd, server;
	int marker_fd, marker;
	int class;
};

static int open_agent(const char *dev, int class, long *methods, int *fd,
		      int *agent)
{
	*fd = umad_open_port(dev, 1);
	if (*fd < 0)
		return *fd;
	*agent = umad_register(*fd, class, 1, 0, methods);
	return *agent < 0 ? *agent : 0;
}

static int open_pair(char **argv, int class, struct pair *p)
{
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	int ret;

	p->class = class;
	ret = open_agent(argv[2], class, get_only, &p->server_fd, &p->server) ?:
	      open_agent(argv[2], MARKER_CLASS, get_only, &p->marker_fd, &p->marker) ?:
	      open_agent(argv[1], class, NULL, &p->client_fd, &p->client);
	if (ret)
		return ret;
	p->client_marker = umad_register(p->client_fd, MARKER_CLASS, 1, 0, NULL);
	return p->client_marker < 0 ? p->client_marker : 0;
}

/*
 * Transaction IDs of the loaded figures' MADs: each its own, for a write
 * whose TID and class match a send not completed yet is refused (the
 * duplicate check), and a MAD's send completion may come after its arrival.
 */
static uint64_t next_tid(void)
{
	static uint64_t tid = 1ULL << 32;

	return tid++;
}

/* Sends a marker and waits for it: what the client sent before is there. */
static int mark(struct pair *p, const ib_mad_addr_t *to, void *umad)
{
	int ret, len = MAD_SIZE;

	address_class(umad, to, MARKER_CLASS, METHOD_GET, next_tid());
	ret = umad_send(p->client_fd, p->client_marker, umad, MAD_SIZE, 0, 0);
	if (ret)
		return ret;
	ret = umad_recv(p->marker_fd, umad, &len, 60000);
	return ret == p->marker ? 0 : ret < 0 ? ret : -EPROTO;
}

static void close_pair(struct pair *p)
{
	umad_close_port(p->client_fd);
	umad_close_port(p->marker_fd);
	if (p->server_fd >= 0)
		umad_close_port(p->server_fd);
}

/*
 * Sends count GETs of the pair's class, each waiting timeout_ms for a
 * response (0: unsolicited), in batches that the receiving MAD layer's
 * queue holds: after each, a marker, received.
 */
static int send_gets(struct pair *p, const ib_mad_addr_t *to, void *umad,
		     int count, int timeout_ms)
{
	for (int i = 0; i < count; i++) {
		int ret;

		address_class(umad, to, p->class, METHOD_GET, next_tid());
		ret = umad_send(p->client_fd, p->client, umad, MAD_SIZE, timeout_ms, 0);
		if (!ret && ((i + 1) % BATCH == 0 || i == count - 1))
			ret = mark(p, to, umad);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Bytes in use in all slab caches (/proc/slabinfo: active objects times
 * their size), or -1 where the kernel does not say.
 */
static long long slab_bytes(void)
{
	long long total = 0, active, size;
	char line[512];
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %lld %*d %lld", &active, &size) == 2)
			total += active * size;
	fclose(f);
	return total;
}

/*
 * The cost of a write with n requests outstanding: a client sends n GETs
 * with a long timeout to a server that never answers, then
 * OUTSTANDING_WRITES more, timed. With memory, the slab bytes each
 * outstanding request holds, once the server's queue of them is freed.
 * The files are new, and closed after: that ends the requests.
 */
static int outstanding(char **argv, const ib_mad_addr_t *to, void *umad, int n,
		       bool memory)
{
	long long before = slab_bytes();
	struct pair p;
	double start;
	int ret;

	ret = open_pair(argv, OUTSTANDING_CLASS, &p) ?:
	      send_gets(&p, to, umad, n, OUTSTANDING_TIMEOUT_MS);
	if (ret)
		return fail("outstanding", ret);
	start = seconds();
	for (int i = 0; i < OUTSTANDING_WRITES && !ret; i++) {
		address_class(umad, to, p.class, METHOD_GET, next_tid());
		ret = umad_send(p.client_fd, p.client, umad, MAD_SIZE,
				OUTSTANDING_TIMEOUT_MS, 0);
	}
	if (ret)
		return fail("outstanding: send", ret);
	printf("outstanding_%d %.2f us\n", n,
	       (seconds() - start) * 1e6 / OUTSTANDING_WRITES);
	if (memory && before >= 0) {
		ret = mark(&p, to, umad);
		if (ret)
			return fail("outstanding: mark", ret);
		umad_close_port(p.server_fd);
		p.server_fd = -1;
		printf("slab_per_outstanding_send %.0f bytes\n",
		       (double)(slab_bytes() - before) / (n + OUTSTANDING_WRITES));
	}
	close_pair(&p);
	return 0;
}

/*
 * The cost of a read with n MADs queued on the file: n unsolicited GETs
 * queued on a server that reads none until all are there, then QUEUED_READS
 * reads of them, timed (with n 1: QUEUED_READS times one). For the largest
 * n, the slab bytes each queued MAD holds.
 */
static int queued(char **argv, const ib_mad_addr_t *to, void *umad, int n,
		  bool memory)
{
	long long before = slab_bytes();
	int reads = 0, ret = 0, len;
	double spent = 0, start;
	struct pair p;

	ret = open_pair(argv, QUEUED_CLASS, &p);
	while (!ret && reads < QUEUED_READS) {
		ret = send_gets(&p, to, umad, n, 0);
		if (ret)
			break;
		if (memory && before >= 0 && !reads)
			printf("slab_per_queued_mad %.0f bytes\n",
			       (double)(slab_bytes() - before) / n);
		for (int i = 0; i < n && reads < QUEUED_READS && !ret; i++, reads++) {
			len = MAD_SIZE;
			start = seconds();
			ret = umad_recv(p.server_fd, umad, &len, 0);
			spent += seconds() - start;
			ret = ret == p.server ? 0 : ret < 0 ? ret : -EPROTO;
		}
	}
	if (ret)
		return fail(reads ? "queued: read" : "queued: send", ret);
	printf("queued_%d %.2f us\n", n, spent * 1e6 / QUEUED_READS);
	close_pair(&p);
	return 0;
}

int main(int argc, char **argv)
{
	static const int levels[] = { 1, 64, 1024, 4096, 16384 };
	long get_only[16 / sizeof(long)] = { 1L << METHOD_GET };
	ib_mad_addr_t to_server, to_client;
	int client_fd, server_fd, client, server, len, ret;
	double start;
	void *umad;

	if (argc != 3) {
		fprintf(stderr, "usage: umad_bench <client-device> <server-device>\n");
		return 2;
	}
	if (umad_init())
		return fail("init", ENOMEM);
	client_fd = umad_open_port(argv[1], 1);
	server_fd = umad_open_port(argv[2], 1);
	if (client_fd < 0 || server_fd < 0)
		return fail("open", client_fd < 0 ? client_fd : server_fd);
	/* umad_size() is the header's size once a port is open: before, it
	 * is the old ABI's, 8 bytes short. */
	umad = calloc(1, umad_size() + MAD_SIZE);
	if (!umad)
		return fail("init", ENOMEM);
	server = umad_register(server_fd, VENDOR_CLASS, 1, 0, get_only);
	client = umad_register(client_fd, VENDOR_CLASS, 1, 0, NULL);
	if (server < 0 || client < 0)
		return fail("register", server < 0 ? server : client);
	ret = port_address(argv[2], &to_server) ?: port_address(argv[1], &to_client);
	if (ret)
		return fail("address", ret);

	start = seconds();
	for (int i = 0; i < ROUND_TRIPS; i++) {
		uint64_t tid;

		address(umad, &to_server, METHOD_GET, i);
		ret = umad_send(client_fd, client, umad, MAD_SIZE, 1000, 3);
		len = MAD_SIZE;
		if (ret || umad_recv(server_fd, umad, &len, 5000) != server)
			return fail("round trip: GET", ret ?: ETIMEDOUT);
		tid = be64toh(*(uint64_t *)((uint8_t *)umad_get_mad(umad) + 8));
		address(umad, &to_client, METHOD_GET_RESP, tid);
		ret = umad_send(server_fd, server, umad, MAD_SIZE, 0, 0);
		len = MAD_SIZE;
		if (ret || umad_recv(client_fd, umad, &len, 5000) != client)
			return fail("round trip: GET_RESP", ret ?: ETIMEDOUT);
	}
	printf("round_trip %.1f us\n", (seconds() - start) * 1e6 / ROUND_TRIPS);

	start = seconds();
	for (int i = 0; i < FLOOD; i++) {
		address(umad, &to_server, METHOD_GET, ROUND_TRIPS + i);
		ret = umad_send(client_fd, client, umad, MAD_SIZE, 0, 0);
		if (ret)
			return fail("flood: send", ret);
	}
	printf("flood_write %.0f MADs/s\n", FLOOD / (seconds() - start));
	for (int i = 0; i < FLOOD; i++) {
		len = MAD_SIZE;
		if (umad_recv(server_fd, umad, &len, 5000) != server) {
			printf("flood_lost %d MADs\n", FLOOD - i);
			break;
		}
	}
	printf("flood %.0f MADs/s\n", FLOOD / (seconds() - start));

	start = seconds();
	for (int i = 0; i < FLOOD; i++) {
		address(umad, &to_server, METHOD_GET, i);
		if (umad_send(client_fd, 31, umad, MAD_SIZE, 0, 0) != -EIO)
			return fail("write_eio", EPROTO);
	}
	printf("write_eio %.2f us\n", (seconds() - start) * 1e6 / FLOOD);

	if (to_server.grh_present) {
		start = seconds();
		for (int i = 0; i < FLOOD; i++) {
			address(umad, &to_server, METHOD_GET, i);
			umad_set_grh(umad, NULL);
			if (umad_send(client_fd, client, umad, MAD_SIZE, 0, 0) == 0)
				return fail("write_noah", EPROTO);
		}
		printf("write_noah %.2f us\n", (seconds() - start) * 1e6 / FLOOD);
	}

	start = seconds();
	for (int i = 0; i < REGISTERS; i++) {
		ret = umad_register(client_fd, REGISTER_CLASS, 1, 0, get_only);
		if (ret < 0 || (ret = umad_unregister(client_fd, ret)))
			return fail("register", ret);
	}
	printf("register %.2f us\n", (seconds() - start) * 1e6 / REGISTERS);

	start = seconds();
	for (int i = 0; i < OPENS; i++) {
		ret = umad_open_port(argv[1], 1);
		if (ret < 0 || (ret = umad_close_port(ret)))
			return fail("open", ret);
	}
	printf("open %.2f us\n", (seconds() - start) * 1e6 / OPENS);

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (outstanding(argv, &to_server, umad, levels[i],
				i == sizeof(levels) / sizeof(levels[0]) - 1))
			return 1;
	if (queued(argv, &to_server, umad, 1, false) ||
	    queued(argv, &to_server, umad, QUEUED_MAX, true))
		return 1;

	umad_close_port(client_fd);
	umad_close_port(server_fd);
	umad_done();
	free(umad);
	return 0;
}
