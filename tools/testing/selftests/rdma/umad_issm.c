// SPDX-License-Identifier: GPL-2.0
/*
 * issmN: opening it makes the opener the port's IsSM holder (the port's
 * capability mask gets IB_PORT_SM) until it closes; a second opener waits
 * (or gets EAGAIN with O_NONBLOCK) and a signal ends the wait; the node has
 * no read, write or ioctl.
 *
 * Needs a port with an SMI. Soft-RoCE has none, so each test loads the
 * test-only InfiniBand loopback device (test_modules/ib_loopback.ko) and
 * unloads it after; without it the tests SKIP, saying why.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <linux/const.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

#define IB_PORT_SM _BITUL(1)

FIXTURE(issm) {
	bool loaded;
	char ibdev[64];
	int port;
	char path[128];
};

FIXTURE_SETUP(issm)
{
	struct mad_node nodes[MAX_NODES];
	int n;

	self->loaded = false;
	if (!loopback_available())
		SKIP(return, "no port with an SMI: soft-RoCE has none and ib_loopback is missing");
	ASSERT_EQ(0, LOOPBACK_LOAD("ndevs=1 nports=1"));
	self->loaded = true;
	n = list_mad_nodes("issm", nodes, MAX_NODES);
	ASSERT_EQ(1, n) TH_LOG("one loopback port, one issm node");
	snprintf(self->ibdev, sizeof(self->ibdev), "%s", nodes[0].ibdev);
	self->port = nodes[0].port;
	ASSERT_EQ(0, node_dev_path(&nodes[0], self->path, sizeof(self->path)));
}

/* In the parent: it runs even when a failed ASSERT ends the test. */
FIXTURE_TEARDOWN_PARENT(issm)
{
	if (self->loaded)
		EXPECT_EQ(0, syscall(SYS_delete_module, "ib_loopback", 0));
}

/* The port's capability mask from sysfs. */
static unsigned long port_cap_mask(struct _test_data_issm *self)
{
	char path[256], value[64];

	snprintf(path, sizeof(path), SYS_IB_CLASS "/%s/ports/%d/cap_mask", self->ibdev, self->port);
	if (read_attr(path, value, sizeof(value)))
		return ~0ul;
	return strtoul(value, NULL, 16);
}

TEST_F(issm, open_sets_issm_and_close_clears_it)
{
	int fd;

	EXPECT_EQ(0ul, port_cap_mask(self) & IB_PORT_SM);
	fd = open(self->path, O_RDWR);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", self->path, strerror(errno));
	EXPECT_EQ(IB_PORT_SM, port_cap_mask(self) & IB_PORT_SM);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0ul, port_cap_mask(self) & IB_PORT_SM);
}

TEST_F(issm, no_read_write_or_ioctl)
{
	char buf[256] = { 0 };
	int fd;

	fd = open(self->path, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, _IO(0x1b, 3)));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
}

struct opener {
	const char *path;
	atomic_int tid;
	int fd, err;
	atomic_bool done;
};

/* An open that waits for the holder waits in openat: glibc's open() makes that call. */
static void *open_issm(void *arg)
{
	struct opener *o = arg;

	o->tid = gettid();
	o->fd = open(o->path, O_RDWR);
	o->err = errno;
	o->done = true;
	return NULL;
}

/*
 * Whether the open returned within ms, counted in sleeps (a slow guest
 * waits longer, never less): "within 30 s" of what lets it return is
 * milliseconds' work.
 */
static bool done_within(struct opener *o, int ms)
{
	for (int i = 0; i < ms / 10 && !o->done; i++)
		usleep(10 * 1000);
	return o->done;
}

TEST_F(issm, a_second_opener_waits_for_the_first)
{
	struct opener o = { .path = self->path, .fd = -1 };
	pthread_t thread;
	int fd;

	fd = open(self->path, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, open(self->path, O_RDWR | O_NONBLOCK));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, pthread_create(&thread, NULL, open_issm, &o));
	ASSERT_TRUE(wait_blocked_in(&o.tid, __NR_openat)) TH_LOG("second open did not wait");
	EXPECT_EQ(0, close(fd));
	EXPECT_TRUE(done_within(&o, 30000))
		TH_LOG("second open still waiting after the first closed");
	pthread_join(thread, NULL);
	EXPECT_LE(0, o.fd) TH_LOG("second open: %s", strerror(o.err));
	EXPECT_EQ(IB_PORT_SM, port_cap_mask(self) & IB_PORT_SM);
	if (o.fd >= 0)
		close(o.fd);
	EXPECT_EQ(0ul, port_cap_mask(self) & IB_PORT_SM);
}

static void on_signal(int sig)
{
}

TEST_F(issm, a_signal_ends_the_wait)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART */
	struct opener o = { .path = self->path, .fd = -1 };
	pthread_t thread;
	int fd;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	fd = open(self->path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pthread_create(&thread, NULL, open_issm, &o));
	/* A signal that came before the open waited would interrupt nothing. */
	ASSERT_TRUE(wait_blocked_in(&o.tid, __NR_openat)) TH_LOG("second open did not wait");
	ASSERT_EQ(0, pthread_kill(thread, SIGUSR1));
	EXPECT_TRUE(done_within(&o, 30000)) TH_LOG("open still waiting after the signal");
	pthread_join(thread, NULL);
	EXPECT_EQ(-1, o.fd);
	EXPECT_EQ(EINTR, o.err);
	/* The holder is still the holder. */
	EXPECT_EQ(IB_PORT_SM, port_cap_mask(self) & IB_PORT_SM);
	close(fd);
}

/*
 * The device goes while one task holds issmN and another waits to open it.
 * When the holder closes, the waiter must fail with ENXIO and leave the
 * removed device alone. Until "RDMA/umad: Fail an issm open that waited out
 * its device's removal", ib_umad called ib_modify_port() on a NULL device
 * there: on a kernel without that fix, UMAD_C_FIXED=0 makes this test fail
 * against ib_umad without running the case, which would oops it and leave
 * ib_umad stuck loaded.
 */
TEST_F(issm, a_waiting_opener_gets_enxio_when_the_device_goes)
{
	struct opener o = { .path = self->path, .fd = -1 };
	const char *module = umad_module();
	pthread_t thread;
	sigset_t all;
	FILE *remove;
	int fd;

	ASSERT_NE(NULL, module);
	if (!c_driver_fixed())
		ASSERT_STRNE("ib_umad", module)
			TH_LOG("not run: ib_umad would dereference the removed device");
	fd = open(self->path, O_RDWR);
	ASSERT_LE(0, fd);
	/* Only the waiter may take signals: none must end its wait. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ASSERT_EQ(0, pthread_create(&thread, NULL, open_issm, &o));
	/* A waiter that opened only after the removal would fail with ENOENT. */
	ASSERT_TRUE(wait_blocked_in(&o.tid, __NR_openat)) TH_LOG("the waiter did not wait");
	remove = fopen(LOOPBACK_DBG "remove_device", "w");
	ASSERT_NE(NULL, remove);
	fprintf(remove, "%s\n", self->ibdev);
	ASSERT_EQ(0, fclose(remove));
	EXPECT_NE(0, access(self->path, F_OK)) TH_LOG("%s outlived its device", self->path);
	/* Woken by the removal, it would not be asleep in the open again. */
	EXPECT_TRUE(wait_blocked_in(&o.tid, __NR_openat))
		TH_LOG("the waiter did not wait for the holder");
	EXPECT_EQ(0, close(fd));
	EXPECT_TRUE(done_within(&o, 30000))
		TH_LOG("the waiter still waits after the holder closed");
	pthread_join(thread, NULL);
	EXPECT_EQ(-1, o.fd);
	EXPECT_EQ(ENXIO, o.err);
}

TEST_HARNESS_MAIN
