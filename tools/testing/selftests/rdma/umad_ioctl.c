// SPDX-License-Identifier: GPL-2.0
/*
 * The umad ioctls against the raw ABI, each invalid field with its exact
 * errno: agent registration (old and new request), the 32-agent table,
 * unregistration, ENABLE_PKEY, the header size each choice fixes, and the
 * MAD layer's own refusals passed through. Built 64- and 32-bit: the 32-bit
 * program goes through compat_ioctl, whose method mask is rebuilt from u32
 * pairs, and the tests show it lands on the same methods.
 */
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <rdma/ib_user_mad.h>

#include "../kselftest_harness.h"
#include "umad_test.h"

UMAD_NEEDS_PAIR

#define OLD_HDR 56
#define NEW_HDR 64
#define MAX_AGENTS 32
#define VENDOR1_CLASS 0x0a /* vendor range 1: no RMPP, no OUI, nobody else's */
#define VENDOR2_CLASS 0x30 /* vendor range 2: OUI, RMPP */

static void set_method(void *mask, int method)
{
	const int bits = 8 * sizeof(unsigned long);
	char *at = (char *)mask + method / bits * sizeof(unsigned long);
	unsigned long word;

	/* A copy: the request's longs are only 4-byte aligned. */
	memcpy(&word, at, sizeof(word));
	word |= 1UL << (method % bits);
	memcpy(at, &word, sizeof(word));
}

/* REGISTER_AGENT; 0 or -errno, the agent's id in *id. */
static int reg1(int fd, int qpn, int class, int version, int method, int rmpp, __u32 *id)
{
	struct ib_user_mad_reg_req req = {
		.qpn = qpn, .mgmt_class = class, .mgmt_class_version = version,
		.rmpp_version = rmpp,
	};

	if (method >= 0)
		set_method(req.method_mask, method);
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req))
		return -errno;
	if (id)
		*id = req.id;
	return 0;
}

/* REGISTER_AGENT2; 0 or -errno, the agent's id in *id, flags as returned. */
static int reg2(int fd, int qpn, int class, int version, __u32 *flags, __u32 oui,
		int method, int rmpp, __u32 *id)
{
	struct ib_user_mad_reg_req2 req = {
		.qpn = qpn, .mgmt_class = class, .mgmt_class_version = version,
		.flags = flags ? *flags : 0, .oui = oui, .rmpp_version = rmpp,
	};
	int ret = 0;

	if (method >= 0)
		req.method_mask[method / 64] |= 1ULL << (method % 64);
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req))
		ret = -errno;
	if (flags)
		*flags = req.flags;
	if (!ret && id)
		*id = req.id;
	return ret;
}

static int unreg(int fd, __u32 id)
{
	return ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id) ? -errno : 0;
}

/*
 * REGISTER_AGENT2 with *req in a page the kernel can read but not write:
 * 0 or -errno (-ENOMEM if no page). The page is as read-only to the kernel
 * as to the test, so nothing the driver did can be read back from it.
 */
static int reg2_readonly(int fd, const struct ib_user_mad_reg_req2 *req)
{
	struct ib_user_mad_reg_req2 *page;
	int ret = 0;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -ENOMEM;
	*page = *req;
	if (mprotect(page, 4096, PROT_READ))
		ret = -ENOMEM;
	else if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, page))
		ret = -errno;
	munmap(page, 4096);
	return ret;
}

/* A read of len bytes on a nonblocking file with nothing queued: -errno. */
static int empty_read(int fd, size_t len)
{
	char buf[512];

	return read(fd, buf, len) < 0 ? -errno : 0;
}

FIXTURE(umad) {
	int fd;
};

FIXTURE_SETUP(umad)
{
	char path[128];

	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	self->fd = open(path, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, self->fd) TH_LOG("%s: %s", path, strerror(errno));
}

FIXTURE_TEARDOWN(umad)
{
	close(self->fd);
}

TEST_F(umad, agent_ids_are_the_lowest_free_of_32)
{
	__u32 id = 0;

	for (__u32 i = 0; i < MAX_AGENTS; i++) {
		ASSERT_EQ(0, reg1(self->fd, 1, 0, 0, -1, 0, &id));
		EXPECT_EQ(i, id);
	}
	EXPECT_EQ(-ENOMEM, reg1(self->fd, 1, 0, 0, -1, 0, &id));
	EXPECT_EQ(-ENOMEM, reg2(self->fd, 1, 0, 0, NULL, 0, -1, 0, &id));
	EXPECT_EQ(0, unreg(self->fd, 5));
	EXPECT_EQ(0, unreg(self->fd, 17));
	ASSERT_EQ(0, reg2(self->fd, 1, 0, 0, NULL, 0, -1, 0, &id));
	EXPECT_EQ(5U, id);
	ASSERT_EQ(0, reg1(self->fd, 1, 0, 0, -1, 0, &id));
	EXPECT_EQ(17U, id);
}

TEST_F(umad, unregister_refuses_what_is_not_an_agent)
{
	__u32 id = 0;

	EXPECT_EQ(-EINVAL, unreg(self->fd, 0));
	ASSERT_EQ(0, reg1(self->fd, 1, 0, 0, -1, 0, &id));
	EXPECT_EQ(-EINVAL, unreg(self->fd, MAX_AGENTS));
	EXPECT_EQ(-EINVAL, unreg(self->fd, 0xffffffff));
	EXPECT_EQ(-EINVAL, unreg(self->fd, id + 1));
	EXPECT_EQ(0, unreg(self->fd, id));
	EXPECT_EQ(-EINVAL, unreg(self->fd, id));
	EXPECT_EQ(-EFAULT, ioctl(self->fd, IB_USER_MAD_UNREGISTER_AGENT, (void *)8) ? -errno : 0);
}

TEST_F(umad, qpn_is_0_or_1)
{
	EXPECT_EQ(-EINVAL, reg1(self->fd, 2, 0, 0, -1, 0, NULL));
	EXPECT_EQ(-EINVAL, reg1(self->fd, 255, VENDOR1_CLASS, 1, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, reg2(self->fd, 2, 0, 0, NULL, 0, -1, 0, NULL));
	EXPECT_EQ(-EINVAL, reg2(self->fd, 0x101, 0, 0, NULL, 0, -1, 0, NULL));
}

TEST_F(umad, register2_refuses_unknown_flags_and_says_which_it_knows)
{
	__u32 flags = 2;

	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, 0, 0, &flags, 0, -1, 0, NULL));
	EXPECT_EQ((__u32)IB_USER_MAD_REG_FLAGS_CAP, flags);
	flags = 0x80000001;
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, VENDOR2_CLASS, 1, &flags, 0x1405, 1, 1, NULL));
	EXPECT_EQ((__u32)IB_USER_MAD_REG_FLAGS_CAP, flags);
	/* The known one is fine, with a class (the MAD layer wants one). */
	flags = IB_USER_MAD_USER_RMPP;
	EXPECT_EQ(0, reg2(self->fd, 1, VENDOR2_CLASS, 1, &flags, 0x1405, 1, 1, NULL));
	EXPECT_EQ((__u32)IB_USER_MAD_USER_RMPP, flags);
	flags = IB_USER_MAD_USER_RMPP;
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, 0, 0, &flags, 0, -1, 0, NULL));
}

/*
 * Unknown flags in a request the kernel can read but not write back: the
 * flags it knows cannot be told, so the answer is EFAULT, and nothing is
 * registered. What the driver did shows in the errno, not in the page,
 * which it cannot change: EFAULT, where the same request in writable
 * memory is EINVAL with the known flags told, is that answer failing. A
 * driver that does not tell them answers EINVAL here; one that registers
 * the agent all the same cannot write its id either, and must not keep
 * it: the next registration gets id 0.
 */
TEST_F(umad, unknown_flags_that_cannot_be_answered_are_efault)
{
	const struct ib_user_mad_reg_req2 req = { .qpn = 1, .flags = 2 };
	__u32 flags = req.flags, id = 1;

	EXPECT_EQ(-EFAULT, reg2_readonly(self->fd, &req));
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, 0, 0, &flags, 0, -1, 0, NULL));
	EXPECT_EQ((__u32)IB_USER_MAD_REG_FLAGS_CAP, flags);
	ASSERT_EQ(0, reg2(self->fd, 1, 0, 0, NULL, 0, -1, 0, &id));
	EXPECT_EQ(0U, id);
}

TEST_F(umad, register2_oui_fits_in_24_bits)
{
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, VENDOR2_CLASS, 1, NULL, 0x01001405, 1, 1, NULL));
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, VENDOR2_CLASS, 1, NULL, 0xff000000, 1, 1, NULL));
	/* The OUI only counts with a class. */
	EXPECT_EQ(0, reg2(self->fd, 1, 0, 0, NULL, 0xff000000, -1, 0, NULL));
	EXPECT_EQ(0, reg2(self->fd, 1, VENDOR2_CLASS, 1, NULL, 0x00001405, 1, 1, NULL));
}

TEST_F(umad, the_mad_layers_refusals_pass_through)
{
	struct ib_user_mad_reg_req req = {
		.qpn = 1, .mgmt_class = VENDOR2_CLASS, .mgmt_class_version = 1,
		.oui = { 0x00, 0x14, 0x05 }, .rmpp_version = 1,
	};

	/* RoCE has no QP0; IB has, for the subnet management classes. */
	if (umad_pair()->ib) {
		EXPECT_EQ(0, reg1(self->fd, 0, 0x81, 1, 1, 0, NULL));
		EXPECT_EQ(0, reg2(self->fd, 0, 0x01, 1, NULL, 0, 1, 0, NULL));
	} else {
		EXPECT_EQ(-EPROTONOSUPPORT, reg1(self->fd, 0, 0x81, 1, 1, 0, NULL));
		EXPECT_EQ(-EPROTONOSUPPORT, reg2(self->fd, 0, 0x01, 1, NULL, 0, 1, 0, NULL));
	}
	/* RMPP version, class version, RMPP on a class without it. */
	EXPECT_EQ(-EINVAL, reg1(self->fd, 1, VENDOR1_CLASS, 1, 1, 2, NULL));
	EXPECT_EQ(-EINVAL, reg1(self->fd, 1, VENDOR1_CLASS, 0x83, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, reg1(self->fd, 1, VENDOR1_CLASS, 1, 1, 1, NULL));
	/* A subnet management class on QP1. */
	EXPECT_EQ(-EINVAL, reg1(self->fd, 1, 0x81, 1, 1, 0, NULL));
	/* Vendor range 2 needs an OUI. */
	EXPECT_EQ(-EINVAL, reg2(self->fd, 1, VENDOR2_CLASS, 1, NULL, 0, 1, 1, NULL));
	set_method(req.method_mask, 1);
	EXPECT_EQ(0, ioctl(self->fd, IB_USER_MAD_REGISTER_AGENT, &req));
}

/*
 * A method belongs to one agent: a second registration of it fails. The
 * first registration uses the old request (from a 32-bit program: the
 * compat path), the second the new one, whose mask is never converted, so
 * both must put method m at bit m.
 */
TEST_F(umad, a_method_is_taken_once_whatever_the_request)
{
	static const int methods[] = { 0x01, 0x1f, 0x20, 0x21, 0x3f, 0x40, 0x41, 0x7f };
	char path[128];
	int other;

	ASSERT_EQ(0, umad_path(umad_pair()->server, 1, path, sizeof(path)));
	other = open(path, O_RDWR);
	ASSERT_LE(0, other);
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		int m = methods[i];

		ASSERT_EQ(0, reg1(self->fd, 1, VENDOR1_CLASS, 1, m, 0, NULL))
			TH_LOG("method %#x", m);
		EXPECT_EQ(-EINVAL, reg2(other, 1, VENDOR1_CLASS, 1, NULL, 0, m, 0, NULL))
			TH_LOG("method %#x registered twice", m);
		EXPECT_EQ(-EINVAL, reg1(other, 1, VENDOR1_CLASS, 1, m, 0, NULL))
			TH_LOG("method %#x registered twice", m);
	}
	/* Neighbours of the taken bits are free. */
	EXPECT_EQ(0, reg2(other, 1, VENDOR1_CLASS, 1, NULL, 0, 0x02, 0, NULL));
	EXPECT_EQ(0, reg2(other, 1, VENDOR1_CLASS, 1, NULL, 0, 0x22, 0, NULL));
	EXPECT_EQ(0, reg1(other, 1, VENDOR1_CLASS, 1, 0x42, 0, NULL));
	close(other);
}

TEST_F(umad, enable_pkey_only_before_the_first_agent)
{
	__u32 id = 0;

	EXPECT_EQ(0, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
	EXPECT_EQ(0, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
	ASSERT_EQ(0, reg1(self->fd, 1, 0, 0, -1, 0, &id));
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
	EXPECT_EQ(EINVAL, errno);
	/* Still refused once the agent is gone: the file was used. */
	ASSERT_EQ(0, unreg(self->fd, id));
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
	EXPECT_EQ(EINVAL, errno);
	/* The new header stays. */
	EXPECT_EQ(-EINVAL, empty_read(self->fd, NEW_HDR - 1));
	EXPECT_EQ(-EAGAIN, empty_read(self->fd, NEW_HDR));
}

TEST_F(umad, the_old_header_until_told_otherwise)
{
	EXPECT_EQ(-EINVAL, empty_read(self->fd, OLD_HDR - 1));
	EXPECT_EQ(-EAGAIN, empty_read(self->fd, OLD_HDR));
	/* REGISTER_AGENT as first use keeps it for good. */
	ASSERT_EQ(0, reg1(self->fd, 1, 0, 0, -1, 0, NULL));
	ASSERT_EQ(0, reg2(self->fd, 1, 0, 0, NULL, 0, -1, 0, NULL));
	EXPECT_EQ(-EAGAIN, empty_read(self->fd, OLD_HDR));
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
}

TEST_F(umad, register2_as_first_use_selects_the_new_header)
{
	ASSERT_EQ(0, reg2(self->fd, 1, 0, 0, NULL, 0, -1, 0, NULL));
	EXPECT_EQ(-EINVAL, empty_read(self->fd, NEW_HDR - 1));
	EXPECT_EQ(-EAGAIN, empty_read(self->fd, NEW_HDR));
}

TEST_F(umad, a_failed_registration_does_not_fix_the_header)
{
	EXPECT_EQ(-EINVAL, reg2(self->fd, 2, 0, 0, NULL, 0, -1, 0, NULL));
	EXPECT_EQ(-EINVAL, reg1(self->fd, 2, 0, 0, -1, 0, NULL));
	EXPECT_EQ(0, ioctl(self->fd, IB_USER_MAD_ENABLE_PKEY));
}

TEST_F(umad, unknown_commands_are_enotty)
{
	EXPECT_EQ(-1, ioctl(self->fd, _IO(IB_IOCTL_MAGIC, 9)));
	EXPECT_EQ(ENOTTY, errno);
	/* Right number, wrong size: a different command. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(IB_IOCTL_MAGIC, 1, __u32)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IO('T', 1)));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_F(umad, unreadable_requests_are_efault)
{
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_REGISTER_AGENT, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, IB_USER_MAD_REGISTER_AGENT2, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

/*
 * A request the kernel can read but not write back: the agent is made, its
 * id cannot be returned, so it is unregistered again and its slot is free.
 */
TEST_F(umad, an_id_that_cannot_be_returned_undoes_the_registration)
{
	const struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
		.method_mask = { 1 << 1 },
	};
	__u32 id = 0;

	EXPECT_EQ(-EFAULT, reg2_readonly(self->fd, &req));
	/* Slot 0 and method 1 are free again. */
	ASSERT_EQ(0, reg2(self->fd, 1, VENDOR1_CLASS, 1, NULL, 0, 1, 0, &id));
	EXPECT_EQ(0U, id);
}

/*
 * The id goes back with put_user, one store: an id that straddles the end
 * of what the caller may write is written whole or not at all, never its
 * first bytes alone. The registration is undone, as for any id that cannot
 * be returned.
 */
TEST_F(umad, an_id_across_the_end_of_writable_memory_is_not_written_in_part)
{
	const struct ib_user_mad_reg_req2 req = {
		.qpn = 1, .mgmt_class = VENDOR1_CLASS, .mgmt_class_version = 1,
		.method_mask = { 1 << 1 },
	};
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *pages, *at;
	__u32 id = 0;
	int ret;

	pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(pages != MAP_FAILED);
	/* The request's id (its first field): two bytes in each page. */
	at = pages + page - 2;
	memcpy(at, &req, sizeof(req));
	memset(at, 0xaa, sizeof(__u32));
	ASSERT_EQ(0, mprotect(pages + page, page, PROT_READ));
	ret = ioctl(self->fd, IB_USER_MAD_REGISTER_AGENT2, at) ? -errno : 0;
	EXPECT_EQ(-EFAULT, ret);
	EXPECT_EQ(0xaa, at[0]);
	EXPECT_EQ(0xaa, at[1]);
	munmap(pages, 2 * page);
	/* Slot 0 and method 1 are free again. */
	ASSERT_EQ(0, reg2(self->fd, 1, VENDOR1_CLASS, 1, NULL, 0, 1, 0, &id));
	EXPECT_EQ(0U, id);
}

TEST_F(umad, writes_need_a_header_a_mad_start_and_an_agent)
{
	char buf[OLD_HDR + 256] = { 0 };
	struct ib_user_mad *mad = (void *)buf;
	void *unmapped = (void *)8;

	/* Hidden from the compiler, which would warn of reading nothing. */
	__asm__("" : "+r" (unmapped));
	EXPECT_EQ(-1, write(self->fd, buf, OLD_HDR + 35));
	EXPECT_EQ(EINVAL, errno);
	mad->hdr.id = MAX_AGENTS;
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	mad->hdr.id = 0;
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(-1, write(self->fd, unmapped, sizeof(buf)));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(umad, poll_says_writable_and_nothing_to_read)
{
	struct pollfd p = {
		.fd = self->fd, .events = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM,
	};

	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLOUT | POLLWRNORM, p.revents);
}

TEST_HARNESS_MAIN
