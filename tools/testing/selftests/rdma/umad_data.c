// SPDX-License-Identifier: GPL-2.0
/*
 * Moving MADs through umad between the pair's client and server
 * (umad_test.h) with the raw ABI: the TID rewrite, timeout reports, the
 * duplicate-TID rule, the write checks (CVE-2026-23243's short writes, the
 * 256-byte limit), kernel RMPP responses of 1 to 100 segments reassembled
 * (and ENOSPC with the length for a short buffer), both header layouts,
 * poll readiness and a blocking read woken by an arrival.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <time.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

UMAD_NEEDS_PAIR

#define NEW_HDR 64
#define OLD_HDR 56
#define MAD 256
#define VENDOR1_CLASS 0x0a /* no RMPP */
#define VENDOR2_CLASS 0x30 /* vendor range 2: OUI, kernel RMPP */
#define OUI 0x001405
#define GET 0x01
#define GET_RESP 0x81
#define RMPP_DATA 216 /* 256 - the vendor header (40) */

struct end {
	int fd;
	__u32 agent;
	struct umad_port_addr addr; /* of this end's port */
};

static int reg_flags(struct end *e, int class, int method, int rmpp, __u32 flags)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = class, .mgmt_class_version = 1,
		.oui = class >= 0x30 ? OUI : 0, .rmpp_version = rmpp, .flags = flags,
	};

	if (method >= 0)
		req.method_mask[method / 64] |= 1ULL << (method % 64);
	if (ioctl(e->fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	e->agent = req.id;
	return 0;
}

static int reg(struct end *e, int class, int method, int rmpp, bool old_abi)
{
	if (old_abi) {
		struct ib_user_mad_reg_req req = {
			.qpn = 1, .mgmt_class = class, .mgmt_class_version = 1,
			.rmpp_version = rmpp,
		};

		if (method >= 0)
			req.method_mask[method / (8 * sizeof(long))] |=
				1UL << (method % (8 * sizeof(long)));
		if (ioctl(e->fd, IB_USER_MAD_REGISTER_AGENT, &req))
			return -errno;
		e->agent = req.id;
		return 0;
	}
	return reg_flags(e, class, method, rmpp, 0);
}

static int open_end(struct end *e, const char *ibdev)
{
	char path[128];

	if (umad_path(ibdev, 1, path, sizeof(path)) || read_port_addr(ibdev, 1, &e->addr))
		return -1;
	e->fd = open(path, O_RDWR);
	return e->fd < 0 ? -1 : 0;
}

/* A MAD's common header; vendor range 2 classes get the OUI too. */
static void mad_header(__u8 *mad, int class, int method, __u64 tid)
{
	memset(mad, 0, 40);
	umad_common_header(mad, class, method, tid);
	mad[16] = 0xff; /* attribute 0xff10, nobody's */
	mad[17] = 0x10;
	if (class >= 0x30 && class <= 0x4f) {
		mad[37] = OUI >> 16;
		mad[38] = OUI >> 8;
		mad[39] = OUI & 0xff;
	}
}

static __u64 mad_tid(const __u8 *mad)
{
	__u64 tid = 0;

	for (int i = 0; i < 8; i++)
		tid = tid << 8 | mad[8 + i];
	return tid;
}

/* Writes hdr (new layout) + mad[len] to the port to; returns write's result or -errno. */
static ssize_t send_to(struct end *from, const struct umad_port_addr *to, const __u8 *mad,
		       size_t len, int timeout_ms, int retries)
{
	/* Per thread: writers share files, not buffers. */
	static __thread __u8 buf[NEW_HDR + 64 * 1024];
	struct ib_user_mad *umad = (void *)buf;
	ssize_t ret;

	memset(umad, 0, NEW_HDR);
	umad_address(umad, from->agent, to, timeout_ms, retries);
	memcpy(buf + NEW_HDR, mad, len);
	ret = write(from->fd, buf, NEW_HDR + len);
	return ret < 0 ? -errno : ret;
}

/*
 * Waits up to ms for something to read, then reads it; -errno on error.
 * The tests give an arrival 5 or 10 s, and a reassembled RMPP message of
 * up to 100 segments 30 s, which only a lost MAD runs out: a MAD crosses
 * the pair (rxe's UDP path or ib_loopback's workqueue) in milliseconds,
 * and in well under a second on the slowest guest, loaded.
 */
static ssize_t recv_within(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t ret;

	if (poll(&p, 1, ms) != 1)
		return -ETIMEDOUT;
	ret = read(fd, buf, len);
	return ret < 0 ? -errno : ret;
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

/*
 * How long a wait for arrivals goes on without one: a MAD takes
 * milliseconds, so only a lost one takes that long, however slow the guest.
 */
#define STALL_MS 20000

FIXTURE(data) {
	struct end client, server;
	__u8 buf[NEW_HDR + 64 * 1024];
};

FIXTURE_SETUP(data)
{
	ASSERT_EQ(0, open_end(&self->client, umad_pair()->client));
	ASSERT_EQ(0, open_end(&self->server, umad_pair()->server));
}

FIXTURE_TEARDOWN(data)
{
	close(self->client.fd);
	close(self->server.fd);
}

/* The server reads the client's GET; returns its TID as received. */
static __u64 serve_request(struct __test_metadata *_metadata, struct _test_data_data *self)
{
	struct ib_user_mad *umad = (void *)self->buf;
	ssize_t n = recv_within(self->server.fd, self->buf, sizeof(self->buf), 5000);

	EXPECT_EQ(NEW_HDR + MAD, n);
	EXPECT_EQ(0U, umad->hdr.status);
	EXPECT_EQ(self->server.agent, umad->hdr.id);
	EXPECT_EQ((__u32)(NEW_HDR + MAD), umad->hdr.length);
	EXPECT_EQ(1U, ntohl(umad->hdr.qpn));
	EXPECT_EQ(1, umad->hdr.grh_present);
	EXPECT_EQ(0, memcmp(umad->hdr.gid, self->client.addr.gid, 16));
	EXPECT_EQ(GET, self->buf[NEW_HDR + 3]);
	return mad_tid(self->buf + NEW_HDR);
}

/*
 * The server reads the client's GETs of TIDs 1 to count, in any order, each
 * once: what a test sent is off the wire before the next test registers an
 * agent of its class.
 */
static void serve_requests(struct __test_metadata *_metadata, struct _test_data_data *self,
			   unsigned int count)
{
	static bool seen[1024];

	ASSERT_LE(count, ARRAY_SIZE(seen));
	memset(seen, 0, sizeof(seen));
	for (unsigned int n = 0; n < count; n++) {
		/* The low word: the high one is the client agent's. */
		__u32 tid = (__u32)serve_request(_metadata, self);

		ASSERT_TRUE(tid >= 1 && tid <= count && !seen[tid - 1])
			TH_LOG("request %u of %u: TID %u", n + 1, count, tid);
		seen[tid - 1] = true;
	}
}

TEST_F(data, a_request_keeps_its_tid_low_word_and_gets_the_agents_high_word)
{
	__u8 mad[MAD];
	__u64 seen;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	mad_header(mad, VENDOR1_CLASS, GET, 0x1122334455667788ULL);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 2000, 0));
	seen = serve_request(_metadata, self);
	EXPECT_EQ(0x55667788ULL, seen & 0xffffffff);
	EXPECT_NE(0x11223344ULL, seen >> 32);
	/* The response, with the TID as seen, reaches the client. */
	mad_header(mad, VENDOR1_CLASS, GET_RESP, seen);
	mad[100] = 0x5a;
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->server, &self->client.addr, mad, MAD, 0, 0));
	ASSERT_EQ(NEW_HDR + MAD, recv_within(self->client.fd, self->buf, sizeof(self->buf), 5000));
	EXPECT_EQ(GET_RESP, self->buf[NEW_HDR + 3]);
	EXPECT_EQ(seen, mad_tid(self->buf + NEW_HDR));
	EXPECT_EQ(0x5a, self->buf[NEW_HDR + 100]);
}

TEST_F(data, an_unanswered_request_is_reported_as_timed_out)
{
	struct ib_user_mad *umad = (void *)self->buf;
	struct timespec start;
	__u8 mad[MAD];
	__u64 seen;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	mad_header(mad, VENDOR1_CLASS, GET, 0xabcd0042);
	jiffies_clock(&start);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 200, 1));
	seen = serve_request(_metadata, self); /* and stays silent */
	/* The resend reaches the server too. */
	EXPECT_EQ(seen, serve_request(_metadata, self));
	ASSERT_EQ(NEW_HDR + 24, recv_within(self->client.fd, self->buf, sizeof(self->buf), 5000));
	/* A lower bound, on the clock the MAD layer's timers run on. */
	EXPECT_LE(400, jiffies_waited_ms(&start)) TH_LOG("timeout_ms x (retries + 1) not waited");
	EXPECT_EQ((__u32)ETIMEDOUT, umad->hdr.status);
	EXPECT_EQ(self->client.agent, umad->hdr.id);
	EXPECT_EQ(200U, umad->hdr.timeout_ms);
	EXPECT_EQ(1U, umad->hdr.retries);
	EXPECT_EQ(seen, mad_tid(self->buf + NEW_HDR));
	EXPECT_EQ(0, memcmp(self->buf + NEW_HDR, mad, 8));
	/*
	 * A report needs header + 24 bytes: less is EINVAL, and it stays. The
	 * read blocks until the report is there, however late it comes.
	 */
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 100, 0));
	serve_request(_metadata, self);
	usleep(300 * 1000);
	EXPECT_EQ(-1, read(self->client.fd, self->buf, NEW_HDR + 23));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NEW_HDR + 24, read(self->client.fd, self->buf, NEW_HDR + 24));
}

/*
 * Longer than a test may run (the harness's limit, 180 s): requests that
 * are to stay outstanding do, however slow the guest.
 */
#define OUTSTANDING_MS 600000

TEST_F(data, a_duplicate_outstanding_tid_is_refused)
{
	struct ib_user_mad *umad = (void *)self->buf;
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	/* TID 7 stays outstanding for the test (closing ends it). */
	mad_header(mad, VENDOR1_CLASS, GET, 7);
	ASSERT_EQ(NEW_HDR + MAD,
		  send_to(&self->client, &self->server.addr, mad, MAD, OUTSTANDING_MS, 0));
	EXPECT_EQ(-EINVAL, send_to(&self->client, &self->server.addr, mad, MAD, 300, 0));
	/* Another TID is fine. */
	mad_header(mad, VENDOR1_CLASS, GET, 8);
	EXPECT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 300, 0));
	/* Once it is over (timed out), its TID is free again. */
	ASSERT_EQ(NEW_HDR + 24, recv_within(self->client.fd, self->buf, sizeof(self->buf), 5000));
	EXPECT_EQ((__u32)ETIMEDOUT, umad->hdr.status);
	EXPECT_EQ(8U, mad_tid(self->buf + NEW_HDR) & 0xffffffff);
	EXPECT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 300, 0));
	/* The server got 7 and 8 twice, whatever the order; nothing else. */
	for (int n = 0, sevens = 0; n < 3; n++) {
		__u32 tid = (__u32)serve_request(_metadata, self);

		ASSERT_TRUE(tid == 8 || (tid == 7 && !sevens++))
			TH_LOG("request %d: TID %u", n + 1, tid);
	}
}

/* With hundreds outstanding (the table grows), the rule still holds. */
TEST_F(data, the_duplicate_check_holds_with_hundreds_outstanding)
{
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	for (__u64 tid = 1; tid <= 600; tid++) {
		mad_header(mad, VENDOR1_CLASS, GET, tid);
		ASSERT_EQ(NEW_HDR + MAD,
			  send_to(&self->client, &self->server.addr, mad, MAD, OUTSTANDING_MS, 0))
			TH_LOG("TID %llu", (unsigned long long)tid);
	}
	for (__u64 tid = 1; tid <= 600; tid += 37) {
		mad_header(mad, VENDOR1_CLASS, GET, tid);
		EXPECT_EQ(-EINVAL,
			  send_to(&self->client, &self->server.addr, mad, MAD, OUTSTANDING_MS, 0))
			TH_LOG("TID %llu", (unsigned long long)tid);
	}
	mad_header(mad, VENDOR1_CLASS, GET, 601);
	EXPECT_EQ(NEW_HDR + MAD,
		  send_to(&self->client, &self->server.addr, mad, MAD, OUTSTANDING_MS, 0));
	/*
	 * Each of the 601 reaches the server once, and none is left on the
	 * wire for a later test's agent of the class. Closing with them all
	 * outstanding is the fixture's teardown.
	 */
	serve_requests(_metadata, self, 601);
}

TEST_F(data, writes_too_short_for_the_class_header_are_refused)
{
	struct ib_user_mad *umad = (void *)self->buf;
	__u8 mad[MAD] = { 0 };

	ASSERT_EQ(0, reg(&self->client, 0, -1, 0, false));
	mad_header(mad, 0x03, GET, 1); /* SA: 56-byte header */
	for (size_t len = 36; len < 56; len += 5) {
		EXPECT_EQ(-EINVAL, send_to(&self->client, &self->server.addr, mad, len, 0, 0))
			TH_LOG("SA MAD of %zu bytes", len);
	}
	mad_header(mad, 0x06, GET, 1); /* device management: 64 */
	EXPECT_EQ(-EINVAL, send_to(&self->client, &self->server.addr, mad, 63, 0, 0));
	/* A non-RMPP MAD is at most 256 bytes. */
	mad_header(mad, VENDOR1_CLASS, GET, 1);
	EXPECT_EQ(-EINVAL, send_to(&self->client, &self->server.addr, mad, MAD + 1, 0, 0));
	/*
	 * Without a GRH: RoCE needs one, and the write is refused; IB routes
	 * by the LID alone, and the MAD arrives without one, from the
	 * client's LID.
	 */
	memset(self->buf, 0, sizeof(self->buf));
	if (umad_pair()->ib) {
		ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
		umad_address(umad, self->client.agent, &self->server.addr, 0, 0);
		umad->hdr.grh_present = 0;
		memcpy(self->buf + NEW_HDR, mad, MAD);
		ASSERT_EQ(NEW_HDR + MAD, write(self->client.fd, self->buf, NEW_HDR + MAD));
		ASSERT_EQ(NEW_HDR + MAD,
			  recv_within(self->server.fd, self->buf, sizeof(self->buf), 5000));
		EXPECT_EQ(0, umad->hdr.grh_present);
		EXPECT_EQ(self->client.addr.lid, ntohs(umad->hdr.lid));
	} else {
		umad->hdr.id = self->client.agent;
		umad->hdr.qpn = htonl(1);
		umad->hdr.lid = htons(1);
		memcpy(self->buf + NEW_HDR, mad, MAD);
		EXPECT_EQ(-1, write(self->client.fd, self->buf, NEW_HDR + MAD));
		EXPECT_EQ(EINVAL, errno);
	}
}

/* The server answers with an RMPP response of len data bytes. */
static void rmpp_response(struct __test_metadata *_metadata, struct _test_data_data *self,
			  __u64 tid, size_t len)
{
	static __u8 mad[40 + 64 * 1024];

	mad_header(mad, VENDOR2_CLASS, GET_RESP, tid);
	mad[24] = 1; /* RMPP version */
	mad[25] = 1; /* DATA */
	mad[26] = 1; /* ACTIVE: the kernel segments it */
	for (size_t i = 0; i < len; i++)
		mad[40 + i] = i * 7 + i / RMPP_DATA;
	ASSERT_EQ((ssize_t)(NEW_HDR + 40 + len),
		  send_to(&self->server, &self->client.addr, mad, 40 + len, 0, 0));
}

TEST_F(data, kernel_rmpp_responses_are_reassembled)
{
	static const int segments[] = { 1, 2, 10, 100 };
	struct ib_user_mad *umad = (void *)self->buf;

	ASSERT_EQ(0, reg(&self->server, VENDOR2_CLASS, GET, 1, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR2_CLASS, -1, 1, false));
	for (size_t s = 0; s < ARRAY_SIZE(segments); s++) {
		size_t len = segments[s] * RMPP_DATA - 10;
		__u8 mad[MAD];
		__u64 tid;
		ssize_t n;

		mad_header(mad, VENDOR2_CLASS, GET, 100 + s);
		ASSERT_EQ(NEW_HDR + MAD,
			  send_to(&self->client, &self->server.addr, mad, MAD, ANSWERED_MS, 0));
		tid = serve_request(_metadata, self);
		rmpp_response(_metadata, self, tid, len);
		if (segments[s] > 1) {
			/* Too small for the message: the header and length come. */
			memset(self->buf, 0, NEW_HDR + MAD);
			n = recv_within(self->client.fd, self->buf, NEW_HDR + MAD, 30000);
			EXPECT_EQ(-ENOSPC, n) TH_LOG("%d segments", segments[s]);
			EXPECT_EQ(NEW_HDR + 40 + len, umad->hdr.length);
			EXPECT_EQ(GET_RESP, self->buf[NEW_HDR + 3]);
		}
		n = recv_within(self->client.fd, self->buf, sizeof(self->buf), 30000);
		ASSERT_EQ((ssize_t)(NEW_HDR + 40 + len), n) TH_LOG("%d segments", segments[s]);
		EXPECT_EQ(tid, mad_tid(self->buf + NEW_HDR));
		for (size_t i = 0; i < len; i++)
			if (self->buf[NEW_HDR + 40 + i] != (__u8)(i * 7 + i / RMPP_DATA)) {
				EXPECT_EQ((__u8)(i * 7 + i / RMPP_DATA),
					  self->buf[NEW_HDR + 40 + i])
					TH_LOG("%d segments: byte %zu", segments[s], i);
				break;
			}
	}
}

TEST_F(data, the_old_header_has_no_pkey_index)
{
	__u8 mad[MAD], *buf = self->buf;
	struct ib_user_mad_hdr_old *old = (void *)buf;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, true));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	mad_header(mad, VENDOR1_CLASS, GET, 0x77);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 100, 0));
	ASSERT_EQ(OLD_HDR + MAD, recv_within(self->server.fd, buf, sizeof(self->buf), 5000));
	EXPECT_EQ((__u32)(OLD_HDR + MAD), old->length);
	EXPECT_EQ(self->server.agent, old->id);
	EXPECT_EQ(GET, buf[OLD_HDR + 3]);
	EXPECT_EQ(0x77U, mad_tid(buf + OLD_HDR) & 0xffffffff);
}

struct blocked_poll {
	struct pollfd p;
	atomic_int tid;
	int n;
};

/*
 * Polls with no timeout: a poll that times out looks at the file once more
 * and would report the arrival even if its wake-up was lost.
 */
static void *poll_blocking(void *arg)
{
	struct blocked_poll *b = arg;

	b->tid = gettid();
	b->n = poll(&b->p, 1, -1);
	return NULL;
}

static void on_signal(int sig)
{
}

/*
 * Joins thread, or gives up after STALL_MS: then a signal (SIGUSR1, whose
 * handler is installed without SA_RESTART) ends the system call it sleeps
 * in, and it is joined. False if it had to be woken that way.
 */
static bool join_within_stall(pthread_t thread)
{
	struct timespec deadline;
	bool joined;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += STALL_MS / 1000;
	joined = !pthread_timedjoin_np(thread, NULL, &deadline);
	if (!joined) {
		pthread_kill(thread, SIGUSR1);
		pthread_join(thread, NULL);
	}
	return joined;
}

/*
 * A poll asleep on the file wakes for an arrival; the file is readable
 * until a read takes the MAD. (An arrival waking a blocked read is
 * an_arrival_wakes_a_blocked_read.)
 */
TEST_F(data, a_blocked_poll_wakes_for_an_arrival)
{
	struct pollfd p = { .fd = -1, .events = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM };
	/* Writable is always true: the poller asks for IN only. */
	struct blocked_poll b = { .p = { .events = POLLIN }, .n = -2 };
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
	pthread_t thread;
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	p.fd = self->server.fd;
	b.p.fd = self->server.fd;
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLOUT | POLLWRNORM, p.revents);
	ASSERT_EQ(0, pthread_create(&thread, NULL, poll_blocking, &b));
	ASSERT_TRUE(wait_blocked_in(&b.tid, NR_POLL)) TH_LOG("the poll never blocked");
	mad_header(mad, VENDOR1_CLASS, GET, 0x99);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 100, 0));
	ASSERT_TRUE(join_within_stall(thread)) TH_LOG("the poll slept through the arrival");
	EXPECT_EQ(1, b.n);
	EXPECT_EQ(POLLIN, b.p.revents);
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM, p.revents);
	EXPECT_EQ(NEW_HDR + MAD, read(self->server.fd, self->buf, sizeof(self->buf)));
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLOUT | POLLWRNORM, p.revents);
}

#define SET 0x02

/*
 * With IB_USER_MAD_USER_RMPP userspace runs RMPP itself: its segments go out
 * and arrive byte for byte, RMPP header included, and segments sharing a
 * TID are not duplicates.
 */
TEST_F(data, user_rmpp_segments_pass_through_verbatim)
{
	__u8 mad[MAD];
	__u32 paylen;

	ASSERT_EQ(0, reg_flags(&self->server, VENDOR2_CLASS, SET, 1, IB_USER_MAD_USER_RMPP));
	ASSERT_EQ(0, reg_flags(&self->client, VENDOR2_CLASS, -1, 1, IB_USER_MAD_USER_RMPP));
	for (int seg = 1; seg <= 2; seg++) {
		mad_header(mad, VENDOR2_CLASS, SET, 0x3000);
		mad[24] = 1; /* RMPP version */
		mad[25] = 1; /* DATA */
		mad[26] = 1 | (seg == 1 ? 2 : 4); /* ACTIVE, FIRST or LAST */
		mad[31] = seg; /* segment number */
		/* Payload length: the whole message's in the first segment. */
		paylen = htonl(seg == 1 ? 2 * RMPP_DATA : RMPP_DATA);
		memcpy(&mad[32], &paylen, sizeof(paylen));
		for (int i = 40; i < MAD; i++)
			mad[i] = i + seg;
		ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0))
			TH_LOG("segment %d", seg);
	}
	for (int seg = 1; seg <= 2; seg++) {
		ASSERT_EQ(NEW_HDR + MAD,
			  recv_within(self->server.fd, self->buf, sizeof(self->buf), 5000))
			TH_LOG("segment %d", seg);
		EXPECT_EQ(1, self->buf[NEW_HDR + 24]);
		EXPECT_EQ(1, self->buf[NEW_HDR + 25]);
		EXPECT_EQ(1 | (seg == 1 ? 2 : 4), self->buf[NEW_HDR + 26] & 7);
		EXPECT_EQ(seg, self->buf[NEW_HDR + 31]);
		EXPECT_EQ(100 + seg, self->buf[NEW_HDR + 100]);
	}
}

#define REPORT 0x06

/*
 * Class 0x04 (performance management) has no RMPP header: bytes 24-35 are
 * data, whatever they say. On IB, the port's PMA answers a Get or Set of
 * it (the device's process_mad, before any agent): there the request is a
 * Report, which no PMA takes.
 */
TEST_F(data, a_class_without_rmpp_is_sent_as_one_mad)
{
	int method = umad_pair()->ib ? REPORT : GET;
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, 0x04, method, 0, false));
	/* Send-only (an RMPP agent may send RMPP classes only). */
	ASSERT_EQ(0, reg(&self->client, 0, -1, 0, false));
	mad_header(mad, 0x04, method, 0x4000);
	mad[24] = 1; /* an RMPP class would take these for version, type, */
	mad[25] = 1;
	mad[26] = 1; /* flags (ACTIVE) */
	mad[27] = 1; /* and status */
	for (int i = 28; i < MAD; i++)
		mad[i] = i;
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
	ASSERT_EQ(NEW_HDR + MAD, recv_within(self->server.fd, self->buf, sizeof(self->buf), 5000));
	EXPECT_EQ(0, memcmp(self->buf + NEW_HDR + 24, mad + 24, MAD - 24));
}

/* A 56-byte header on write, from a file that chose the old layout. */
TEST_F(data, the_old_header_on_write)
{
	__u8 buf[OLD_HDR + MAD] = { 0 };
	struct ib_user_mad_hdr_old *old = (void *)buf;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, true));
	old->id = self->client.agent;
	old->qpn = htonl(1);
	old->qkey = htonl(QP1_QKEY);
	old->grh_present = 1;
	old->hop_limit = 64;
	old->lid = htons(self->server.addr.lid);
	memcpy(old->gid, self->server.addr.gid, 16);
	mad_header(buf + OLD_HDR, VENDOR1_CLASS, GET, 0x5000);
	ASSERT_EQ(OLD_HDR + MAD, write(self->client.fd, buf, sizeof(buf)));
	ASSERT_EQ(NEW_HDR + MAD, recv_within(self->server.fd, self->buf, sizeof(self->buf), 5000));
	EXPECT_EQ(0x5000U, mad_tid(self->buf + NEW_HDR) & 0xffffffff);
}

/*
 * writev() and readv() take one message across the vector's segments, as
 * write() and read() take it from one buffer: here the header in one and
 * the MAD in the other. ib_umad has no write_iter or read_iter, so the VFS
 * hands it each segment as a write or read of its own
 * (do_loop_readv_writev), and a header alone is too short for either: the
 * test is for a driver that has them, and skips on ib_umad.
 */
TEST_F(data, writev_and_readv_take_a_message_across_segments)
{
	struct ib_user_mad sent = { 0 }, got = { 0 };
	__u8 mad[MAD], back[MAD] = { 0 };
	struct iovec out[2] = { { &sent, NEW_HDR }, { mad, MAD } };
	struct iovec in[2] = { { &got, NEW_HDR }, { back, MAD } };
	struct pollfd p = { .fd = self->server.fd, .events = POLLIN };
	const char *module = umad_module();
	ssize_t n;

	ASSERT_NE(NULL, module);
	if (!strcmp(module, "ib_umad"))
		SKIP(return, "ib_umad has no write_iter or read_iter: a segment is a message");
	ASSERT_EQ((size_t)NEW_HDR, sizeof(sent));
	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	umad_address(&sent, self->client.agent, &self->server.addr, 0, 0);
	mad_header(mad, VENDOR1_CLASS, GET, 0x6000);
	mad[100] = 0x5a;
	n = writev(self->client.fd, out, 2);
	ASSERT_EQ(NEW_HDR + MAD, n) TH_LOG("writev: %s", n < 0 ? strerror(errno) : "short");
	ASSERT_EQ(1, poll(&p, 1, 5000));
	n = readv(self->server.fd, in, 2);
	ASSERT_EQ(NEW_HDR + MAD, n) TH_LOG("readv: %s", n < 0 ? strerror(errno) : "short");
	EXPECT_EQ(self->server.agent, got.hdr.id);
	EXPECT_EQ((__u32)(NEW_HDR + MAD), got.hdr.length);
	EXPECT_EQ(GET, back[3]);
	EXPECT_EQ(0x6000U, mad_tid(back) & 0xffffffff);
	EXPECT_EQ(0x5a, back[100]);
}

struct blocked_read {
	int fd;
	atomic_int tid;
	ssize_t n;
	int err; /* read's errno */
	__u8 buf[NEW_HDR + MAD];
};

static void *read_blocking(void *arg)
{
	struct blocked_read *r = arg;

	r->tid = gettid();
	r->n = read(r->fd, r->buf, sizeof(r->buf));
	r->err = errno;
	return NULL;
}

TEST_F(data, an_arrival_wakes_a_blocked_read)
{
	struct blocked_read r = { .n = -2 };
	pthread_t thread;
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	r.fd = self->server.fd;
	ASSERT_EQ(0, pthread_create(&thread, NULL, read_blocking, &r));
	/* A read that began after the arrival would find the MAD there. */
	ASSERT_TRUE(wait_blocked_in(&r.tid, __NR_read)) TH_LOG("the read never blocked");
	mad_header(mad, VENDOR1_CLASS, GET, 0x6000);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
	pthread_join(thread, NULL);
	EXPECT_EQ(NEW_HDR + MAD, r.n);
	EXPECT_EQ(0x6000U, mad_tid(r.buf + NEW_HDR) & 0xffffffff);
}

/*
 * A read that blocks before the file's first registration, which
 * REGISTER_AGENT2 then makes: the MAD that wakes it comes behind the
 * 64-byte header its length counts, as ib_umad takes the header size at
 * the copy.
 */
TEST_F(data, a_read_blocked_before_register_agent2_gets_the_64_byte_header)
{
	struct blocked_read r = { .n = -2 };
	struct ib_user_mad *umad = (void *)r.buf;
	pthread_t thread;
	__u8 mad[MAD];

	r.fd = self->server.fd;
	ASSERT_EQ(0, pthread_create(&thread, NULL, read_blocking, &r));
	/* A read that began after the registration would pass without the case. */
	ASSERT_TRUE(wait_blocked_in(&r.tid, __NR_read)) TH_LOG("the read never blocked");
	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	mad_header(mad, VENDOR1_CLASS, GET, 0x6100);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
	pthread_join(thread, NULL);
	EXPECT_EQ(NEW_HDR + MAD, r.n);
	EXPECT_EQ((__u32)(NEW_HDR + MAD), umad->hdr.length);
	EXPECT_EQ(self->server.agent, umad->hdr.id);
	EXPECT_EQ(GET, r.buf[NEW_HDR + 3]);
	EXPECT_EQ(0x6100U, mad_tid(r.buf + NEW_HDR) & 0xffffffff);
}

#define WRITERS 4
#define PER_WRITER 25

struct shared_fd {
	struct _test_data_data *self;
	int writer;
	int failed;
};

static void *write_requests(void *arg)
{
	struct shared_fd *w = arg;
	__u8 mad[MAD];

	for (int i = 0; i < PER_WRITER; i++) {
		mad_header(mad, VENDOR1_CLASS, GET, w->writer * 1000 + i);
		/* Answered one by one: the last waits for all the others. */
		if (send_to(&w->self->client, &w->self->server.addr, mad, MAD, ANSWERED_MS, 0) !=
		    NEW_HDR + MAD)
			w->failed++;
	}
	return NULL;
}

/* Answers every request it gets, until it has answered n. */
static void *answer_requests(void *arg)
{
	struct shared_fd *s = arg;
	static __u8 buf[NEW_HDR + MAD];

	for (int i = 0; i < WRITERS * PER_WRITER; i++) {
		if (recv_within(s->self->server.fd, buf, sizeof(buf), 10000) != NEW_HDR + MAD) {
			s->failed++;
			break;
		}
		buf[NEW_HDR + 3] = GET_RESP;
		if (send_to(&s->self->server, &s->self->client.addr, buf + NEW_HDR, MAD, 0, 0) !=
		    NEW_HDR + MAD)
			s->failed++;
	}
	return NULL;
}

TEST_F(data, threads_share_one_file)
{
	struct shared_fd writers[WRITERS], server = { .self = self };
	pthread_t threads[WRITERS], answerer;
	bool seen[WRITERS][PER_WRITER] = { { false } };
	__u8 buf[NEW_HDR + MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	ASSERT_EQ(0, pthread_create(&answerer, NULL, answer_requests, &server));
	for (int w = 0; w < WRITERS; w++) {
		writers[w] = (struct shared_fd){ .self = self, .writer = w };
		ASSERT_EQ(0, pthread_create(&threads[w], NULL, write_requests, &writers[w]));
	}
	for (int i = 0; i < WRITERS * PER_WRITER; i++) {
		__u64 tid;

		ASSERT_EQ(NEW_HDR + MAD, recv_within(self->client.fd, buf, sizeof(buf), 10000))
			TH_LOG("response %d", i);
		ASSERT_EQ(GET_RESP, buf[NEW_HDR + 3]);
		tid = mad_tid(buf + NEW_HDR) & 0xffffffff;
		ASSERT_LT(tid / 1000, (__u64)WRITERS);
		ASSERT_LT(tid % 1000, (__u64)PER_WRITER);
		EXPECT_FALSE(seen[tid / 1000][tid % 1000])
			TH_LOG("tid %llu twice", (unsigned long long)tid);
		seen[tid / 1000][tid % 1000] = true;
	}
	for (int w = 0; w < WRITERS; w++) {
		pthread_join(threads[w], NULL);
		EXPECT_EQ(0, writers[w].failed);
	}
	pthread_join(answerer, NULL);
	EXPECT_EQ(0, server.failed);
}

#define SHARED_READS 1000
#define SHARED_WINDOW 64

struct failing_reader {
	int fd;
	void *unwritable;
	int pause_us;
	atomic_bool stop;
	int unexpected; /* an errno other than EFAULT or EAGAIN */
};

/*
 * Reads into a bad buffer until told to stop: each read takes the head of
 * the queue and, failing to copy it, puts it back. It pauses pause_us
 * between reads, as a reader retrying with a bigger buffer would.
 */
static void *read_badly(void *arg)
{
	struct failing_reader *r = arg;

	while (!r->stop) {
		if (read(r->fd, r->unwritable, NEW_HDR + MAD) >= 0)
			r->unexpected = -1;
		else if (errno != EFAULT && errno != EAGAIN)
			r->unexpected = errno;
		if (r->pause_us)
			usleep(r->pause_us);
	}
	return NULL;
}

/*
 * Two readers of one file, one of which keeps failing (as libibumad's
 * ENOSPC-then-retry does): the packet it puts back, and the count of
 * queued packets with it, are back before anyone can see the queue, so
 * arrivals are not dropped by the receive limit and poll does not see a
 * queue that is not there.
 */
TEST_F_TIMEOUT(data, a_failing_reader_sharing_the_file_loses_nothing, 120)
{
	/* The pause keeps the other reader from starving. */
	struct failing_reader bad = { .fd = self->server.fd, .pause_us = 100 };
	struct pollfd p = { .fd = self->server.fd, .events = POLLIN };
	__u8 mad[MAD], buf[NEW_HDR + MAD];
	struct timespec progress; /* the last arrival read, or the start */
	pthread_t thread;
	int got = 0, sent;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	bad.unwritable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(bad.unwritable != MAP_FAILED);
	ASSERT_EQ(0, fcntl(self->server.fd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, pthread_create(&thread, NULL, read_badly, &bad));
	/*
	 * The waits below end when arrivals stop (STALL_MS without one), not
	 * after a time for all of them: a slow guest takes longer, and only
	 * the harness's 120 s bounds the whole.
	 */
	clock_gettime(CLOCK_MONOTONIC, &progress);
	for (sent = 1; sent <= SHARED_READS; sent++) {
		mad_header(mad, VENDOR1_CLASS, GET, sent);
		ASSERT_EQ(NEW_HDR + MAD,
			  send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
		/*
		 * At most SHARED_WINDOW on their way: a burst overflows the
		 * receive queue of the server's QP1 under load (a UD packet
		 * that finds no receive posted is lost, on rxe as on
		 * ib_loopback), and what the wire loses is not what this
		 * test is about.
		 */
		do {
			while (read(self->server.fd, buf, sizeof(buf)) == NEW_HDR + MAD) {
				got++;
				clock_gettime(CLOCK_MONOTONIC, &progress);
			}
		} while (sent - got >= SHARED_WINDOW && elapsed_ms(&progress) < STALL_MS &&
			 poll(&p, 1, 100) >= 0);
	}
	/*
	 * Short polls, retried: a poll that sleeps through a put-back MAD (the
	 * next test) is not what this one is about.
	 */
	while (got < SHARED_READS && elapsed_ms(&progress) < STALL_MS) {
		ssize_t n;

		if (poll(&p, 1, 100) != 1)
			continue;
		n = read(self->server.fd, buf, sizeof(buf));

		if (n == NEW_HDR + MAD) {
			got++;
			clock_gettime(CLOCK_MONOTONIC, &progress);
		} else {
			ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EFAULT));
		}
	}
	bad.stop = true;
	pthread_join(thread, NULL);
	munmap(bad.unwritable, 4096);
	/*
	 * What the failing reader kept the other from in time (C's put-back
	 * wakes no one, and under a slow guest that can be many MADs) must
	 * still be there: slow is not lost.
	 */
	while (got < SHARED_READS && poll(&p, 1, 1000) == 1 &&
	       read(self->server.fd, buf, sizeof(buf)) == NEW_HDR + MAD)
		got++;
	EXPECT_EQ(0, bad.unexpected);
	EXPECT_EQ(SHARED_READS, got);
	/* Nothing is left, and poll says so. */
	EXPECT_EQ(0, poll(&p, 1, 0));
}

#define POLLS 200

/*
 * A MAD that a failing reader puts back wakes the file's waiters, as an
 * arrival does: a poll that looked while the MAD was out of the queue does
 * not sleep through it. (C's requeue in ib_umad_read wakes nobody: such a
 * poll sleeps until the next arrival.)
 */
TEST_F_TIMEOUT(data, a_mad_put_back_by_a_failing_read_wakes_the_poller, 120)
{
	struct failing_reader bad = { .fd = self->server.fd };
	struct pollfd p = { .fd = self->server.fd, .events = POLLIN };
	__u8 mad[MAD], buf[NEW_HDR + MAD];
	pthread_t thread;
	ssize_t n = -1;
	int polls;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	bad.unwritable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(bad.unwritable != MAP_FAILED);
	ASSERT_EQ(0, fcntl(self->server.fd, F_SETFL, O_NONBLOCK));
	mad_header(mad, VENDOR1_CLASS, GET, 1);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
	ASSERT_EQ(1, poll(&p, 1, 5000));
	/*
	 * Without a pause, the MAD is out of the queue half the time, each
	 * time for one failed copy, microseconds: a poll that waits 2 s for
	 * it slept through the put-back.
	 */
	ASSERT_EQ(0, pthread_create(&thread, NULL, read_badly, &bad));
	for (polls = 0; polls < POLLS; polls++)
		if (poll(&p, 1, 2000) != 1)
			break;
	bad.stop = true;
	pthread_join(thread, NULL);
	munmap(bad.unwritable, 4096);
	EXPECT_EQ(POLLS, polls) TH_LOG("poll %d slept through the MAD put back", polls + 1);
	EXPECT_EQ(0, bad.unexpected);
	/* And the MAD is still there. */
	for (int tries = 0; tries < 100 && n < 0; tries++)
		n = recv_within(self->server.fd, buf, sizeof(buf), 100);
	EXPECT_EQ(NEW_HDR + MAD, n);
}

/* What select() and epoll say about fd, without waiting. */
static void readiness(int fd, bool *sel_read, bool *sel_write, __u32 *epoll_events)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDNORM | EPOLLWRNORM };
	struct timeval zero = { 0 };
	fd_set r, w;
	int ep;

	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(fd, &r);
	FD_SET(fd, &w);
	select(fd + 1, &r, &w, NULL, &zero);
	*sel_read = FD_ISSET(fd, &r);
	*sel_write = FD_ISSET(fd, &w);
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	*epoll_events = epoll_wait(ep, &ev, 1, 0) == 1 ? ev.events : 0;
	close(ep);
}

TEST_F(data, select_and_epoll_see_what_poll_sees)
{
	struct pollfd p = { .fd = self->server.fd, .events = POLLIN };
	bool readable, writable;
	__u32 events;
	__u8 mad[MAD];

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, -1, 0, false));
	readiness(self->server.fd, &readable, &writable, &events);
	EXPECT_FALSE(readable);
	EXPECT_TRUE(writable);
	EXPECT_EQ((__u32)(EPOLLOUT | EPOLLWRNORM), events);
	mad_header(mad, VENDOR1_CLASS, GET, 0x7000);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->client, &self->server.addr, mad, MAD, 0, 0));
	ASSERT_EQ(1, poll(&p, 1, 5000));
	readiness(self->server.fd, &readable, &writable, &events);
	EXPECT_TRUE(readable);
	EXPECT_TRUE(writable);
	EXPECT_EQ((__u32)(EPOLLIN | EPOLLRDNORM | EPOLLOUT | EPOLLWRNORM), events);
}

TEST_F(data, a_signal_ends_a_blocked_read)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
	struct blocked_read r = { .fd = self->server.fd, .n = -2 };
	pthread_t thread;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&thread, NULL, read_blocking, &r));
	/* A signal that came before the read blocked would interrupt nothing. */
	ASSERT_TRUE(wait_blocked_in(&r.tid, __NR_read)) TH_LOG("the read never blocked");
	ASSERT_EQ(0, pthread_kill(thread, SIGUSR1));
	pthread_join(thread, NULL);
	EXPECT_EQ(-1, r.n);
	EXPECT_EQ(EINTR, r.err);
}

/*
 * The umad driver's module references: each open file holds them (its
 * file operations' owner), so they count the files not yet released; -1
 * if unknown.
 */
static long umad_refcnt(void)
{
	const char *module = umad_module();
	char path[128], value[32];

	if (!module)
		return -1;
	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", module);
	if (read_attr(path, value, sizeof(value)))
		return -1;
	return atol(value);
}

/*
 * Opens the client's port again after its file was closed, and checks what
 * the closed file left behind (kmemleak, on the debug kernel, looks for
 * leaked memory): the module references are back to refs, what they were
 * with the same files open, so the closed file was released; and its
 * agent's class and method are free on the port, as registering them
 * again conflicts with an agent still there.
 */
static void reopen_client(struct __test_metadata *_metadata, struct _test_data_data *self,
			  long refs, int class, int method, int rmpp)
{
	ASSERT_EQ(0, open_end(&self->client, umad_pair()->client));
	EXPECT_EQ(refs, umad_refcnt()) TH_LOG("the closed file is still referenced");
	ASSERT_EQ(0, reg(&self->client, class, method, rmpp, false))
		TH_LOG("the closed file's agent is still registered");
}

/*
 * The server sends the client's new file a request of method, which must
 * be the first MAD to reach that file: nothing the server sent before it,
 * for the closed file, may reach the new one, and on the same path what
 * was sent first would come first.
 */
static void nothing_stray(struct __test_metadata *_metadata, struct _test_data_data *self,
			  int class, int method)
{
	__u8 mad[MAD];

	mad_header(mad, class, method, 0x3000);
	ASSERT_EQ(NEW_HDR + MAD, send_to(&self->server, &self->client.addr, mad, MAD, 0, 0));
	ASSERT_EQ(NEW_HDR + MAD, recv_within(self->client.fd, self->buf, sizeof(self->buf), 5000));
	EXPECT_EQ(method, self->buf[NEW_HDR + 3])
		TH_LOG("the new file got method 0x%x, sent for the closed one",
		       self->buf[NEW_HDR + 3]);
	EXPECT_EQ(0x3000U, mad_tid(self->buf + NEW_HDR) & 0xffffffff);
}

#define OUTSTANDING_SENDS 50

/*
 * Closing with requests outstanding (for longer than the test runs, on any
 * guest) flushes them and leaves nothing behind; the server's answers to
 * them, which come after, reach nobody.
 */
TEST_F(data, close_with_sends_outstanding)
{
	__u64 tids[OUTSTANDING_SENDS];
	__u8 mad[MAD];
	long refs;

	ASSERT_EQ(0, reg(&self->server, VENDOR1_CLASS, GET, 0, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR1_CLASS, SET, 0, false));
	refs = umad_refcnt();
	ASSERT_LT(0, refs) TH_LOG("no /sys/module/<driver>/refcnt");
	for (int i = 0; i < OUTSTANDING_SENDS; i++) {
		mad_header(mad, VENDOR1_CLASS, GET, 0x1000 + i);
		ASSERT_EQ(NEW_HDR + MAD,
			  send_to(&self->client, &self->server.addr, mad, MAD, OUTSTANDING_MS, 0));
	}
	for (int i = 0; i < OUTSTANDING_SENDS; i++)
		tids[i] = serve_request(_metadata, self);
	EXPECT_EQ(0, close(self->client.fd));
	reopen_client(_metadata, self, refs, VENDOR1_CLASS, SET, 0);
	for (int i = 0; i < OUTSTANDING_SENDS; i++) {
		mad_header(mad, VENDOR1_CLASS, GET_RESP, tids[i]);
		ASSERT_EQ(NEW_HDR + MAD,
			  send_to(&self->server, &self->client.addr, mad, MAD, 0, 0));
	}
	nothing_stray(_metadata, self, VENDOR1_CLASS, SET);
}

/*
 * Closing while an RMPP response is arriving, then closing its sender with
 * the transfer cut off: neither file leaves anything behind, and nothing
 * of the transfer reaches the client's new file.
 */
TEST_F(data, close_during_an_rmpp_transfer)
{
	__u8 mad[MAD];
	__u64 tid;
	long refs;

	ASSERT_EQ(0, reg(&self->server, VENDOR2_CLASS, GET, 1, false));
	ASSERT_EQ(0, reg(&self->client, VENDOR2_CLASS, SET, 1, false));
	refs = umad_refcnt();
	ASSERT_LT(0, refs) TH_LOG("no /sys/module/<driver>/refcnt");
	mad_header(mad, VENDOR2_CLASS, GET, 0x2000);
	ASSERT_EQ(NEW_HDR + MAD,
		  send_to(&self->client, &self->server.addr, mad, MAD, ANSWERED_MS, 0));
	tid = serve_request(_metadata, self);
	rmpp_response(_metadata, self, tid, 100 * RMPP_DATA);
	EXPECT_EQ(0, close(self->client.fd));
	/* The server's side of the transfer goes on a while; no verdict rests on how long. */
	usleep(500 * 1000);
	EXPECT_EQ(0, close(self->server.fd));
	ASSERT_EQ(0, open_end(&self->server, umad_pair()->server));
	ASSERT_EQ(0, reg(&self->server, VENDOR2_CLASS, GET, 1, false))
		TH_LOG("the closed server's agent is still registered");
	reopen_client(_metadata, self, refs, VENDOR2_CLASS, SET, 1);
	nothing_stray(_metadata, self, VENDOR2_CLASS, SET);
}

TEST_HARNESS_MAIN
