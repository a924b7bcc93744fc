// SPDX-License-Identifier: GPL-2.0
/*
 * What an open umad file sees when its device goes away (rxe1 deleted with
 * `rdma link delete`): every operation fails with its errno, waiters wake,
 * close is safe, and registration racing the removal is clean.
 *
 * ib_umad (C, 6.12) leaves a reader that is already blocked asleep forever:
 * its wait ignores the removal. ib_umad_rs wakes it with EIO
 * (expected-failures-c.txt lists that test for C).
 *
 * A file dies at once: from the moment poll() says POLLERR, no write
 * succeeds, though unregistering its agents one by one takes a while.
 */
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <rdma/ib_user_mad.h>

#include "kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

#define VENDOR1_CLASS 0x0a
#define GET 0x01
#define NEW_HDR 64
#define MAD 256
#define WAKE_TIMEOUT_S 10

static int open_rig_rxe(int flags)
{
	char path[128];

	if (umad_path(RIG_RXE, 1, path, sizeof(path)))
		return -1;
	return open(path, O_RDWR | flags);
}

static int reg2(int fd, int class, int method, __u32 *id)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = class, .mgmt_class_version = class ? 1 : 0,
	};

	if (method >= 0)
		req.method_mask[0] = 1ULL << method;
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	if (id)
		*id = req.id;
	return 0;
}

FIXTURE(removal) {
	int fd;
	__u32 agent;
	bool deleted;
};

FIXTURE_SETUP(removal)
{
	self->fd = open_rig_rxe(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, reg2(self->fd, VENDOR1_CLASS, 1, &self->agent));
	self->deleted = false;
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(removal)
{
	if (self->deleted)
		EXPECT_EQ(0, rig_rxe_add());
}

static void delete_rig_rxe(struct __test_metadata *_metadata, struct _test_data_removal *self)
{
	ASSERT_EQ(0, rig_rxe_delete());
	self->deleted = true;
}

TEST_F(removal, every_operation_fails_after_it)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
	int ep;
	char buf[64 + 256] = { 0 };
	struct ib_user_mad *mad = (void *)buf;
	struct pollfd p = { .fd = self->fd, .events = POLLIN | POLLOUT };
	__u32 id = self->agent;

	delete_rig_rxe(_metadata, self);
	EXPECT_EQ(-EPIPE, reg2(self->fd, 0, -1, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EIO, errno);
	mad->hdr.id = self->agent;
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLERR, p.revents);
	ep = epoll_create1(0);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	EXPECT_EQ(1, epoll_wait(ep, &ev, 1, 0));
	EXPECT_EQ((__u32)EPOLLERR, ev.events);
	close(ep);
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;
}

struct waiter {
	int fd;
	bool use_poll;
	int result; /* read's errno, or poll's revents */
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *wait_on_fd(void *arg)
{
	struct waiter *w = arg;
	char buf[64 + 256];
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	sigset_t all;
	int result;

	/*
	 * No signal may wake this thread: the SIGCHLD of the `rdma` child
	 * would interrupt the wait and restart the read, which then sees the
	 * removal, hiding a wait that ignores it.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	if (w->use_poll)
		result = poll(&p, 1, -1) == 1 ? p.revents : -errno;
	else
		result = read(w->fd, buf, sizeof(buf)) < 0 ? errno : 0;
	pthread_mutex_lock(&w->lock);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Starts a waiter, removes the device, and gives the waiter 10 s to wake. */
static bool removal_wakes(struct __test_metadata *_metadata, struct _test_data_removal *self,
			  struct waiter *w)
{
	struct timespec deadline;
	pthread_t thread;
	bool done;

	w->fd = self->fd;
	w->done = false;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&thread, NULL, wait_on_fd, w))
		return false;
	pthread_detach(thread);
	usleep(300 * 1000); /* let it block */
	delete_rig_rxe(_metadata, self);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += WAKE_TIMEOUT_S;
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		if (pthread_cond_timedwait(&w->cond, &w->lock, &deadline))
			break;
	done = w->done;
	pthread_mutex_unlock(&w->lock);
	return done;
}

TEST_F(removal, a_blocked_reader_wakes_with_eio)
{
	static struct waiter w; /* a reader that never wakes keeps it */

	w.use_poll = false;
	ASSERT_TRUE(removal_wakes(_metadata, self, &w))
		TH_LOG("read() still blocked %d s after the device went", WAKE_TIMEOUT_S);
	EXPECT_EQ(EIO, w.result);
}

TEST_F(removal, a_blocked_poller_wakes_with_pollerr)
{
	static struct waiter w;

	w.use_poll = true;
	ASSERT_TRUE(removal_wakes(_metadata, self, &w))
		TH_LOG("poll() still blocked %d s after the device went", WAKE_TIMEOUT_S);
	EXPECT_EQ(POLLERR, w.result);
}

/* Requests on every agent but the writer's, each outstanding for the test. */
#define SLOW_AGENTS 30
#define SLOW_SENDS 32
#define OUTSTANDING_MS 120000

/* A GET of class VENDOR1 from agent to gid, behind the 64-byte header. */
static ssize_t send_get(int fd, __u32 agent, const __u8 *gid, __u64 tid, int timeout_ms)
{
	__u8 buf[NEW_HDR + MAD] = { 0 };
	struct ib_user_mad *umad = (void *)buf;

	umad_address(umad, agent, gid, timeout_ms, 0);
	umad_common_header(buf + NEW_HDR, VENDOR1_CLASS, GET, tid);
	return write(fd, buf, sizeof(buf)) < 0 ? -errno : (ssize_t)sizeof(buf);
}

struct late_writer {
	int fd;
	__u32 agent;
	__u8 gid[16];
	long written;
	long after_pollerr; /* writes that succeeded after poll() said POLLERR */
	int error;          /* the errno that ended the writes */
	bool saw_pollerr;   /* poll() has said POLLERR */
};

/* Polls, then writes, until a write fails or 60 s have gone. */
static void *write_until_refused(void *arg)
{
	struct late_writer *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	time_t end = time(NULL) + 60;
	ssize_t ret;

	for (__u64 tid = 1; time(NULL) < end; tid++) {
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
			w->saw_pollerr = true;
		ret = send_get(w->fd, w->agent, w->gid, tid, 0);
		if (ret < 0) {
			w->error = -ret;
			break;
		}
		w->written++;
		if (w->saw_pollerr)
			w->after_pollerr++;
	}
	return NULL;
}

/*
 * The device goes while a file's agents have requests outstanding, which
 * make each unregister slow: writes on the agent unregistered last fail
 * with EIO as soon as the file is dead, which poll() tells as POLLERR.
 */
TEST_F_TIMEOUT(removal, no_write_succeeds_once_poll_says_the_device_went, 300)
{
	struct late_writer w = { .fd = self->fd };
	static struct waiter poller;
	__u8 server_gid[16];
	pthread_t writer, waiting;
	char path[128];
	__u32 id = 0;
	int server;

	/* rxe0 takes the requests and leaves them unanswered. */
	ASSERT_EQ(0, umad_path("rxe0", 1, path, sizeof(path)));
	ASSERT_EQ(0, read_gid("rxe0", 1, 0, server_gid));
	server = open(path, O_RDWR);
	ASSERT_LE(0, server);
	ASSERT_EQ(0, reg2(server, VENDOR1_CLASS, GET, NULL));
	for (int a = 0; a < SLOW_AGENTS; a++) {
		ASSERT_EQ(0, reg2(self->fd, 0, -1, &id));
		for (int i = 0; i < SLOW_SENDS; i++)
			ASSERT_EQ(NEW_HDR + MAD, send_get(self->fd, id, server_gid,
							  (__u64)id << 32 | i, OUTSTANDING_MS));
	}
	ASSERT_EQ(0, reg2(self->fd, 0, -1, &w.agent));
	memcpy(w.gid, server_gid, 16);

	poller = (struct waiter){ .fd = self->fd, .use_poll = true };
	pthread_mutex_init(&poller.lock, NULL);
	pthread_cond_init(&poller.cond, NULL);
	ASSERT_EQ(0, pthread_create(&waiting, NULL, wait_on_fd, &poller));
	ASSERT_EQ(0, pthread_create(&writer, NULL, write_until_refused, &w));
	usleep(200 * 1000);
	delete_rig_rxe(_metadata, self);
	pthread_join(writer, NULL);
	pthread_join(waiting, NULL);
	close(server);

	EXPECT_LT(0, w.written) TH_LOG("no write went through before the removal");
	EXPECT_EQ(EIO, w.error);
	EXPECT_EQ(0, w.after_pollerr) TH_LOG("%ld writes succeeded after POLLERR", w.after_pollerr);
	EXPECT_EQ(POLLERR, poller.result);
}

struct hammer {
	int fd;
	atomic_bool stop;
	int unexpected; /* an errno no registration may give, or 0 */
	long registered, refused;
};

/* Registers and unregisters as fast as it can, until told to stop. */
static void *hammer_registration(void *arg)
{
	struct hammer *h = arg;
	__u32 id;
	int ret;

	while (!h->stop) {
		ret = reg2(h->fd, 0, -1, &id);
		if (!ret) {
			h->registered++;
			ret = ioctl(h->fd, IB_USER_MAD_UNREGISTER_AGENT, &id) ? -errno : 0;
			if (ret && ret != -EINVAL)
				h->unexpected = -ret;
		} else if (ret == -EPIPE || ret == -ENOMEM) {
			h->refused++;
		} else {
			h->unexpected = -ret;
		}
	}
	return NULL;
}

/* An open /dev/kmsg positioned after the records there now; -errno. */
static int kmsg_from_now(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Records from fd on that contain text. */
static int kmsg_count(int fd, const char *text)
{
	char rec[2048];
	int n = 0;
	ssize_t len;

	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue; /* a record overwritten before it was read */
		if (len <= 0)
			break;
		rec[len] = 0;
		n += !!strstr(rec, text);
	}
	return n;
}

/*
 * A program can provoke the driver's notices at will, here by registering
 * on a file whose device is gone: at most printk_ratelimited's burst of 10
 * reach the log. ib_umad prints every one (expected-failures-c.txt).
 */
TEST_F(removal, notices_a_program_provokes_are_rate_limited)
{
	int kmsg, lines;

	delete_rig_rxe(_metadata, self);
	kmsg = kmsg_from_now();
	ASSERT_LE(0, kmsg);
	/* Few enough that the log buffer keeps every line of them. */
	for (int i = 0; i < 200; i++)
		ASSERT_EQ(-EPIPE, reg2(self->fd, VENDOR1_CLASS, 1, NULL));
	lines = kmsg_count(kmsg, "ib_umad_reg_agent2: invalid device");
	close(kmsg);
	EXPECT_GE(10, lines) TH_LOG("%d lines for 200 refusals", lines);
}

/*
 * So can the old ABI's warning: the first IB_USER_MAD_REGISTER_AGENT of a
 * file opened without IB_USER_MAD_ENABLE_PKEY prints two lines ("did not
 * enable P_Key index support"), and a program that opens, registers and
 * closes in a loop gets at most printk_ratelimited's burst of 10 of them.
 * ib_umad prints them for every file (expected-failures-c.txt).
 */
TEST(the_old_abi_warning_a_program_provokes_is_rate_limited)
{
	struct ib_user_mad_reg_req req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
	};
	int kmsg, lines;

	kmsg = kmsg_from_now();
	ASSERT_LE(0, kmsg);
	for (int i = 0; i < 200; i++) {
		int fd = open_rig_rxe(0);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req));
		ASSERT_EQ(0, close(fd));
	}
	lines = kmsg_count(kmsg, "did not enable P_Key index support");
	close(kmsg);
	EXPECT_LT(0, lines) TH_LOG("the warning never came");
	EXPECT_GE(10, lines) TH_LOG("%d warnings for 200 files", lines);
}

TEST(registration_races_removal)
{
	const int cycles = 10;

	for (int c = 0; c < cycles; c++) {
		struct hammer h = { .stop = false };
		pthread_t thread;

		h.fd = open_rig_rxe(0);
		ASSERT_LE(0, h.fd);
		ASSERT_EQ(0, pthread_create(&thread, NULL, hammer_registration, &h));
		usleep(20 * 1000 * (c % 5));
		EXPECT_EQ(0, rig_rxe_delete());
		usleep(20 * 1000);
		h.stop = true;
		pthread_join(thread, NULL);
		EXPECT_EQ(0, h.unexpected) TH_LOG("cycle %d: errno %d", c, h.unexpected);
		EXPECT_LT(0, h.refused) TH_LOG("cycle %d: never saw the removal", c);
		EXPECT_EQ(0, close(h.fd));
		ASSERT_EQ(0, rig_rxe_add());
	}
}

TEST_HARNESS_MAIN
