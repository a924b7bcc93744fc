// SPDX-License-Identifier: GPL-2.0
/*
 * umad_bench: how fast MADs move through the loaded umad driver, through
 * libibumad, between port 1 of two devices. It measures, and prints one
 * "<name> <value> <unit>" line per figure; it judges nothing (the rig runs
 * it against both drivers in one boot and reports the ratios).
 *
 *   umad_bench <client-device> <server-device> [group,...]
 *
 * With groups (the words below before the colons), only those run. MADs go
 * by GID on RoCE (it needs a GRH) and by LID on InfiniBand. A cost in "us
 * each" is the calling thread's CPU time per call (what the call costs its
 * caller, without what the device does meanwhile on other CPUs); rates are
 * in elapsed time, all of the path.
 *
 * round_trip:  round_trip, a GET and its GET_RESP, one at a time (us each,
 *              elapsed)
 * flood:       flood, unsolicited GETs written back to back and read by
 *              the server, in batches that no receive queue below the
 *              drivers overflows (MADs per second, first write to last
 *              read); flood_write, the writing part of it
 * write_eio:   a write for an agent id nobody has: the syscall and the
 *              driver's checks up to the agent lookup
 * write_noah:  a write whose address handle the port refuses (RoCE without
 *              a GRH): up to and including the AH attempt (RoCE only)
 * outstanding: outstanding_<n>, a write with n requests outstanding,
 *              waiting for responses that do not come: how the cost of the
 *              duplicate check grows with the send list;
 *              slab_per_outstanding_send, the slab bytes (/proc/slabinfo,
 *              all caches) each of 16384 outstanding requests holds
 * queued:      queued_<n>, a read with n MADs queued on the file;
 *              slab_per_queued_mad, the slab bytes each of 100000 holds
 * register:    a register and unregister pair
 * open:        open, libibumad's open and close of a port (it reads the
 *              class's sysfs attributes to find the node); open_node, the
 *              node's open(2) and close(2) alone; sysfs_ibdev, a read of
 *              the node's ibdev attribute
 * rmpp:        rmpp_<n>, GETs answered by n-segment responses that the
 *              kernel's RMPP sends and reassembles, RMPP_LEVEL_SEGMENTS
 *              segments at each n (kB of data per second, first GET to
 *              last response read)
 * shared:      shared_32_agents, the flood spread over 32 agents of one
 *              file; shared_8_files, over 8 files of the port with one
 *              agent each
 * steps:       not a figure, and not in the default run: each call the
 *              costs above time (a register and unregister, a write that
 *              fails EIO, a write, a read of what it sent, a write
 *              with 4096 requests outstanding on its file, the node's
 *              open(2) and close(2), a sysfs read, the write and the
 *              read of an RMPP response), STEPS_ROUNDS times, on
 *              descriptors STEPS_FD and up, which tell the rig's
 *              instruction tracer (tools/rig/trace.sh) which system calls
 *              to follow; a close of STEPS_FD ends them
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/umad.h>

#include "umad_sample.h"

#define ROUND_TRIPS 2000
#define FLOOD 20000
/* Writes measured at each level of outstanding requests: each adds one
 * more, and they go unmarked, so no more than a batch (a burst of 1024
 * overflowed rxe's receive queue and lost the next marker). */
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
/* Vendor range 2 (an OUI after the RMPP header; RMPP classes): the RMPP
 * figures' class, and the first of the 32 the shared figures spread over. */
#define RANGE2_CLASS 0x30
#define RANGE2_CLASSES 32
#define RANGE2_HDR 40
/* MADs sent between markers: fewer than a MAD layer's receive queue holds. */
#define BATCH 256
/* Reads measured at each level of MADs queued. */
#define QUEUED_READS 256
#define QUEUED_PAUSE_US 1000
#define QUEUED_MAX 100000
#define OPENS 2000
/* Segments each RMPP figure moves, in as many responses as that makes of
 * its size (10 and 100 segments): each level carries the same data (with
 * 100 responses of 10 segments, that figure's rounds spread by some 4% on
 * ib_loopback; with 1000, by 1%). */
#define RMPP_LEVEL_SEGMENTS 10000
#define RMPP_SEGMENT_DATA (MAD_SIZE - RANGE2_HDR)
#define RMPP_MAX_SEGMENTS 100
#define SHARED_MADS 8192
#define STEPS_FD 100
#define STEPS_ROUNDS 3
/* Requests outstanding on the file of the steps' loaded write: the
 * outstanding figure's fourth level. */
#define STEPS_OUTSTANDING 4096
/* The steps' RMPP response: two segments. On ib_loopback its write runs
 * the whole RMPP exchange, some 30000 instructions a segment to trace. */
#define STEPS_RMPP_SEGMENTS 2
/* How long the steps wait for the tracer to attach. */
#define STEPS_WAIT_S 3

static int fail(const char *what, int err)
{
	return sample_fail("umad_bench", what, err);
}

/* Elapsed time, for rates. */
static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The calling thread's CPU time, for the cost of a call. */
static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
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

static bool is_range2(int class)
{
	return class >= RANGE2_CLASS && class < RANGE2_CLASS + RANGE2_CLASSES;
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
	if (is_range2(class))
		memcpy(mad + RANGE2_HDR - sizeof(sample_oui), sample_oui, sizeof(sample_oui));
	umad_set_addr(umad, be16toh(to->lid), 1, 0, QP1_QKEY);
	umad_set_grh(umad, to->grh_present ? (void *)to : NULL);
}

/* What every figure uses: the two devices, how each reaches the other, a
 * file on each with an agent of VENDOR_CLASS (the server's for GETs), and
 * a umad buffer of one MAD. */
struct bench {
	char **argv;
	ib_mad_addr_t to_server, to_client;
	int client_fd, client, server_fd, server;
	void *umad;
};

/* Fills b->umad with a VENDOR_CLASS MAD of method to port to, with TID tid. */
static void address(struct bench *b, const ib_mad_addr_t *to, int method, uint64_t tid)
{
	address_class(b->umad, to, VENDOR_CLASS, method, tid);
}

static int register_class(int fd, int class, long *methods, uint8_t rmpp_version)
{
	if (is_range2(class))
		return umad_register_oui(fd, class, rmpp_version, sample_oui, methods);
	return umad_register(fd, class, 1, rmpp_version, methods);
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
	*agent = register_class(*fd, class, methods, 0);
	return *agent < 0 ? *agent : 0;
}

static int open_pair(struct bench *b, int class, struct pair *p)
{
	int ret;

	p->class = class;
	ret = open_agent(b->argv[2], class, get_only, &p->server_fd, &p->server) ?:
	      open_agent(b->argv[2], MARKER_CLASS, get_only, &p->marker_fd, &p->marker) ?:
	      open_agent(b->argv[1], class, NULL, &p->client_fd, &p->client);
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

static int round_trip(struct bench *b)
{
	double start = seconds();
	int len, ret;

	for (int i = 0; i < ROUND_TRIPS; i++) {
		uint64_t tid;

		address(b, &b->to_server, METHOD_GET, i);
		ret = umad_send(b->client_fd, b->client, b->umad, MAD_SIZE, 1000, 3);
		len = MAD_SIZE;
		if (ret || umad_recv(b->server_fd, b->umad, &len, 5000) != b->server)
			return fail("round trip: GET", ret ?: ETIMEDOUT);
		tid = be64toh(*(uint64_t *)((uint8_t *)umad_get_mad(b->umad) + 8));
		address(b, &b->to_client, METHOD_GET_RESP, tid);
		ret = umad_send(b->server_fd, b->server, b->umad, MAD_SIZE, 0, 0);
		len = MAD_SIZE;
		if (ret || umad_recv(b->client_fd, b->umad, &len, 5000) != b->client)
			return fail("round trip: GET_RESP", ret ?: ETIMEDOUT);
	}
	printf("round_trip %.1f us\n", (seconds() - start) * 1e6 / ROUND_TRIPS);
	return 0;
}

static int write_eio(struct bench *b)
{
	double start = cpu_seconds();

	for (int i = 0; i < FLOOD; i++) {
		address(b, &b->to_server, METHOD_GET, i);
		if (umad_send(b->client_fd, 31, b->umad, MAD_SIZE, 0, 0) != -EIO)
			return fail("write_eio", EPROTO);
	}
	printf("write_eio %.2f us\n", (cpu_seconds() - start) * 1e6 / FLOOD);
	return 0;
}

static int write_noah(struct bench *b)
{
	double start = cpu_seconds();

	if (!b->to_server.grh_present)
		return 0;
	for (int i = 0; i < FLOOD; i++) {
		address(b, &b->to_server, METHOD_GET, i);
		umad_set_grh(b->umad, NULL);
		if (umad_send(b->client_fd, b->client, b->umad, MAD_SIZE, 0, 0) == 0)
			return fail("write_noah", EPROTO);
	}
	printf("write_noah %.2f us\n", (cpu_seconds() - start) * 1e6 / FLOOD);
	return 0;
}

/*
 * The cost of a write with n requests outstanding: a client sends n GETs
 * with a long timeout to a server that never answers, then
 * OUTSTANDING_WRITES more, timed. With memory, the slab bytes each
 * outstanding request holds, once the server's queue of them is freed.
 * The files are new, and closed after: that ends the requests.
 */
static int outstanding_level(struct bench *b, int n, bool memory)
{
	long long before = slab_bytes();
	struct pair p;
	double start;
	int ret;

	ret = open_pair(b, OUTSTANDING_CLASS, &p) ?:
	      send_gets(&p, &b->to_server, b->umad, n, OUTSTANDING_TIMEOUT_MS);
	if (ret)
		return fail("outstanding", ret);
	start = cpu_seconds();
	for (int i = 0; i < OUTSTANDING_WRITES && !ret; i++) {
		address_class(b->umad, &b->to_server, p.class, METHOD_GET, next_tid());
		ret = umad_send(p.client_fd, p.client, b->umad, MAD_SIZE,
				OUTSTANDING_TIMEOUT_MS, 0);
	}
	if (ret)
		return fail("outstanding: send", ret);
	printf("outstanding_%d %.2f us\n", n,
	       (cpu_seconds() - start) * 1e6 / OUTSTANDING_WRITES);
	if (memory && before >= 0) {
		ret = mark(&p, &b->to_server, b->umad);
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

static int outstanding(struct bench *b)
{
	static const int levels[] = { 1, 64, 1024, 4096, 16384 };
	const int count = sizeof(levels) / sizeof(levels[0]);

	for (int i = 0; i < count; i++)
		if (outstanding_level(b, levels[i], i == count - 1))
			return 1;
	return 0;
}

/*
 * The cost of a read with n MADs queued on the file: n unsolicited GETs
 * queued on a server that reads none until all are there, then QUEUED_READS
 * reads of them, timed (with n 1: QUEUED_READS times one). For the largest
 * n, the slab bytes each queued MAD holds.
 *
 * Each batch's reads start after a pause: rxe finishes the sends' and the
 * marker's completions in softirqs, which would otherwise run during the
 * first reads and be charged to them.
 */
static int queued_level(struct bench *b, int n, bool memory)
{
	long long before = slab_bytes();
	int reads = 0, ret = 0, len;
	double spent = 0, start;
	struct pair p;

	ret = open_pair(b, QUEUED_CLASS, &p);
	while (!ret && reads < QUEUED_READS) {
		ret = send_gets(&p, &b->to_server, b->umad, n, 0);
		if (ret)
			break;
		if (memory && before >= 0 && !reads)
			printf("slab_per_queued_mad %.0f bytes\n",
			       (double)(slab_bytes() - before) / n);
		usleep(QUEUED_PAUSE_US);
		for (int i = 0; i < n && reads < QUEUED_READS && !ret; i++, reads++) {
			len = MAD_SIZE;
			start = cpu_seconds();
			ret = umad_recv(p.server_fd, b->umad, &len, 0);
			spent += cpu_seconds() - start;
			ret = ret == p.server ? 0 : ret < 0 ? ret : -EPROTO;
		}
	}
	if (ret)
		return fail(reads ? "queued: read" : "queued: send", ret);
	printf("queued_%d %.2f us\n", n, spent * 1e6 / QUEUED_READS);
	close_pair(&p);
	return 0;
}

static int queued(struct bench *b)
{
	return queued_level(b, 1, false) ?: queued_level(b, QUEUED_MAX, true);
}

static int register_unregister(struct bench *b)
{
	double start = cpu_seconds();

	for (int i = 0; i < REGISTERS; i++) {
		int ret = umad_register(b->client_fd, REGISTER_CLASS, 1, 0, get_only);

		if (ret < 0 || (ret = umad_unregister(b->client_fd, ret)))
			return fail("register", ret);
	}
	printf("register %.2f us\n", (cpu_seconds() - start) * 1e6 / REGISTERS);
	return 0;
}

/*
 * The umad node of dev's port 1 (its name, "umadN", in node), by the
 * class's sysfs attributes. 0 or -errno.
 */
static int umad_node(const char *dev, char node[256])
{
	struct dirent *e;
	DIR *d = opendir("/sys/class/infiniband_mad");
	int ret = -ENODEV;

	if (!d)
		return -errno;
	while (ret && (e = readdir(d))) {
		char path[300], ibdev[64] = "";
		unsigned int port = 0;
		FILE *f;

		if (strncmp(e->d_name, "umad", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/ibdev", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%63s", ibdev) != 1)
			ibdev[0] = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/port", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%u", &port) != 1)
			port = 0;
		fclose(f);
		if (!strcmp(ibdev, dev) && port == 1) {
			snprintf(node, 256, "%s", e->d_name);
			ret = 0;
		}
	}
	closedir(d);
	return ret;
}

/*
 * An open as libibumad makes it, and the driver's two parts of it: the
 * node's open(2) and close(2), and a read of the node's ibdev attribute,
 * which libibumad reads of node after node to find a port's.
 */
static int open_close(struct bench *b)
{
	char node[256], path[300], buf[64];
	double start = cpu_seconds();
	int fd, ret;

	for (int i = 0; i < OPENS; i++) {
		ret = umad_open_port(b->argv[1], 1);
		if (ret < 0 || (ret = umad_close_port(ret)))
			return fail("open", ret);
	}
	printf("open %.2f us\n", (cpu_seconds() - start) * 1e6 / OPENS);

	ret = umad_node(b->argv[1], node);
	if (ret)
		return fail("open_node", ret);
	snprintf(path, sizeof(path), "/dev/infiniband/%s", node);
	start = cpu_seconds();
	for (int i = 0; i < OPENS; i++) {
		fd = open(path, O_RDWR);
		if (fd < 0 || close(fd))
			return fail("open_node", errno);
	}
	printf("open_node %.2f us\n", (cpu_seconds() - start) * 1e6 / OPENS);

	snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/ibdev", node);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return fail("sysfs_ibdev", errno);
	start = cpu_seconds();
	for (int i = 0; i < OPENS; i++)
		if (pread(fd, buf, sizeof(buf), 0) <= 0)
			return fail("sysfs_ibdev", errno);
	printf("sysfs_ibdev %.2f us\n", (cpu_seconds() - start) * 1e6 / OPENS);
	close(fd);
	return 0;
}

/*
 * A client and a server of RANGE2_CLASS whose agents (RMPP version 1) have
 * the kernel send and reassemble RMPP: the server answers GETs with
 * responses of segments segments.
 */
struct rmpp_pair {
	int client_fd, server_fd, client, server;
	int data; /* bytes of data in a response */
	uint8_t *response;
};

static int rmpp_open(struct bench *b, struct rmpp_pair *r, int segments)
{
	const int data = segments * RMPP_SEGMENT_DATA;
	uint8_t *mad;

	r->data = data;
	r->response = calloc(1, umad_size() + RANGE2_HDR + data);
	if (!r->response)
		return fail("rmpp", ENOMEM);
	r->client_fd = umad_open_port(b->argv[1], 1);
	r->server_fd = umad_open_port(b->argv[2], 1);
	if (r->client_fd < 0 || r->server_fd < 0)
		return fail("rmpp: open", r->client_fd < 0 ? r->client_fd : r->server_fd);
	r->server = register_class(r->server_fd, RANGE2_CLASS, get_only, 1);
	r->client = register_class(r->client_fd, RANGE2_CLASS, NULL, 1);
	if (r->server < 0 || r->client < 0)
		return fail("rmpp: register", r->server < 0 ? r->server : r->client);
	mad = umad_get_mad(r->response);
	for (int i = 0; i < data; i++)
		mad[RANGE2_HDR + i] = i % 251;
	return 0;
}

static void rmpp_close(struct rmpp_pair *r)
{
	umad_close_port(r->client_fd);
	umad_close_port(r->server_fd);
	free(r->response);
}

/*
 * One GET and its response: the response is written on server_fd and read
 * on client_fd, descriptors of the pair's ports (the steps pass dups). The
 * client's GET waits for the response: a kernel-RMPP agent drops a
 * response it asked nothing for.
 */
static int rmpp_transfer(struct bench *b, struct rmpp_pair *r, int server_fd, int client_fd)
{
	const int data = r->data, size = RANGE2_HDR + data;
	uint8_t *mad = umad_get_mad(r->response);
	int ret, len = MAD_SIZE;

	address_class(b->umad, &b->to_server, RANGE2_CLASS, METHOD_GET, next_tid());
	ret = umad_send(r->client_fd, r->client, b->umad, MAD_SIZE, 5000, 0);
	if (ret || (ret = umad_recv(r->server_fd, b->umad, &len, 5000)) != r->server)
		return fail("rmpp: GET", ret < 0 ? ret : EPROTO);
	/* The response: the GET's header, then RMPP active, which the kernel
	 * cuts into segments. */
	memcpy(mad, umad_get_mad(b->umad), RANGE2_HDR);
	mad[3] = METHOD_GET_RESP;
	mad[24] = 1; /* RMPP version */
	mad[25] = 1; /* DATA */
	mad[26] = 1; /* ACTIVE */
	umad_set_addr(r->response, be16toh(b->to_client.lid), 1, 0, QP1_QKEY);
	umad_set_grh(r->response, b->to_client.grh_present ? &b->to_client : NULL);
	ret = umad_send(server_fd, r->server, r->response, size, 0, 0);
	if (ret)
		return fail("rmpp: response", ret);
	len = size;
	ret = umad_recv(client_fd, r->response, &len, 5000);
	if (ret != r->client || len != size || mad[RANGE2_HDR + data - 1] != (data - 1) % 251)
		return fail("rmpp: read", ret < 0 ? ret : EPROTO);
	return 0;
}

/* GETs answered by responses of segments segments, RMPP_LEVEL_SEGMENTS
 * segments in all. */
static int rmpp_level(struct bench *b, int segments)
{
	const int transfers = RMPP_LEVEL_SEGMENTS / segments;
	struct rmpp_pair r;
	int ret = rmpp_open(b, &r, segments);
	double start;

	if (ret)
		return ret;
	start = seconds();
	for (int i = 0; i < transfers && !ret; i++)
		ret = rmpp_transfer(b, &r, r.server_fd, r.client_fd);
	if (!ret)
		printf("rmpp_%d %.0f kB/s\n", segments,
		       (double)r.data * transfers / 1000 / (seconds() - start));
	rmpp_close(&r);
	return ret;
}

static int rmpp(struct bench *b)
{
	return rmpp_level(b, 10) ?: rmpp_level(b, RMPP_MAX_SEGMENTS);
}

/* Reads what fd has queued, without waiting; adds it to *count. */
static int drain(int fd, void *umad, int *count)
{
	for (;;) {
		int len = MAD_SIZE, ret = umad_recv(fd, umad, &len, 0);

		if (ret == -EAGAIN || ret == -EWOULDBLOCK || ret == -ETIMEDOUT)
			return 0;
		if (ret < 0)
			return ret;
		++*count;
	}
}

/*
 * A flood: count unsolicited GETs, of classes RANGE2_CLASS on in turn, read
 * by a server with one GET agent of each class: all on one file, or with
 * file_each each on a file of its own. A batch at a time: written back to back,
 * marked (all of it is there then), and read, so that no burst overflows a
 * receive queue below the drivers. Prints the rate of the MADs read as name
 * (first write to last read), with write_name the rate of the writes alone,
 * and name_lost if some never came.
 */
static int flood_of(struct bench *b, int count, int classes, bool file_each,
		    const char *name, const char *write_name)
{
	int fds[RANGE2_CLASSES], files = file_each ? classes : 1, ret, received = 0;
	double start, writing = 0, batch;
	struct pair p;

	ret = open_pair(b, RANGE2_CLASS, &p);
	fds[0] = p.server_fd;
	for (int c = 1; c < classes && !ret; c++) {
		fds[c] = file_each ? umad_open_port(b->argv[2], 1) : p.server_fd;
		ret = fds[c] < 0 ? fds[c] : register_class(fds[c], RANGE2_CLASS + c, get_only, 0);
		ret = ret < 0 ? ret : 0;
	}
	if (ret)
		return fail(name, ret);

	start = seconds();
	for (int sent = 0; sent < count && !ret; sent += BATCH) {
		batch = seconds();
		for (int i = 0; i < BATCH && sent + i < count && !ret; i++) {
			address_class(b->umad, &b->to_server, RANGE2_CLASS + i % classes,
				      METHOD_GET, next_tid());
			ret = umad_send(p.client_fd, p.client, b->umad, MAD_SIZE, 0, 0);
		}
		writing += seconds() - batch;
		ret = ret ?: mark(&p, &b->to_server, b->umad);
		for (int f = 0; f < files && !ret; f++)
			ret = drain(fds[f], b->umad, &received);
	}
	if (ret)
		return fail(name, ret);
	printf("%s %.0f MADs/s\n", name, received / (seconds() - start));
	if (write_name)
		printf("%s %.0f MADs/s\n", write_name, count / writing);
	if (received < count)
		printf("%s_lost %d MADs\n", name, count - received);
	for (int c = 1; c < files; c++)
		umad_close_port(fds[c]);
	close_pair(&p);
	return 0;
}

static int flood(struct bench *b)
{
	return flood_of(b, FLOOD, 1, false, "flood", "flood_write");
}

static int shared(struct bench *b)
{
	return flood_of(b, SHARED_MADS, RANGE2_CLASSES, false, "shared_32_agents", NULL) ?:
	       flood_of(b, SHARED_MADS, 8, true, "shared_8_files", NULL);
}

/*
 * The calls whose costs the figures time, one of each per round, each on a
 * descriptor from STEPS_FD up (a dup of what it works on): the tracer
 * follows the system calls whose first argument is one of them.
 */
static int steps(struct bench *b)
{
	enum { client = STEPS_FD, server, dir, ibdev, node, rmpp_server, rmpp_client, loaded };
	char name[256], path[300], buf[64];
	struct rmpp_pair r;
	struct pair p;
	int fd, len, ret;

	ret = umad_node(b->argv[1], name) ?: rmpp_open(b, &r, STEPS_RMPP_SEGMENTS) ?:
	      open_pair(b, OUTSTANDING_CLASS, &p) ?:
	      send_gets(&p, &b->to_server, b->umad, STEPS_OUTSTANDING, OUTSTANDING_TIMEOUT_MS);
	if (ret)
		return fail("steps", ret);
	snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/ibdev", name);
	if (dup2(b->client_fd, client) < 0 || dup2(b->server_fd, server) < 0 ||
	    (fd = open("/dev/infiniband", O_RDONLY | O_DIRECTORY)) < 0 ||
	    dup2(fd, dir) < 0 || close(fd) || (fd = open(path, O_RDONLY)) < 0 ||
	    dup2(fd, ibdev) < 0 || close(fd) || dup2(r.server_fd, rmpp_server) < 0 ||
	    dup2(r.client_fd, rmpp_client) < 0 || dup2(p.client_fd, loaded) < 0)
		return fail("steps", errno);
	sleep(STEPS_WAIT_S);
	for (int i = 0; i < STEPS_ROUNDS; i++) {
		ret = umad_register(client, REGISTER_CLASS, 1, 0, get_only);
		if (ret < 0 || (ret = umad_unregister(client, ret)))
			return fail("steps: register", ret);
		address(b, &b->to_server, METHOD_GET, i);
		if (umad_send(client, 31, b->umad, MAD_SIZE, 0, 0) != -EIO)
			return fail("steps: write_eio", EPROTO);
		len = MAD_SIZE;
		ret = umad_send(client, b->client, b->umad, MAD_SIZE, 0, 0) ?:
		      umad_recv(server, b->umad, &len, 5000);
		if (ret != b->server)
			return fail("steps: write", ret < 0 ? ret : EPROTO);
		address_class(b->umad, &b->to_server, p.class, METHOD_GET, next_tid());
		ret = umad_send(loaded, p.client, b->umad, MAD_SIZE, OUTSTANDING_TIMEOUT_MS, 0);
		if (ret)
			return fail("steps: write_outstanding", ret);
		fd = openat(dir, name, O_RDWR);
		if (fd < 0 || dup2(fd, node) < 0 || close(fd) || close(node))
			return fail("steps: open", errno);
		if (pread(ibdev, buf, sizeof(buf), 0) <= 0)
			return fail("steps: sysfs", errno);
		ret = rmpp_transfer(b, &r, rmpp_server, rmpp_client);
		if (ret)
			return ret;
	}
	/* The tracer's end mark; the other descriptors close at exit, in no
	 * system call of their own. */
	close(client);
	return 0;
}

static const struct group {
	const char *name;
	int (*run)(struct bench *b);
} groups[] = {
	{ "round_trip", round_trip },
	{ "flood", flood },
	{ "write_eio", write_eio },
	{ "write_noah", write_noah },
	{ "register", register_unregister },
	{ "open", open_close },
	{ "outstanding", outstanding },
	{ "queued", queued },
	{ "rmpp", rmpp },
	{ "shared", shared },
	{ "steps", steps },
};

/*
 * Whether group is in the comma-separated list (NULL: every group but
 * steps, which measures nothing itself).
 */
static bool chosen(const char *list, const char *group)
{
	size_t n = strlen(group);

	if (!list)
		return strcmp(group, "steps");

	for (const char *at = list; at; at = strchr(at, ',')) {
		at += *at == ',';
		if (!strncmp(at, group, n) && (at[n] == ',' || !at[n]))
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	struct bench b = { .argv = argv };
	int ret;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: umad_bench <client-device> <server-device> [group,...]\n");
		return 2;
	}
	if (umad_init())
		return fail("init", ENOMEM);
	b.client_fd = umad_open_port(argv[1], 1);
	b.server_fd = umad_open_port(argv[2], 1);
	if (b.client_fd < 0 || b.server_fd < 0)
		return fail("open", b.client_fd < 0 ? b.client_fd : b.server_fd);
	/* umad_size() is the header's size once a port is open: before, it
	 * is the old ABI's, 8 bytes short. */
	b.umad = calloc(1, umad_size() + MAD_SIZE);
	if (!b.umad)
		return fail("init", ENOMEM);
	b.server = umad_register(b.server_fd, VENDOR_CLASS, 1, 0, get_only);
	b.client = umad_register(b.client_fd, VENDOR_CLASS, 1, 0, NULL);
	if (b.server < 0 || b.client < 0)
		return fail("register", b.server < 0 ? b.server : b.client);
	ret = port_address(argv[2], &b.to_server) ?: port_address(argv[1], &b.to_client);
	if (ret)
		return fail("address", ret);

	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (chosen(argc == 4 ? argv[3] : NULL, groups[i].name) && groups[i].run(&b))
			return 1;

	umad_close_port(b.client_fd);
	umad_close_port(b.server_fd);
	umad_done();
	free(b.umad);
	return 0;
}
