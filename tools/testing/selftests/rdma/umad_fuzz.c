// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded syscall fuzzer for umad files: several threads issue random
 * sequences of open, close, read, write, poll and the ioctls on the
 * umad nodes, with valid-looking and mutated headers, register requests,
 * lengths and flags, while the pair's server (umad_test.h) is removed and
 * added back. Built 64- and 32-bit (compat ioctls). FUZZ_OPS sets how many
 * operations in all (default 20000), FUZZ_SEED the seed (default: the
 * clock); the seed is printed, so a failure replays.
 *
 * It fails on an errno no umad operation may give, and on a thread that
 * does not return, and no kernel report appears.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

UMAD_NEEDS_PAIR

#define THREADS 4
#define FDS 6
#define BUF 512

struct fuzzer {
	uint64_t state;
	int fds[FDS];
	struct umad_port_addr addrs[2]; /* the client's and the server's ports */
	long ops;
	int unexpected; /* the first errno no operation may give */
	const char *unexpected_op;
	int ops_to_run;
};

static uint64_t next(struct fuzzer *f)
{
	/* xorshift64* */
	f->state ^= f->state >> 12;
	f->state ^= f->state << 25;
	f->state ^= f->state >> 27;
	return f->state * 0x2545f4914f6cdd1dULL;
}

static unsigned int below(struct fuzzer *f, unsigned int n)
{
	return next(f) % n;
}

/*
 * Errnos umad's operations give, on good or bad input, on a device that
 * is there or gone, passing through the MAD layer's (EPROTONOSUPPORT for
 * an RMPP version it does not know) and the IB core's address resolution
 * for RoCE (ENODATA for a GID index with no GID, the network's errnos).
 */
static void check(struct fuzzer *f, const char *op, long ret)
{
	static const int allowed[] = {
		EINVAL, EIO, EAGAIN, EFAULT, ENOSPC, ENOMEM, EPIPE, ENXIO, ENOENT,
		ENOTTY, EBADF, EPERM, ENODEV, EBUSY, EOPNOTSUPP, ETIMEDOUT, EPROTONOSUPPORT,
		ENODATA, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, 0,
	};

	if (ret >= 0)
		return;
	for (const int *e = allowed; *e; e++)
		if (errno == *e)
			return;
	if (!f->unexpected) {
		f->unexpected = errno;
		f->unexpected_op = op;
	}
}

static int *random_fd(struct fuzzer *f)
{
	return &f->fds[below(f, FDS)];
}

static void fuzz_open(struct fuzzer *f)
{
	int *fd = random_fd(f);
	char path[128];

	if (*fd >= 0)
		return;
	if (umad_path(below(f, 2) ? umad_pair()->client : umad_pair()->server, 1, path,
		      sizeof(path)))
		return;
	*fd = open(path, O_RDWR | (below(f, 2) ? O_NONBLOCK : 0));
	check(f, "open", *fd);
}

static void fuzz_close(struct fuzzer *f)
{
	int *fd = random_fd(f);

	if (*fd < 0)
		return;
	check(f, "close", close(*fd));
	*fd = -1;
}

static void fuzz_read(struct fuzzer *f)
{
	static __thread __u8 buf[BUF];
	int fd = *random_fd(f);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd < 0)
		return;
	/* Only what is there: a blocking read of an empty queue would wait. */
	if (poll(&p, 1, 0) != 1)
		return;
	check(f, "read", read(fd, below(f, 16) ? buf : NULL, below(f, BUF)));
}

static void fuzz_write(struct fuzzer *f)
{
	static __thread __u8 buf[BUF];
	static const __u8 classes[] = { 0x0a, 0x0b, 0x03, 0x04, 0x30, 0x81, 0x01 };
	static const __u8 methods[] = { 0x01, 0x81, 0x02, 0x06, 0x07 };
	int fd = *random_fd(f);
	struct ib_user_mad *umad = (void *)buf;
	size_t len = below(f, 4) ? 64 + 256 : below(f, BUF);
	__u8 *mad = buf + 64;

	if (fd < 0)
		return;
	for (size_t i = 0; i < sizeof(buf); i += 8)
		*(uint64_t *)(buf + i) = next(f);
	if (below(f, 4)) {
		/* Valid-looking: an agent id, addressing, a MAD header. */
		const struct umad_port_addr *to;

		umad->hdr.id = below(f, 4);
		umad->hdr.status = 0;
		umad->hdr.timeout_ms = below(f, 3) ? 0 : below(f, 50);
		umad->hdr.retries = below(f, 3);
		umad->hdr.qpn = htonl(below(f, 3));
		umad->hdr.qkey = htonl(0x80010000);
		umad->hdr.grh_present = below(f, 8) != 0;
		umad->hdr.gid_index = below(f, 2);
		umad->hdr.hop_limit = 64;
		/* The port's LID, which IB routes by, or a random one. */
		to = &f->addrs[below(f, 2)];
		if (below(f, 2))
			umad->hdr.lid = htons(to->lid);
		memcpy(umad->hdr.gid, to->gid, 16);
		mad[0] = 1;
		mad[1] = classes[below(f, ARRAY_SIZE(classes))];
		mad[2] = 1 + below(f, 2);
		mad[3] = methods[below(f, ARRAY_SIZE(methods))];
	}
	check(f, "write", write(fd, buf, len));
}

static void fuzz_poll(struct fuzzer *f)
{
	struct pollfd p = { .fd = *random_fd(f), .events = POLLIN | POLLOUT };

	if (p.fd >= 0)
		check(f, "poll", poll(&p, 1, 0));
}

static void fuzz_ioctl(struct fuzzer *f)
{
	int fd = *random_fd(f);
	union {
		struct ib_user_mad_reg_req v1;
		struct ib_user_mad_reg_req2 v2;
		__u32 id;
		__u8 raw[128];
	} req;

	if (fd < 0)
		return;
	for (size_t i = 0; i < sizeof(req); i += 8)
		*(uint64_t *)(req.raw + i) = next(f);
	switch (below(f, 6)) {
	case 0:
		req.v1.qpn = below(f, 3);
		req.v1.mgmt_class = below(f, 2) ? 0x0a + below(f, 3) : below(f, 256);
		req.v1.rmpp_version = below(f, 3);
		check(f, "REGISTER_AGENT", ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req.v1));
		break;
	case 1:
		req.v2.qpn = below(f, 3);
		req.v2.mgmt_class = below(f, 2) ? 0x0a + below(f, 3) : below(f, 256);
		req.v2.flags = below(f, 2) ? 0 : 1u << below(f, 32);
		req.v2.oui = below(f, 2) ? 0x001405 : (__u32)next(f);
		req.v2.rmpp_version = below(f, 3);
		check(f, "REGISTER_AGENT2", ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req.v2));
		break;
	case 2:
		req.id = below(f, 4) ? below(f, 33) : (__u32)next(f);
		check(f, "UNREGISTER_AGENT", ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &req.id));
		break;
	case 3:
		check(f, "ENABLE_PKEY", ioctl(fd, IB_USER_MAD_ENABLE_PKEY));
		break;
	case 4:
		/* A bad pointer. */
		check(f, "REGISTER_AGENT2", ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, (void *)16));
		break;
	default:
		/* Not umad's. */
		check(f, "unknown", ioctl(fd, _IOWR(0x1b, 5 + below(f, 10), __u32), &req));
		break;
	}
}

static void *fuzz(void *arg)
{
	static void (*const ops[])(struct fuzzer *) = {
		fuzz_open, fuzz_close, fuzz_read, fuzz_write, fuzz_write, fuzz_poll,
		fuzz_ioctl, fuzz_ioctl,
	};
	struct fuzzer *f = arg;

	for (; f->ops < f->ops_to_run; f->ops++)
		ops[below(f, ARRAY_SIZE(ops))](f);
	for (int i = 0; i < FDS; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	return NULL;
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

/*
 * A long run (10^6 operations take most of an hour under KASAN and emulation) is
 * bounded by the runner's limit for the program, not here.
 */
TEST_F_TIMEOUT(fuzz, random_operations_while_devices_come_and_go, 4 * 3600)
{
	const char *ops_env = getenv("FUZZ_OPS"), *seed_env = getenv("FUZZ_SEED");
	long total = ops_env && *ops_env ? atol(ops_env) : 20000;
	uint64_t seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL);
	struct fuzzer f[THREADS];
	pthread_t threads[THREADS];
	struct timespec start, end;
	long done = 0;
	int removals = 0;
	double secs;

	ksft_print_msg("FUZZ_SEED=%llu FUZZ_OPS=%ld\n", (unsigned long long)seed, total);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int t = 0; t < THREADS; t++) {
		f[t] = (struct fuzzer){ .state = seed * 2654435761u + t + 1,
					.ops_to_run = total / THREADS };
		for (int i = 0; i < FDS; i++)
			f[t].fds[i] = -1;
		ASSERT_EQ(0, read_port_addr(umad_pair()->client, 1, &f[t].addrs[0]));
		ASSERT_EQ(0, read_port_addr(umad_pair()->server, 1, &f[t].addrs[1]));
		ASSERT_EQ(0, pthread_create(&threads[t], NULL, fuzz, &f[t]));
	}
	/*
	 * Devices go and come back while the fuzzers run, each at a share of
	 * the operations done, not at a time: a slow guest sees the same five.
	 */
	for (;;) {
		long now = 0;

		for (int t = 0; t < THREADS; t++)
			now += f[t].ops;
		if (now >= total - THREADS)
			break;
		usleep(20 * 1000);
		if (removals < 5 && now > (removals + 1) * total / 6) {
			EXPECT_EQ(0, umad_server_remove());
			usleep(50 * 1000);
			EXPECT_EQ(0, umad_server_add());
			removals++;
		}
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		done += f[t].ops;
		EXPECT_EQ(0, f[t].unexpected)
			TH_LOG("thread %d: %s gave %s (FUZZ_SEED=%llu)", t, f[t].unexpected_op,
			       strerror(f[t].unexpected), (unsigned long long)seed);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	secs = end.tv_sec - start.tv_sec + (end.tv_nsec - start.tv_nsec) / 1e9;
	ksft_print_msg("%ld operations, %d removals, %.0f ops/s\n", done, removals, done / secs);
}

TEST_HARNESS_MAIN
