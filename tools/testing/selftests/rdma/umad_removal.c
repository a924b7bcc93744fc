// SPDX-License-Identifier: GPL-2.0
/*
 * What an open umad file sees when its device goes away (the pair's server,
 * umad_test.h: rxe1 deleted with `rdma link delete`, or iblo1 removed through
 * ib_loopback's debugfs): every operation fails with its errno, waiters
 * wake, close is safe, and registration racing the removal is clean.
 *
 * ib_umad without "RDMA/umad: Wake a blocked reader when its device goes"
 * leaves a reader that is already blocked asleep forever: its wait ignores
 * the removal. With it, as ib_umad_rs, the reader wakes with EIO.
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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <time.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

UMAD_NEEDS_PAIR

#define VENDOR1_CLASS 0x0a
#define GET 0x01
#define NEW_HDR 64
#define MAD 256
/*
 * How long a waiter has to wake once the removal is over (umad_server_remove()
 * returns when it is): it has only to be scheduled, which takes milliseconds
 * however loaded the guest. Measured on CLOCK_MONOTONIC, which no one sets.
 */
#define WAKE_TIMEOUT_S 10

static int open_umad_server(int flags)
{
	char path[128];

	if (umad_path(umad_pair()->server, 1, path, sizeof(path)))
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
	bool removed;
};

FIXTURE_SETUP(removal)
{
	self->fd = open_umad_server(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, reg2(self->fd, VENDOR1_CLASS, 1, &self->agent));
	self->removed = false;
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(removal)
{
	if (self->removed)
		EXPECT_EQ(0, umad_server_add());
}

static void remove_server(struct __test_metadata *_metadata, struct _test_data_removal *self)
{
	ASSERT_EQ(0, umad_server_remove());
	self->removed = true;
}

TEST_F(removal, every_operation_fails_after_it)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT };
	int ep;
	char buf[64 + 256] = { 0 };
	struct ib_user_mad *mad = (void *)buf;
	struct pollfd p = { .fd = self->fd, .events = POLLIN | POLLOUT };
	__u32 id = self->agent;

	remove_server(_metadata, self);
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

/*
 * With ib_umad's events enabled, a write on a file whose device is gone
 * fires ib_umad_write before it fails with EIO: the event must not reach
 * the removed device. Until "RDMA/umad: Do not reach the IB device from the
 * tracepoints", ib_umad's event read file->port->ib_dev, NULL by then: on
 * a kernel without that fix, UMAD_C_FIXED=0 makes this test fail against
 * ib_umad without running the case, which would oops it. SKIPs on a
 * kernel without event tracing.
 */
TEST_F(removal, a_traced_write_after_it_fails_with_eio)
{
	static const char events[] = "/sys/kernel/tracing/events/ib_umad/ib_umad_write/enable";
	char buf[NEW_HDR + MAD] = { 0 }, trace[4096];
	struct ib_user_mad *mad = (void *)buf;
	const char *module = umad_module();
	int enable, log, err;
	ssize_t written, n;

	ASSERT_NE(NULL, module);
	if (!c_driver_fixed())
		ASSERT_STRNE("ib_umad", module)
			TH_LOG("not run: ib_umad's event would dereference the removed device");
	if (access(events, W_OK))
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
	if (access(events, W_OK))
		SKIP(return, "no %s: a kernel without event tracing", events);
	/* Opened for writing with O_TRUNC, the trace empties. */
	log = open("/sys/kernel/tracing/trace", O_WRONLY | O_TRUNC);
	ASSERT_LE(0, log);
	close(log);
	enable = open(events, O_WRONLY);
	ASSERT_LE(0, enable);
	ASSERT_EQ(1, write(enable, "1", 1));
	remove_server(_metadata, self);
	mad->hdr.id = self->agent;
	written = write(self->fd, buf, sizeof(buf));
	err = errno;
	EXPECT_EQ(1, write(enable, "0", 1));
	close(enable);
	EXPECT_EQ(-1, written);
	EXPECT_EQ(EIO, err);
	/* The event fired: the case ran the path it is about. */
	log = open("/sys/kernel/tracing/trace", O_RDONLY);
	ASSERT_LE(0, log);
	n = read(log, trace, sizeof(trace) - 1);
	close(log);
	ASSERT_LT(0, n);
	trace[n] = '\0';
	EXPECT_NE(NULL, strstr(trace, " ib_umad_write: "))
		TH_LOG("no ib_umad_write event in the trace");
}

struct waiter {
	int fd;
	atomic_int tid;
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
	 * No signal may wake this thread: on rxe, the SIGCHLD of the `rdma`
	 * child that removes rxe1 would interrupt the wait and restart the
	 * read, which then sees the removal, hiding a wait that ignores it.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	w->tid = gettid();
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
	pthread_condattr_t attr;
	pthread_t thread;
	bool done;

	w->fd = self->fd;
	w->tid = 0;
	w->done = false;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&thread, NULL, wait_on_fd, w))
		return false;
	pthread_detach(thread);
	/*
	 * A waiter not yet blocked when the device goes finds it gone and
	 * returns at once, which would hide a wait that ignores the removal.
	 */
	ASSERT_TRUE(wait_blocked_in(&w->tid, w->use_poll ? NR_POLL : __NR_read))
		TH_LOG("the %s never blocked", w->use_poll ? "poll" : "read");
	remove_server(_metadata, self);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
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

/*
 * Requests on every agent but the writer's, each outstanding for the test:
 * their timeout is longer than the test may run (its harness limit, 300 s),
 * as a timeout report would wake the poller with POLLIN.
 */
#define SLOW_AGENTS 30
#define SLOW_SENDS 32
#define OUTSTANDING_MS 600000

/* A GET of class VENDOR1 from agent to a port, behind the 64-byte header. */
static ssize_t send_get(int fd, __u32 agent, const struct umad_port_addr *to, __u64 tid,
			int timeout_ms)
{
	__u8 buf[NEW_HDR + MAD] = { 0 };
	struct ib_user_mad *umad = (void *)buf;

	umad_address(umad, agent, to, timeout_ms, 0);
	umad_common_header(buf + NEW_HDR, VENDOR1_CLASS, GET, tid);
	return write(fd, buf, sizeof(buf)) < 0 ? -errno : (ssize_t)sizeof(buf);
}

/*
 * Writes that may still succeed once the removal is over, before the
 * writer gives up: none should. A count, not a time, so that however long
 * the removal takes on a slow guest, the writer outlasts it.
 */
#define WRITES_AFTER_REMOVAL 100

struct late_writer {
	int fd;
	__u32 agent;
	struct umad_port_addr to;
	atomic_bool removed; /* the removal is over: umad_server_remove() returned */
	long written;
	long after_pollerr; /* writes that succeeded after poll() said POLLERR */
	long after_removal; /* writes that succeeded after the removal was over */
	int error;          /* the errno that ended the writes */
	bool saw_pollerr;   /* poll() has said POLLERR */
};

/* Polls, then writes, until a write fails (or too many pass the removal). */
static void *write_until_refused(void *arg)
{
	struct late_writer *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	ssize_t ret;

	for (__u64 tid = 1; w->after_removal < WRITES_AFTER_REMOVAL; tid++) {
		bool removed = w->removed;

		if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
			w->saw_pollerr = true;
		ret = send_get(w->fd, w->agent, &w->to, tid, 0);
		if (ret < 0) {
			w->error = -ret;
			break;
		}
		w->written++;
		if (w->saw_pollerr)
			w->after_pollerr++;
		if (removed)
			w->after_removal++;
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
	struct umad_port_addr server_addr;
	pthread_t writer, waiting;
	char path[128];
	__u32 id = 0;
	int server;

	/* The pair's client takes the requests and leaves them unanswered. */
	ASSERT_EQ(0, umad_path(umad_pair()->client, 1, path, sizeof(path)));
	ASSERT_EQ(0, read_port_addr(umad_pair()->client, 1, &server_addr));
	server = open(path, O_RDWR);
	ASSERT_LE(0, server);
	ASSERT_EQ(0, reg2(server, VENDOR1_CLASS, GET, NULL));
	for (int a = 0; a < SLOW_AGENTS; a++) {
		ASSERT_EQ(0, reg2(self->fd, 0, -1, &id));
		for (int i = 0; i < SLOW_SENDS; i++)
			ASSERT_EQ(NEW_HDR + MAD, send_get(self->fd, id, &server_addr,
							  (__u64)id << 32 | i, OUTSTANDING_MS));
	}
	ASSERT_EQ(0, reg2(self->fd, 0, -1, &w.agent));
	w.to = server_addr;

	poller = (struct waiter){ .fd = self->fd, .use_poll = true };
	pthread_mutex_init(&poller.lock, NULL);
	pthread_cond_init(&poller.cond, NULL);
	ASSERT_EQ(0, pthread_create(&waiting, NULL, wait_on_fd, &poller));
	ASSERT_EQ(0, pthread_create(&writer, NULL, write_until_refused, &w));
	/*
	 * The poller blocks (one not yet blocked would find the file dead and
	 * say POLLERR all the same), and writes go through first: however
	 * slow the guest, the writer has written before the removal.
	 */
	ASSERT_TRUE(wait_blocked_in(&poller.tid, NR_POLL)) TH_LOG("the poll never blocked");
	for (int i = 0; i < 10000 && !__atomic_load_n(&w.written, __ATOMIC_RELAXED); i++)
		usleep(1000);
	remove_server(_metadata, self);
	w.removed = true;
	pthread_join(writer, NULL);
	pthread_join(waiting, NULL);
	close(server);

	EXPECT_LT(0, w.written) TH_LOG("no write went through before the removal");
	EXPECT_EQ(0, w.after_removal)
		TH_LOG("%ld writes succeeded after the removal", w.after_removal);
	EXPECT_EQ(EIO, w.error);
	EXPECT_EQ(0, w.after_pollerr) TH_LOG("%ld writes succeeded after POLLERR", w.after_pollerr);
	EXPECT_EQ(POLLERR, poller.result);
}

/*
 * Registrations the hammer makes once the removal is over, before it stops:
 * each is refused. A count, not a time, so that however slow the guest,
 * the hammer sees the removal.
 */
#define HAMMER_AFTER_REMOVAL 10

struct hammer {
	int fd;
	atomic_bool removed; /* the removal is over: umad_server_remove() returned */
	int unexpected; /* an errno no registration may give, or 0 */
	long registered, refused;
};

/* Registers and unregisters as fast as it can, through the removal. */
static void *hammer_registration(void *arg)
{
	struct hammer *h = arg;
	int after_removal = 0;
	__u32 id;
	int ret;

	while (after_removal < HAMMER_AFTER_REMOVAL) {
		if (h->removed)
			after_removal++;
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

/*
 * Records from fd on: returns how many contain text, and adds to *also
 * how many contain also_text (if also is not NULL).
 */
static int kmsg_count(int fd, const char *text, const char *also_text, int *also)
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
		if (also)
			*also += !!strstr(rec, also_text);
	}
	return n;
}

/*
 * printk_ratelimited's limit, which ib_umad_rs keeps for what a program
 * can provoke: DEFAULT_RATELIMIT_BURST lines from one call site in each
 * DEFAULT_RATELIMIT_INTERVAL (5 * HZ jiffies; ___ratelimit() waits one
 * more). A window opens, with a line, at the first call after the last
 * window ended.
 */
#define RATELIMIT_BURST 10
#define RATELIMIT_INTERVAL_NS 5000000000LL

/*
 * The most windows of one call site that lines printed within span_ns of
 * each other on the jiffies clock can fall in: one that opened before the
 * first line (at the same call site, for an earlier test in this boot),
 * and those that open with a line in the span, an interval apart in
 * jiffies, which the clock measures within a tick at each end (a third
 * tick: an interval of 5 * HZ ticks is 5 s only as near as HZ divides
 * a second).
 */
static int ratelimit_windows(long long span_ns)
{
	return 2 + (span_ns + 3 * tick_ns()) / RATELIMIT_INTERVAL_NS;
}

/*
 * How long no line can be right: a window an earlier test exhausted opened
 * before the flood, so a call that begins an interval after the flood did
 * (a tick for each end, one for C's longer interval, one to spare) opens a
 * new window, and prints.
 */
static long long ratelimit_quiet_ns(void)
{
	return RATELIMIT_INTERVAL_NS + 4 * tick_ns();
}

/* Provocations a flood makes at least, */
#define FLOOD_MIN 200
/* and at least this many times what the windows they span may print, */
#define FLOOD_MARGIN 2
/* unless the guest is too slow for that in a minute: it cannot tell then. */
#define FLOOD_MAX_NS 60000000000LL

/*
 * A program provoking a log line again and again, and the lines /dev/kmsg
 * shows for it, each known by the provocation that printed it. Times are
 * on the jiffies clock, in ns from before the first provocation: windows
 * open at lines, so the span that bounds them is the lines' (from before
 * the provocation of the first to after that of the last), but not by the
 * records' own times, printk's local_clock(), which runs on while a loaded
 * guest's jiffies lag.
 */
struct log_flood {
	int kmsg;
	const char *text;	/* what a provoked line says */
	struct timespec start;
	int provoked, lines;
	int min_lines;		/* lines of the first FLOOD_MIN provocations */
	long long begun_ns;	/* the latest provocation began */
	long long end_ns;	/* the last one ended */
	long long first_ns;	/* the one that printed the first line began */
	long long last_ns;	/* the one that printed the last line ended */
};

static int flood_begin(struct log_flood *f, const char *text)
{
	*f = (struct log_flood){ .text = text };
	f->kmsg = kmsg_from_now();
	if (f->kmsg < 0)
		return f->kmsg;
	jiffies_clock(&f->start);
	return 0;
}

/*
 * Whether a driver that printed every line would fail: the provocations
 * outnumber by FLOOD_MARGIN what the windows they span may print.
 */
static bool flood_tells(const struct log_flood *f)
{
	return f->provoked >= FLOOD_MIN &&
	       f->provoked >= FLOOD_MARGIN * RATELIMIT_BURST * ratelimit_windows(f->end_ns);
}

/*
 * Before each provocation, and after the last: reads the lines of the one
 * before (at once, so that the log buffer loses none and each is known by
 * the provocation that printed it), and says whether another is needed.
 * The flood goes on until it tells (a slow guest provokes for longer), and
 * until a line has come or none is right any more; FLOOD_MAX_NS bounds it.
 */
static bool flood_more(struct log_flood *f)
{
	long long now = jiffies_ns_since(&f->start);
	int n = f->provoked ? kmsg_count(f->kmsg, f->text, NULL, NULL) : 0;

	if (n) {
		if (!f->lines)
			f->first_ns = f->begun_ns;
		f->last_ns = now;
		f->lines += n;
	}
	if (f->provoked == FLOOD_MIN)
		f->min_lines = f->lines;
	f->end_ns = now;
	if (now >= FLOOD_MAX_NS)
		return false;
	if (flood_tells(f)) {
		if (f->lines || f->begun_ns >= ratelimit_quiet_ns())
			return false;
		/* Only the quiet time is missing: wait it out, not flood it. */
		usleep(50 * 1000);
	}
	f->begun_ns = jiffies_ns_since(&f->start);
	f->provoked++;
	return true;
}

/*
 * At least one line, at most a burst for each window the lines can fall in;
 * a driver that prints every one fails that as the flood outnumbers the
 * windows' lines. A guest too slow to outnumber them cannot tell: SKIP.
 * The failure says "<lines> for 200 <what>", and of all the flood if it
 * went on.
 */
static void flood_judge(struct __test_metadata *_metadata, struct log_flood *f,
			const char *lines, const char *what)
{
	long long span_ns = f->lines ? f->last_ns - f->first_ns : 0;
	int windows = ratelimit_windows(span_ns);

	close(f->kmsg);
	/* The flood went past the quiet time if no line came. */
	EXPECT_LT(0, f->lines)
		TH_LOG("no line for %d %s in %lld ms", f->provoked, what, f->end_ns / 1000000);
	EXPECT_GE(RATELIMIT_BURST * windows, f->lines) {
		if (f->provoked > FLOOD_MIN)
			TH_LOG("%d %s for %d %s, %d for all %d",
			       f->min_lines, lines, FLOOD_MIN, what, f->lines, f->provoked);
		else
			TH_LOG("%d %s for %d %s", f->lines, lines, f->provoked, what);
		TH_LOG("in %lld ms, %lld ms first to last: at most %d windows of %d",
		       f->end_ns / 1000000, span_ns / 1000000, windows, RATELIMIT_BURST);
	}
	if (_metadata->exit_code == KSFT_PASS && !flood_tells(f))
		SKIP(return, "%d %s in %lld ms: too few to tell a rate limit from none",
		     f->provoked, what, f->end_ns / 1000000);
}

/*
 * A program can provoke the driver's notices at will, here by registering
 * on a file whose device is gone: at most printk_ratelimited's burst of 10
 * reach the log in each 5 s window. ib_umad printed every one until "RDMA/umad:
 * Rate-limit the messages a register ioctl prints".
 *
 * At least one must: none is right only while an earlier test's window at
 * the same call site is open and spent (registration_races_removal and
 * every_operation_fails_after_it provoke it too), and the flood then goes
 * on until that window is over.
 */
TEST_F(removal, notices_a_program_provokes_are_rate_limited)
{
	struct log_flood f;

	remove_server(_metadata, self);
	ASSERT_EQ(0, flood_begin(&f, "ib_umad_reg_agent2: invalid device"));
	while (flood_more(&f))
		ASSERT_EQ(-EPIPE, reg2(self->fd, VENDOR1_CLASS, 1, NULL));
	flood_judge(_metadata, &f, "lines", "refusals");
}

/*
 * So can the old ABI's warning: the first IB_USER_MAD_REGISTER_AGENT of a
 * file opened without IB_USER_MAD_ENABLE_PKEY prints two lines ("did not
 * enable P_Key index support"), and a program that opens, registers and
 * closes in a loop gets at most printk_ratelimited's burst of 10 of them a
 * window. ib_umad printed them for every file until "RDMA/umad: Rate-limit
 * the messages a register ioctl prints".
 */
TEST(the_old_abi_warning_a_program_provokes_is_rate_limited)
{
	struct ib_user_mad_reg_req req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
	};
	struct log_flood f;
	char path[128];

	/* Looked up once: the flood is of opens, not of sysfs reads. */
	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	ASSERT_EQ(0, flood_begin(&f, "did not enable P_Key index support"));
	while (flood_more(&f)) {
		int fd = open(path, O_RDWR);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req));
		ASSERT_EQ(0, close(fd));
	}
	flood_judge(_metadata, &f, "warnings", "files");
}

/*
 * The old ABI's warning names the process by the bytes of its name, as
 * C's "%s" prints them (/dev/kmsg shows those past ASCII as \xNN): not an
 * escaped rendering of them. A warning may fall in a window whose burst
 * the flood above spent: files are opened until one is printed, for up to
 * four windows.
 */
TEST(the_old_abi_warning_names_the_process_by_its_bytes)
{
	struct ib_user_mad_reg_req req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
	};
	const char *line = "process caf\\xc3\\xa9 did not enable P_Key index support";
	struct timespec start;
	char path[128];
	int kmsg, named = 0, warned = 0;

	ASSERT_EQ(0, prctl(PR_SET_NAME, "caf\xc3\xa9"));
	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	kmsg = kmsg_from_now();
	ASSERT_LE(0, kmsg);
	jiffies_clock(&start);
	while (!warned && jiffies_waited_ms(&start) < 4 * RATELIMIT_INTERVAL_NS / 1000000) {
		int fd = open(path, O_RDWR);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req));
		ASSERT_EQ(0, close(fd));
		named += kmsg_count(kmsg, line, "did not enable P_Key index support", &warned);
		if (!warned)
			usleep(100 * 1000);
	}
	close(kmsg);
	ASSERT_LT(0, warned) TH_LOG("no warning in four rate-limit windows");
	EXPECT_EQ(warned, named) TH_LOG("the process named otherwise than by its bytes");
}

TEST(registration_races_removal)
{
	const int cycles = 10;

	for (int c = 0; c < cycles; c++) {
		struct hammer h = { .removed = false };
		pthread_t thread;

		h.fd = open_umad_server(0);
		ASSERT_LE(0, h.fd);
		ASSERT_EQ(0, pthread_create(&thread, NULL, hammer_registration, &h));
		/*
		 * The removal comes at once, or 20 to 80 ms after the hammer's
		 * first registration (varied: no verdict rests on where it
		 * falls). That registration, on a device not yet removed, is
		 * certain: a driver that refuses every one fails here, after
		 * 30 s (counted in sleeps, so never less).
		 */
		if (c % 5) {
			long *registered = &h.registered;

			for (int i = 0; i < 15000; i++) {
				if (__atomic_load_n(registered, __ATOMIC_RELAXED))
					break;
				usleep(2000);
			}
			ASSERT_LT(0, __atomic_load_n(registered, __ATOMIC_RELAXED))
				TH_LOG("cycle %d: no registration in 30 s", c);
			usleep(20 * 1000 * (c % 5));
		}
		EXPECT_EQ(0, umad_server_remove());
		h.removed = true;
		pthread_join(thread, NULL);
		EXPECT_EQ(0, h.unexpected) TH_LOG("cycle %d: errno %d", c, h.unexpected);
		EXPECT_LT(0, h.refused) TH_LOG("cycle %d: never saw the removal", c);
		EXPECT_EQ(0, close(h.fd));
		ASSERT_EQ(0, umad_server_add());
	}
}

TEST_HARNESS_MAIN
