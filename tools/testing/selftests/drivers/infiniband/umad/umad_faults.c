// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures on the paths a task runs through the driver: open,
 * register, write (address handle, send buffer, packet) and read. Each
 * allocation such a call makes fails in turn (/proc/self/task/<tid>/fail-nth
 * with failslab failing sleeping allocations too): the call fails cleanly,
 * with ENOMEM or the errno C gives, and the file works again at once. The
 * rig's kmemleak pass after the phase shows nothing leaked. Needs a kernel
 * with CONFIG_FAILSLAB and fault injection's debugfs (the debug flavour);
 * skipped elsewhere.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <rdma/ib_user_mad.h>

#include "kselftest_harness.h"
#include "umad_test.h"
#include "umad_ud.h"

#define FAILSLAB "/sys/kernel/debug/failslab/"
#define HDR 64
#define MAD 256
#define VENDOR1_CLASS 0x0a
#define GET 0x01
/* More allocations than any of these calls makes. */
#define MAX_NTH 200

static int write_str(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static char fail_nth_path[64];

/* Makes the task's nth fault-injection point fail (0: none). */
static int fail_nth(int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", n);
	return write_str(fail_nth_path, buf);
}

/* Whether the armed failure was used up (fail-nth reads 0 then). */
static bool failure_injected(void)
{
	char buf[16] = "";
	int fd = open(fail_nth_path, O_RDONLY);

	if (fd < 0)
		return false;
	read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return atoi(buf) == 0;
}

FIXTURE(faults) {
	int fd, agent;
	__u8 peer_gid[16];
};

FIXTURE_SETUP(faults)
{
	char path[128];

	snprintf(fail_nth_path, sizeof(fail_nth_path), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	if (access(fail_nth_path, W_OK) || access(FAILSLAB "ignore-gfp-wait", W_OK))
		SKIP(return, "no fail-nth or failslab on this kernel");
	ASSERT_EQ(0, write_str(FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, write_str(FAILSLAB "verbose", "0"));
	ASSERT_EQ(0, umad_path("rxe0", 1, path, sizeof(path)));
	self->fd = open(path, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, read_gid(RIG_RXE, 1, 0, self->peer_gid));
	self->agent = -1;
}

FIXTURE_TEARDOWN(faults)
{
	fail_nth(0);
	write_str(FAILSLAB "ignore-gfp-wait", "Y");
	if (self->fd >= 0)
		close(self->fd);
}

static int reg(int fd)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
	};

	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		return -errno;
	return req.id;
}

static int send_get(int fd, int agent, const __u8 *gid, __u64 tid)
{
	__u8 buf[HDR + MAD] = { 0 };
	struct ib_user_mad *umad = (void *)buf;

	umad_address(umad, agent, gid, 0, 0);
	buf[HDR + 0] = 1;
	buf[HDR + 1] = VENDOR1_CLASS;
	buf[HDR + 2] = 1;
	buf[HDR + 3] = GET;
	for (int i = 0; i < 8; i++)
		buf[HDR + 8 + i] = tid >> (56 - 8 * i);
	return write(fd, buf, sizeof(buf)) < 0 ? -errno : 0;
}

TEST_F(faults, open_fails_cleanly_at_every_allocation)
{
	char path[128];
	int n;

	ASSERT_EQ(0, umad_path("rxe0", 1, path, sizeof(path)));
	for (n = 1; n < MAX_NTH; n++) {
		int fd, err;

		ASSERT_EQ(0, fail_nth(n));
		fd = open(path, O_RDWR);
		err = errno;
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_LE(0, fd);
			close(fd);
			break;
		}
		fail_nth(0);
		if (fd >= 0) {
			close(fd);
		} else {
			EXPECT_TRUE(err == ENOMEM || err == ENFILE)
				TH_LOG("allocation %d: %s", n, strerror(err));
		}
		/* And the node opens again. */
		fd = open(path, O_RDWR);
		ASSERT_LE(0, fd);
		close(fd);
	}
	EXPECT_LT(1, n);
}

TEST_F(faults, register_fails_cleanly_at_every_allocation)
{
	int n;

	for (n = 1; n < MAX_NTH; n++) {
		int id;

		ASSERT_EQ(0, fail_nth(n));
		id = reg(self->fd);
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_LE(0, id);
			break;
		}
		fail_nth(0);
		if (id >= 0) {
			ASSERT_EQ(0, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
		} else {
			EXPECT_EQ(-ENOMEM, id) TH_LOG("allocation %d", n);
		}
		/* The file registers again, in the lowest slot. */
		id = reg(self->fd);
		ASSERT_EQ(0, id) TH_LOG("after allocation %d", n);
		ASSERT_EQ(0, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, &id));
	}
	EXPECT_LT(1, n);
}

TEST_F(faults, write_fails_cleanly_at_every_allocation)
{
	__u64 tid = 1;
	int n, agent;

	agent = reg(self->fd);
	ASSERT_LE(0, agent);
	for (n = 1; n < MAX_NTH; n++) {
		int ret;

		ASSERT_EQ(0, fail_nth(n));
		ret = send_get(self->fd, agent, self->peer_gid, tid++);
		if (!failure_injected()) {
			fail_nth(0);
			ASSERT_EQ(0, ret);
			break;
		}
		fail_nth(0);
		/* The address handle's errno passes through from the device:
		 * soft-RoCE resolves it with allocations of its own. */
		if (!ret)
			continue;
		EXPECT_TRUE(ret == -ENOMEM || ret == -EINVAL || ret == -EAGAIN)
			TH_LOG("allocation %d: %s", n, strerror(-ret));
		/* A failed write leaves no send behind: its TID is free. */
		ASSERT_EQ(0, send_get(self->fd, agent, self->peer_gid, tid - 1))
			TH_LOG("after allocation %d", n);
	}
	EXPECT_LT(1, n);
}

TEST_HARNESS_MAIN
