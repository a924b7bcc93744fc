// SPDX-License-Identifier: GPL-2.0
/*
 * Races that need CPUs running at once (run them on two CPUs or more):
 * device removal against every file operation, close and unregister
 * against arrivals, writers against the send handler and timeouts, many
 * files on one port, between the pair's client and server (umad_test.h),
 * the server being the device that goes; the removal soak runs on
 * ib_loopback's iblo1 too, whatever the pair, whose ports have issm nodes.
 * STRESS_CYCLES sets how many removal cycles run (default 20).
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <time.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

UMAD_NEEDS_PAIR

#define HDR 64
#define MAD 256
#define VENDOR1_CLASS 0x0a
#define GET 0x01
#define GET_RESP 0x81
/*
 * How long a worker has to return once told to stop, the removal over: one
 * operation's time, milliseconds however loaded the guest, or a blocked
 * read that the removal must have woken.
 */
#define JOIN_TIMEOUT_S 10

static int open_umad(const char *ibdev, int flags)
{
	char path[128];

	if (umad_path(ibdev, 1, path, sizeof(path)))
		return -ENOENT;
	return open(path, O_RDWR | flags);
}

/* REGISTER_AGENT2 for class and method (none: -1); the id, or -errno. */
static int reg(int fd, int class, int method)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = class, .mgmt_class_version = 1,
	};

	if (method >= 0)
		req.method_mask[0] = 1ULL << method;
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	return req.id;
}

/* Writes a MAD of method to a port with the agent; write's result or -errno. */
static int send_mad(int fd, int agent, const struct umad_port_addr *to, int method,
		    __u64 tid, int timeout_ms)
{
	__u8 buf[HDR + MAD] = { 0 };
	struct ib_user_mad *umad = (void *)buf;
	int ret;

	umad_address(umad, agent, to, timeout_ms, 0);
	umad_common_header(buf + HDR, VENDOR1_CLASS, method, tid);
	ret = write(fd, buf, sizeof(buf));
	return ret < 0 ? -errno : ret;
}

/*
 * Joins thread within JOIN_TIMEOUT_S; false if it is still blocked. On
 * CLOCK_MONOTONIC, which no one sets.
 */
static bool join_in_time(pthread_t thread)
{
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += JOIN_TIMEOUT_S;
	if (pthread_clockjoin_np(thread, NULL, CLOCK_MONOTONIC, &deadline)) {
		pthread_detach(thread);
		return false;
	}
	return true;
}

/* The harness has per-test timeouts only for fixtures. */
FIXTURE(stress) {
	int unused;
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

static int stress_cycles(void)
{
	const char *env = getenv("STRESS_CYCLES");

	return env && *env ? atoi(env) : 20;
}

/* One kind of operation, looped on a file of ibdev's port 1 until stopped. */
struct worker {
	const char *what;
	void *(*fn)(void *arg);
	const char *ibdev;
	const char *node; /* do_opens: the node it opens, umad or issm */
	int fd;
	const struct umad_port_addr *client; /* where writes go */
	atomic_bool stop;
	atomic_int tid; /* do_reads: its thread, for wait_blocked_in() */
	int unexpected; /* an errno the operation may not give, or 0 */
	long done;
};

static void expect_errno(struct worker *w, int err, const int *allowed)
{
	for (; *allowed; allowed++)
		if (err == *allowed)
			return;
	w->unexpected = err;
}

static void *do_reads(void *arg)
{
	static const int allowed[] = { EIO, EAGAIN, 0 };
	struct worker *w = arg;
	__u8 buf[HDR + MAD];
	sigset_t all;

	/*
	 * Blocking: the removal must wake it (EIO). No signal may: the
	 * SIGCHLD of rxe's removal (`rdma`, a child) would interrupt the
	 * read, which restarts and sees the removal, hiding a wait that
	 * ignores it (as in umad_removal).
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	w->tid = gettid();
	while (!w->stop) {
		if (read(w->fd, buf, sizeof(buf)) < 0) {
			expect_errno(w, errno, allowed);
			if (errno == EIO)
				break;
		}
		w->done++;
	}
	return NULL;
}

static void *do_polls(void *arg)
{
	struct worker *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };

	while (!w->stop) {
		if (poll(&p, 1, 20) < 0)
			w->unexpected = errno;
		if (p.revents & POLLERR)
			break;
		w->done++;
	}
	return NULL;
}

static void *do_writes(void *arg)
{
	static const int allowed[] = { EIO, EINVAL, 0 };
	/* The device may go before this thread registers: EPIPE, as C. */
	static const int reg_allowed[] = { EPIPE, 0 };
	struct worker *w = arg;
	int agent = reg(w->fd, 0, -1);

	if (agent < 0) {
		expect_errno(w, -agent, reg_allowed);
		return NULL;
	}
	for (__u64 tid = 1; !w->stop; tid++) {
		int ret = send_mad(w->fd, agent, w->client, GET, tid, 0);

		if (ret < 0)
			expect_errno(w, -ret, allowed);
		w->done++;
	}
	return NULL;
}

static void *do_ioctls(void *arg)
{
	static const int allowed[] = { EPIPE, EINVAL, ENOMEM, 0 };
	struct worker *w = arg;

	while (!w->stop) {
		int id = reg(w->fd, 0, -1);

		if (id >= 0 && ioctl(w->fd, IB_USER_MAD_UNREGISTER_AGENT, &id))
			expect_errno(w, errno, allowed);
		else if (id < 0)
			expect_errno(w, -id, allowed);
		if (ioctl(w->fd, IB_USER_MAD_ENABLE_PKEY))
			expect_errno(w, errno, allowed);
		w->done++;
	}
	return NULL;
}

/*
 * Opens and closes ibdev's <node>N: umad, or issm, which takes the port's
 * IsSM bit and gives it back.
 */
static void *do_opens(void *arg)
{
	static const int allowed[] = { ENOENT, ENXIO, ENODEV, 0 };
	struct worker *w = arg;
	char path[128];

	while (!w->stop) {
		int fd = -ENOENT;

		if (!mad_node_path(w->node, w->ibdev, 1, path, sizeof(path)))
			fd = open(path, O_RDWR);
		if (fd < 0)
			expect_errno(w, fd == -ENOENT ? ENOENT : errno, allowed);
		else if (close(fd))
			w->unexpected = errno;
		w->done++;
	}
	return NULL;
}

/* A device whose port 1 goes and comes back while the workers use it. */
struct removable {
	const char *ibdev;
	const char *client; /* the device whose port 1 the writes go to */
	bool ib;	    /* IB link layer: port 1 has an issm node */
	int (*remove)(void);
	int (*add)(void);
};

static int loopback_remove(void)
{
	return loopback_remove_device("iblo1");
}

static int loopback_add(void)
{
	return loopback_add_device("2");
}

FIXTURE(soak) {
	struct removable dev;
	bool loaded_here;
};

/* The device that goes: the pair's server, or ib_loopback's iblo1. */
FIXTURE_VARIANT(soak) {
	bool loopback;
};

FIXTURE_VARIANT_ADD(soak, pair) {
	.loopback = false,
};

/* iblo1, ib_loopback loaded here where the pair is soft-RoCE's. */
FIXTURE_VARIANT_ADD(soak, ib_loopback) {
	.loopback = true,
};

FIXTURE_SETUP(soak)
{
	const struct umad_pair *pair;

	if (variant->loopback) {
		if (access(SYS_IB_CLASS "/iblo0", F_OK)) {
			if (!loopback_available())
				SKIP(return,
				     "no ib_loopback, the test HCA (CONFIG_INFINIBAND_LOOPBACK)");
			ASSERT_EQ(0, LOOPBACK_LOAD(LOOPBACK_PAIR_PARAMS));
			self->loaded_here = true;
		}
		self->dev = (struct removable){
			.ibdev = "iblo1", .client = "iblo0", .ib = true,
			.remove = loopback_remove, .add = loopback_add,
		};
		return;
	}
	pair = umad_pair();
	if (pair->ib)
		SKIP(return, "the pair is ib_loopback's: the ib_loopback variant soaks its iblo1");
	self->dev = (struct removable){
		.ibdev = pair->server, .client = pair->client,
		.remove = umad_server_remove, .add = umad_server_add,
	};
}

FIXTURE_TEARDOWN(soak)
{
	if (self->loaded_here)
		EXPECT_EQ(0, system("rmmod ib_loopback"));
}

/*
 * The device goes (and comes back) while other CPUs read, poll, write,
 * register, unregister, open and close its umad node, and open and close
 * its issm node where it has one: every operation fails with its errno,
 * every thread returns, and the next cycle starts clean.
 */
TEST_F_TIMEOUT(soak, removal_races_every_operation, 3600)
{
	struct worker workers[] = {
		{ .what = "read", .fn = do_reads },
		{ .what = "poll", .fn = do_polls },
		{ .what = "write", .fn = do_writes },
		{ .what = "ioctl", .fn = do_ioctls },
		{ .what = "open/close", .fn = do_opens, .node = "umad" },
		{ .what = "issm open/close", .fn = do_opens, .node = "issm" },
	};
	struct worker *reader = &workers[0];
	const struct removable *dev = &self->dev;
	const int n = ARRAY_SIZE(workers) - !dev->ib;
	int cycles = stress_cycles();
	struct umad_port_addr client;
	pthread_t threads[n];

	ASSERT_EQ(0, read_port_addr(dev->client, 1, &client));
	for (int c = 0; c < cycles; c++) {
		for (int i = 0; i < n; i++) {
			struct worker *w = &workers[i];

			w->ibdev = dev->ibdev;
			w->client = &client;
			w->stop = false;
			w->tid = 0;
			w->unexpected = 0;
			w->done = 0;
			w->fd = open_umad(dev->ibdev, 0);
			ASSERT_LE(0, w->fd);
			if (w->fn == do_reads || w->fn == do_polls)
				ASSERT_LE(0, reg(w->fd, VENDOR1_CLASS + i, GET));
			ASSERT_EQ(0, pthread_create(&threads[i], NULL, w->fn, w));
		}
		/*
		 * The reader waits for a MAD that never comes (none is sent to
		 * its class): once asleep in read(), it stays there until the
		 * removal, which must wake it. Where in the other workers'
		 * loops the removal falls, and how long they meet the dead
		 * device before they stop: varied or brief, no verdict rests
		 * on either.
		 */
		ASSERT_TRUE(wait_blocked_in(&reader->tid, __NR_read))
			TH_LOG("cycle %d: the read never blocked", c);
		usleep(1000 * (c % 7) * 3);
		ASSERT_EQ(0, dev->remove());
		usleep(20 * 1000);
		for (int i = 0; i < n; i++)
			workers[i].stop = true;
		for (int i = 0; i < n; i++) {
			struct worker *w = &workers[i];

			EXPECT_TRUE(join_in_time(threads[i]))
				TH_LOG("cycle %d: %s still blocked %d s after the removal", c,
				       w->what, JOIN_TIMEOUT_S);
			EXPECT_EQ(0, w->unexpected)
				TH_LOG("cycle %d: %s: %s", c, w->what, strerror(w->unexpected));
			EXPECT_EQ(0, close(w->fd));
		}
		ASSERT_EQ(0, dev->add());
		if (_metadata->exit_code)
			break;
	}
	TH_LOG("%d removal cycles of %s", cycles, dev->ibdev);
}

/* Floods the server's class VENDOR1_CLASS with GETs from the client until stopped. */
struct flood {
	int fd, agent;
	struct umad_port_addr server;
	atomic_bool stop;
	int failed; /* a write's errno, or 0 */
	long sent;
};

static void *flood(void *arg)
{
	struct flood *f = arg;

	for (__u64 tid = 1; !f->stop; tid++) {
		int ret = send_mad(f->fd, f->agent, &f->server, GET, tid, 0);

		if (ret < 0)
			f->failed = -ret;
		else
			f->sent++;
	}
	return NULL;
}

static void start_flood(struct __test_metadata *_metadata, struct flood *f,
			pthread_t *thread)
{
	f->fd = open_umad(umad_pair()->client, 0);
	ASSERT_LE(0, f->fd);
	f->agent = reg(f->fd, 0, -1);
	ASSERT_LE(0, f->agent);
	ASSERT_EQ(0, read_port_addr(umad_pair()->server, 1, &f->server));
	ASSERT_EQ(0, pthread_create(thread, NULL, flood, f));
}

static void stop_flood(struct __test_metadata *_metadata, struct flood *f,
		       pthread_t thread)
{
	f->stop = true;
	pthread_join(thread, NULL);
	EXPECT_EQ(0, f->failed) TH_LOG("flood: %s", strerror(f->failed));
	EXPECT_LT(0, f->sent);
	close(f->fd);
}

/* Server files come and go while MADs for their class arrive. */
TEST_F_TIMEOUT(stress, close_races_arrivals, 300)
{
	struct flood f = { 0 };
	pthread_t thread;

	start_flood(_metadata, &f, &thread);
	for (int i = 0; i < 200; i++) {
		int fd = open_umad(umad_pair()->server, 0);
		__u8 buf[HDR + MAD];

		ASSERT_LE(0, fd);
		ASSERT_LE(0, reg(fd, VENDOR1_CLASS, GET));
		ASSERT_EQ(0, fcntl(fd, F_SETFL, O_NONBLOCK));
		for (int r = 0; r < i % 5; r++)
			read(fd, buf, sizeof(buf));
		/* Varies how many arrive before the close; no verdict rests on it. */
		usleep(200 * (i % 10));
		ASSERT_EQ(0, close(fd));
	}
	stop_flood(_metadata, &f, thread);
}

/* One server file registers and unregisters while MADs arrive. */
TEST_F_TIMEOUT(stress, unregister_races_arrivals, 300)
{
	struct flood f = { 0 };
	pthread_t thread;
	int fd;

	fd = open_umad(umad_pair()->server, 0);
	ASSERT_LE(0, fd);
	start_flood(_metadata, &f, &thread);
	for (int i = 0; i < 500; i++) {
		int id = reg(fd, VENDOR1_CLASS, GET);

		ASSERT_LE(0, id);
		/* Varies how many arrive before the unregister; nor on this. */
		usleep(100 * (i % 10));
		ASSERT_EQ(0, ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
	}
	stop_flood(_metadata, &f, thread);
	EXPECT_EQ(0, close(fd));
}

#define FILES 16
#define PER_FILE 20

/* Answers every GET on its file until stopped. */
struct answerer {
	int fd, agent;
	struct umad_port_addr client;
	atomic_bool stop;
	int failed;
};

static void *answer(void *arg)
{
	struct answerer *a = arg;
	struct pollfd p = { .fd = a->fd, .events = POLLIN };
	__u8 buf[HDR + MAD];

	while (!a->stop) {
		__u64 tid = 0;

		if (poll(&p, 1, 50) != 1)
			continue;
		if (read(a->fd, buf, sizeof(buf)) != sizeof(buf)) {
			a->failed = errno;
			continue;
		}
		for (int i = 0; i < 8; i++)
			tid = tid << 8 | buf[HDR + 8 + i];
		if (send_mad(a->fd, a->agent, &a->client, GET_RESP, tid, 0) < 0)
			a->failed = errno;
	}
	return NULL;
}

struct requester {
	int fd, agent, index;
	struct umad_port_addr server;
	int answered, failed;
};

/* Sends PER_FILE requests and reads the answers, each to its own file. */
static void *request(void *arg)
{
	struct requester *r = arg;
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	__u8 buf[HDR + MAD];

	for (int i = 0; i < PER_FILE; i++) {
		__u64 tid = (__u64)r->index << 16 | i;

		/* Generous times: this is about where answers go, not when. */
		if (send_mad(r->fd, r->agent, &r->server, GET, tid, 30000) < 0) {
			r->failed = errno;
			return NULL;
		}
		if (poll(&p, 1, 60000) != 1 || read(r->fd, buf, sizeof(buf)) != sizeof(buf)) {
			r->failed = ETIMEDOUT;
			return NULL;
		}
		if (buf[HDR + 3] == GET_RESP && buf[HDR + 15] == i &&
		    buf[HDR + 13] == r->index)
			r->answered++;
	}
	return NULL;
}

/*
 * Sixteen files on one port, each with its requests outstanding at once:
 * every answer reaches the file that asked.
 */
TEST_F_TIMEOUT(stress, many_files_on_one_port, 300)
{
	struct answerer a = { 0 };
	struct requester r[FILES];
	pthread_t server, threads[FILES];

	a.fd = open_umad(umad_pair()->server, 0);
	ASSERT_LE(0, a.fd);
	a.agent = reg(a.fd, VENDOR1_CLASS, GET);
	ASSERT_LE(0, a.agent);
	ASSERT_EQ(0, read_port_addr(umad_pair()->client, 1, &a.client));
	ASSERT_EQ(0, pthread_create(&server, NULL, answer, &a));
	for (int i = 0; i < FILES; i++) {
		r[i] = (struct requester){ .index = i };
		ASSERT_EQ(0, read_port_addr(umad_pair()->server, 1, &r[i].server));
		r[i].fd = open_umad(umad_pair()->client, 0);
		ASSERT_LE(0, r[i].fd);
		r[i].agent = reg(r[i].fd, 0, -1);
		ASSERT_LE(0, r[i].agent);
	}
	for (int i = 0; i < FILES; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, request, &r[i]));
	for (int i = 0; i < FILES; i++) {
		pthread_join(threads[i], NULL);
		EXPECT_EQ(0, r[i].failed) TH_LOG("file %d: %s", i, strerror(r[i].failed));
		EXPECT_EQ(PER_FILE, r[i].answered) TH_LOG("file %d", i);
		close(r[i].fd);
	}
	a.stop = true;
	pthread_join(server, NULL);
	EXPECT_EQ(0, a.failed);
	close(a.fd);
}

#define WRITERS 4
#define PER_WRITER 50

struct timed_writer {
	int fd, agent, index;
	struct umad_port_addr server;
	int failed;
};

static void *write_unanswered(void *arg)
{
	struct timed_writer *w = arg;

	for (int i = 0; i < PER_WRITER; i++)
		if (send_mad(w->fd, w->agent, &w->server, GET,
			     (__u64)w->index << 16 | i, 20) < 0)
			w->failed = errno;
	return NULL;
}

/*
 * Writers on one file race the send handler: their requests time out
 * (the server registered the class and never answers) while others are
 * still being written; one timeout report comes back for each.
 */
TEST_F_TIMEOUT(stress, writers_race_the_send_handler_and_timeouts, 300)
{
	struct timed_writer w[WRITERS];
	pthread_t threads[WRITERS];
	struct pollfd p;
	int server, client, agent, reports = 0;
	__u8 buf[HDR + MAD];
	struct ib_user_mad *umad = (void *)buf;

	server = open_umad(umad_pair()->server, 0);
	ASSERT_LE(0, server);
	ASSERT_LE(0, reg(server, VENDOR1_CLASS, GET));
	client = open_umad(umad_pair()->client, 0);
	ASSERT_LE(0, client);
	agent = reg(client, 0, -1);
	ASSERT_LE(0, agent);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct timed_writer){ .fd = client, .agent = agent, .index = i };
		ASSERT_EQ(0, read_port_addr(umad_pair()->server, 1, &w[i].server));
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, write_unanswered, &w[i]));
	}
	/*
	 * A report comes 20 ms after its request went; the writers' next
	 * requests follow within milliseconds. Five seconds without one is a
	 * report lost, on any guest.
	 */
	p = (struct pollfd){ .fd = client, .events = POLLIN };
	while (reports < WRITERS * PER_WRITER && poll(&p, 1, 5000) == 1) {
		/* A report is the header and the sent MAD's common header. */
		ASSERT_EQ(HDR + 24, read(client, buf, sizeof(buf)));
		EXPECT_EQ((__u32)ETIMEDOUT, umad->hdr.status);
		reports++;
	}
	for (int i = 0; i < WRITERS; i++) {
		pthread_join(threads[i], NULL);
		EXPECT_EQ(0, w[i].failed) TH_LOG("writer %d: %s", i, strerror(w[i].failed));
	}
	EXPECT_EQ(WRITERS * PER_WRITER, reports);
	close(client);
	close(server);
}

TEST_HARNESS_MAIN
